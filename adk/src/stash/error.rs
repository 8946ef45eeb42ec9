//! What can go wrong when reading, writing or seeding the stash, and what to do about it.

use std::fmt;

use serde_json::Value;

use super::MAX_DEPTH;

/// Why the stash refused a path, a value or a seed.
///
/// Every message names the offending path (or the seed) and says how to fix it. Errors that
/// reject a value you handed over carry it back as a [`RejectedValue`], so nothing is lost.
///
/// ```
/// use adk::{Registry, StashError};
///
/// let mut stash = Registry::new();
/// let error = stash.set("my-org.items.0", "first").unwrap_err();
/// assert!(matches!(error, StashError::NumericSegment { .. }));
/// assert!(error.to_string().contains("`my-org.items.0`"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StashError {
    /// The path is the empty string.
    #[error(
        "stash path \"\" is empty: name a namespaced key such as `my-org.count` \
         (`<namespace>.<key>`)"
    )]
    EmptyPath,

    /// The path has an empty segment: a leading, trailing or doubled dot.
    #[error(
        "stash path `{path}` has an empty segment (a leading, trailing or doubled dot): \
         separate non-empty segments with single dots, as in `my-org.count`"
    )]
    EmptySegment {
        /// The path as given.
        path: String,
    },

    /// A segment of the path is made of digits only, which would address an array element.
    #[error(
        "stash path `{path}` has a numeric segment `{segment}`: arrays are opaque leaves; \
         read the whole array, change it, and set it back"
    )]
    NumericSegment {
        /// The path as given.
        path: String,
        /// The all-digit segment.
        segment: String,
    },

    /// The path has more segments than [`MAX_DEPTH`].
    #[error(
        "stash path `{path}` has {segments} segments, more than the stash's limit of \
         {MAX_DEPTH} levels: use a shorter path, or store the deep part as one value"
    )]
    PathTooDeep {
        /// The path as given.
        path: String,
        /// How many segments it has.
        segments: usize,
    },

    /// `set` would have to write beneath a value that is not an object.
    ///
    /// The stash never replaces a value to make room beneath it: that would silently destroy
    /// another writer's data.
    #[error(
        "cannot set `{path}`: `{blocking_path}` holds a JSON {found}, not an object, so nothing \
         can be stored beneath it; delete `{blocking_path}` (or set it to an object) first, \
         or choose a path beside it"
    )]
    BeneathNonObject {
        /// The path that was being written.
        path: String,
        /// The prefix of `path` that holds the non-object value.
        blocking_path: String,
        /// What that prefix holds.
        found: JsonKind,
        /// The value that was being written, as JSON.
        value: RejectedValue,
    },

    /// The value would nest deeper than [`MAX_DEPTH`] once stored at its path.
    #[error(
        "cannot set `{path}`: the value nests too deep; together with the path's {segments} \
         segment(s) it exceeds the stash's limit of {MAX_DEPTH} levels: store a flatter value, \
         or serialize the deep part to a string yourself"
    )]
    ValueTooDeep {
        /// The path that was being written.
        path: String,
        /// How many segments the path has.
        segments: usize,
    },

    /// An object inside the value being set has a key the stash could not address.
    #[error("cannot set `{path}`: the object key {location} {problem}")]
    InvalidKeyInValue {
        /// The path that was being written.
        path: String,
        /// Where the key sits, such as "`x.y` under `my-org.settings`".
        location: KeyLocation,
        /// What is wrong with it and how to fix it.
        problem: KeyProblem,
        /// The value that was being written, as JSON.
        value: RejectedValue,
    },

    /// The value being set could not be turned into JSON.
    #[error(
        "cannot set `{path}`: the value of type `{type_name}` cannot be represented as JSON \
         ({source}); store a type whose `Serialize` produces JSON (for example, maps need \
         string keys)"
    )]
    Serialize {
        /// The path that was being written.
        path: String,
        /// The Rust type of the value.
        type_name: &'static str,
        /// What serde_json reported.
        source: serde_json::Error,
    },

    /// A typed read found a value of another shape than the type asked for.
    #[error(
        "stash value at `{path}` is a JSON {found}, which does not read as `{expected}` \
         ({source}); read it with the type its writer stored, or fix the writer"
    )]
    WrongType {
        /// The path that was read.
        path: String,
        /// The Rust type the caller asked for, from `std::any::type_name`.
        expected: &'static str,
        /// The kind of JSON value stored at the path.
        found: JsonKind,
        /// What serde reported, which names the field when the mismatch is deeper inside.
        source: serde_json::Error,
    },

    /// A seed was not a JSON object.
    #[error(
        "cannot seed the stash from a JSON {found}: pass the nested object that `all()` \
         returns, such as {{\"my-org\":{{\"count\":5}}}}"
    )]
    SeedNotObject {
        /// What was passed instead of an object.
        found: JsonKind,
        /// The seed, handed back.
        seed: RejectedValue,
    },

    /// An object key in a seed cannot be addressed by a stash path, such as a flat
    /// `"my-org.count"` key where the nested form is expected.
    #[error("cannot seed the stash: the object key {location} {problem}")]
    InvalidSeedKey {
        /// Where the key sits in the seed.
        location: KeyLocation,
        /// What is wrong with it and how to fix it.
        problem: KeyProblem,
        /// The seed, handed back.
        seed: RejectedValue,
    },

    /// A seed nests deeper than [`MAX_DEPTH`].
    #[error(
        "cannot seed the stash: the seed nests deeper than the stash's limit of {MAX_DEPTH} \
         levels at `{location}`; flatten it, or serialize the deep part to a string"
    )]
    SeedTooDeep {
        /// The start of the path at which the limit was crossed (long paths are shortened).
        location: String,
        /// The seed, handed back.
        seed: RejectedValue,
    },
}

