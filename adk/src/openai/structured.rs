//! Structured output from a Rust type: [`StructuredOutput`] (derived) gives the
//! `response_format` OpenAI's strict mode takes, and reads the reply back into the type.
//!
//! The type is checked when the user's crate compiles, by `#[derive(StructuredOutput)]`: every
//! field must be one strict mode can require (`Option<T>` for a field that may be absent,
//! sent as nullable), with no keyword strict mode refuses. Field types are checked through
//! [`StrictSchema`], which the derive implements and whose absence is reported at the field.
//! What runs later only turns schemars' output into the strict form that check guarantees is
//! faithful (see [`strict_schema`]), and deserializes replies.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::{MAX_ERROR_MESSAGE, cut, excerpt};

/// A type whose JSON schema OpenAI's strict structured outputs accept.
///
/// Implemented for `String`, `bool`, `i32`, `i64`, `f32`, `f64`, `Option<T>`, `Vec<T>` and
/// `Box<T>` of such types, and by `#[derive(StructuredOutput)]` for structs and unit-only
/// enums. Left out on purpose, each for the keyword schemars gives it: unsigned integers
/// (`minimum`), `i8`/`i16` (`minimum`/`maximum`), `char` (`minLength`), sets (`uniqueItems`),
/// maps and `serde_json::Value` (no fixed properties).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a field of a structured output: OpenAI's strict mode refuses its JSON schema",
    label = "not accepted by strict structured outputs",
    note = "use String, bool, i32, i64, f32, f64, Option<T>, Vec<T>, Box<T>, or a type with `#[derive(adk::openai::StructuredOutput)]`",
    note = "unsigned integers carry `minimum`: use i64; a map has no fixed properties: use a struct or a Vec of key/value structs"
)]
pub trait StrictSchema {}

macro_rules! strict {
    ($($type:ty),*) => { $(impl StrictSchema for $type {})* };
}
strict!(String, bool, i32, i64, f32, f64);
impl<T: StrictSchema> StrictSchema for Option<T> {}
impl<T: StrictSchema> StrictSchema for Vec<T> {}
impl<T: StrictSchema> StrictSchema for Box<T> {}

/// A reply shape: a struct the model's answer is constrained to and deserialized into.
///
/// Derive it, with schemars' `JsonSchema` and serde's `Deserialize`; the derive checks the
/// struct against strict mode's subset while your crate compiles. Then ask for it with
/// [`OpenAiExecutor::with_structured_output`](super::OpenAiExecutor::with_structured_output)
/// and read the reply with [`from_reply`](Self::from_reply).
///
/// ```
/// use adk::openai::StructuredOutput;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
/// struct Forecast {
///     /// The city, as the user wrote it.
///     city: String,
///     high_celsius: i64,
///     /// Absent when the model does not know (sent as `null`).
///     warning: Option<String>,
/// }
///
/// let format = Forecast::response_format();
/// assert_eq!(format["json_schema"]["name"], "forecast");
/// assert_eq!(format["json_schema"]["strict"], true);
/// let schema = &format["json_schema"]["schema"];
/// assert_eq!(schema["required"], serde_json::json!(["city", "high_celsius", "warning"]));
/// assert_eq!(schema["additionalProperties"], false);
///
/// let reply = Forecast::from_reply(r#"{"city":"Oslo","high_celsius":4,"warning":null}"#)?;
/// assert_eq!((reply.city.as_str(), reply.high_celsius, reply.warning), ("Oslo", 4, None));
/// assert!(Forecast::from_reply(r#"{"city":"Oslo"}"#).is_err());
/// # Ok::<(), adk::openai::StructuredOutputError>(())
/// ```
pub trait StructuredOutput: DeserializeOwned + JsonSchema + StrictSchema {
    /// The `json_schema.name` sent: the type's name in snake case, or
    /// `#[structured_output(name = "..")]`.
    const NAME: &'static str;

