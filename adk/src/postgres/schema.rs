//! The versioned schema: numbered migrations, applied in order on connect by whichever process
//! gets there first, and a refusal to work on a database migrated by a newer adk.

use deadpool_postgres::{Pool, Transaction};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_postgres::types::Json;

use crate::primitives::{Message, Thought, ToolCall, link_legacy_answers};

use super::error::{PostgresError, failed, unavailable};

/// One step of the schema. Steps are never edited once released: a change is a new step.
struct Migration {
    version: i64,
    description: &'static str,
    sql: &'static str,
}

// The six primitive tables share one shape; for standing instructions, which have no id, `id`
// holds the instruction's text. They are prefixed `adk_rs_` so they sit beside the tables of a
// Google ADK deployment (`sessions`, `events`, ...) in one database without a clash. Every row
// is keyed by (app_name, user_id, session_id, thread_id), the identity of the turn that wrote
// it; the ADK column names are reused so one vocabulary serves both families of tables. `sequence` is the insertion order fetches return (an UPDATE keeps it). Byte rows are
// written outside any long transaction (see `blob.rs`): a blob is visible only once `complete`,
// and at most one complete blob exists per id within its scope.
const PRIMITIVES_AND_BYTES: &str = "
CREATE TABLE adk_rs_memories (
    sequence BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    record JSONB NOT NULL,
    UNIQUE (app_name, user_id, session_id, thread_id, id)
);
CREATE INDEX adk_rs_memories_in_order
    ON adk_rs_memories (app_name, user_id, session_id, thread_id, sequence);
CREATE TABLE adk_rs_messages (LIKE adk_rs_memories INCLUDING ALL);
CREATE TABLE adk_rs_thoughts (LIKE adk_rs_memories INCLUDING ALL);
CREATE TABLE adk_rs_tool_calls (LIKE adk_rs_memories INCLUDING ALL);
CREATE TABLE adk_rs_retrievables (LIKE adk_rs_memories INCLUDING ALL);
CREATE TABLE adk_rs_standing_instructions (LIKE adk_rs_memories INCLUDING ALL);

