//! Checking a tool's arguments before its handler runs: the compiled JSON Schema validator a
//! [`Tool`](super::Tool) keeps, and [`InvalidToolArgs`], the error listing every violation.

use std::fmt;

use serde_json::Value;

/// One way arguments broke a tool's input schema.
///
/// ```
/// use adk::primitives::Tool;
/// use serde_json::json;
///
/// let tool = Tool::builder("forecast")
///     .description("Weather forecast.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"days": {"type": "integer"}},
///     }))
///     .handler(|_, _| async { Ok("sunny") })
///     .build()?;
/// let error = tool.validate(json!({"days": "three"})).unwrap_err();
/// let violation = &error.violations()[0];
/// assert_eq!(violation.pointer(), "/days");
/// assert_eq!(violation.schema_pointer(), "/properties/days/type");
/// assert!(violation.message().contains("integer"));
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentViolation {
    pointer: String,
    schema_pointer: String,
    message: String,
}

impl ArgumentViolation {
    /// The JSON pointer to the offending value inside the arguments (`""` is the whole object,
    /// where a missing required property is reported).
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// The JSON pointer to the schema keyword that failed, e.g. `/properties/days/type`.
    pub fn schema_pointer(&self) -> &str {
        &self.schema_pointer
    }

    /// What is wrong, in words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ArgumentViolation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(formatter, "at the top level: {}", self.message)
        } else {
            write!(formatter, "at {}: {}", self.pointer, self.message)
        }
    }
}

/// Arguments a tool refused before running: they break its input schema, or (for a tool with
/// typed arguments) they do not deserialize into the argument type. The handler did not run
/// and no execution event was emitted. The arguments are handed back.
///
/// Code `E_INVALID_TOOL_ARGS`.
///
/// ```
/// use adk::primitives::Tool;
/// use serde_json::json;
///
/// let tool = Tool::builder("forecast")
///     .description("Weather forecast.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
///         "required": ["city"],
///     }))
///     .handler(|_, _| async { Ok("sunny") })
///     .build()?;
///
/// let error = tool.validate(json!({"days": "three"})).unwrap_err();
/// assert_eq!(error.code(), "E_INVALID_TOOL_ARGS");
/// assert_eq!(error.tool(), "forecast");
/// assert_eq!(error.violations().len(), 2);
/// assert_eq!(error.args(), &json!({"days": "three"}));
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the arguments for tool {tool:?} do not match its input schema ({}): {}; call the tool \
     again with arguments that match its `input_schema`",
    count(.violations.len()),
    list(.violations)
)]
pub struct InvalidToolArgs {
    tool: String,
    violations: Vec<ArgumentViolation>,
    args: Value,
}

impl InvalidToolArgs {
    /// The tool that refused the arguments.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Every violation, in the order the schema's keywords were checked.
    pub fn violations(&self) -> &[ArgumentViolation] {
        &self.violations
    }

    /// The refused arguments, as given.
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// Takes the refused arguments back.
    pub fn into_args(self) -> Value {
        self.args
    }

    /// The original's error code, `E_INVALID_TOOL_ARGS`.
    pub fn code(&self) -> &'static str {
        "E_INVALID_TOOL_ARGS"
    }
}

fn count(violations: usize) -> String {
    match violations {
        1 => "1 violation".to_owned(),
        many => format!("{many} violations"),
    }
}

fn list(violations: &[ArgumentViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether arguments that passed the schema also deserialize into a typed tool's argument type.
type DecodeCheck = fn(&Value) -> Result<(), serde_json::Error>;

/// The argument checks of one tool, compiled once when the tool is built.
pub(crate) struct ArgumentCheck {
    validator: jsonschema::Validator,
    decode: Option<DecodeCheck>,
}

impl ArgumentCheck {
    /// Compiles `schema`; the error says why it is not a usable JSON Schema. References to
    /// other documents are not fetched (the crate is built without remote or file resolution),
    /// so a schema that needs them is refused here rather than reaching the network later.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(schema).map_err(|error| error.to_string())?;
        Ok(Self {
            validator,
            decode: None,
        })
    }

    /// Also requires the arguments to pass `decodes` (deserialize into a typed tool's argument
    /// type).
    pub(crate) fn decoding(mut self, decodes: DecodeCheck) -> Self {
        self.decode = Some(decodes);
        self
    }

    /// Returns `args` unchanged when they pass, or every violation with the arguments.
    pub(crate) fn check(&self, tool: &str, args: Value) -> Result<Value, InvalidToolArgs> {
        let violations: Vec<ArgumentViolation> = self
            .validator
            .iter_errors(&args)
            .map(|error| ArgumentViolation {
                pointer: error.instance_path().as_str().to_owned(),
                schema_pointer: error.schema_path().as_str().to_owned(),
                message: match error.kind() {
                    jsonschema::error::ValidationErrorKind::Enum { options } => {
                        not_one_of(error.instance(), options)
                    }
                    _ => error.to_string(),
                },
            })
            .collect();
        let violations = match (violations.is_empty(), self.decode) {
            (true, Some(decode)) => match decode(&args) {
                Ok(()) => Vec::new(),
                Err(error) => vec![ArgumentViolation {
                    pointer: String::new(),
                    schema_pointer: String::new(),
                    message: format!("does not deserialize into the tool's argument type: {error}"),
                }],
            },
            _ => violations,
        };
        if violations.is_empty() {
            Ok(args)
        } else {
            Err(InvalidToolArgs {
                tool: tool.to_owned(),
                violations,
                args,
            })
        }
    }
}

/// How many allowed values an `enum` violation lists before it says "and N more".
pub const ENUM_VALUES_LISTED: usize = 20;

/// How many characters of allowed values an `enum` violation lists, at most, before it says
/// "and N more". A value is never cut in the middle, and the first is always listed.
pub const ENUM_LISTING_CHARS: usize = 400;

/// The message of an `enum` violation: every allowed value, so the model can pick one, bounded by
/// [`ENUM_VALUES_LISTED`] values and [`ENUM_LISTING_CHARS`] characters, then "and N more".
fn not_one_of(instance: &Value, options: &Value) -> String {
    let options = options.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut listed: Vec<String> = Vec::new();
    let mut chars = 0;
    for option in options.iter().take(ENUM_VALUES_LISTED) {
        let option = option.to_string();
        if !listed.is_empty() && chars + option.len() > ENUM_LISTING_CHARS {
            break;
        }
        chars += option.len() + 2;
        listed.push(option);
    }
    let more = options.len() - listed.len();
    let values = match (listed.split_last(), more) {
        (None, _) => return format!("{instance} is not allowed: the schema's `enum` is empty"),
        (Some((only, [])), 0) => {
            return format!("{instance} is not {only}, the only allowed value");
        }
        (Some((last, rest)), 0) => format!("{} or {last}", rest.join(", ")),
        (Some(_), more) => format!("{} and {more} more", listed.join(", ")),
    };
    format!("{instance} is not one of {values}")
}
