//! [`IdText`]: the text of an id, as minted (inline) or as given (inline when short).

use smol_str::SmolStr;

/// The text of an id the kit mints or is given: a turn's ([`TurnId`](super::TurnId)).
///
/// A minted UUIDv7 keeps its 36 characters of lower-case hyphenated text inline, so minting
/// one allocates nothing and a clone is a copy. Given text is a [`SmolStr`]: up to 23 bytes
/// inline, a `&'static str` by reference, longer text shared. Either way the id is its text:
/// callers compare, order, hash and show [`IdText::as_str`].
#[derive(Clone)]
pub(crate) enum IdText {
    /// A UUIDv7 as lower-case hyphenated text (ASCII), inline.
    Minted([u8; 36]),
    /// Text as given.
    Given(SmolStr),
}

impl IdText {
    /// `id` as lower-case hyphenated text, kept inline.
    pub(crate) fn minted(id: uuid::Uuid) -> Self {
        let mut text = [0; 36];
        id.hyphenated().encode_lower(&mut text);
        Self::Minted(text)
    }

    /// The text.
    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        match self {
            // Written by `minted` only: ASCII, so never the empty fallback.
            Self::Minted(text) => std::str::from_utf8(text).unwrap_or(""),
            Self::Given(text) => text,
        }
    }
}

impl From<&str> for IdText {
    fn from(text: &str) -> Self {
        Self::Given(SmolStr::new(text))
    }
}

impl From<String> for IdText {
    fn from(text: String) -> Self {
        Self::Given(SmolStr::from(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_and_short_text_are_held_inline_and_long_text_shared() {
        assert!(matches!(
            IdText::minted(uuid::Uuid::nil()),
            IdText::Minted(text) if &text[..] == b"00000000-0000-0000-0000-000000000000"
        ));
        assert!(matches!(
            IdText::from("answer"),
            IdText::Given(text) if !text.is_heap_allocated()
        ));
        let long = "l".repeat(24);
        assert!(matches!(
            IdText::from(long.as_str()),
            IdText::Given(text) if text.is_heap_allocated() && text == long
        ));
        assert_eq!(IdText::from(String::from("m-1")).as_str(), "m-1");
    }
}
