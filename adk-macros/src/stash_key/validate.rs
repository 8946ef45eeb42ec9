//! The rules a stash path must follow, checked while the user's crate compiles.
//!
//! The stash turns every dot into a level of nesting (`"my-org.count"` is stored as
//! `{"my-org": {"count": ..}}`), keeps arrays as opaque leaves, and lets a write to a parent
//! path erase its children. So a path needs a namespace, named non-empty segments made of
//! `[A-Za-z0-9_-]`, and, inside one group of keys, no path that is the parent of another.
//!
//! The rules themselves are pure functions over strings ([`path_problems`], [`collisions`]);
//! [`check_path`] and [`check_group`] turn them into errors at the user's tokens.

use std::fmt;

use syn::LitStr;

use super::Errors;
use super::parse::{KeyItem, PathSource};

/// The namespace used in suggestions when the user's path has none of its own.
const EXAMPLE_NAMESPACE: &str = "my-org";

/// One thing wrong with a stash path. Its `Display` is the whole error message: what is wrong,
/// why it matters in the stash, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathProblem {
    Empty,
    NoNamespace {
        path: String,
        suggestion: String,
    },
    LeadingDot {
        path: String,
        suggestion: String,
    },
    TrailingDot {
        path: String,
        suggestion: String,
    },
    DoubledDot {
        path: String,
        suggestion: String,
    },
    /// A dot inside a version or model name (`gpt-4.1`), which splits it into a numeric segment.
    VersionDot {
        path: String,
        dotted_name: String,
        numeric_segment: String,
        suggestion: String,
    },
    /// An all-digit segment, which would address an array element.
    NumericSegment {
        path: String,
        segment: String,
        /// The path of the array the segment would index into, when that path is itself usable.
        array_path: Option<String>,
    },
    Whitespace {
        path: String,
        segment: String,
        suggestion: String,
    },
    InvalidCharacters {
        path: String,
        segment: String,
        characters: Vec<char>,
        /// `None` when a letter has no ASCII spelling the macro knows (`größe` has one,
        /// `数量` does not): a guess that drops letters would be worse than none.
        suggestion: Option<String>,
    },
}

impl fmt::Display for PathProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(
                formatter,
                "the stash path is empty; write `<namespace>.<key>`, for example \
                 `\"{EXAMPLE_NAMESPACE}.count\"`"
            ),
            Self::NoNamespace { path, suggestion } => write!(
                formatter,
                "stash path `{path}` has no namespace; write `<namespace>.<key>` so keys from \
                 different crates cannot collide, for example `\"{suggestion}\"`"
            ),
            Self::LeadingDot { path, suggestion } => write!(
                formatter,
                "stash path `{path}` starts with a dot, which leaves its first segment empty; \
                 remove the dot: `\"{suggestion}\"`"
            ),
            Self::TrailingDot { path, suggestion } => write!(
                formatter,
                "stash path `{path}` ends with a dot, which leaves its last segment empty; \
                 remove the dot or name the key after it: `\"{suggestion}\"`"
            ),
            Self::DoubledDot { path, suggestion } => write!(
                formatter,
                "stash path `{path}` has two dots in a row, which leaves an empty segment \
                 between them; use one dot: `\"{suggestion}\"`"
            ),
            Self::VersionDot {
                path,
                dotted_name,
                numeric_segment,
                suggestion,
            } => write!(
                formatter,
                "stash path `{path}` splits `{dotted_name}` at a dot: dots in a stash path make \
                 nesting levels, so `{numeric_segment}` becomes a numeric segment (an array \
                 index); write versions with hyphens: `\"{suggestion}\"`"
            ),
            Self::NumericSegment {
                path,
                segment,
                array_path: Some(array_path),
            } => write!(
                formatter,
                "segment `{segment}` of stash path `{path}` is a number, but the stash keeps \
                 arrays as opaque leaves that a path cannot reach into; store the whole array \
                 under `\"{array_path}\"` and index it after reading it"
            ),
            Self::NumericSegment {
                path,
                segment,
                array_path: None,
            } => write!(
                formatter,
                "segment `{segment}` of stash path `{path}` is a number, but numeric segments \
                 would address array elements, which the stash keeps as opaque leaves; give \
                 the segment a name"
            ),
            Self::Whitespace {
                path,
                segment,
                suggestion,
            } => write!(
                formatter,
                "segment `{segment}` of stash path `{path}` contains whitespace; segments may \
                 only contain ASCII letters, digits, `_` and `-`: `\"{suggestion}\"`"
            ),
            Self::InvalidCharacters {
                path,
                segment,
                characters,
                suggestion,
            } => {
                let listed = characters
                    .iter()
                    .map(|character| format!("`{}`", character.escape_debug()))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(
                    formatter,
                    "segment `{segment}` of stash path `{path}` contains {listed}; segments may \
                     only contain ASCII letters, digits, `_` and `-`"
                )?;
                match suggestion {
                    Some(suggestion) => write!(formatter, ": `\"{suggestion}\"`"),
                    None => write!(formatter, "; name the segment in ASCII"),
                }
            }
        }
    }
}

