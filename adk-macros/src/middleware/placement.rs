//! Where the annotated fn sits: at module level, or inside an `impl` or `trait` block.
//!
//! An attribute macro sees only its item, and `#[middleware]` emits a module and impls, which an
//! `impl` block cannot hold: there rustc would say "module is not supported in `impl`s" and the
//! fn would disappear. To say what to do instead, the macro looks at the source around the
//! attribute: it reads the file the attribute is in (its span says which, and where) and finds
//! the innermost `{` block open at that point. This is a best effort that never rejects code on
//! its own: when the file cannot be read (an IDE's proc-macro server, code generated into a
//! string) the expansion is the usual one, and rustc's own error remains.

use std::path::Path;

/// The block a `#[middleware]` attribute was written in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// At module level, in a fn body, or somewhere the source could not be read.
    Free,
    /// Inside `impl Type { .. }` (or `impl Trait for Type`), with the text after `impl`.
    Impl(String),
    /// Inside `trait Name { .. }`, with the text after `trait`.
    Trait(String),
}

/// The placement of the attribute macro being expanded, from its call site's span.
///
/// Only callable while a proc macro runs: it asks the compiler for the span.
pub(crate) fn of_call_site() -> Placement {
    let span = proc_macro::Span::call_site();
    // A fn at column 1 is at module level: no block to look for, no file to read. This is the
    // common case, kept free.
    if span.column() <= 1 {
        return Placement::Free;
    }
    let Some(file) = span.local_file() else {
        return Placement::Free;
    };
    read_placement(&file, span.line(), span.column())
}

fn read_placement(file: &Path, line: usize, column: usize) -> Placement {
    let Ok(source) = std::fs::read_to_string(file) else {
        return Placement::Free;
    };
    match offset_of(&source, line, column) {
        Some(offset) => enclosing_block(&source[..offset]),
        None => Placement::Free,
    }
}

/// The byte offset of a 1-based line and a 1-based column counted in characters.
fn offset_of(source: &str, line: usize, column: usize) -> Option<usize> {
    let line_start = if line <= 1 {
        0
    } else {
        source.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let rest = &source[line_start..];
    let within = rest
        .char_indices()
        .nth(column.checked_sub(1)?)
        .map_or(rest.len(), |(index, _)| index);
    Some(line_start + within)
}

/// The kind of the innermost `{` block still open at the end of `before`.
///
/// A small lexer: it skips comments, string, raw-string and char literals and attributes, and
/// classifies each `{` by the first item keyword since the previous `;`, `{` or `}`
/// (`unsafe impl<T> Foo for Bar where .. {` is an impl; `fn f() -> impl Trait {` is a fn).
fn enclosing_block(before: &str) -> Placement {
    let mut blocks: Vec<Placement> = Vec::new();
    let mut header = Header::default();
    let bytes = before.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        match byte {
            b'/' if bytes.get(index + 1) == Some(&b'/') => {
                index = before[index..]
                    .find('\n')
                    .map_or(bytes.len(), |end| index + end);
                continue;
            }
            b'/' if bytes.get(index + 1) == Some(&b'*') => {
                index = skip_block_comment(bytes, index);
                continue;
            }
            b'"' => {
                index = skip_string(bytes, index + 1);
                continue;
            }
            b'\'' => {
                index = skip_char_or_lifetime(bytes, index);
                continue;
            }
            b'#' => header.attribute_pending = true,
            b'[' => {
                // `#[` opens an attribute; a `[` inside one nests.
                if header.attribute_pending || header.attribute_depth > 0 {
                    header.attribute_depth += 1;
                }
                header.attribute_pending = false;
            }
            b']' => header.attribute_depth = header.attribute_depth.saturating_sub(1),
            b'!' => {}
            b'{' => {
                blocks.push(header.classify(&before[..index]));
                header = Header::default();
            }
            b'}' => {
                blocks.pop();
                header = Header::default();
            }
            b';' => header = Header::default(),
            _ if byte.is_ascii_alphabetic() || byte == b'_' => {
                let start = index;
                while index < bytes.len()
                    && (bytes[index].is_ascii_alphanumeric() || bytes[index] == b'_')
                {
                    index += 1;
                }
                let word = &before[start..index];
                if let Some(after) = raw_string_start(bytes, index, word) {
                    index = after;
                } else if matches!(word, "b" | "c") && bytes.get(index) == Some(&b'"') {
                    index = skip_string(bytes, index + 1);
                } else {
                    header.word(word, index);
                }
                continue;
            }
            _ => header.attribute_pending = false,
        }
        index += 1;
    }
    blocks.pop().unwrap_or(Placement::Free)
}

/// What has been read of an item's header since the previous `;`, `{` or `}`.
#[derive(Default)]
struct Header {
    /// The first item keyword, and where the text after it starts.
    keyword: Option<(&'static str, usize)>,
    attribute_pending: bool,
    attribute_depth: usize,
}

impl Header {
    fn word(&mut self, word: &str, end: usize) {
        self.attribute_pending = false;
        if self.attribute_depth > 0 {
            return;
        }
        if self.keyword.is_some() {
            return;
        }
        const ITEM_KEYWORDS: [&str; 10] = [
            "impl",
            "trait",
            "fn",
            "mod",
            "struct",
            "enum",
            "union",
            "extern",
            "macro_rules",
            "static",
        ];
        if let Some(keyword) = ITEM_KEYWORDS.iter().find(|keyword| **keyword == word) {
            self.keyword = Some((keyword, end));
        }
    }

