//! Several rows' checked writes as the columns of one statement (`checked_writes.rs`'s
//! `GROUP_SESSIONS` and `GROUP_USERS`): a group commit of turns of different sessions writes
//! every session's row in one statement, and every user's row in another, instead of one
//! statement a row.
//!
//! Why: at 16 turns in flight the server spent about three quarters of the machine's CPU, and
//! most of it on what every statement costs whatever it does (its bind, its executor's start
//! and end, its answer), not on the rows; each turn sent a session write and a user write of
//! its own. One statement a scope carries a group's rows, as its events and held messages
//! already were.
//!
//! Each row keeps its own check: a value any turn loaded that the row no longer holds, or a
//! missing row, leaves the statement short of its count and aborts the transaction; the group
//! is then sent again a statement a row (`commit.rs`), which names the turn.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use tokio_postgres::types::{Json, ToSql};

use super::scope_writes::ScopeWrites;

/// A row's checks as the statement reads them: each expected name to `[value]`, or to `[]`
/// when the turn loaded the key absent (`-> 0` of an empty array is SQL NULL, as a missing key
/// is), so a JSON `null` and an absent key stay apart.
#[derive(Debug)]
pub(super) struct Checks<'a> {
    names: &'a [String],
    expected: &'a [Option<Json<Value>>],
}

impl Serialize for Checks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.names.len()))?;
        for (name, expected) in self.names.iter().zip(self.expected) {
            let value: &[Value] = match expected {
                Some(Json(value)) => std::slice::from_ref(value),
                None => &[],
            };
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The columns of one group statement over rows keyed by `N` text columns: the keys, then each
/// row's removed names, set keys and checks, one array a column; and how many rows.
pub(super) struct GroupRows<'a, const N: usize> {
    keys: [Vec<&'a str>; N],
    removed: Vec<Json<&'a [String]>>,
    additions: Vec<Json<&'a Map<String, Value>>>,
    checks: Vec<Json<Checks<'a>>>,
    count: i64,
}

impl<'a, const N: usize> GroupRows<'a, N> {
    /// Columns for `rows` rows.
    pub(super) fn with_capacity(rows: usize) -> Self {
        Self {
            keys: std::array::from_fn(|_| Vec::with_capacity(rows)),
            removed: Vec::with_capacity(rows),
            additions: Vec::with_capacity(rows),
            checks: Vec::with_capacity(rows),
            count: 0,
        }
    }

    /// Adds the row keyed `key` and its writes; rows are locked in the order they are added.
    pub(super) fn push(&mut self, key: [&'a str; N], writes: &'a ScopeWrites) {
        for (column, value) in self.keys.iter_mut().zip(key) {
            column.push(value);
        }
        self.removed.push(Json(&writes.removed));
        self.additions.push(Json(&writes.set.0));
        self.checks.push(Json(Checks {
            names: &writes.names,
            expected: &writes.expected,
        }));
        self.count += 1;
    }

    /// The statement's parameters, in its order.
    pub(super) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(N + 4);
        for column in &self.keys {
            params.push(column);
        }
        params.push(&self.removed);
        params.push(&self.additions);
        params.push(&self.checks);
        params.push(&self.count);
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_wrap_an_expected_value_and_leave_an_expected_absence_empty() {
        let names = ["mode".to_owned(), "gone".to_owned(), "cleared".to_owned()];
        let expected = [Some(Json(json!("a"))), None, Some(Json(Value::Null))];
        let checks = Checks {
            names: &names,
            expected: &expected,
        };
        assert_eq!(
            serde_json::to_value(&checks).expect("checks serialize"),
            json!({"mode": ["a"], "gone": [], "cleared": [null]})
        );
    }
}
