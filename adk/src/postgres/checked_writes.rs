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
// Each checked write locks its row in the statement itself: the stored state is read with
// `FOR UPDATE`, which waits for any commit holding the row and then returns the row as that
// commit left it (READ COMMITTED follows the update), so the check and the new value see the
// newest row, and the `UPDATE` after it in the same statement re-finds that row under the lock.
// (An `UPDATE` alone re-checks only part of its `WHERE` against a row it waited for: with a
// plain read of the stored state, two commits expecting the same old value both won. Before,
// a `SELECT … FOR UPDATE` of its own preceded each write: one statement more per row.)
// The stored state is read once, in a materialized CTE, as an in-memory (decompressed) value:
// a row's JSONB is compressed and, past ~2 KB, kept out of line (TOAST), and PostgreSQL
// decompresses a toasted value again at every reference (`state -> name` once per checked
// name, and once more for the new value). The app's one row holds every user's `app:` key, so
// a group's folded write checking 64 names decompressed a document of a thousand keys 65
// times. `state - '{}'` is the value itself, decompressed (an empty removal returns its input).
pub(super) const SESSION: &str = concat!(
    "WITH stored AS MATERIALIZED (SELECT state - '{}'::TEXT[] AS state FROM sessions ",
    "WHERE app_name = $1 AND user_id = $2 AND id = $3 FOR UPDATE), ",
    "written AS (UPDATE sessions SET state = (stored.state - $4::TEXT[]) || $5::JSONB, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE app_name = $1 AND user_id = $2 AND id = $3 AND NOT EXISTS (",
    "SELECT 1 FROM UNNEST($6::TEXT[], $7::JSONB[]) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM e.value::TEXT) RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);
// The app row's checked write up to its `RETURNING`: the stored state read once, locked, into a
// materialized CTE (with `$extra`, more of the stored row), and the new value and the check of
// every expected value computed from it. `APP_KEPT` below and the raw floor's plain write in
// `benches/support/raw_postgres.rs` are built on it.
macro_rules! app_checked_write {
    ($extra:literal) => {
        concat!(
            "WITH stored AS MATERIALIZED (SELECT state - '{}'::TEXT[] AS state",
            $extra,
            " FROM app_states WHERE app_name = $1 FOR UPDATE), ",
            "written AS (UPDATE app_states SET state = (stored.state - $2::TEXT[]) || $3::JSONB, ",
            "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
            "WHERE app_name = $1 AND NOT EXISTS (",
            "SELECT 1 FROM UNNEST($4::TEXT[], $5::JSONB[]) AS e(name, value) ",
            "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM e.value::TEXT) ",
        )
    };
}
// The app's write as a commit sends it: the same write and check, and it answers with the
// version it wrote and what the store needs to keep that version's document for the load after
// it (`app_cache.rs`). When the row it wrote over is the version the store holds ($6, computed as
// the load computes it: `xmin` and the update time in microseconds), the answer is only the keys
// it set, as the server writes them, and the store applies them and the removals to the
// document it holds (`applied` is true); otherwise the whole new document. So the server
// renders, and the process parses, the written keys rather than a document of a thousand keys,
// and the load after the commit is sent no document. The check's `1 / COUNT(*)` is an output
// column, so it is computed (a column no one reads is not, and then a refused write would not
// abort).
pub(super) const APP_KEPT: &str = concat!(
    app_checked_write!(
        ", xmin::TEXT || '/' || (EXTRACT(EPOCH FROM update_time) * 1000000)::BIGINT::TEXT AS version"
    ),
    "RETURNING app_states.xmin::TEXT || '/' || ",
    "(EXTRACT(EPOCH FROM app_states.update_time) * 1000000)::BIGINT::TEXT AS version, ",
    "CASE WHEN stored.version = $6 THEN $3::JSONB ELSE app_states.state END AS state, ",
    "COALESCE(stored.version = $6, FALSE) AS applied), ",
    "checked AS (SELECT 1 / COUNT(*) AS one FROM written) ",
    "SELECT checked.one, written.version, written.state, written.applied ",
    "FROM checked LEFT JOIN written ON TRUE"
);
pub(super) const USER: &str = concat!(
    "WITH stored AS MATERIALIZED (SELECT state - '{}'::TEXT[] AS state FROM user_states ",
    "WHERE app_name = $1 AND user_id = $2 FOR UPDATE), ",
    "written AS (UPDATE user_states SET state = (stored.state - $3::TEXT[]) || $4::JSONB, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE app_name = $1 AND user_id = $2 AND NOT EXISTS (",
    "SELECT 1 FROM UNNEST($5::TEXT[], $6::JSONB[]) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM e.value::TEXT) RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);
// Several rows' checked writes in one statement, as a group commit of several turns sends them
// (`group_rows.rs`): one row per turn, every row a different one, each with its own removed
// names (a JSONB array), set keys (a JSONB object) and checks (a JSONB object of each expected
// name to `[value]`, or to `[]` when the key is expected absent: `-> 0` is then SQL NULL, as a
// missing key is). Rows are locked in the order given, the group's key order: each input row,
// in that order, looks its row up by primary key and locks it (a `LATERAL` subquery, so a
// nested loop of index lookups whatever the table's size; a join let the planner scan the
// whole table once a group), and the write finds the locked version by its `ctid` (the lock
// keeps it current until the statement's own update). A row another transaction updated after
// the statement began is locked at its new version, which the write's snapshot does not see:
// the write misses it and the count falls short. The last parameter is how many rows: every
// row is written, or the division aborts the transaction, and the group is sent again a
// statement a row (whose write follows the other transaction's update), which names the turn
// refused.
pub(super) const GROUP_SESSIONS: &str = concat!(
    "WITH input AS MATERIALIZED (SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], ",
    "$4::JSONB[], $5::JSONB[], $6::JSONB[]) WITH ORDINALITY ",
    "AS i(app_name, user_id, id, removed, additions, checks, position)), ",
    "stored AS MATERIALIZED (SELECT s.row_id, s.state - '{}'::TEXT[] AS state, ",
    "i.removed, i.additions, i.checks FROM (SELECT * FROM input ORDER BY position) i ",
    "CROSS JOIN LATERAL (SELECT ctid AS row_id, state FROM sessions ",
    "WHERE app_name = i.app_name AND user_id = i.user_id AND id = i.id FOR UPDATE) s), ",
    "written AS (UPDATE sessions SET state = (stored.state - ",
    "ARRAY(SELECT jsonb_array_elements_text(stored.removed))) || stored.additions, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE sessions.ctid = stored.row_id AND NOT EXISTS (",
    "SELECT 1 FROM jsonb_each(stored.checks) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM (e.value -> 0)::TEXT) RETURNING 1) ",
    "SELECT 1 / (COUNT(*) = $7::BIGINT)::INT FROM written"
);
pub(super) const GROUP_USERS: &str = concat!(
    "WITH input AS MATERIALIZED (SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], ",
    "$3::JSONB[], $4::JSONB[], $5::JSONB[]) WITH ORDINALITY ",
    "AS i(app_name, user_id, removed, additions, checks, position)), ",
    "stored AS MATERIALIZED (SELECT s.row_id, s.state - '{}'::TEXT[] AS state, ",
    "i.removed, i.additions, i.checks FROM (SELECT * FROM input ORDER BY position) i ",
    "CROSS JOIN LATERAL (SELECT ctid AS row_id, state FROM user_states ",
    "WHERE app_name = i.app_name AND user_id = i.user_id FOR UPDATE) s), ",
    "written AS (UPDATE user_states SET state = (stored.state - ",
    "ARRAY(SELECT jsonb_array_elements_text(stored.removed))) || stored.additions, ",
    "update_time = (clock_timestamp() AT TIME ZONE 'UTC') FROM stored ",
    "WHERE user_states.ctid = stored.row_id AND NOT EXISTS (",
    "SELECT 1 FROM jsonb_each(stored.checks) AS e(name, value) ",
    "WHERE (stored.state -> e.name)::TEXT IS DISTINCT FROM (e.value -> 0)::TEXT) RETURNING 1) ",
    "SELECT 1 / (COUNT(*) = $6::BIGINT)::INT FROM written"
);
