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
        Self::Minted(hyphenated_lower(id.as_bytes()))
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

/// Each byte's two lower-case hex digits.
static HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [DIGITS[byte >> 4], DIGITS[byte & 0xF]];
        byte += 1;
    }
    pairs
};

/// `bytes` as a UUID's lower-case hyphenated text (8-4-4-4-12 hex digits), one table read a
/// byte: what `uuid`'s `encode_lower` writes, without going through its `&mut str`.
fn hyphenated_lower(bytes: &[u8; 16]) -> [u8; 36] {
    let mut text = [b'-'; 36];
    let mut at = 0;
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            at += 1;
        }
        let [high, low] = HEX_PAIRS[usize::from(*byte)];
        text[at] = high;
        text[at + 1] = low;
        at += 2;
    }
    text
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
    fn a_minted_id_is_uuid_s_own_lower_case_hyphenated_text() {
        let mut bytes = [0u8; 16];
        for round in 0..=255u8 {
            for (index, byte) in bytes.iter_mut().enumerate() {
                *byte = round
                    .wrapping_mul(31)
                    .wrapping_add(u8::try_from(index).unwrap_or(0) * 17);
            }
            let id = uuid::Uuid::from_bytes(bytes);
            assert_eq!(IdText::minted(id).as_str(), id.hyphenated().to_string());
        }
        let max = uuid::Uuid::max();
        assert_eq!(IdText::minted(max).as_str(), max.hyphenated().to_string());
    }

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