CREATE TABLE adk_rs_blobs (
    key BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_name TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    conduit TEXT NOT NULL CHECK (conduit IN ('media', 'retrievable')),
    id TEXT NOT NULL,
    complete BOOLEAN NOT NULL DEFAULT FALSE,
    byte_length BIGINT NOT NULL DEFAULT 0,
    chunk_count BIGINT NOT NULL DEFAULT 0,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX adk_rs_blobs_current
    ON adk_rs_blobs (app_name, user_id, session_id, thread_id, conduit, id) WHERE complete;
CREATE INDEX adk_rs_blobs_unfinished ON adk_rs_blobs (started_at) WHERE NOT complete;
CREATE TABLE adk_rs_blob_chunks (
    blob_key BIGINT NOT NULL REFERENCES adk_rs_blobs (key) ON DELETE CASCADE,
    sequence BIGINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (blob_key, sequence)
);
";

// Google ADK's `DatabaseSessionService` v1 tables as its SQLAlchemy models create them on
// PostgreSQL (JSONB state, naive UTC `TIMESTAMP` times, `VARCHAR` keys), so a google-adk
// deployment and adk processes can share one state database. `IF NOT EXISTS`: google-adk may
// have created them first, and then they are used as they are. A database holding ADK's legacy
// tables (schema version 0, which has no `adk_internal_metadata`) is refused rather than
// stamped as version 1. Middleware-state records live in `adk_rs_middleware_state`, which ADK
// ignores; a session-scoped record has thread_id ''. Its session columns match ADK's
// `VARCHAR(128)` for the foreign key; its own columns are unbounded (a record key is a type
// name, which generics can make long).
const ADK_SESSION_STATE: &str = "
DO $$
BEGIN
    IF to_regclass('events') IS NOT NULL AND to_regclass('adk_internal_metadata') IS NULL THEN
        RAISE EXCEPTION 'this database holds Google ADK session tables of schema version 0 '
            '(no adk_internal_metadata table); migrate them to version 1 with google-adk''s '
            'migration tools first';
    END IF;
END
$$;
CREATE TABLE IF NOT EXISTS adk_internal_metadata (
    \"key\" VARCHAR(128) PRIMARY KEY,
    value VARCHAR(256) NOT NULL
);
CREATE TABLE IF NOT EXISTS app_states (
    app_name VARCHAR(128) PRIMARY KEY,
    state JSONB NOT NULL,
    update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL
);
CREATE TABLE IF NOT EXISTS user_states (
    app_name VARCHAR(128) NOT NULL,
    user_id VARCHAR(128) NOT NULL,
    state JSONB NOT NULL,
    update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL,
    PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS sessions (
    app_name VARCHAR(128) NOT NULL,
    user_id VARCHAR(128) NOT NULL,
    id VARCHAR(128) NOT NULL,
    state JSONB NOT NULL,
    create_time TIMESTAMP WITHOUT TIME ZONE NOT NULL,
    update_time TIMESTAMP WITHOUT TIME ZONE NOT NULL,
    PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS events (
    id VARCHAR(128) NOT NULL,
    app_name VARCHAR(128) NOT NULL,
    user_id VARCHAR(128) NOT NULL,
    session_id VARCHAR(128) NOT NULL,
    invocation_id VARCHAR(256) NOT NULL,
    timestamp TIMESTAMP WITHOUT TIME ZONE NOT NULL,
    event_data JSONB,
    PRIMARY KEY (id, app_name, user_id, session_id),
    FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_events_app_user_session_ts_id
    ON events (app_name, user_id, session_id, timestamp DESC, id DESC);
INSERT INTO adk_internal_metadata (\"key\", value) VALUES ('schema_version', '1')
    ON CONFLICT (\"key\") DO NOTHING;
CREATE TABLE adk_rs_middleware_state (
    app_name VARCHAR(128) NOT NULL,
    user_id VARCHAR(128) NOT NULL,
    session_id VARCHAR(128) NOT NULL,
    thread_id TEXT NOT NULL,
    record_key TEXT NOT NULL,
    version BIGINT NOT NULL,
    record JSONB NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, thread_id, record_key),
    FOREIGN KEY (app_name, user_id, session_id)
        REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
";

// The state columns of Google ADK's v1 tables compressed with LZ4 instead of PostgreSQL's
// default pglz, where the server has it (PostgreSQL 14 and later, built with lz4). The app's one
// `app_states` row holds every user's `app:` key and is rewritten whole by every turn that
// writes one: a document of a thousand keys is compressed again on each write, and pglz spent
// about twice LZ4's time on it (`docs/postgres.md`, "What adk changes in Google ADK's tables").
// Only the column's compression method for values written from now on changes: the type, the
// values and what google-adk reads are the same, and older values stay readable as they are.
const LZ4_STATE: &str = "
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE app_states ALTER COLUMN state SET COMPRESSION lz4;
        ALTER TABLE user_states ALTER COLUMN state SET COMPRESSION lz4;
        ALTER TABLE sessions ALTER COLUMN state SET COMPRESSION lz4;
    END IF;
END
$$;
";

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "the six primitives and the two byte conduits",
        sql: PRIMITIVES_AND_BYTES,
    },
    Migration {
        version: 2,
        description: "session state in Google ADK's v1 tables, and middleware-state records",
        sql: ADK_SESSION_STATE,
    },
    // No SQL: the step is `link_legacy_rows`, run when this version is applied.
    Migration {
        version: LEGACY_LINKS,
        description: "answer links for messages, thoughts and tool calls written before them",
        sql: "",
    },
    Migration {
        version: 4,
        description: "thread lineage: one row per fork",
        sql: super::lineage::FORKS_TABLE,
    },
    Migration {
        version: 5,
        description: "the tool ledger",
        sql: super::ledger::LEDGER_TABLE,
    },
    Migration {
        version: 6,
        description: "durable approvals",
        sql: super::approvals::APPROVALS_TABLE,
    },
    Migration {
        version: 7,
        description: "LZ4 compression for the state columns, where the server has it",
        sql: LZ4_STATE,
    },
];

/// The step that links the answers of rows written before records carried answer links.
const LEGACY_LINKS: i64 = 3;

/// The newest schema version this code writes and reads.
pub(super) const SCHEMA_VERSION: i64 = 7;

// Any constant will do, as long as it is the same in every process: it serializes concurrent
// migrations of one database (advisory locks are per database, held until the commit).
const MIGRATION_LOCK: i64 = 0x6164_6b5f_7273_0001;

/// Brings the database (or the configured schema in it) up to [`SCHEMA_VERSION`], refusing one
/// that is already newer, then removes byte writes abandoned by crashed processes.
pub(super) async fn migrate(pool: &Pool, schema: Option<&str>) -> Result<(), PostgresError> {
    let operation = "migrating the adk schema";
    let mut client = pool.get().await.map_err(unavailable(operation))?;
    let transaction = client.transaction().await.map_err(failed(operation))?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed("waiting for other processes' migrations"))?;
    if let Some(schema) = schema {
        // A plain identifier (checked by PostgresOptions::schema), so quoting it is enough.
        transaction
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await
            .map_err(failed(format!("creating the schema `{schema}`")))?;
    }
    transaction
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS adk_rs_migrations (
                version BIGINT PRIMARY KEY,
                description TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(failed("creating the migrations table"))?;
    let found: i64 = transaction
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM adk_rs_migrations",
            &[],
        )
        .await
        .map_err(failed("reading the schema version"))?
        .get(0);
    if found > SCHEMA_VERSION {
        return Err(PostgresError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for migration in MIGRATIONS.iter().filter(|step| step.version > found) {
        transaction
            .batch_execute(migration.sql)
            .await
            .map_err(failed(format!(
                "applying migration {} ({})",
                migration.version, migration.description
            )))?;
        if migration.version == LEGACY_LINKS {
            link_legacy_rows(&transaction).await?;
        }
        transaction
            .execute(
                "INSERT INTO adk_rs_migrations (version, description) VALUES ($1, $2)",
                &[&migration.version, &migration.description],
            )
            .await
            .map_err(failed("recording a migration"))?;
    }
    transaction.commit().await.map_err(failed(operation))?;
    // A process killed during a streamed byte write leaves an incomplete blob nobody can see.
    // A day is far longer than any upload, so nothing still being written is removed.
    client
        .execute(
            "DELETE FROM adk_rs_blobs WHERE NOT complete AND started_at < now() - interval '1 day'",
            &[],
        )
        .await
        .map_err(failed("removing abandoned byte writes"))?;
    Ok(())
}

// Migration 3: rows written before records carried answer links get them, so an answer whose tool
// calls were written before its text reads back in the order the model produced it. Turn by turn
// (an answer never spans two), in each table's insertion order; each row given a link is
// rewritten in place (same sequence). A turn holding a row that does not read back as its record
// is left as it was: fetching it reports the problem, as it did before.
async fn link_legacy_rows(transaction: &Transaction<'_>) -> Result<(), PostgresError> {
    let operation = "linking the answers of rows written before schema version 3";
    let turns = transaction
        .query(
            "SELECT app_name, user_id, session_id, thread_id, turn_id FROM adk_rs_messages
             UNION SELECT app_name, user_id, session_id, thread_id, turn_id FROM adk_rs_thoughts
             UNION SELECT app_name, user_id, session_id, thread_id, turn_id
                   FROM adk_rs_tool_calls",
            &[],
        )
        .await
        .map_err(failed(operation))?;
    for turn in turns {
        let turn: [String; 5] = [
            turn.get(0),
            turn.get(1),
            turn.get(2),
            turn.get(3),
            turn.get(4),
        ];
        let (
            Some((message_rows, mut messages)),
            Some((thought_rows, mut thoughts)),
            Some((call_rows, mut calls)),
        ) = (
            turn_rows::<Message>(transaction, "adk_rs_messages", &turn).await?,
            turn_rows::<Thought>(transaction, "adk_rs_thoughts", &turn).await?,
            turn_rows::<ToolCall>(transaction, "adk_rs_tool_calls", &turn).await?,
        )
        else {
            continue;
        };
        let prefix = format!("legacy/{}/", turn[4]);
        let Ok(linked) = link_legacy_answers(&prefix, &mut messages, &mut thoughts, &mut calls)
        else {
            continue;
        };
        for index in linked.messages {
            rewrite(
                transaction,
                "adk_rs_messages",
                message_rows[index],
                &messages[index],
            )
            .await?;
        }
        for index in linked.thoughts {
            rewrite(
                transaction,
                "adk_rs_thoughts",
                thought_rows[index],
                &thoughts[index],
            )
            .await?;
        }
        for index in linked.tool_calls {
            rewrite(
                transaction,
                "adk_rs_tool_calls",
                call_rows[index],
                &calls[index],
            )
            .await?;
        }
    }
    Ok(())
}

// One turn's rows of `table`: their sequences and records, in insertion order; `None` when one
// of them does not read back as a record.
type Rows<Record> = (Vec<i64>, Vec<Record>);

async fn turn_rows<Record: DeserializeOwned>(
    transaction: &Transaction<'_>,
    table: &str,
    turn: &[String; 5],
) -> Result<Option<Rows<Record>>, PostgresError> {
    let rows = transaction
        .query(
            &format!(
                "SELECT sequence, record FROM {table}
                 WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id = $4
                   AND turn_id = $5
                 ORDER BY sequence"
            ),
            &[&turn[0], &turn[1], &turn[2], &turn[3], &turn[4]],
        )
        .await
        .map_err(failed("reading rows written before schema version 3"))?;
    let (mut sequences, mut records) = (Vec::new(), Vec::new());
    for row in rows {
        let Json(json): Json<serde_json::Value> = row.get(1);
        match serde_json::from_value(json) {
            Ok(record) => {
                sequences.push(row.get::<_, i64>(0));
                records.push(record);
            }
            Err(_) => return Ok(None),
        }
    }
    Ok(Some((sequences, records)))
}

async fn rewrite<Record: Serialize + Sync + std::fmt::Debug>(
    transaction: &Transaction<'_>,
    table: &str,
    sequence: i64,
    record: &Record,
) -> Result<(), PostgresError> {
    transaction
        .execute(
            &format!("UPDATE {table} SET record = $1 WHERE sequence = $2"),
            &[&Json(record), &sequence],
        )
        .await
        .map_err(failed("rewriting a row with its answer link"))?;
    Ok(())
}
