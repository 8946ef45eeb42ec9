//! The statements a commit sends to lock and write each scope's state row with the values the
//! turn loaded checked in the write itself (`commit.rs`). Only constants, and no imports, so the
//! PostgreSQL floor in `benches/stores.rs` includes this file and sends exactly what adk sends.

// Each statement applies one scope's writes as `(state - removed) || set` and compares every
// value the turn loaded, as canonical JSONB text, with the stored one (a missing key is SQL NULL
// on both sides). Equal text means equal JSON, so a write allowed here is one the locking
// transaction's check allows too; the reverse misses (a number stored as `1.0` and expected as
// `1`) only send the commit to the locking transaction, which decides. Parameters: the row's key
// columns, then the removed names, the set keys (a JSONB object), the expected names and their
// expected values (NULL: absent).
// Each checked write is preceded by a lock of its row: the write then starts after any commit
// that held the row has ended, and reads the row as that commit left it. (An `UPDATE` that
// waited for a row re-checks only part of its `WHERE` against the newer row: with the check
// alone, two commits expecting the same old value both won.)
pub(super) const LOCK_SESSION: &str =
    "SELECT 1 FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3 FOR UPDATE";
pub(super) const LOCK_APP: &str = "SELECT 1 FROM app_states WHERE app_name = $1 FOR UPDATE";
pub(super) const LOCK_USER: &str =
    "SELECT 1 FROM user_states WHERE app_name = $1 AND user_id = $2 FOR UPDATE";
// The stored state is read once, in a materialized CTE, as an in-memory (decompressed) value:
// a row's JSONB is compressed and, past ~2 KB, kept out of line (TOAST), and PostgreSQL
// decompresses a toasted value again at every reference (`state -> name` once per checked
// name, and once more for the new value). The app's one row holds every user's `app:` key, so
// a group's folded write checking 64 names decompressed a document of a thousand keys 65
// times. `state - '{}'` is the value itself, decompressed (an empty removal returns its input).
pub(super) const SESSION: &str = concat!(
    "WITH stored AS MATERIALIZED (SELECT state - '{}'::TEXT[] AS state FROM sessions ",
    "WHERE app_name = $1 AND user_id = $2 AND id = $3), ",
    "written AS (UPDATE sessions SET state = (stored.state - $4::TEXT[]) || $5::JSONB, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE app_name = $1 AND user_id = $2 AND id = $3 AND NOT EXISTS (",
    "SELECT 1 FROM UNNEST($6::TEXT[], $7::JSONB[]) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM e.value::TEXT) RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);
pub(super) const APP: &str = concat!(
    "WITH stored AS MATERIALIZED (SELECT state - '{}'::TEXT[] AS state FROM app_states ",
    "WHERE app_name = $1), ",
    "written AS (UPDATE app_states SET state = (stored.state - $2::TEXT[]) || $3::JSONB, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE app_name = $1 AND NOT EXISTS (",
    "SELECT 1 FROM UNNEST($4::TEXT[], $5::JSONB[]) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM e.value::TEXT) RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);
pub(super) const USER: &str = concat!(
    "WITH stored AS MATERIALIZED (SELECT state - '{}'::TEXT[] AS state FROM user_states ",
    "WHERE app_name = $1 AND user_id = $2), ",
    "written AS (UPDATE user_states SET state = (stored.state - $3::TEXT[]) || $4::JSONB, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE app_name = $1 AND user_id = $2 AND NOT EXISTS (",
    "SELECT 1 FROM UNNEST($5::TEXT[], $6::JSONB[]) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM e.value::TEXT) RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);
