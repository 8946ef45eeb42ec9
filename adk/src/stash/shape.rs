//! The shape every stored tree keeps: at most [`MAX_DEPTH`] levels, and every object key on the
//! way to a leaf usable as a path segment.
//!
//! The check walks an explicit work list instead of recursing, because values reach it before
//! their depth is known: a seed can nest a hundred thousand levels, and recursing once per level
//! would overflow the 2 MiB stack of a tokio worker long before the check could refuse it.

use std::fmt::Write as _;

use serde_json::Value;

use super::MAX_DEPTH;
use super::error::{KeyLocation, KeyProblem};
use super::path::key_problem;

/// Why a value or seed does not fit the stash.
#[derive(Debug)]
pub(crate) enum ShapeProblem {
    /// Nested beyond [`MAX_DEPTH`]; `location` is where the limit was crossed, shortened.
    TooDeep { location: String },
    /// An object key on the way to a leaf cannot be addressed.
    BadKey {
        location: KeyLocation,
        problem: KeyProblem,
    },
}

/// How the walk entered a container, to name locations in errors.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

enum Children<'a> {
    /// `on_spine` is true for objects reached through objects only: their keys become path
    /// segments. Objects inside arrays are opaque data and may use any key.
    Object {
        entries: serde_json::map::Iter<'a>,
        on_spine: bool,
    },
    Array {
        items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    },
}

struct Frame<'a> {
    children: Children<'a>,
    entered_by: Option<Step<'a>>,
}

/// Checks `value`, which will sit `levels_above` levels below the root (the number of segments
/// of the path it is written at; 0 for a seed, which is the root). `prefix` is that path, used
/// only to name locations in errors.
pub(crate) fn check_shape(
    value: &Value,
    levels_above: usize,
    prefix: &str,
) -> Result<(), ShapeProblem> {
    let mut frames: Vec<Frame<'_>> = Vec::new();
    enter(&mut frames, value, None, true, levels_above)?;
    while let Some(frame) = frames.last_mut() {
        let next = match &mut frame.children {
            Children::Object { entries, on_spine } => {
                let on_spine = *on_spine;
                entries
                    .next()
                    .map(|(key, child)| (Step::Key(key), child, on_spine))
            }
            Children::Array { items } => items
                .next()
                .map(|(index, child)| (Step::Index(index), child, false)),
        };
        let Some((step, child, on_spine)) = next else {
            frames.pop();
            continue;
        };
        if let (Step::Key(key), true) = (step, on_spine)
            && let Some(problem) = key_problem(key)
        {
            let location = KeyLocation::new(describe(prefix, &frames, None), key.to_owned());
            let problem = problem.into_key_problem(key, || nested_form(key, child));
            return Err(ShapeProblem::BadKey { location, problem });
        }
        enter(&mut frames, child, Some(step), on_spine, levels_above)?;
    }
    Ok(())
}

/// Pushes a frame for `value` if it is a container, refusing it if that crosses the limit.
fn enter<'a>(
    frames: &mut Vec<Frame<'a>>,
    value: &'a Value,
    entered_by: Option<Step<'a>>,
    on_spine: bool,
    levels_above: usize,
) -> Result<(), ShapeProblem> {
    let children = match value {
        Value::Object(map) => Children::Object {
            entries: map.iter(),
            on_spine,
        },
        Value::Array(items) => Children::Array {
            items: items.iter().enumerate(),
        },
        _ => return Ok(()),
    };
    if levels_above + frames.len() + 1 > MAX_DEPTH {
        return Err(ShapeProblem::TooDeep {
            location: describe("", frames, entered_by),
        });
    }
    frames.push(Frame {
        children,
        entered_by,
    });
    Ok(())
}

/// Names the location of the innermost frame (plus `last`, if given) as `a.b[3].c`, after
/// `prefix`. Only the first few steps are shown: a too-deep location can be thousands long.
fn describe(prefix: &str, frames: &[Frame<'_>], last: Option<Step<'_>>) -> String {
    const SHOWN_STEPS: usize = 8;
    let steps: Vec<Step<'_>> = frames
        .iter()
        .filter_map(|frame| frame.entered_by)
        .chain(last)
        .collect();
    let mut text = String::from(prefix);
    for step in steps.iter().take(SHOWN_STEPS) {
        match step {
            Step::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Step::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
        }
    }
    if steps.len() > SHOWN_STEPS {
        let _ = write!(text, "… ({} segments in all)", steps.len());
    }
    text
}

/// Writes the entry `key: value` with a dotted key in nested form, such as
/// `{"my-org":{"count":5}}`. Containers are elided so the message stays short.
fn nested_form(key: &str, value: &Value) -> String {
    const LONGEST_SHOWN_STRING: usize = 32;
    let shown_value = match value {
        Value::Object(map) if map.is_empty() => "{}".to_owned(),
        Value::Object(_) => "{…}".to_owned(),
        Value::Array(items) if items.is_empty() => "[]".to_owned(),
        Value::Array(_) => "[…]".to_owned(),
        Value::String(text) if text.chars().count() > LONGEST_SHOWN_STRING => "\"…\"".to_owned(),
        scalar => scalar.to_string(),
    };
    let mut text = String::new();
    let mut depth = 0;
    for part in key.split('.') {
        let _ = write!(text, "{{{}:", Value::String(part.to_owned()));
        depth += 1;
    }
    text.push_str(&shown_value);
    text.push_str(&"}".repeat(depth));
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nested_form_splits_a_dotted_key_into_objects() {
        assert_eq!(
            nested_form("my-org.count", &json!(5)),
            r#"{"my-org":{"count":5}}"#
        );
        assert_eq!(nested_form("a.b", &json!({"x": 1})), r#"{"a":{"b":{…}}}"#);
    }

    #[test]
    fn depth_counts_the_levels_above_the_value() {
        let value = json!({"b": {"c": 1}});
        assert!(check_shape(&value, MAX_DEPTH - 2, "p").is_ok());
        assert!(matches!(
            check_shape(&value, MAX_DEPTH - 1, "p"),
            Err(ShapeProblem::TooDeep { .. })
        ));
    }

    #[test]
    fn arrays_count_as_levels_but_their_objects_keep_any_key() {
        let value = json!([{"x.y": 1, "0": 2, "": 3}]);
        assert!(check_shape(&value, MAX_DEPTH - 2, "p").is_ok());
        assert!(check_shape(&value, MAX_DEPTH - 1, "p").is_err());
    }

    #[test]
    fn bad_keys_are_located_under_the_prefix() {
        let problem = check_shape(&json!({"a": {"7": true}}), 1, "my-org").unwrap_err();
        let ShapeProblem::BadKey { location, problem } = problem else {
            panic!("expected a bad key, got {problem:?}");
        };
        assert_eq!(location.parent(), "my-org.a");
        assert_eq!(location.key(), "7");
        assert_eq!(problem, KeyProblem::Numeric);
    }

    #[test]
    fn too_deep_locations_are_shortened() {
        let mut value = json!(1);
        for _ in 0..(MAX_DEPTH + 5) {
            value = json!({ "a": value });
        }
        let ShapeProblem::TooDeep { location } = check_shape(&value, 0, "").unwrap_err() else {
            panic!("expected too deep");
        };
        assert_eq!(
            location,
            format!("a.a.a.a.a.a.a.a… ({MAX_DEPTH} segments in all)")
        );
    }
}
