//! Dot-paths: the path forms the registry accepts and the rules every segment follows.
//!
//! Validation scans the text once and allocates nothing; only turning a problem into a
//! [`StashError`] copies the path.

use super::MAX_DEPTH;
use super::error::{KeyProblem, StashError};
use super::key::StashKey;

/// Something that names a stash path for values of type `T`.
///
/// A [`StashKey<T>`] is a path only for its own `T`, so reading with it yields `T` and writing
/// with it accepts only `T`. A string (`&str`, `&String`, `String`) is a path for any `T`: the
/// caller chooses the type, by annotation or turbofish.
///
/// The trait is sealed: the registry validates exactly these forms.
///
/// ```
/// use adk::Registry;
///
/// let mut stash = Registry::new();
/// stash.set("my-org.count", 5_u32).unwrap();
/// let count = stash.get::<u32>("my-org.count").unwrap();
/// assert_eq!(count, Some(5));
/// let path = String::from("my-org.count");
/// let count: Option<u64> = stash.get(&path).unwrap();
/// assert_eq!(count, Some(5));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a stash path for values of type `{T}`",
    label = "this path does not address a `{T}`",
    note = "a `StashKey<X>` reads and writes only `X`: use the type the key was declared with, \
            or a string path to choose the type at the call",
    note = "stash paths are `StashKey<T>`, `&str`, `&String` or `String`"
)]
pub trait StashPath<T>: sealed::Sealed {
    /// The dot-path text, such as `"my-org.count"`.
    fn as_stash_path(&self) -> &str;
}

mod sealed {
    pub trait Sealed {}
}

impl<T> sealed::Sealed for StashKey<T> {}
impl<T> StashPath<T> for StashKey<T> {
    fn as_stash_path(&self) -> &str {
        self.path()
    }
}

impl<T> sealed::Sealed for &StashKey<T> {}
impl<T> StashPath<T> for &StashKey<T> {
    fn as_stash_path(&self) -> &str {
        self.path()
    }
}

impl sealed::Sealed for &str {}
impl<T> StashPath<T> for &str {
    fn as_stash_path(&self) -> &str {
        self
    }
}

impl sealed::Sealed for &String {}
impl<T> StashPath<T> for &String {
    fn as_stash_path(&self) -> &str {
        self
    }
}

impl sealed::Sealed for String {}
impl<T> StashPath<T> for String {
    fn as_stash_path(&self) -> &str {
        self
    }
}

/// A path that passed validation: non-empty, at most [`MAX_DEPTH`] segments, none of them
/// empty or all digits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DotPath<'a> {
    text: &'a str,
    segment_count: usize,
}

impl<'a> DotPath<'a> {
    pub(crate) fn parse(text: &'a str) -> Result<Self, PathProblem<'a>> {
        if text.is_empty() {
            return Err(PathProblem::Empty);
        }
        let mut segment_count = 0;
        for segment in text.split('.') {
            if segment.is_empty() {
                return Err(PathProblem::EmptySegment);
            }
            if is_numeric(segment) {
                return Err(PathProblem::Numeric(segment));
            }
            segment_count += 1;
        }
        if segment_count > MAX_DEPTH {
            return Err(PathProblem::TooDeep(segment_count));
        }
        Ok(Self {
            text,
            segment_count,
        })
    }

    pub(crate) fn as_str(&self) -> &'a str {
        self.text
    }

    pub(crate) fn segment_count(&self) -> usize {
        self.segment_count
    }

    pub(crate) fn segments(&self) -> std::str::Split<'a, char> {
        self.text.split('.')
    }
}

/// What is wrong with a path, before any allocation: `has` only needs to know that it is
/// invalid, the other operations turn it into a [`StashError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathProblem<'a> {
    Empty,
    EmptySegment,
    Numeric(&'a str),
    TooDeep(usize),
}

