//! [`Tokenizable`] text and [`StandingInstruction`]s.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smol_str::SmolStr;

use super::{PrimitiveError, PrimitiveKind};

type Evaluator = Arc<dyn Fn() -> String + Send + Sync>;

#[derive(Clone)]
enum TokenizableValue {
    /// Fixed text: up to 23 bytes inline, longer text shared (an `Arc<str>`), a `&'static str`
    /// ([`Tokenizable::from_static`]) by reference. Making short text allocates nothing, and no
    /// clone of fixed text allocates or copies more than the 24 bytes of the value.
    Fixed(SmolStr),
    Dynamic(Evaluator),
}

/// Text handed to a model: either fixed, or computed each time it is rendered.
///
/// A dynamic value lets an instruction carry, say, the current date without being rebuilt.
/// Serializes as the text it renders to; deserializes as fixed text.
///
/// Two values are equal when both are fixed with the same text, or both are the very same
/// evaluator (clones of one `Tokenizable`).
///
/// ```
/// use adk::primitives::Tokenizable;
///
/// let fixed = Tokenizable::new("Answer in French.");
/// let computed = Tokenizable::dynamic(|| format!("Today is day {}.", 3));
/// assert_eq!(fixed.render(), "Answer in French.");
/// assert_eq!(computed.render(), "Today is day 3.");
/// assert_eq!(serde_json::to_string(&computed).unwrap(), "\"Today is day 3.\"");
/// ```
#[derive(Clone)]
pub struct Tokenizable {
    value: TokenizableValue,
}

impl Tokenizable {
    /// Fixed text.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            value: TokenizableValue::Fixed(SmolStr::from(text.into())),
        }
    }

    /// Fixed text the program holds for its whole run, such as a system prompt in a `const`:
    /// kept by reference, so making the value allocates nothing and copies no text, and
    /// neither do its clones. It behaves as [`Tokenizable::new`] of the same text in every
    /// other way (equality, rendering, serialization).
    ///
    /// ```
    /// use adk::primitives::Tokenizable;
    ///
    /// const SYSTEM: Tokenizable = Tokenizable::from_static("You are a helpful assistant.");
    /// assert_eq!(SYSTEM.as_static(), Some("You are a helpful assistant."));
    /// assert_eq!(SYSTEM, Tokenizable::new("You are a helpful assistant."));
    /// ```
    #[must_use]
    pub const fn from_static(text: &'static str) -> Self {
        Self {
            value: TokenizableValue::Fixed(SmolStr::new_static(text)),
        }
    }

    /// Text computed by `evaluator` every time it is rendered.
    pub fn dynamic(evaluator: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self {
            value: TokenizableValue::Dynamic(Arc::new(evaluator)),
        }
    }

    /// The text now: the fixed text, or the evaluator's result.
    pub fn render(&self) -> String {
        match &self.value {
            TokenizableValue::Fixed(text) => text.as_str().to_owned(),
            TokenizableValue::Dynamic(evaluator) => evaluator(),
        }
    }

    /// The fixed text, or `None` for a dynamic value.
    pub fn as_static(&self) -> Option<&str> {
        match &self.value {
            TokenizableValue::Fixed(text) => Some(text),
            TokenizableValue::Dynamic(_) => None,
        }
    }

    /// Whether the text is computed on each render.
    pub fn is_dynamic(&self) -> bool {
        matches!(self.value, TokenizableValue::Dynamic(_))
    }

    /// Whether this is fixed text that is empty (a dynamic value is never considered empty:
    /// what it renders to is not known until it runs).
    pub fn is_empty_static(&self) -> bool {
        self.as_static().is_some_and(str::is_empty)
    }
}

impl PartialEq for Tokenizable {
    fn eq(&self, other: &Self) -> bool {
        match (&self.value, &other.value) {
            (TokenizableValue::Dynamic(left), TokenizableValue::Dynamic(right)) => {
                Arc::ptr_eq(left, right)
            }
            // Fixed text equals fixed text of the same words, however each is held.
            _ => self
                .as_static()
                .is_some_and(|left| other.as_static() == Some(left)),
        }
    }
}

impl fmt::Debug for Tokenizable {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_static() {
            Some(text) => formatter.debug_tuple("Static").field(&text).finish(),
            None => formatter.write_str("Dynamic(..)"),
        }
    }
}

impl fmt::Display for Tokenizable {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            TokenizableValue::Fixed(text) => formatter.write_str(text),
            TokenizableValue::Dynamic(evaluator) => formatter.write_str(&evaluator()),
        }
    }
}

impl From<&str> for Tokenizable {
    fn from(text: &str) -> Self {
        // Inline when short; else straight into the shared text: one allocation, where `new`
        // makes a `String` first.
        Self {
            value: TokenizableValue::Fixed(SmolStr::new(text)),
        }
    }
}

impl From<String> for Tokenizable {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl Serialize for Tokenizable {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.value {
            TokenizableValue::Fixed(text) => serializer.serialize_str(text),
            TokenizableValue::Dynamic(evaluator) => serializer.serialize_str(&evaluator()),
        }
    }
}

impl<'de> Deserialize<'de> for Tokenizable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

/// An operator instruction or tenant-level system prompt: plain text or a [`Tokenizable`].
///
/// Standing instructions have no id: storage identifies them by value (see
/// [`PartialEq`](#impl-PartialEq-for-StandingInstruction): plain text equals a fixed
/// `Tokenizable` with the same text). Serializes as its rendered text; deserializing refuses an
/// empty string.
///
/// ```
/// use adk::primitives::{StandingInstruction, Tokenizable};
///
/// let plain = StandingInstruction::from("Be concise.");
/// assert_eq!(plain, StandingInstruction::from(Tokenizable::new("Be concise.")));
/// assert_eq!(plain.render(), "Be concise.");
/// assert!(serde_json::from_str::<StandingInstruction>("\"\"").is_err());
/// ```
#[derive(Clone, Debug)]
pub enum StandingInstruction {
    /// Plain text.
    Text(String),
    /// Fixed or computed text.
    Tokenizable(Tokenizable),
}

