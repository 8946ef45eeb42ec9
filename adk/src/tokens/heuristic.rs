//! [`Heuristic`]: token counts for a model whose tokenizer adk does not have.

use super::Tokenizer;

/// One token per 4 bytes of ASCII text (rounded up) plus one per non-ASCII character; see the
/// [module documentation](super) for how close that is.
///
/// ```
/// use adk::tokens::{Heuristic, Tokenizer};
///
/// assert_eq!(Heuristic.count(""), 0);
/// assert_eq!(Heuristic.count("four"), 1);
/// assert_eq!(Heuristic.count("hello"), 2);
/// assert_eq!(Heuristic.count("東京"), 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heuristic;

impl Tokenizer for Heuristic {
    fn count(&self, text: &str) -> usize {
        let ascii = text.bytes().filter(u8::is_ascii).count();
        let other = text.chars().filter(|c| !c.is_ascii()).count();
        ascii.div_ceil(4) + other
    }

    fn name(&self) -> &str {
        "heuristic"
    }
}