impl PathProblem<'_> {
    pub(crate) fn into_error(self, path: &str) -> StashError {
        match self {
            Self::Empty => StashError::EmptyPath,
            Self::EmptySegment => StashError::EmptySegment {
                path: path.to_owned(),
            },
            Self::Numeric(segment) => StashError::NumericSegment {
                path: path.to_owned(),
                segment: segment.to_owned(),
            },
            Self::TooDeep(segments) => StashError::PathTooDeep {
                path: path.to_owned(),
                segments,
            },
        }
    }
}

/// Why an object key on the way to a leaf cannot be addressed by a path segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SegmentProblem {
    Empty,
    Numeric,
    Dotted,
}

impl SegmentProblem {
    /// The public description; a dotted key is shown in the nested form `nested_form` builds,
    /// when every part between its dots is a valid segment.
    pub(crate) fn into_key_problem(
        self,
        key: &str,
        nested_form: impl FnOnce() -> String,
    ) -> KeyProblem {
        match self {
            Self::Empty => KeyProblem::Empty,
            Self::Numeric => KeyProblem::Numeric,
            Self::Dotted => KeyProblem::Dotted {
                nested_form: key
                    .split('.')
                    .all(|part| !part.is_empty() && !is_numeric(part))
                    .then(nested_form),
            },
        }
    }
}

/// Digits-only segments are refused because they read as array indices, and arrays are opaque
/// leaves in the stash. Callers rule out the empty string first.
fn is_numeric(segment: &str) -> bool {
    segment.bytes().all(|byte| byte.is_ascii_digit())
}

/// Checks an object key on the way to a leaf: it must be usable as one path segment.
pub(crate) fn key_problem(key: &str) -> Option<SegmentProblem> {
    if key.is_empty() {
        Some(SegmentProblem::Empty)
    } else if key.contains('.') {
        Some(SegmentProblem::Dotted)
    } else if is_numeric(key) {
        Some(SegmentProblem::Numeric)
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn namespaced_paths_are_valid_and_count_their_segments() {
        let path = DotPath::parse("my-org.budgets.input-tokens").expect("valid path");
        assert_eq!(path.segment_count(), 3);
        assert_eq!(
            path.segments().collect::<Vec<_>>(),
            ["my-org", "budgets", "input-tokens"]
        );
    }

    #[test]
    fn empty_path_is_refused() {
        assert_eq!(DotPath::parse("").unwrap_err(), PathProblem::Empty);
    }

    #[test]
    fn leading_trailing_and_doubled_dots_are_empty_segments() {
        for path in [".a", "a.", "a..b", "."] {
            assert_eq!(
                DotPath::parse(path).unwrap_err(),
                PathProblem::EmptySegment,
                "{path}"
            );
        }
    }

    #[test]
    fn all_digit_segments_are_numeric_but_mixed_ones_are_names() {
        assert_eq!(
            DotPath::parse("items.0.id").unwrap_err(),
            PathProblem::Numeric("0")
        );
        assert_eq!(
            DotPath::parse("12").unwrap_err(),
            PathProblem::Numeric("12")
        );
        for path in ["v-1", "1e3", "-1", "0x10", "gpt-4-1", " "] {
            assert!(DotPath::parse(path).is_ok(), "{path}");
        }
    }

    #[test]
    fn paths_longer_than_max_depth_are_refused() {
        let at_limit = vec!["a"; MAX_DEPTH].join(".");
        assert!(DotPath::parse(&at_limit).is_ok());
        let beyond = vec!["a"; MAX_DEPTH + 1].join(".");
        assert_eq!(
            DotPath::parse(&beyond).unwrap_err(),
            PathProblem::TooDeep(MAX_DEPTH + 1)
        );
    }

    #[test]
    fn object_keys_with_dots_are_flagged_as_dotted() {
        assert_eq!(key_problem("my-org.count"), Some(SegmentProblem::Dotted));
        assert_eq!(key_problem("1.2"), Some(SegmentProblem::Dotted));
        assert_eq!(key_problem("7"), Some(SegmentProblem::Numeric));
        assert_eq!(key_problem(""), Some(SegmentProblem::Empty));
        assert_eq!(key_problem("__proto__"), None);
    }
}