impl StandingInstruction {
    /// Plain text, refused when empty.
    ///
    /// ```
    /// use adk::primitives::StandingInstruction;
    /// assert!(StandingInstruction::new("Cite sources.").is_ok());
    /// assert!(StandingInstruction::new("").is_err());
    /// ```
    pub fn new(text: impl Into<String>) -> Result<Self, PrimitiveError> {
        let text = text.into();
        if text.is_empty() {
            return Err(PrimitiveError::new(
                PrimitiveKind::StandingInstruction,
                None,
                "text",
                "must not be empty",
            ));
        }
        Ok(Self::Text(text))
    }

    /// The text now.
    pub fn render(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Tokenizable(tokenizable) => tokenizable.render(),
        }
    }

    /// The instruction as a [`Tokenizable`] (plain text becomes fixed text).
    pub fn to_tokenizable(&self) -> Tokenizable {
        match self {
            Self::Text(text) => Tokenizable::new(text.as_str()),
            Self::Tokenizable(tokenizable) => tokenizable.clone(),
        }
    }

    fn fixed_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            Self::Tokenizable(tokenizable) => tokenizable.as_static(),
        }
    }
}

impl PartialEq for StandingInstruction {
    fn eq(&self, other: &Self) -> bool {
        match (self.fixed_text(), other.fixed_text()) {
            (Some(left), Some(right)) => left == right,
            (None, None) => self.to_tokenizable() == other.to_tokenizable(),
            _ => false,
        }
    }
}

impl From<&str> for StandingInstruction {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for StandingInstruction {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Tokenizable> for StandingInstruction {
    fn from(tokenizable: Tokenizable) -> Self {
        Self::Tokenizable(tokenizable)
    }
}

impl Serialize for StandingInstruction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Tokenizable(tokenizable) => tokenizable.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for StandingInstruction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::new(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn static_text_behaves_as_the_same_text_made_with_new() {
        const PROMPT: Tokenizable = Tokenizable::from_static("Be brief.");
        let made = Tokenizable::new("Be brief.");
        assert_eq!(PROMPT, made);
        assert_eq!(made, PROMPT);
        assert_ne!(PROMPT, Tokenizable::from_static("Be long."));
        assert_ne!(PROMPT, Tokenizable::dynamic(|| "Be brief.".to_owned()));
        assert_eq!(PROMPT.clone(), PROMPT);
        assert_eq!(PROMPT.render(), made.render());
        assert_eq!(PROMPT.to_string(), made.to_string());
        assert_eq!(format!("{PROMPT:?}"), format!("{made:?}"));
        assert_eq!(
            serde_json::to_string(&PROMPT).expect("serializes"),
            serde_json::to_string(&made).expect("serializes")
        );
        assert!(!PROMPT.is_dynamic());
        assert!(Tokenizable::from_static("").is_empty_static());
    }

    #[test]
    fn short_fixed_text_is_held_inline_and_long_text_shared_in_24_bytes() {
        let held = |tokenizable: &Tokenizable| match &tokenizable.value {
            TokenizableValue::Fixed(text) => text.is_heap_allocated(),
            TokenizableValue::Dynamic(_) => unreachable!("fixed text"),
        };
        let short = "x".repeat(23);
        assert!(!held(&Tokenizable::from(short.as_str())));
        assert!(!held(&Tokenizable::new(short.clone())));
        let long = "x".repeat(24);
        assert!(held(&Tokenizable::from(long.as_str())));
        assert_eq!(
            Tokenizable::from(long.as_str()).as_static(),
            Some(long.as_str())
        );
        assert!(!held(&Tokenizable::from_static(
            "a long prompt kept by reference"
        )));
        assert_eq!(std::mem::size_of::<Tokenizable>(), 24);
        assert_eq!(std::mem::size_of::<Option<Tokenizable>>(), 24);
    }

    #[test]
    fn a_dynamic_value_is_evaluated_on_every_render() {
        let counter = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&counter);
        let tokenizable =
            Tokenizable::dynamic(move || seen.fetch_add(1, Ordering::SeqCst).to_string());
        assert_eq!(tokenizable.render(), "0");
        assert_eq!(tokenizable.render(), "1");
    }

    #[test]
    fn clones_of_a_dynamic_value_are_equal_but_separate_evaluators_are_not() {
        let first = Tokenizable::dynamic(|| "x".into());
        let second = Tokenizable::dynamic(|| "x".into());
        assert_eq!(first, first.clone());
        assert_ne!(first, second);
    }

    #[test]
    fn plain_text_equals_fixed_tokenizable_with_the_same_text() {
        assert_eq!(
            StandingInstruction::from("a"),
            StandingInstruction::from(Tokenizable::new("a"))
        );
        assert_ne!(
            StandingInstruction::from("a"),
            StandingInstruction::from(Tokenizable::dynamic(|| "a".into()))
        );
    }

    #[test]
    fn tokenizable_serializes_as_its_text() {
        let json = serde_json::to_string(&Tokenizable::new("hi")).unwrap();
        assert_eq!(json, "\"hi\"");
        let back: Tokenizable = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Tokenizable::new("hi"));
    }

    #[test]
    fn an_empty_standing_instruction_is_rejected() {
        let error = StandingInstruction::new("").unwrap_err();
        assert_eq!(error.field(), "text");
    }
}
