//! The reference for adk's PostgreSQL rows in `benches/stores.rs`: plain `tokio-postgres` on a
//! deadpool pool of the same size, sending for each turn the statements adk's stores send
//! (`adk/src/postgres/records.rs`, `app_cache.rs`'s `LOAD_TURN`, `commit.rs`), with the same
//! values: the turn's one-statement load, then the commit's pipeline (`BEGIN`, the session's
//! checked write, which locks its row, the event, the assistant message the turn held for the
//! commit, the same write for the app's and the user's rows, `COMMIT`) in one round
//! trip. Its load is the one adk sent before it kept the app's document between turns
//! (`adk/src/postgres/app_cache.rs`): the app's document whole, every turn, and its app write
//! the plain checked write. What it leaves out is adk itself: the runner, the contexts, the state view, building
//! the event, and grouping: each turn is its own transaction, as adk's store sent them before
//! it grouped the commits of turns in flight into one transaction (`adk/src/postgres/group.rs`).
//! [`Raw::flush_round`] is the server's own floor for a transaction a turn: one autocommit
//! `INSERT` of the message per turn, one flush of the log each, nothing else.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

use adk::postgres::tokio_postgres::{self, NoTls, types::Json, types::ToSql};
use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod, Runtime};
use serde_json::{Map, Value, json};

use super::{Figure, measure};

/// The app this row's turns write: an app of its own, so its `app_states` document holds only
/// this row's keys, as google-adk's (on a database of its own) and each adk row's do.
const APP_NAME: &str = "bench-raw";

const STORE_MESSAGE: &str = "INSERT INTO adk_rs_messages \
    (app_name, user_id, session_id, thread_id, id, turn_id, record) \
    VALUES ($1, $2, $3, $4, $5, $6, $7) \
    ON CONFLICT (app_name, user_id, session_id, thread_id, id) DO NOTHING";
const LOAD_TURN: &str = "SELECT
    (SELECT state FROM app_states WHERE app_name = $1),
    (SELECT state FROM user_states WHERE app_name = $1 AND user_id = $2),
    (SELECT state FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3),
    (SELECT jsonb_agg(jsonb_build_array(thread_id, record_key, version, record)
                      ORDER BY thread_id, record_key)
       FROM adk_rs_middleware_state
      WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND thread_id IN ('', $4))";
// The checked writes, from adk's own source, so the floor sends exactly adk's statements. The
// app's write is the plain one: this floor loads the app's document whole every turn (it keeps
// none, as adk did before `app_cache.rs`), so it has no use for the written document
// `APP_KEPT` answers with.
#[path = "../../src/postgres/checked_writes.rs"]
#[allow(
    dead_code,
    reason = "APP_KEPT and the GROUP_ statements are adk's group commit's, not this floor's"
)]
#[macro_use]
mod checked_writes;
use checked_writes::{SESSION, USER};
/// adk's checked app write with nothing in its answer but the check.
const APP: &str = concat!(
    app_checked_write!(""),
    "RETURNING 1) ",
    "SELECT 1 / COUNT(*) FROM written"
);
const INSERT_EVENTS: &str = "INSERT INTO events (id, app_name, user_id, session_id, \
     invocation_id, timestamp, event_data) \
     SELECT e.id, $2, $3, $4, e.invocation_id, \
     TIMESTAMP 'epoch' + e.micros * INTERVAL '1 microsecond', e.data \
     FROM UNNEST($1::VARCHAR[], $5::VARCHAR[], $6::BIGINT[], $7::JSONB[]) \
     AS e(id, invocation_id, micros, data)";
const CREATE: [&str; 3] = [
    "INSERT INTO app_states (app_name, state, update_time) VALUES ($1, '{}', now()) \
     ON CONFLICT (app_name) DO NOTHING",
    "INSERT INTO user_states (app_name, user_id, state, update_time) \
     VALUES ($1, $2, '{}', now()) ON CONFLICT (app_name, user_id) DO NOTHING",
    "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) \
     VALUES ($1, $2, $3, '{}', now(), now()) ON CONFLICT (app_name, user_id, id) DO NOTHING",
];

static NEXT: AtomicU64 = AtomicU64::new(0);

/// The raw pool, with the adk rows' schema on its search path.
#[derive(Clone)]
pub struct Raw {
    pool: Pool,
}