fn is_allowed(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '_' || character == '-'
}

fn is_numeric(segment: &str) -> bool {
    !segment.is_empty() && segment.bytes().all(|byte| byte.is_ascii_digit())
}

/// Whether a numeric segment right after `segment` continues a version or model name cut at a
/// dot (`gpt-4` `.` `1`, `v1` `.` `2`): a name, not a number, that ends in a digit.
fn opens_version(segment: &str) -> bool {
    !is_numeric(segment) && segment.ends_with(|character: char| character.is_ascii_digit())
}

/// Every problem of `path`, in the order a reader meets them. Empty when the path is valid.
pub(crate) fn path_problems(path: &str) -> Vec<PathProblem> {
    if path.is_empty() {
        return vec![PathProblem::Empty];
    }
    let mut problems = Vec::new();
    let suggestion = suggested_path(path);
    let segments: Vec<&str> = path.split('.').collect();
    let last = segments.len() - 1;

    if segments.len() == 1 {
        problems.push(PathProblem::NoNamespace {
            path: path.to_owned(),
            suggestion: suggestion.clone(),
        });
    }
    if segments[0].is_empty() {
        problems.push(PathProblem::LeadingDot {
            path: path.to_owned(),
            suggestion: suggestion.clone(),
        });
    }
    if segments.len() > 2 && segments[1..last].iter().any(|segment| segment.is_empty()) {
        problems.push(PathProblem::DoubledDot {
            path: path.to_owned(),
            suggestion: suggestion.clone(),
        });
    }
    if last > 0 && segments[last].is_empty() {
        problems.push(PathProblem::TrailingDot {
            path: path.to_owned(),
            suggestion: suggestion.clone(),
        });
    }

    let mut index = 0;
    while index < segments.len() {
        let segment = segments[index];
        if index > 0 && is_numeric(segment) && opens_version(segments[index - 1]) {
            // Report the whole dotted name once: `gpt-4.1.5` is one mistake, not two.
            let start = index - 1;
            let mut end = index + 1;
            while end < segments.len() && is_numeric(segments[end]) {
                end += 1;
            }
            problems.push(PathProblem::VersionDot {
                path: path.to_owned(),
                dotted_name: segments[start..end].join("."),
                numeric_segment: segment.to_owned(),
                suggestion: suggestion.clone(),
            });
            index = end;
            continue;
        }
        if is_numeric(segment) {
            // The array lives at the segments before the index, repaired like the whole path;
            // with fewer than two of them there is no namespaced array path to point to.
            let named_before = segments[..index]
                .iter()
                .filter(|before| !clean_segment(before).is_empty())
                .count();
            let array_path =
                (named_before >= 2).then(|| suggested_path(&segments[..index].join(".")));
            problems.push(PathProblem::NumericSegment {
                path: path.to_owned(),
                segment: segment.to_owned(),
                array_path,
            });
        }
        if segment.chars().any(char::is_whitespace) {
            problems.push(PathProblem::Whitespace {
                path: path.to_owned(),
                segment: segment.to_owned(),
                suggestion: suggestion.clone(),
            });
        }
        let mut characters: Vec<char> = Vec::new();
        for character in segment.chars() {
            if !is_allowed(character)
                && !character.is_whitespace()
                && !characters.contains(&character)
            {
                characters.push(character);
            }
        }
        if !characters.is_empty() {
            let spelled = characters.iter().all(|character| {
                !character.is_alphabetic() || transliteration(*character).is_some()
            });
            problems.push(PathProblem::InvalidCharacters {
                path: path.to_owned(),
                segment: segment.to_owned(),
                characters,
                suggestion: spelled.then(|| suggestion.clone()),
            });
        }
        index += 1;
    }
    problems
}

