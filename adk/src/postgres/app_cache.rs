//! The app's state kept by a session store between turns, so that a turn's load does not make
//! the server render, and the process parse, the app's whole document when it has not changed.
//!
//! Why: every session of an app shares the app's one `app_states` row, which holds every user's
//! `app:` keys, and every turn loads it whole. With a few hundred keys the load's rendering of the
//! document (decompressing it, writing it out as text) and the process's parse of it were most of
//! what a load cost, for a document that, between two commits of the process, no one changed.
//!
//! How: the store keeps, per app, the document its last commit wrote and the row version it
//! belongs to: the row's `xmin` (the transaction that wrote that version; a transaction's last
//! write of a row is the only one others see) with its update time, so that a transaction id
//! reused after a wraparound does not pass for the old version. The load sends the version it
//! holds and the server sends the document only when the row's version is another
//! ([`LOAD_TURN`]); one statement, one snapshot, as before. A commit's app write answers with
//! the version it wrote and, when the row it wrote over is the version the store holds, only the
//! keys it set as the server wrote them, which the store applies with the removals to the
//! document it holds ([`apply_written`]); otherwise with the whole new document
//! (`checked_writes::APP_KEPT`). The store keeps the result once the `COMMIT` succeeded, so the
//! load after the turn finds its document kept. Another writer (another store or process,
//! google-adk, plain SQL) makes a new version, which the next load is sent whole. Exact by
//! construction: a kept document is the server's rendering of the version kept with it, or that
//! rendering with the server's rendering of the written keys put in and the removed ones taken
//! out, in the order the server keeps an object's keys; and it is used only when the server says
//! the row is still that version.
//!
//! A load hands the turn the kept document itself (`LoadedTurn::app` is an `Arc`), not a copy:
//! the turn only reads it, its writes going to its own changes, and a commit that changes the
//! app makes a new document rather than changing the kept one.
//!
//! What is not kept: a document a load was sent, another writer's version. Keeping it would
//! spare a rendering only to the loads before this store's next commit of the app's row.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};

use crate::state::SessionStoreError;

/// The most apps one store keeps a document for; past it the kept documents are dropped.
const MOST_APPS: usize = 64;

// One statement is one snapshot: the three scopes and the records are read as of one moment,
// in one round trip. The app's state comes back only when its row is not the version the
// process holds ($5; NULL: none), with the row's version beside it. The records come back as
// one JSONB array of [thread, key, version, record].
pub(super) const LOAD_TURN: &str = "SELECT
    a.version,
    CASE WHEN a.version = $5 THEN NULL ELSE a.state END,
    (SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2),
    (SELECT state FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3),
    (SELECT jsonb_agg(jsonb_build_array(thread_id, record_key, version, record)
                      ORDER BY thread_id, record_key)
       FROM adk_rs_middleware_state
      WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id IN ('', $4))
    FROM (SELECT) AS one
    LEFT JOIN (SELECT xmin::TEXT || '/' || (EXTRACT(EPOCH FROM update_time) * 1000000)::BIGINT::TEXT
                      AS version, state
                 FROM app_states WHERE app_name = $1) AS a ON TRUE";

/// A row version and its document.
pub(super) type Versioned = (String, Arc<Map<String, Value>>);

/// A kept document and the row version it is.
struct Kept {
    version: String,
    state: Arc<Map<String, Value>>,
}

#[derive(Default)]
struct Apps {
    kept: HashMap<String, Kept>,
}

/// What a load was sent against: the version it named and that version's document.
pub(super) struct Sent {
    kept: Option<Versioned>,
}

impl Sent {
    /// The version to send as the load's `$5`.
    pub(super) fn version(&self) -> Option<&str> {
        self.kept.as_ref().map(|(version, _)| version.as_str())
    }
}

/// A session store's kept app documents. Shared by the store's clones.
#[derive(Default)]
pub(super) struct AppCache {
    apps: Mutex<Apps>,
}

impl std::fmt::Debug for AppCache {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AppCache")
            .field("apps", &self.lock().kept.len())
            .finish()
    }
}