fn config(url: &str) -> tokio_postgres::Config {
    url.parse().expect("ADK_TEST_POSTGRES_URL")
}

type Pending<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Every future polled once in order first (each sends its request then), then to its end.
async fn in_order(mut pending: Vec<Pending<'_>>) -> Vec<Result<u64, tokio_postgres::Error>> {
    let mut results: Vec<Option<Result<u64, tokio_postgres::Error>>> =
        pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (future, result) in pending.iter_mut().zip(results.iter_mut()) {
            if result.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(outcome) => *result = Some(outcome),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    results.into_iter().flatten().collect()
}

fn state(value: Option<Value>) -> Map<String, Value> {
    match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// An assistant message's record, as adk stores it.
fn message(id: &str) -> Value {
    json!({
        "id": id, "role": "assistant", "content": {"text": "an answer"},
        "created_at": "2026-11-26T00:00:00Z",
    })
}

/// The checked write's parameters for one key incremented from what was loaded.
fn bump(loaded: &Map<String, Value>, name: &str) -> (Value, Option<Json<Value>>) {
    let expected = loaded.get(name).cloned();
    let next = expected.as_ref().and_then(Value::as_u64).unwrap_or(0) + 1;
    (json!({ name: next }), expected.map(Json))
}

impl Raw {
    pub async fn connect(url: &str, schema: &str, size: usize) -> Result<Self, String> {
        let mut config = config(url);
        config.options(format!("-c search_path=\"{schema}\""));
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(size)
            // As adk's pool hands them out (`adk/src/postgres/options.rs`).
            .queue_mode(QueueMode::Lifo)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|error| error.to_string())?;
        Ok(Self { pool })
    }

    pub async fn round(&self, round: usize, concurrency: usize) -> Figure {
        let raw = self.clone();
        measure(concurrency, move |worker, n| {
            let raw = raw.clone();
            async move {
                let session = format!("raw-r{round}c{concurrency}w{worker}");
                let user = format!("raw-r{round}c{concurrency}u{worker}");
                if n == 0 {
                    raw.create(&session, &user).await;
                } else {
                    raw.turn(&session, &user).await;
                }
            }
        })
        .await
    }

    /// One autocommit `INSERT` of a message per turn: what one flush of the server's log costs
    /// at this concurrency, with nothing else sent.
    pub async fn flush_round(&self, round: usize, concurrency: usize) -> Figure {
        let raw = self.clone();
        measure(concurrency, move |worker, _| {
            let raw = raw.clone();
            async move {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let session = format!("flush-r{round}c{concurrency}w{worker}");
                let id = format!("m-flush-{n}");
                let client = raw.pool.get().await.expect("a connection");
                let statement = client
                    .prepare_cached(STORE_MESSAGE)
                    .await
                    .expect("prepared");
                let record = Json(message(&id));
                let inserted = client
                    .execute(
                        &statement,
                        &[&APP_NAME, &"flush", &session, &"main", &id, &id, &record],
                    )
                    .await
                    .expect("the message insert");
                assert_eq!(inserted, 1);
            }
        })
        .await
    }

    async fn create(&self, session: &str, user: &str) {
        let client = self.pool.get().await.expect("a connection");
        let params: [&[&(dyn ToSql + Sync)]; 3] = [
            &[&APP_NAME],
            &[&APP_NAME, &user],
            &[&APP_NAME, &user, &session],
        ];
        for (sql, params) in CREATE.iter().zip(params) {
            client
                .execute(*sql, params)
                .await
                .expect("creating the rows");
        }
    }

    async fn turn(&self, session: &str, user: &str) {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let turn_id = format!("raw-turn-{n}");
        let message_id = format!("m-{turn_id}");
        let record = message(&message_id);
        let (app, user_state, session_state) = {
            let client = self.pool.get().await.expect("a connection");
            let statement = client.prepare_cached(LOAD_TURN).await.expect("prepared");
            let row = client
                .query_one(&statement, &[&APP_NAME, &user, &session, &"main"])
                .await
                .expect("the load");
            (state(row.get(0)), state(row.get(1)), state(row.get(2)))
        };
        let app_key = format!("turns_{user}");
        let (session_set, session_expected) = bump(&session_state, "turns");
        let (user_set, user_expected) = bump(&user_state, "turns");
        let (app_set, app_expected) = bump(&app, &app_key);
        let event = json!({
            "content": {"parts": [{"text": "an answer"}], "role": "model"},
            "invocation_id": turn_id, "author": "agent",
            "actions": {
                "state_delta": {"turns": session_set["turns"], "user:turns": user_set["turns"],
                                format!("app:{app_key}"): app_set[&app_key]},
                "artifact_delta": {}, "requested_auth_configs": {},
                "requested_tool_confirmations": {},
            },
            "id": format!("e-{turn_id}"), "timestamp": 1.7e9,
        });
        let client = self.pool.get().await.expect("a connection");
        let session_statement = client.prepare_cached(SESSION).await.expect("prepared");
        let events_statement = client
            .prepare_cached(INSERT_EVENTS)
            .await
            .expect("prepared");
        let message_statement = client
            .prepare_cached(STORE_MESSAGE)
            .await
            .expect("prepared");
        let app_statement = client.prepare_cached(APP).await.expect("prepared");
        let user_statement = client.prepare_cached(USER).await.expect("prepared");
        let none: Vec<String> = Vec::new();
        let names = |name: &str| vec![name.to_owned()];
        let (session_names, user_names, app_names) =
            (names("turns"), names("turns"), names(&app_key));
        let (session_set, user_set, app_set) = (Json(session_set), Json(user_set), Json(app_set));
        let (session_expected, user_expected, app_expected) = (
            vec![session_expected],
            vec![user_expected],
            vec![app_expected],
        );
        let event_ids = vec![format!("e-{turn_id}")];
        let invocations = vec![turn_id.clone()];
        let micros = vec![1_700_000_000_000_000_i64 + n as i64];
        let data = vec![Json(event)];
        let session_params: [&(dyn ToSql + Sync); 7] = [
            &APP_NAME,
            &user,
            &session,
            &none,
            &session_set,
            &session_names,
            &session_expected,
        ];
        let events_params: [&(dyn ToSql + Sync); 7] = [
            &event_ids,
            &APP_NAME,
            &user,
            &session,
            &invocations,
            &micros,
            &data,
        ];
        let record = Json(&record);
        let message_params: [&(dyn ToSql + Sync); 7] = [
            &APP_NAME,
            &user,
            &session,
            &"main",
            &message_id,
            &turn_id,
            &record,
        ];
        let app_params: [&(dyn ToSql + Sync); 5] =
            [&APP_NAME, &none, &app_set, &app_names, &app_expected];
        let user_params: [&(dyn ToSql + Sync); 6] = [
            &APP_NAME,
            &user,
            &none,
            &user_set,
            &user_names,
            &user_expected,
        ];
        let pending: Vec<Pending<'_>> = vec![
            Box::pin(async { client.batch_execute("BEGIN").await.map(|()| 0) }),
            Box::pin(client.execute(&session_statement, &session_params)),
            Box::pin(client.execute(&events_statement, &events_params)),
            Box::pin(client.execute(&message_statement, &message_params)),
            Box::pin(client.execute(&app_statement, &app_params)),
            Box::pin(client.execute(&user_statement, &user_params)),
            Box::pin(async { client.batch_execute("COMMIT").await.map(|()| 0) }),
        ];
        for result in in_order(pending).await {
            result.expect("the commit's pipeline");
        }
    }
}

/// A database of its own for google-adk, whose tables have the names adk's session tables have.
pub async fn create_database(url: &str, name: &str) -> Result<(), tokio_postgres::Error> {
    let (client, connection) = config(url).connect(NoTls).await?;
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .await
}

/// `url` (libpq form, with `host=` a socket folder) as SQLAlchemy's asyncpg URL for `database`.
pub fn sqlalchemy_url(url: &str, database: &str) -> String {
    let config = config(url);
    let user = config.get_user().unwrap_or("postgres");
    let host = config
        .get_hosts()
        .first()
        .map(|host| match host {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    format!("postgresql+asyncpg://{user}@/{database}?host={host}")
}

/// Best effort: the adk rows' schema and google-adk's database go.
pub async fn clean_up(url: &str, schema: &str, database: &str) {
    if let Ok((client, connection)) = config(url).connect(NoTls).await {
        tokio::spawn(connection);
        let _ = client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await;
        let _ = client
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"
            ))
            .await;
    }
}