/// The path with every problem repaired: characters outside `[A-Za-z0-9_-]` become `-`, empty
/// segments and array indices are dropped, a version cut at a dot is rejoined with `-`, and a
/// path without a namespace gets `my-org.` in front.
pub(crate) fn suggested_path(path: &str) -> String {
    let mut segments: Vec<String> = Vec::new();
    // True while the last kept segment is a name ending in a digit, or a version built from one.
    let mut version_open = false;
    for raw in path.split('.') {
        let cleaned = clean_segment(raw);
        if is_numeric(raw) && version_open {
            if let Some(version) = segments.last_mut() {
                version.push('-');
                version.push_str(raw);
            }
        } else if !cleaned.is_empty() && !is_numeric(&cleaned) {
            segments.push(cleaned);
            version_open = opens_version(raw);
        } else {
            version_open = false;
        }
    }
    match segments.len() {
        0 => format!("{EXAMPLE_NAMESPACE}.count"),
        1 => format!("{EXAMPLE_NAMESPACE}.{}", segments[0]),
        _ => segments.join("."),
    }
}

/// The ASCII spelling of a Latin letter with a diacritic, as a German or French writer would
/// spell it without one (`ö` is `oe`, `é` is `e`); `None` for letters of other scripts.
fn transliteration(character: char) -> Option<&'static str> {
    Some(match character {
        'ä' => "ae",
        'ö' => "oe",
        'ü' => "ue",
        'Ä' => "Ae",
        'Ö' => "Oe",
        'Ü' => "Ue",
        'ß' => "ss",
        'æ' => "ae",
        'Æ' => "Ae",
        'œ' => "oe",
        'Œ' => "Oe",
        'ø' => "o",
        'Ø' => "O",
        'å' => "a",
        'Å' => "A",
        'à' | 'á' | 'â' | 'ã' | 'ā' | 'ă' | 'ą' => "a",
        'À' | 'Á' | 'Â' | 'Ã' | 'Ā' => "A",
        'ç' | 'ć' | 'č' => "c",
        'Ç' | 'Ć' | 'Č' => "C",
        'ď' | 'đ' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' | 'ě' => "e",
        'È' | 'É' | 'Ê' | 'Ë' | 'Ē' => "E",
        'ğ' => "g",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'ı' => "i",
        'Ì' | 'Í' | 'Î' | 'Ï' | 'İ' => "I",
        'ł' | 'ľ' => "l",
        'Ł' => "L",
        'ñ' | 'ń' | 'ň' => "n",
        'Ñ' => "N",
        'ò' | 'ó' | 'ô' | 'õ' | 'ō' | 'ő' => "o",
        'Ò' | 'Ó' | 'Ô' | 'Õ' => "O",
        'ř' => "r",
        'ś' | 'š' | 'ş' => "s",
        'Ś' | 'Š' | 'Ş' => "S",
        'ť' | 'ţ' => "t",
        'ù' | 'ú' | 'û' | 'ū' | 'ů' | 'ű' => "u",
        'Ù' | 'Ú' | 'Û' => "U",
        'ý' | 'ÿ' => "y",
        'Ý' => "Y",
        'ź' | 'ż' | 'ž' => "z",
        'Ź' | 'Ż' | 'Ž' => "Z",
        _ => return None,
    })
}

/// Replaces each run of disallowed characters inside a segment by one `-`, dropping runs at
/// either end (`" my org "` becomes `my-org`); Latin letters with diacritics are spelled in
/// ASCII first (`größe` becomes `groesse`).
fn clean_segment(raw: &str) -> String {
    let mut cleaned = String::new();
    let mut pending_separator = false;
    for character in raw.chars() {
        if let Some(spelled) = transliteration(character) {
            if pending_separator && !cleaned.is_empty() {
                cleaned.push('-');
            }
            pending_separator = false;
            cleaned.push_str(spelled);
        } else if is_allowed(character) {
            if pending_separator && !cleaned.is_empty() {
                cleaned.push('-');
            }
            pending_separator = false;
            cleaned.push(character);
        } else {
            pending_separator = true;
        }
    }
    cleaned
}