impl StashError {
    /// The value, seed or serialized value this error refused, if it carries one.
    ///
    /// ```
    /// use adk::Registry;
    /// use serde_json::json;
    ///
    /// let error = Registry::from_nested(json!({"my-org.count": 5})).unwrap_err();
    /// assert_eq!(error.rejected_value(), Some(&json!({"my-org.count": 5})));
    /// ```
    pub fn rejected_value(&self) -> Option<&Value> {
        match self {
            Self::BeneathNonObject { value, .. } | Self::InvalidKeyInValue { value, .. } => {
                Some(value.as_value())
            }
            Self::SeedNotObject { seed, .. }
            | Self::InvalidSeedKey { seed, .. }
            | Self::SeedTooDeep { seed, .. } => Some(seed.as_value()),
            _ => None,
        }
    }

    /// Takes the refused value or seed out of this error, so the caller can fix and retry.
    ///
    /// ```
    /// use adk::Registry;
    /// use serde_json::json;
    ///
    /// let error = Registry::from_nested(json!([1, 2])).unwrap_err();
    /// assert_eq!(error.into_rejected_value(), Some(json!([1, 2])));
    /// ```
    pub fn into_rejected_value(self) -> Option<Value> {
        match self {
            Self::BeneathNonObject { value, .. } | Self::InvalidKeyInValue { value, .. } => {
                Some(value.into_value())
            }
            Self::SeedNotObject { seed, .. }
            | Self::InvalidSeedKey { seed, .. }
            | Self::SeedTooDeep { seed, .. } => Some(seed.into_value()),
            _ => None,
        }
    }
}

/// The kind of a JSON value, named in errors.
///
/// ```
/// use adk::stash::JsonKind;
/// use serde_json::json;
///
/// assert_eq!(JsonKind::of(&json!([1])), JsonKind::Array);
/// assert_eq!(JsonKind::Array.to_string(), "array");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JsonKind {
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// A number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl JsonKind {
    /// The kind of `value`.
    ///
    /// ```
    /// use adk::stash::JsonKind;
    ///
    /// assert_eq!(JsonKind::of(&serde_json::Value::Null), JsonKind::Null);
    /// ```
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::Null,
            Value::Bool(_) => Self::Bool,
            Value::Number(_) => Self::Number,
            Value::String(_) => Self::String,
            Value::Array(_) => Self::Array,
            Value::Object(_) => Self::Object,
        }
    }
}

impl fmt::Display for JsonKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Self::Null => "null",
            Self::Bool => "bool",
            Self::Number => "number",
            Self::String => "string",
            Self::Array => "array",
            Self::Object => "object",
        })
    }
}

/// Where an offending object key sits inside a value or seed.
///
/// ```
/// use adk::{Registry, StashError};
/// use serde_json::json;
///
/// let error = Registry::from_nested(json!({"my-org": {"v1.2": true}})).unwrap_err();
/// let StashError::InvalidSeedKey { location, .. } = &error else { panic!("{error}") };
/// assert_eq!(location.key(), "v1.2");
/// assert_eq!(location.parent(), "my-org");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLocation {
    parent: String,
    key: String,
}

