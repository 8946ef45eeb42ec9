//! The app's state as [`SqliteSessionStore`](super::SqliteSessionStore)'s connection last read
//! or wrote it, kept parsed.
//!
//! Every session of an app shares its one `app_states` row, so the row holds every `app:` key
//! the app's turns have written (hundreds, on a busy app), and a turn read it twice (its load and
//! its commit) and parsed the whole JSON document each time: a third of a turn's instructions.
//! The store now keeps the last row it read or wrote, as its text and that text parsed, and
//! parses a row again only when its text differs. The text is always the row as read in the
//! current transaction, compared byte for byte, so what a load returns and what a commit checks
//! its stale keys against are exactly what parsing the row would give, whoever wrote it last
//! (another handle, google-adk, another process).
//!
//! The kept state is shared, not copied: a load hands the turn the kept `Arc` itself
//! (`LoadedTurn::app`), and a commit changes the state in place when no turn holds it any more,
//! else changes a copy (`Arc::make_mut`) and keeps that, the turns keeping what they read.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};

use super::adk_json::Spans;
use crate::state::SessionStoreError;

/// An app's state as kept: shared with the turns that loaded it.
pub(super) type SharedState = Arc<Map<String, Value>>;

/// One app's row: its name, its `state` text and that text parsed, and where each entry is in
/// the text when the store wrote it (`adk_json::rewrite`; `None` for a text it read).
#[derive(Debug)]
struct Kept {
    app: String,
    text: String,
    state: SharedState,
    spans: Option<Spans>,
}

/// The last app row the store's connection read or wrote (one app's; an agent serves one app,
/// and a store serving several simply parses on a change of app).
#[derive(Debug, Default)]
pub(super) struct AppRow(Mutex<Option<Kept>>);

impl AppRow {
    /// `text`, the `state` of `app`'s row as just read, parsed: the kept state (shared, not
    /// copied) when it was kept for this very text, else parsed afresh and kept.
    pub(super) fn parsed(
        &self,
        app: &str,
        text: String,
        parse: impl FnOnce(&str) -> Result<Map<String, Value>, SessionStoreError>,
    ) -> Result<SharedState, SessionStoreError> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = kept
            .as_ref()
            .filter(|kept| kept.app == app && kept.text == text)
        {
            return Ok(Arc::clone(&kept.state));
        }
        let state = Arc::new(parse(&text)?);
        *kept = Some(Kept {
            app: app.to_owned(),
            text,
            state: Arc::clone(&state),
            spans: None,
        });
        Ok(state)
    }

    /// Like [`parsed`](Self::parsed), but takes the kept state out (for a commit, which changes
    /// it and then [`keep`](Self::keep)s what it wrote), with the spans of its entries in `text`
    /// when the store wrote that text.
    pub(super) fn take(
        &self,
        app: &str,
        text: &str,
        parse: impl FnOnce(&str) -> Result<Map<String, Value>, SessionStoreError>,
    ) -> Result<(SharedState, Option<Spans>), SessionStoreError> {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match kept.take() {
            Some(kept) if kept.app == app && kept.text == text => Ok((kept.state, kept.spans)),
            _ => Ok((Arc::new(parse(text)?), None)),
        }
    }

    /// Keeps `state` as `app`'s row whose text is `text`: `text` is `state` serialized (what
    /// was just written, with its entries' `spans`) or the text `state` was parsed from.
    pub(super) fn keep(&self, app: &str, text: String, state: SharedState, spans: Option<Spans>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Kept {
            app: app.to_owned(),
            text,
            state,
            spans,
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::AppRow;
    use crate::state::SessionStoreError;

    fn parse(text: &str) -> Result<Map<String, Value>, SessionStoreError> {
        serde_json::from_str(text)
            .map_err(|error| SessionStoreError::InvalidData(error.to_string()))
    }

    fn state(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_written_state_is_what_parsing_its_text_gives_key_order_included() {
        // `keep` after a write relies on this: the kept state of a written row is exactly the
        // state a later parse of that row's text returns.
        let written = state(json!({
            "z": 1, "a": -7, "big": u64::MAX, "f": 0.1, "tiny": 1e-5, "huge": 1.5e16,
            "whole": 100.0, "neg_zero": -0.0, "s": "é → 😀 \"quoted\"\n", "null": null,
            "t": true, "list": [1, 2.5, [], {}], "nested": {"b": {"c": [null, "x"]}}
        }));
        let text = crate::sqlite::adk_json::to_string(&written);
        let parsed = parse(&text).expect("the written text parses");
        assert_eq!(parsed, written);
        assert!(parsed.keys().eq(written.keys()), "key order: {text}");
    }

    #[test]
    fn a_row_whose_text_changed_is_parsed_again_not_served_from_what_was_kept() {
        let row = AppRow::default();
        let first = r#"{"turns": 1}"#;
        assert_eq!(
            row.parsed("shop", first.into(), parse).expect("parsed")["turns"],
            1
        );
        // Another writer (google-adk, another process) changed the row.
        let second = r#"{"turns": 5}"#;
        assert_eq!(
            row.parsed("shop", second.into(), parse).expect("parsed")["turns"],
            5
        );
        assert_eq!(
            row.take("shop", second, parse).expect("parsed").0["turns"],
            5
        );
        // Taken: the next read parses, whatever its text.
        let failing = |_: &str| Err(SessionStoreError::InvalidData("parsed".into()));
        assert!(row.take("shop", second, failing).is_err());
    }

    #[test]
    fn the_kept_state_serves_only_its_own_text_and_app() {
        let row = AppRow::default();
        let failing = |_: &str| Err(SessionStoreError::InvalidData("parsed".into()));
        let text = r#"{"turns": 2}"#;
        row.keep("shop", text.into(), state(json!({"turns": 2})).into(), None);
        assert_eq!(
            row.parsed("shop", text.into(), failing).expect("parsed")["turns"],
            2
        );
        assert!(row.parsed("other app", text.into(), failing).is_err());
        row.keep("shop", text.into(), state(json!({"turns": 2})).into(), None);
        assert!(
            row.parsed("shop", r#"{"turns": 3}"#.into(), failing)
                .is_err()
        );
        // A read of another text parsed (here: failed to) and left the kept state in place.
        assert_eq!(
            row.take("shop", text, failing).expect("parsed").0["turns"],
            2
        );
        assert!(row.take("shop", text, failing).is_err());
    }
}
