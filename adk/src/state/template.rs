//! Instruction templating: `{name}` placeholders in the system prompt and standing instructions,
//! filled from state before the dispatch (Google ADK's `inject_session_state`).
//!
//! | placeholder | renders |
//! |---|---|
//! | `{name}`, `{app:name}`, `{user:name}`, `{temp:name}` | the key's value: a string as itself, `null` as nothing, anything else as JSON; a missing key is a [`TemplateError`] |
//! | `{name?}` | the same, or nothing when the key is missing |
//! | `{not a name}`, `{invalid:key}`, `{artifact.x}` | left verbatim |
//! | `${x}`, `\{x}` | left verbatim (escaped) |
//!
//! A name is an identifier (letters, digits, `_`, not starting with a digit), optionally after
//! one of the prefixes `app:`, `user:`, `temp:`. Only fixed text is rendered: a dynamic
//! [`Tokenizable`](crate::primitives::Tokenizable) is computed by your code, which can call
//! [`render`] itself.
//!
//! ```
//! use adk::state::{State, template};
//! use serde_json::json;
//!
//! let mut state = State::new();
//! state.set_value("user:name", json!("Ada"))?;
//! state.set_value("count", json!(3))?;
//! let text = template::render("Hi {user:name}, {count} new. {mood?} {not-a-key}", &state)?;
//! assert_eq!(text, "Hi Ada, 3 new.  {not-a-key}");
//! assert_eq!(
//!     template::render("Hi {user:missing}", &state).unwrap_err().key(),
//!     "user:missing"
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;

use serde_json::Value;

use super::{Scope, State};

/// A template named a required key that the state does not hold. The turn fails with
/// `E_STATE_TEMPLATE_KEY_MISSING` and the model is never called with the placeholder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the instructions name the state key `{key}`, which the turn's state does not hold: set it \
     before the dispatch (a `turn_input` middleware, or the session's stored state), or write \
     `{{{key}?}}` to render nothing when it is missing"
)]
pub struct TemplateError {
    key: String,
}

impl TemplateError {
    /// The missing key, prefix included.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// Renders every placeholder of `text` from `state`; text without placeholders is returned as
/// is, without copying.
///
/// # Errors
///
/// [`TemplateError`] naming the first required key that `state` does not hold.
pub fn render<'a>(text: &'a str, state: &State) -> Result<Cow<'a, str>, TemplateError> {
    // `memchr` reads the text a vector at a time from any address: `str::contains` goes byte
    // by byte until its word-aligned part, and a short prompt kept inline has none.
    if memchr::memchr(b'{', text.as_bytes()).is_none() {
        return Ok(Cow::Borrowed(text));
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] != b'{' || (index > 0 && matches!(bytes[index - 1], b'$' | b'{' | b'\\')) {
            index += 1;
            continue;
        }
        let Some(end) = placeholder_end(bytes, index) else {
            index += 1;
            continue;
        };
        let placeholder = &text[index..end];
        if let Some(rendered) = render_placeholder(placeholder, state)? {
            out.push_str(&text[copied..index]);
            out.push_str(&rendered);
            copied = end;
        }
        index = end;
    }
    out.push_str(&text[copied..]);
    Ok(Cow::Owned(out))
}

/// Where the placeholder starting at `start` ends: `{+[^{}]*}+`, as Google ADK matches it.
fn placeholder_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut index = start;
    while index < bytes.len() && bytes[index] == b'{' {
        index += 1;
    }
    while index < bytes.len() && !matches!(bytes[index], b'{' | b'}') {
        index += 1;
    }
    if index >= bytes.len() || bytes[index] != b'}' {
        return None;
    }
    while index < bytes.len() && bytes[index] == b'}' {
        index += 1;
    }
    Some(index)
}

/// The text for one placeholder, or `None` to leave it verbatim.
fn render_placeholder(placeholder: &str, state: &State) -> Result<Option<String>, TemplateError> {
    let inner = placeholder
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim();
    let (key, optional) = match inner.strip_suffix('?') {
        Some(key) => (key, true),
        None => (inner, false),
    };
    if !is_state_name(key) {
        return Ok(None);
    }
    match state.value(key) {
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(Value::Null) => Ok(Some(String::new())),
        Some(other) => Ok(Some(other.to_string())),
        None if optional => Ok(Some(String::new())),
        None => Err(TemplateError {
            key: key.to_owned(),
        }),
    }
}

/// An identifier, optionally after `app:`, `user:` or `temp:`.
fn is_state_name(key: &str) -> bool {
    let (_, name) = Scope::of(key);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_alphabetic())
        && chars.all(|next| next == '_' || next.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn state() -> State {
        let mut state = State::new();
        for (key, value) in [
            ("name", json!("Ada")),
            ("app:motd", json!("sale")),
            ("user:lang", json!("fr")),
            ("temp:n", json!(2)),
            ("nothing", json!(null)),
        ] {
            state.set_value(key, value).expect("valid key");
        }
        state
    }

    fn rendered(text: &str) -> String {
        render(text, &state()).expect("renders").into_owned()
    }

    #[test]
    fn every_scope_renders_from_state() {
        assert_eq!(
            rendered("{name}/{app:motd}/{user:lang}/{temp:n}"),
            "Ada/sale/fr/2"
        );
    }

    #[test]
    fn null_renders_as_nothing_and_optional_missing_keys_too() {
        assert_eq!(rendered("[{nothing}][{absent?}]"), "[][]");
    }

    #[test]
    fn names_are_trimmed_and_doubled_braces_still_render() {
        assert_eq!(rendered("{ name }|{{name}}"), "Ada|Ada");
    }

    #[test]
    fn invalid_names_and_escaped_braces_are_left_verbatim() {
        let text = "{invalid-key} {invalid:key} {artifact.file} ${name} \\{name} {} {1st}";
        assert_eq!(rendered(text), text);
    }

    #[test]
    fn unbalanced_braces_are_left_verbatim() {
        assert_eq!(rendered("{name {name} }"), "{name Ada }");
    }

    #[test]
    fn a_missing_required_key_is_an_error_naming_it() {
        let error = render("Hello {user:nickname}", &state()).expect_err("missing");
        assert_eq!(error.key(), "user:nickname");
        assert!(error.to_string().contains("`{user:nickname?}`"), "{error}");
    }

    #[test]
    fn text_without_braces_is_not_copied() {
        assert!(matches!(
            render("plain", &state()).expect("renders"),
            Cow::Borrowed(_)
        ));
    }
}