impl KeyLocation {
    pub(crate) fn new(parent: String, key: String) -> Self {
        Self { parent, key }
    }

    /// The offending key itself.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Where the object holding the key sits: a stash path, or the empty string at the top level.
    pub fn parent(&self) -> &str {
        &self.parent
    }
}

impl fmt::Display for KeyLocation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.parent.is_empty() {
            write!(formatter, "`{}` at the top level", self.key)
        } else {
            write!(formatter, "`{}` under `{}`", self.key, self.parent)
        }
    }
}

/// Why an object key inside a stored value or a seed cannot be kept.
///
/// Every object key on the way to a leaf must be a valid path segment, so that each leaf path
/// listed by `keys()` can be read back with `get`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyProblem {
    /// The key contains a dot, which the stash reads as nesting.
    Dotted {
        /// The same entry written in the nested form, for example `{"my-org":{"count":5}}`;
        /// `None` when a part between the dots could not be a segment either (`gpt-4.1`,
        /// `v1.2`), so only renaming helps.
        nested_form: Option<String>,
    },
    /// The key is the empty string.
    Empty,
    /// The key is made of digits only.
    Numeric,
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dotted {
                nested_form: Some(nested_form),
            } => write!(
                formatter,
                "contains a dot, which the stash reads as nesting (a flat key): pass the \
                 nested form instead, {nested_form}, or use hyphens inside names (`gpt-4-1`)"
            ),
            Self::Dotted { nested_form: None } => formatter.write_str(
                "contains a dot, which the stash reads as nesting: rename it with hyphens \
                 instead of dots (`gpt-4-1`, `v1-2`)",
            ),
            Self::Empty => formatter.write_str(
                "is empty, and no stash path can address it: give every key a name such as \
                 `count`",
            ),
            Self::Numeric => formatter.write_str(
                "is made of digits only, and stash paths cannot address numeric segments: \
                 prefix the key (`id-7`), or keep the list in an array and treat it as one leaf",
            ),
        }
    }
}

/// A value or seed the stash refused, handed back inside the [`StashError`] so nothing is lost.
///
/// Dropping it is safe however deep the value nests: it is taken apart without recursion,
/// whereas dropping a `serde_json::Value` recurses once per level and a few thousand levels
/// overflow a thread's stack. Its `Debug` output names only the kind, for the same reason.
///
/// ```
/// use adk::Registry;
/// use serde_json::json;
///
/// let error = Registry::from_nested(json!("not an object")).unwrap_err();
/// assert_eq!(error.into_rejected_value(), Some(json!("not an object")));
/// ```
pub struct RejectedValue(Box<Value>);

impl RejectedValue {
    pub(crate) fn new(value: Value) -> Self {
        Self(Box::new(value))
    }

    /// Borrows the refused value.
    ///
    /// ```
    /// # use adk::{Registry, StashError};
    /// # let mut stash = Registry::new();
    /// # stash.set("a", 1).unwrap();
    /// let error = stash.set("a.b", "text").unwrap_err();
    /// let StashError::BeneathNonObject { value, .. } = &error else { panic!("{error}") };
    /// assert_eq!(value.as_value(), "text");
    /// ```
    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// Takes the refused value out.
    ///
    /// ```
    /// # use adk::{Registry, StashError};
    /// # let mut stash = Registry::new();
    /// # stash.set("a", 1).unwrap();
    /// let error = stash.set("a.b", "text").unwrap_err();
    /// let StashError::BeneathNonObject { value, .. } = error else { panic!("{error}") };
    /// assert_eq!(value.into_value(), "text");
    /// ```
    pub fn into_value(mut self) -> Value {
        std::mem::take(&mut *self.0)
    }
}

impl fmt::Debug for RejectedValue {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "RejectedValue(<JSON {}>)", JsonKind::of(&self.0))
    }
}

impl Drop for RejectedValue {
    fn drop(&mut self) {
        drop_without_recursion(std::mem::take(&mut *self.0));
    }
}

/// Drops `value` level by level from an explicit work list, so no nesting depth can overflow
/// the stack.
pub(crate) fn drop_without_recursion(value: Value) {
    let mut pending = vec![value];
    while let Some(mut value) = pending.pop() {
        match &mut value {
            Value::Array(items) => pending.append(items),
            Value::Object(map) => {
                pending.extend(std::mem::take(map).into_iter().map(|(_, child)| child));
            }
            _ => {}
        }
        // `value` is now a scalar or an empty container, whose drop does not recurse.
    }
}