    /// `header` is the source up to the block's `{`.
    fn classify(&self, header: &str) -> Placement {
        let Some((keyword, after)) = self.keyword else {
            return Placement::Free;
        };
        let text = || {
            let raw = header.get(after..).unwrap_or("");
            raw.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        match keyword {
            "impl" => Placement::Impl(text()),
            "trait" => Placement::Trait(text()),
            _ => Placement::Free,
        }
    }
}

fn skip_block_comment(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut index = start;
    while index < bytes.len() {
        match (bytes[index], bytes.get(index + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                index += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                index += 2;
                if depth == 0 {
                    return index;
                }
            }
            _ => index += 1,
        }
    }
    bytes.len()
}

/// Skips to just after the closing quote of a string whose opening quote ends at `index`.
fn skip_string(bytes: &[u8], mut index: usize) -> usize {
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'"' => return index + 1,
            _ => index += 1,
        }
    }
    bytes.len()
}

/// `r"..."`, `r#"..."#`, `br".."`, `cr".."`: where the literal ends, when `word` starts one.
fn raw_string_start(bytes: &[u8], after_word: usize, word: &str) -> Option<usize> {
    if !matches!(word, "r" | "br" | "cr") {
        return None;
    }
    let mut index = after_word;
    let mut hashes = 0;
    while bytes.get(index) == Some(&b'#') {
        hashes += 1;
        index += 1;
    }
    if bytes.get(index) != Some(&b'"') {
        return None;
    }
    index += 1;
    while index < bytes.len() {
        if bytes[index] == b'"'
            && bytes[index + 1..]
                .iter()
                .take(hashes)
                .filter(|b| **b == b'#')
                .count()
                == hashes
        {
            return Some(index + 1 + hashes);
        }
        index += 1;
    }
    Some(bytes.len())
}

/// `'a'`, `'\n'`, `'\u{1F600}'` are skipped whole; a lifetime `'a` only its quote.
fn skip_char_or_lifetime(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start + 1) {
        Some(b'\\') => {
            // Past the backslash and the escaped character, which may itself be a quote.
            let mut index = start + 3;
            while index < bytes.len() && bytes[index] != b'\'' {
                index += 1;
            }
            index + 1
        }
        Some(_) => {
            // One character (possibly several UTF-8 bytes) then a quote is a char literal.
            let rest = std::str::from_utf8(&bytes[start + 1..]).ok();
            let width = rest
                .and_then(|rest| rest.chars().next())
                .map_or(1, char::len_utf8);
            if bytes.get(start + 1 + width) == Some(&b'\'') {
                start + 2 + width
            } else {
                start + 1
            }
        }
        None => start + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::{Placement, enclosing_block, offset_of};

    fn placement_at_marker(source: &str) -> Placement {
        let offset = source
            .find("#[middleware")
            .expect("the test source has a marker");
        enclosing_block(&source[..offset])
    }

    #[test]
    fn a_fn_at_module_level_or_in_a_module_block_is_free() {
        assert_eq!(
            placement_at_marker("use x;\n#[middleware] async fn f() {}"),
            Placement::Free
        );
        assert_eq!(
            placement_at_marker(
                "mod tests {\n    use super::*;\n    #[middleware] async fn f() {}\n}"
            ),
            Placement::Free
        );
    }

    #[test]
    fn a_fn_in_an_impl_block_is_in_that_impl() {
        let source = "struct Agent;\n#[derive(Debug)]\nimpl<T: Clone> Agent<T> where T: Send {\n    fn other(&self) -> impl Fn() { || {} }\n    #[middleware] async fn f() {}\n}";
        assert_eq!(
            placement_at_marker(source),
            Placement::Impl("<T: Clone> Agent<T> where T: Send".to_owned())
        );
    }

    #[test]
    fn a_fn_in_a_trait_block_is_in_that_trait() {
        let source = "pub trait Steps {\n    #[middleware] async fn f() {}\n}";
        assert_eq!(
            placement_at_marker(source),
            Placement::Trait("Steps".to_owned())
        );
    }

    #[test]
    fn a_fn_returning_impl_trait_is_a_fn_body_not_an_impl() {
        let source = "fn make() -> impl Sized {\n    #[middleware] async fn f() {}\n}";
        assert_eq!(placement_at_marker(source), Placement::Free);
    }

    #[test]
    fn braces_in_comments_strings_chars_and_attributes_are_not_blocks() {
        let source = "impl Agent {\n    const Q: [char; 2] = ['\\'','{'];\n    // }\n    /* } /* nested } */ */\n    const A: &str = \"}\\\"}\";\n    const B: &str = r#\"}\"#;\n    const C: char = '}';\n    fn l<'a>(x: &'a str) -> &'a str { x }\n    #[doc = \"}\"]\n    #[middleware] async fn f() {}\n}";
        assert_eq!(
            placement_at_marker(source),
            Placement::Impl("Agent".to_owned())
        );
    }

    #[test]
    fn a_fn_after_an_impl_block_closed_is_free() {
        let source =
            "impl Agent {\n    fn a() {}\n}\nmod inner {\n    #[middleware] async fn f() {}\n}";
        assert_eq!(placement_at_marker(source), Placement::Free);
    }

    #[test]
    fn offsets_count_lines_and_characters_from_one() {
        let source = "ab\nçd\nef";
        assert_eq!(offset_of(source, 1, 1), Some(0));
        assert_eq!(offset_of(source, 2, 2), Some(5));
        assert_eq!(offset_of(source, 3, 1), Some(7));
        assert_eq!(offset_of(source, 9, 1), None);
    }
}