/// The document a commit's app write left, from the one it wrote over: `before` without the
/// `removed` keys, with the keys of `set` (the server's rendering of them), in the order
/// PostgreSQL keeps a JSONB object's keys (shorter first, then bytewise), which is the order a
/// load's parse of the row gives. `before` is in that order (the server's rendering, or this
/// function's), so one merge of the two sorted sequences gives it.
pub(super) fn apply_written(
    before: &Map<String, Value>,
    removed: &[String],
    set: &Map<String, Value>,
) -> Map<String, Value> {
    fn jsonb_order(key: &str) -> (usize, &[u8]) {
        (key.len(), key.as_bytes())
    }
    let removed: HashSet<&str> = removed.iter().map(String::as_str).collect();
    let kept = before.iter().filter(|(key, _)| {
        !set.contains_key(*key) && (removed.is_empty() || !removed.contains(key.as_str()))
    });
    let mut incoming = set.iter().peekable();
    let mut document = Map::with_capacity(before.len() + set.len());
    for (key, value) in kept {
        while let Some((new_key, new_value)) =
            incoming.next_if(|(new_key, _)| jsonb_order(new_key) < jsonb_order(key))
        {
            document.insert(new_key.clone(), new_value.clone());
        }
        document.insert(key.clone(), value.clone());
    }
    for (new_key, new_value) in incoming {
        document.insert(new_key.clone(), new_value.clone());
    }
    document
}

pub(super) fn object(value: Value) -> Result<Map<String, Value>, SessionStoreError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(SessionStoreError::InvalidData(format!(
            "the app_states.state column holds `{other}`, not a JSON object"
        ))),
    }
}

impl AppCache {
    // Every critical section is a lookup, an insert or a clear: a poisoned lock still guards
    // a sound map.
    fn lock(&self) -> MutexGuard<'_, Apps> {
        self.apps.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What a load of `app` is sent against.
    pub(super) fn before_load(&self, app: &str) -> Sent {
        Sent {
            kept: self.kept(app),
        }
    }

    /// The app's state from a load's answer: the row's `version` (`None`: no row) and its
    /// `state` (`None`: the version sent, or a NULL column).
    pub(super) fn loaded(
        sent: Sent,
        version: Option<String>,
        state: Option<Value>,
    ) -> Result<Arc<Map<String, Value>>, SessionStoreError> {
        let Some(version) = version else {
            return Ok(Arc::default());
        };
        let Some(state) = state else {
            return Ok(match sent.kept {
                Some((kept, document)) if kept == version => document,
                _ => Arc::default(),
            });
        };
        object(state).map(Arc::new)
    }

    /// The version of `app`'s row the store holds, and its document: what a load and a commit's
    /// app write are sent against (`LOAD_TURN`'s `$5`, `checked_writes::APP_KEPT`'s `$6`).
    pub(super) fn kept(&self, app: &str) -> Option<Versioned> {
        self.lock()
            .kept
            .get(app)
            .map(|kept| (kept.version.clone(), Arc::clone(&kept.state)))
    }

    /// Keeps what a committed app write left: the row's new version and document.
    pub(super) fn committed(&self, app: &str, version: String, state: Arc<Map<String, Value>>) {
        let mut apps = self.lock();
        if apps.kept.len() >= MOST_APPS && !apps.kept.contains_key(app) {
            apps.kept.clear();
        }
        apps.kept.insert(app.to_owned(), Kept { version, state });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn keys(document: &Map<String, Value>) -> Vec<&str> {
        document.keys().map(String::as_str).collect()
    }

    #[test]
    fn written_keys_are_applied_in_jsonb_key_order() {
        // As the server sends them: shorter keys first, then bytewise.
        let before = map(json!({"a": 1, "bb": 2, "ccc": 3, "dddd": 4}));
        let set = map(json!({"b": 9, "zz": 7, "ccc": 30, "eeeee": 5}));
        let document = apply_written(&before, &["bb".to_owned()], &set);
        assert_eq!(keys(&document), ["a", "b", "zz", "ccc", "dddd", "eeeee"]);
        assert_eq!(
            Value::Object(document),
            json!({"a": 1, "b": 9, "zz": 7, "ccc": 30, "dddd": 4, "eeeee": 5})
        );
    }

    #[test]
    fn applying_nothing_keeps_the_document() {
        let before = map(json!({"x": 1, "yy": [1, 2]}));
        let document = apply_written(&before, &[], &Map::new());
        assert_eq!(keys(&document), ["x", "yy"]);
        assert_eq!(document, before);
    }
}
