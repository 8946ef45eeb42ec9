//! JSON text laid out as Python's `json.dumps` writes it (google-adk's state columns): `", "`
//! and `": "` separators and every non-ASCII character escaped as `\uXXXX`, so rows written here
//! are byte for byte the rows google-adk writes for the same state.

use std::io;
use std::ops::Range;

use serde::Serialize;
use serde_json::ser::Formatter;
use serde_json::{Map, Value};

use crate::state::{StateChange, StateWrite};

struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Runs of printable ASCII (keys and most values) are copied whole; only the other
        // characters are escaped one by one.
        let mut rest = fragment;
        while !rest.is_empty() {
            let printable = rest
                .bytes()
                .position(|byte| !(b' '..=b'~').contains(&byte))
                .unwrap_or(rest.len());
            writer.write_all(&rest.as_bytes()[..printable])?;
            rest = &rest[printable..];
            let Some(character) = rest.chars().next() else {
                break;
            };
            let mut units = [0_u16; 2];
            for unit in character.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            rest = &rest[character.len_utf8()..];
        }
        Ok(())
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(python_float_repr(value).as_bytes())
    }
}

/// Python's `repr(float)`: the shortest round-trip digits, positional for exponents from -4 to
/// 15, otherwise scientific with a signed exponent of at least two digits (`1e-05`, `1e+16`).
fn python_float_repr(value: f64) -> String {
    let scientific = format!("{value:e}");
    let exponent: i32 = scientific
        .split_once('e')
        .and_then(|(_, exponent)| exponent.parse().ok())
        .unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let positional = format!("{value}");
        if positional.contains('.') {
            positional
        } else {
            positional + ".0"
        }
    } else {
        let mantissa = scientific
            .split_once('e')
            .map_or("", |(mantissa, _)| mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

/// `value` as `json.dumps(value)` would write it.
pub(super) fn to_string(value: &impl Serialize) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    // Maps of JSON values always serialize, and the formatter writes only ASCII.
    if value.serialize(&mut serializer).is_err() {
        return String::from("{}");
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Writes the entry `"key": value` as the map serializer writes it inside an object.
fn write_entry(out: &mut Vec<u8>, key: &str, value: &Value) {
    let mut serializer = serde_json::Serializer::with_formatter(out, PythonFormatter);
    // A string and a JSON value always serialize into a `Vec`.
    let _ = serde::Serializer::serialize_str(&mut serializer, key);
    let out = serializer.into_inner();
    out.extend_from_slice(b": ");
    let mut serializer = serde_json::Serializer::with_formatter(out, PythonFormatter);
    let _ = value.serialize(&mut serializer);
}

/// Where each entry of a map's text is: the byte range of the `i`-th entry's `"key": value`.
pub(super) type Spans = Vec<Range<usize>>;

/// `state` as `json.dumps(state)` would write it (as [`to_string`] does), with the span of each
/// entry, written afresh or, when `previous` is the text and spans [`rewrite`] gave for the
/// state before `writes` were applied to it, by copying the entries `writes` left alone: a
/// commit that changes one key of a large document serializes that key only, not the document.
///
/// Copying relies on how `writes` change a map (`StateWrite::apply_all`): a `Set` or `Merge`
/// of a present key keeps its position and a new key goes last, so entry `i` of the previous
/// text is entry `i` of `state` unless `writes` name its key. A `Delete` moves the last entry
/// into the gap (`swap_remove`), so writes with a delete, or entries that do not line up
/// (`state` shorter than the previous text), are written afresh.
pub(super) fn rewrite(
    state: &Map<String, Value>,
    previous: Option<(&str, &[Range<usize>])>,
    writes: &[StateWrite],
) -> (String, Spans) {
    let previous = previous.filter(|(_, spans)| {
        spans.len() <= state.len()
            && !writes
                .iter()
                .any(|write| matches!(write.change, StateChange::Delete))
    });
    let mut out = Vec::with_capacity(previous.map_or(64, |(text, _)| text.len() + 64));
    let mut spans = Vec::with_capacity(state.len());
    out.push(b'{');
    for (index, (key, value)) in state.iter().enumerate() {
        if index > 0 {
            out.extend_from_slice(b", ");
        }
        let start = out.len();
        let kept = previous
            .and_then(|(text, spans)| text.as_bytes().get(spans.get(index)?.clone()))
            .filter(|_| !writes.iter().any(|write| write.name == *key));
        match kept {
            Some(entry) => out.extend_from_slice(entry),
            None => write_entry(&mut out, key, value),
        }
        spans.push(start..out.len());
    }
    out.push(b'}');
    // The formatter writes only ASCII, and copied entries are whole entries of such text.
    (String::from_utf8(out).unwrap_or_default(), spans)
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use crate::state::{StateChange, StateWrite};

    fn set(name: &str, value: Value) -> StateWrite {
        StateWrite {
            name: name.to_owned(),
            change: StateChange::Set(value),
            expected: None,
        }
    }

    fn delete(name: &str) -> StateWrite {
        StateWrite {
            name: name.to_owned(),
            change: StateChange::Delete,
            expected: None,
        }
    }

    #[test]
    fn a_rewrite_that_copies_unchanged_entries_is_byte_for_byte_a_fresh_serialization() {
        let mut state: Map<String, Value> =
            json!({"a": 1, "é": "日本", "list": [1, 2.5], "z": {"n": null}})
                .as_object()
                .cloned()
                .unwrap_or_default();
        let (mut text, mut spans) = super::rewrite(&state, None, &[]);
        assert_eq!(text, super::to_string(&state));
        // Changes to present keys, new keys, a merge of nothing, a delete (which moves the last
        // entry into its place), and a state shorter than the spans: each rewrite equals what
        // serializing the whole state gives.
        let steps = [
            vec![set("a", json!(2))],
            vec![set("new", json!("x→y")), set("list", json!([]))],
            vec![],
            vec![delete("é")],
            vec![set("a", json!(1e-5)), set("later", json!(true))],
        ];
        for writes in steps {
            StateWrite::apply_all(&writes, &mut state);
            let previous = Some((text.as_str(), spans.as_slice()));
            let (next, next_spans) = super::rewrite(&state, previous, &writes);
            assert_eq!(next, super::to_string(&state), "after {writes:?}");
            assert_eq!(next_spans.len(), state.len());
            (text, spans) = (next, next_spans);
        }
        // Spans of a longer state than the one given are not trusted.
        let short = json!({"only": 1}).as_object().cloned().unwrap_or_default();
        let (fresh, _) = super::rewrite(&short, Some((text.as_str(), spans.as_slice())), &[]);
        assert_eq!(fresh, r#"{"only": 1}"#);
    }

    #[test]
    fn separators_and_escapes_match_python_json_dumps() {
        let value = json!({"k": 1, "k2": "A", "list": [1, 2.5, null], "é": "日本", "f": 1e-5, "g": 1.5e16, "h": 100.0, "i": 0.0001});
        assert_eq!(
            super::to_string(&value),
            r#"{"k": 1, "k2": "A", "list": [1, 2.5, null], "\u00e9": "\u65e5\u672c", "f": 1e-05, "g": 1.5e+16, "h": 100.0, "i": 0.0001}"#
        );
    }

    #[test]
    fn escapes_inside_ascii_runs_keep_the_text_around_them_in_order() {
        let value = json!({"key→1": "a→b😀c\"d\n", "plain": "tail é"});
        assert_eq!(
            super::to_string(&value),
            r#"{"key\u21921": "a\u2192b\ud83d\ude00c\"d\n", "plain": "tail \u00e9"}"#
        );
    }
}
