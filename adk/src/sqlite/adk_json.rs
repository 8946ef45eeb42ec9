//! JSON text laid out as Python's `json.dumps` writes it (google-adk's state columns): `", "`
//! and `": "` separators and every non-ASCII character escaped as `\uXXXX`, so rows written here
//! are byte for byte the rows google-adk writes for the same state.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

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

#[cfg(test)]
mod tests {
    use serde_json::json;

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