/// A structural clash between two keys of one `stash_keys!` group, by index into the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Collision {
    /// `second` uses the same path as the earlier `first`.
    Duplicate { first: usize, second: usize },
    /// `parent`'s path is a prefix of `child`'s at a dot: writing the parent erases the child.
    Parent { parent: usize, child: usize },
}

/// Every collision among `paths`. A child is reported against its nearest parent only, and a
/// repeated path is compared with the others through its first occurrence only, so one
/// mistake gives one error.
pub(crate) fn collisions(paths: &[&str]) -> Vec<Collision> {
    let mut found = Vec::new();
    let mut first_occurrences: Vec<usize> = Vec::new();
    for (index, path) in paths.iter().enumerate() {
        match first_occurrences
            .iter()
            .find(|&&earlier| paths[earlier] == *path)
        {
            Some(&first) => found.push(Collision::Duplicate {
                first,
                second: index,
            }),
            None => first_occurrences.push(index),
        }
    }
    for &child in &first_occurrences {
        let nearest_parent = first_occurrences
            .iter()
            .copied()
            .filter(|&candidate| is_parent(paths[candidate], paths[child]))
            .max_by_key(|&candidate| paths[candidate].len());
        if let Some(parent) = nearest_parent {
            found.push(Collision::Parent { parent, child });
        }
    }
    found
}

fn is_parent(parent: &str, child: &str) -> bool {
    child.len() > parent.len()
        && child.starts_with(parent)
        && child.as_bytes()[parent.len()] == b'.'
}

/// Checks a key's path: it must be a string literal and follow every path rule. Returns the
/// literal when it is usable as it stands.
pub(crate) fn check_path<'a>(
    path: &'a PathSource,
    usage: &str,
    errors: &mut Errors,
) -> Option<&'a LitStr> {
    match path {
        PathSource::NotAStringLiteral(expression) => {
            errors.at(
                expression,
                format!(
                    "the stash path must be a string literal so it can be checked at compile \
                     time; write it out: `{usage}`"
                ),
            );
            None
        }
        PathSource::Literal(literal) => {
            let problems = path_problems(&literal.value());
            let is_valid = problems.is_empty();
            for problem in problems {
                errors.at(literal, problem);
            }
            is_valid.then_some(literal)
        }
    }
}

/// Refuses a borrowed value type where the key is declared, with the owned type to write.
/// Other types that are not stash data (`Instant`) are refused by the type system, through the
/// assertion the expansion places at the type.
pub(crate) fn check_value_type(value_type: &syn::Type, errors: &mut Errors) {
    let syn::Type::Reference(reference) = value_type else {
        return;
    };
    let owned = match &*reference.elem {
        syn::Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
        syn::Type::Path(path) if path.path.is_ident("Path") => "PathBuf".to_owned(),
        syn::Type::Slice(slice) => format!("Vec<{}>", super::parse::display_tokens(&slice.elem)),
        other => super::parse::display_tokens(other),
    };
    errors.at(
        value_type,
        format!(
            "a stash value is owned data that outlives the turn, so it cannot be a borrow; \
             store `{owned}` instead of `{}`",
            super::parse::display_tokens(value_type)
        ),
    );
}

/// Checks every key of a `stash_keys!` group on its own, then the valid ones against each
/// other. Returns, per key, whether its path is valid.
pub(crate) fn check_group(items: &[KeyItem], errors: &mut Errors) -> Vec<bool> {
    let mut valid_keys: Vec<(&KeyItem, &LitStr)> = Vec::new();
    let mut validity = Vec::with_capacity(items.len());
    for item in items {
        check_value_type(&item.value_type, errors);
        let usage = format!("{}: \"my-org.count\" => u32", item.name);
        match check_path(&item.path, &usage, errors) {
            Some(literal) => {
                valid_keys.push((item, literal));
                validity.push(true);
            }
            None => validity.push(false),
        }
    }
    let values: Vec<String> = valid_keys
        .iter()
        .map(|(_, literal)| literal.value())
        .collect();
    let paths: Vec<&str> = values.iter().map(String::as_str).collect();
    for collision in collisions(&paths) {
        collision_error(collision, &valid_keys, &paths, errors);
    }
    validity
}