    /// The `response_format` asking for this type in strict mode.
    fn response_format() -> Value {
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": Self::NAME,
                "strict": true,
                "schema": strict_schema::<Self>(),
            },
        })
    }

    /// The reply's text read as this type: parsed as JSON, checked against
    /// [`strict_schema`] (the error names the place, e.g. `/days/0/high`), then deserialized.
    ///
    /// # Errors
    ///
    /// [`StructuredOutputError`] when the text is not JSON or does not fit the type.
    fn from_reply(text: &str) -> Result<Self, StructuredOutputError> {
        let value: Value =
            serde_json::from_str(text).map_err(|error| StructuredOutputError::NotJson {
                reason: error.to_string(),
                excerpt: excerpt(text.as_bytes()),
            })?;
        let mismatch = |reason: String| StructuredOutputError::Mismatch {
            type_name: Self::NAME,
            reason,
            excerpt: excerpt(text.as_bytes()),
        };
        // The schema first: its error names the place (`/days/0/high`) and the rule broken.
        if let Ok(validator) = jsonschema::validator_for(&strict_schema::<Self>())
            && let Some(error) = validator.iter_errors(&value).next()
        {
            let place = error.instance_path().as_str().to_owned();
            let place = if place.is_empty() {
                "/".to_owned()
            } else {
                place
            };
            return Err(mismatch(cut(
                &format!("at {place}: {error}"),
                MAX_ERROR_MESSAGE,
            )));
        }
        serde_json::from_value(value).map_err(|error| mismatch(error.to_string()))
    }
}

/// A reply that is not the structured output asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StructuredOutputError {
    /// The model answered without text (only tool calls, or nothing).
    #[error("the model gave no text to read as structured output")]
    NoReply,
    /// The text is not JSON.
    #[error("the reply is not JSON ({reason}): {excerpt:?}")]
    NotJson {
        /// The parser's message.
        reason: String,
        /// The start of the reply (at most [`MAX_EXCERPT`](super::MAX_EXCERPT) bytes).
        excerpt: String,
    },
    /// The JSON does not fit the type: a field missing, of another type, or unknown.
    #[error("the reply does not fit `{type_name}` ({reason}): {excerpt:?}")]
    Mismatch {
        /// [`StructuredOutput::NAME`] of the type asked for.
        type_name: &'static str,
        /// Where and why: the schema check's place and rule, or serde's message.
        reason: String,
        /// The start of the reply (at most [`MAX_EXCERPT`](super::MAX_EXCERPT) bytes).
        excerpt: String,
    },
}

/// `T`'s JSON schema in the form strict mode takes: schemars' draft 2020-12 output with
/// - every object closed (`additionalProperties: false`) and every property required: the
///   derive refused fields that may be absent (`#[serde(default)]`, `flatten`), so the only
///   properties schemars leaves optional are `Option` fields, whose schema already admits
///   `null`;
/// - schemars' numeric width hints (`format: int32`, `int64`, `float`, `double`) dropped: they
///   are not formats strict mode knows, and the width is checked when the reply is read;
/// - `$schema` dropped.
///
/// ```
/// use adk::openai::{StructuredOutput, strict_schema};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, StructuredOutput)]
/// struct Count {
///     n: i32,
/// }
///
/// let schema = strict_schema::<Count>();
/// assert_eq!(schema["properties"]["n"], serde_json::json!({"type": "integer"}));
/// ```
pub fn strict_schema<T: JsonSchema + ?Sized>() -> Value {
    let mut schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(root) = &mut schema {
        root.remove("$schema");
    }
    make_strict(&mut schema);
    schema
}

fn make_strict(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(format)) = object.get("format")
                && ["int32", "int64", "float", "double"].contains(&format.as_str())
            {
                object.remove("format");
            }
            if let Some(Value::Object(properties)) = object.get("properties") {
                let names: Vec<Value> = properties
                    .keys()
                    .map(|name| Value::String(name.clone()))
                    .collect();
                object.insert("required".to_owned(), Value::Array(names));
                object.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            for child in object.values_mut() {
                make_strict(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

/// How the executor asks for and checks one structured output type.
#[derive(Clone, Debug)]
pub(crate) struct StructuredSpec {
    pub(crate) response_format: Value,
    pub(crate) check: fn(&str) -> Result<(), StructuredOutputError>,
}

impl StructuredSpec {
    pub(crate) fn of<T: StructuredOutput>() -> Self {
        Self {
            response_format: T::response_format(),
            check: |text| T::from_reply(text).map(drop),
        }
    }
}

/// Compile-time check the derive emits at each field's type.
#[doc(hidden)]
pub fn __assert_strict<T: StrictSchema + ?Sized>() {}