fn collision_error(
    collision: Collision,
    keys: &[(&KeyItem, &LitStr)],
    paths: &[&str],
    errors: &mut Errors,
) {
    match collision {
        Collision::Duplicate { first, second } => {
            let (first_key, _) = keys[first];
            let (second_key, second_literal) = keys[second];
            errors.at(
                second_literal,
                format!(
                    "stash path `{path}` is declared twice: `{first_name}` already uses it, so \
                     `{second_name}` would read and overwrite the same value; give \
                     `{second_name}` a path of its own",
                    path = paths[second],
                    first_name = first_key.name,
                    second_name = second_key.name,
                ),
            );
        }
        Collision::Parent { parent, child } => {
            let (parent_key, parent_literal) = keys[parent];
            let (child_key, _) = keys[child];
            errors.at(
                parent_literal,
                format!(
                    "stash path `{parent_path}` of `{parent_name}` is the parent of \
                     `{child_path}` of `{child_name}`: setting `{parent_name}` replaces the whole \
                     object at `{parent_path}` and erases `{child_name}`; store `{parent_name}` \
                     under a leaf of its own, such as `\"{parent_path}.value\"`, or move \
                     `{child_name}` out from under it",
                    parent_path = paths[parent],
                    child_path = paths[child],
                    parent_name = parent_key.name,
                    child_name = child_key.name,
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(path: &str) -> Vec<String> {
        path_problems(path)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn namespaced_paths_made_of_names_are_valid() {
        for path in [
            "my-org.count",
            "adk-battery-openai.retry-count",
            "my-org.budgets.input-tokens-remaining",
            "my_org.Count2",
            "my-org.gpt-4-1",
            "my-org.v2",
        ] {
            assert_eq!(path_problems(path), [], "{path}");
        }
    }

    #[test]
    fn empty_path_is_one_problem() {
        assert_eq!(path_problems(""), [PathProblem::Empty]);
        assert!(messages("")[0].contains("\"my-org.count\""));
    }

    #[test]
    fn single_segment_has_no_namespace_and_gets_an_example_namespace() {
        assert_eq!(
            path_problems("count"),
            [PathProblem::NoNamespace {
                path: "count".into(),
                suggestion: "my-org.count".into(),
            }]
        );
    }

    #[test]
    fn each_kind_of_empty_segment_is_named() {
        assert!(matches!(
            path_problems(".count")[..],
            [PathProblem::LeadingDot { .. }]
        ));
        assert!(matches!(
            path_problems("my-org.")[..],
            [PathProblem::TrailingDot { .. }]
        ));
        assert!(matches!(
            path_problems("my-org..count")[..],
            [PathProblem::DoubledDot { .. }]
        ));
        assert!(messages("my-org..count")[0].ends_with("`\"my-org.count\"`"));
    }

    #[test]
    fn all_problems_of_one_path_are_reported_together() {
        let problems = path_problems(".my org..items.0.");
        assert_eq!(problems.len(), 5, "{problems:#?}");
        assert!(matches!(problems[0], PathProblem::LeadingDot { .. }));
        assert!(matches!(problems[1], PathProblem::DoubledDot { .. }));
        assert!(matches!(problems[2], PathProblem::TrailingDot { .. }));
        assert!(matches!(problems[3], PathProblem::Whitespace { .. }));
        assert!(matches!(problems[4], PathProblem::NumericSegment { .. }));
    }

    #[test]
    fn numeric_segment_points_to_storing_the_whole_array() {
        assert_eq!(
            path_problems("my-org.items.0"),
            [PathProblem::NumericSegment {
                path: "my-org.items.0".into(),
                segment: "0".into(),
                array_path: Some("my-org.items".into()),
            }]
        );
    }

    #[test]
    fn numeric_namespace_has_no_array_to_point_to() {
        assert!(matches!(
            &path_problems("42.count")[..],
            [PathProblem::NumericSegment {
                array_path: None,
                ..
            }]
        ));
    }

    #[test]
    fn dot_inside_a_model_name_is_a_version_dot_fixed_with_a_hyphen() {
        assert_eq!(
            path_problems("my-org.gpt-4.1"),
            [PathProblem::VersionDot {
                path: "my-org.gpt-4.1".into(),
                dotted_name: "gpt-4.1".into(),
                numeric_segment: "1".into(),
                suggestion: "my-org.gpt-4-1".into(),
            }]
        );
    }

    #[test]
    fn numbers_after_an_array_index_are_array_indices_too() {
        let problems = path_problems("my-org.items.0.1");
        assert!(
            matches!(
                problems[..],
                [
                    PathProblem::NumericSegment { .. },
                    PathProblem::NumericSegment { .. }
                ]
            ),
            "{problems:#?}"
        );
        assert_eq!(suggested_path("my-org.items.0.1"), "my-org.items");
    }

    #[test]
    fn a_version_with_several_dots_is_one_problem() {
        let problems = path_problems("my-org.v1.2.3.limit");
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(messages("my-org.v1.2.3.limit")[0].contains("`v1.2.3`"));
        assert_eq!(suggested_path("my-org.v1.2.3.limit"), "my-org.v1-2-3.limit");
    }

    #[test]
    fn whitespace_and_foreign_characters_are_separate_problems() {
        let problems = path_problems("my-org.my count/total");
        assert!(matches!(
            problems[..],
            [
                PathProblem::Whitespace { .. },
                PathProblem::InvalidCharacters { .. }
            ]
        ));
        assert_eq!(
            suggested_path("my-org.my count/total"),
            "my-org.my-count-total"
        );
    }

    #[test]
    fn each_foreign_character_is_listed_once() {
        assert_eq!(
            path_problems("my-org.a/b/c@d"),
            [PathProblem::InvalidCharacters {
                path: "my-org.a/b/c@d".into(),
                segment: "a/b/c@d".into(),
                characters: vec!['/', '@'],
                suggestion: Some("my-org.a-b-c-d".into()),
            }]
        );
    }

    #[test]
    fn latin_letters_with_diacritics_are_spelled_in_ascii() {
        assert_eq!(suggested_path("my-org.größe"), "my-org.groesse");
        assert_eq!(suggested_path("café.crème"), "cafe.creme");
        let text = path_problems("my-org.größe")[0].to_string();
        assert!(text.ends_with("`\"my-org.groesse\"`"), "{text}");
    }

    #[test]
    fn letters_without_an_ascii_spelling_get_no_guess() {
        let problems = path_problems("my-org.数量");
        assert!(matches!(
            &problems[..],
            [PathProblem::InvalidCharacters {
                suggestion: None,
                ..
            }]
        ));
        let text = problems[0].to_string();
        assert!(text.ends_with("name the segment in ASCII"), "{text}");
    }

    #[test]
    fn suggestions_are_themselves_valid_paths() {
        for path in [
            "",
            "count",
            ".count",
            "my-org.",
            "my-org..count",
            "my-org.items.0",
            "0.1",
            " my org . count ",
            "my-org.café",
            "com.example.gpt-4.1",
            "é",
        ] {
            let suggestion = suggested_path(path);
            assert_eq!(path_problems(&suggestion), [], "{path:?} -> {suggestion:?}");
        }
    }

    #[test]
    fn a_repeated_path_is_a_duplicate_of_its_first_occurrence() {
        assert_eq!(
            collisions(&["my-org.a", "my-org.b", "my-org.a", "my-org.a"]),
            [
                Collision::Duplicate {
                    first: 0,
                    second: 2
                },
                Collision::Duplicate {
                    first: 0,
                    second: 3
                },
            ]
        );
    }

    #[test]
    fn a_parent_path_collides_with_its_children_in_either_order() {
        assert_eq!(
            collisions(&["my-org.policy", "my-org.policy.mode"]),
            [Collision::Parent {
                parent: 0,
                child: 1
            }]
        );
        assert_eq!(
            collisions(&["my-org.policy.mode", "my-org.policy"]),
            [Collision::Parent {
                parent: 1,
                child: 0
            }]
        );
    }

    #[test]
    fn a_child_is_reported_against_its_nearest_parent_only() {
        assert_eq!(
            collisions(&["a.b", "a.b.c", "a.b.c.d"]),
            [
                Collision::Parent {
                    parent: 0,
                    child: 1
                },
                Collision::Parent {
                    parent: 1,
                    child: 2
                },
            ]
        );
    }

    #[test]
    fn a_shared_prefix_without_a_dot_is_not_a_parent() {
        assert_eq!(collisions(&["my-org.policy", "my-org.policy-mode"]), []);
        assert_eq!(collisions(&["my-org.a.x", "my-org.a.y"]), []);
    }
}
