//! Two-way interop with google-adk 2.13's session tables, checked against google-adk itself.
//!
//! adk reads the event rows of a `DatabaseSessionService` database and the files
//! `SqliteSessionService` writes (what `adk web` keeps in `.adk/session.db`); google-adk's own
//! services read back, with the same state and events, what adk wrote, and an `adk web` file
//! adk ran turns on stays readable by google-adk. On PostgreSQL too: google-adk's
//! `DatabaseSessionService` (through asyncpg) reads what adk's PostgreSQL store wrote, and adk
//! reads a session google-adk wrote into tables google-adk created. The tests that run
//! google-adk need Python 3: `.ci/google-adk install` puts google-adk into a cached virtual
//! environment. Without it they print a banner saying they did NOT run; with `CI` set they fail
//! instead. The PostgreSQL ones also need the database of `.ci/postgres run` (NOT RUN without
//! it, a failure under `.ci/postgres run`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Once, OnceLock};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, Next, from_fn};
use adk::postgres::{PostgresOptions, PostgresSessionStore};
use adk::primitives::{Message, ToolCall};
use adk::sqlite::SqliteSessionStore;
use adk::state::{
    EventContent, EventPart, GetSessionConfig, SessionEvent, SessionKey, SessionStore, StateKey,
};
use adk::storage::NoopStorage;
use adk_integration_tests::postgres_database;
use serde_json::{Value, json};

const VISITS: StateKey<u32> = adk::state_key!("visits" => u32);
const LANG: StateKey<String> = adk::state_key!("user:lang" => String);
const CALLS: StateKey<u32> = adk::state_key!("app:calls" => u32);

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/google-adk")
        .join(name)
}

/// A copy of fixture `name` in a fresh folder (opening a file may switch it to WAL).
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join(name);
    std::fs::copy(data(name), &path).expect("the fixture is there");
    (folder, path)
}

/// google-adk's python, installed by `.ci/google-adk`; `None` after a loud banner when it
/// cannot be installed here, a failure with `CI` set.
fn google_adk(test: &str) -> Option<&'static Path> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let installed = PYTHON.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/google-adk");
        let output = Command::new("bash")
            .arg(&script)
            .arg("install")
            .output()
            .map_err(|error| format!("running {}: {error}", script.display()))?;
        let printed = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() && Path::new(&printed).is_file() {
            Ok(PathBuf::from(printed))
        } else {
            Err(format!(
                "`.ci/google-adk install` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    });
    match installed {
        Ok(python) => Some(python),
        Err(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and google-adk cannot run: {reason}"
            );
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "\n{rule}\nNOTE: the google-adk interop tests did NOT run: {reason}\n      \
                     They need Python 3 with venv and pip, and PyPI (or a warm pip cache):\n      \
                     .ci/google-adk install   creates the environment they use.\n{rule}\n",
                    rule = "=".repeat(78)
                );
            });
            let line = format!("NOT RUN: {test} (no google-adk)\n");
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            None
        }
    }
}

/// Runs tests/google-adk/read_session.py with google-adk and returns what it printed.
fn google_adk_reads(python: &Path, service: &str, path: &Path, key: &SessionKey) -> Value {
    let output = read_session_py(python, "read", service, path.as_os_str(), key, None);
    serde_json::from_slice(&output).expect("the script prints JSON")
}

/// Runs `read_session.py COMMAND SERVICE PATH APP USER SESSION` (PostgreSQL tables in
/// `schema`), failing the test when it fails; returns its stdout.
fn read_session_py(
    python: &Path,
    command: &str,
    service: &str,
    path: &std::ffi::OsStr,
    key: &SessionKey,
    schema: Option<&str>,
) -> Vec<u8> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("google-adk/read_session.py");
    let mut python = Command::new(python);
    if let Some(schema) = schema {
        python.env("ADK_GOOGLE_ADK_PG_SCHEMA", schema);
    }
    let output = python
        .arg(script)
        .args([command, service])
        .arg(path)
        .args([key.app.as_str(), key.user.as_str(), key.session.as_str()])
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "google-adk could not {command} {}: {}",
        path.to_string_lossy(),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// The test database's URL and a schema name no other test uses, or `None` after saying the
/// test did not run (a failure under `.ci/postgres run`).
fn postgres_schema(test: &str) -> Option<(String, String)> {
    let Some(url) = postgres_database::test_url() else {
        eprintln!("NOT RUN on PostgreSQL: {test} (ADK_TEST_POSTGRES_URL is not set)");
        return None;
    };
    Some((url, postgres_database::fresh_schema_name("gadk")))
}

async fn postgres_store(url: &str, schema: &str) -> PostgresSessionStore {
    let options = PostgresOptions::from_url(url)
        .expect("a valid URL")
        .schema(schema)
        .expect("a valid schema name");
    PostgresSessionStore::connect_with(options)
        .await
        .expect("connects")
}

/// A runner whose model calls `weather` once and answers; `turn_input` writes session, user and
/// app keys.
fn weather_runner(store: impl SessionStore) -> TurnRunner {
    TurnRunner::builder()
        .storage(NoopStorage::new())
        .session_store(store)
        .turn_input(from_fn(
            |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
                Box::pin(async move {
                    let visits = ctx.state().get(VISITS)?.unwrap_or(0);
                    ctx.state_mut().set(VISITS, visits + 1)?;
                    ctx.state_mut().set(LANG, "fr".to_owned())?;
                    let calls = ctx.state().get(CALLS)?.unwrap_or(0);
                    ctx.state_mut().set(CALLS, calls + 1)?;
                    let _ = next.run(ctx).await;
                    Ok::<(), BoxError>(())
                })
            },
        ))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                if ctx.iteration() == 0 {
                    let call = ToolCall::new(
                        format!("call-{}", ctx.turn_id()),
                        "weather",
                        json!({"city": "Paris"}),
                    )?;
                    ctx.store_tool_call(call.complete("sunny")).await?;
                    return Ok(());
                }
                let answer = Message::assistant(format!("answer-{}", ctx.turn_id()), "Sunny.")?;
                ctx.store_message(answer).await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

async fn run_turn(runner: &TurnRunner, key: &SessionKey, question: &str) {
    let raw = RawTurnContext::new(key.session.as_str(), "You are a weather bot.")
        .app_name(key.app.as_str())
        .user_id(key.user.as_str())
        .user_message(question);
    let outcome = runner.run(raw).await.expect("valid input");
    assert!(outcome.is_completed(), "{:?}", outcome.status);
}

async fn with_events(store: &impl SessionStore, key: &SessionKey) -> adk::state::Session {
    store
        .get_session_with(key, GetSessionConfig::default())
        .await
        .expect("reads")
        .expect("the session exists")
}

/// What google-adk must read back for adk's events: each event as adk stores it, compared
/// field by field (google-adk adds fields of its own, `node_info` for one).
fn assert_same_events(adk: &[SessionEvent], google: &Value) {
    let google = google.as_array().expect("a list of events");
    assert_eq!(google.len(), adk.len(), "event count");
    for (mine, theirs) in adk.iter().zip(google) {
        let mine = mine.to_adk_json();
        for field in ["id", "invocation_id", "author", "content"] {
            assert_eq!(theirs.get(field), mine.get(field), "event field {field}");
        }
        assert_eq!(
            theirs["actions"]["state_delta"], mine["actions"]["state_delta"],
            "state delta"
        );
        let (a, b) = (
            theirs["timestamp"].as_f64().expect("a float timestamp"),
            mine["timestamp"].as_f64().expect("a float timestamp"),
        );
        assert!((a - b).abs() < 1e-6, "timestamp {a} vs {b}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_reads_the_event_rows_google_adk_wrote() {
    // sessions.db: google-adk 2.13's DatabaseSessionService (make_fixture.py), one event that
    // carries only a state delta.
    let (_folder, path) = copy_of("sessions.db");
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    let session = with_events(&store, &SessionKey::new("a", "u1", "s1")).await;
    assert_eq!(session.events.len(), 1);
    let event = &session.events[0];
    assert_eq!(event.id, "a7e4fb39-7bdb-4194-b55e-068aa891528c");
    assert_eq!(
        (event.invocation_id.as_str(), event.author.as_str()),
        ("inv-1", "system")
    );
    assert_eq!(event.content, None);
    assert_eq!(
        event.state_delta,
        *json!({"sk": null, "sk2": "S", "user:k2": "U", "app:k2": 2})
            .as_object()
            .unwrap()
    );
    assert_eq!(event.timestamp.as_microsecond(), 1_795_437_755_704_896);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_reads_an_adk_web_session_file_with_its_events() {
    // adk_web.db: google-adk 2.13's SqliteSessionService (`read_session.py write-sqlite`):
    // REAL times, no adk_internal_metadata. Before, every read failed with "Invalid column type
    // Real at index: 1, name: update_time".
    let (_folder, path) = copy_of("adk_web.db");
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    let key = SessionKey::new("a", "u1", "s1");
    let session = with_events(&store, &key).await;
    assert_eq!(
        session.state,
        *json!({"step": 1, "city": "Paris", "user:lang": "fr", "app:calls": 1})
            .as_object()
            .unwrap()
    );
    let parts: Vec<(&str, &str, Option<&EventPart>)> = session
        .events
        .iter()
        .map(|event| {
            let content = event.content.as_ref().expect("content");
            (
                event.author.as_str(),
                content.role.as_str(),
                content.parts.first(),
            )
        })
        .collect();
    assert_eq!(
        parts,
        vec![
            (
                "user",
                "user",
                Some(&EventPart::Text("Weather in Paris?".into()))
            ),
            (
                "root_agent",
                "model",
                Some(&EventPart::FunctionCall {
                    id: Some("call-1".into()),
                    name: "weather".into(),
                    args: json!({"city": "Paris"}).as_object().unwrap().clone(),
                })
            ),
            (
                "root_agent",
                "user",
                Some(&EventPart::FunctionResponse {
                    id: Some("call-1".into()),
                    name: "weather".into(),
                    response: json!({"result": "sunny"}).as_object().unwrap().clone(),
                })
            ),
            (
                "root_agent",
                "model",
                Some(&EventPart::Text("Sunny in Paris.".into()))
            ),
        ]
    );
    assert_eq!(
        session.events[2].state_delta,
        *json!({"city": "Paris", "app:calls": 1})
            .as_object()
            .unwrap()
    );
    let recent = store
        .get_session_with(&key, GetSessionConfig::recent(1))
        .await
        .expect("reads")
        .expect("exists");
    assert_eq!(recent.events, session.events[3..]);
    let listed = store.list_sessions(&"a".into(), None).await.expect("lists");
    assert_eq!(listed.len(), 1);
}

/// Every time column of an `adk web` file keeps google-adk's REAL type, and no v1 metadata
/// table was added.
fn assert_google_adk_types_kept(path: &Path) {
    let connection = rusqlite::Connection::open(path).expect("opens");
    for (table, column) in [
        ("sessions", "update_time"),
        ("sessions", "create_time"),
        ("app_states", "update_time"),
        ("user_states", "update_time"),
        ("events", "timestamp"),
    ] {
        let types: Vec<String> = connection
            .prepare(&format!("SELECT DISTINCT typeof({column}) FROM {table}"))
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(types, ["real"], "{table}.{column}");
    }
    let metadata: i64 = connection
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'adk_internal_metadata'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(metadata, 0);
}

fn journal_mode(path: &Path) -> String {
    rusqlite::Connection::open(path)
        .expect("opens")
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("reads the journal mode")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_adk_files_keep_their_journal_mode_after_adk_ran_turns_on_them() {
    // Before, opening either file switched it to WAL: a file adk did not create had its journal
    // mode changed (google-adk reads it still, but it is not adk's to change).
    for fixture in ["adk_web.db", "sessions.db"] {
        let (_folder, path) = copy_of(fixture);
        let before = journal_mode(&path);
        assert_eq!(before, "delete", "{fixture} is in google-adk's own mode");
        let store = SqliteSessionStore::open(&path).await.expect("opens");
        let runner = weather_runner(store.clone());
        run_turn(&runner, &SessionKey::new("a", "u1", "s1"), "Weather?").await;
        run_turn(&runner, &SessionKey::new("a", "u1", "s-new"), "Weather?").await;
        // The transcript's storage sharing the file changes its mode no more than the store.
        let storage = adk::sqlite::SqliteStorage::open(&path)
            .await
            .expect("opens");
        drop((storage, runner, store));
        assert_eq!(journal_mode(&path), before, "{fixture}");
        let wal = path.with_file_name(format!("{fixture}-wal"));
        assert!(!wal.exists(), "{fixture}: a WAL file {}", wal.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adk_web_file_keeps_its_real_time_columns_after_adk_ran_turns_on_it() {
    // Without google-adk: the file's own types are what google-adk's `list_sessions` needs
    // (before, a turn on a new session wrote `update_time` as TEXT into the REAL column).
    let (_folder, path) = copy_of("adk_web.db");
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    let runner = weather_runner(store.clone());
    run_turn(
        &runner,
        &SessionKey::new("a", "u1", "s2"),
        "Weather in Paris?",
    )
    .await;
    run_turn(&runner, &SessionKey::new("a", "u1", "s1"), "And tomorrow?").await;
    drop((runner, store));
    assert_google_adk_types_kept(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_adk_creates_is_in_wal_mode_and_stays_so() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("new.db");
    drop(SqliteSessionStore::open(&path).await.expect("creates"));
    assert_eq!(journal_mode(&path), "wal");
    drop(
        adk::sqlite::SqliteStorage::open(&path)
            .await
            .expect("opens"),
    );
    drop(SqliteSessionStore::open(&path).await.expect("reopens"));
    assert_eq!(journal_mode(&path), "wal");
    let storage_first = folder.path().join("storage.db");
    drop(
        adk::sqlite::SqliteStorage::open(&storage_first)
            .await
            .expect("creates"),
    );
    assert_eq!(journal_mode(&storage_first), "wal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_adk_reads_a_session_adk_wrote_with_the_same_state_and_events() {
    let Some(python) = google_adk("google_adk_reads_a_session_adk_wrote") else {
        return;
    };
    let folder = tempfile::tempdir().expect("a temporary folder");
    let path = folder.path().join("sessions.db");
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    let key = SessionKey::new("weather", "ada", "s-1");
    let runner = weather_runner(store.clone());
    run_turn(&runner, &key, "Weather in Paris?").await;
    run_turn(&runner, &key, "And tomorrow?").await;
    let mine = with_events(&store, &key).await;
    assert_eq!(mine.events.len(), 8);
    drop(runner);
    drop(store);

    let google = google_adk_reads(python, "database", &path, &key);
    assert_eq!(google["state"], Value::Object(mine.state.clone()));
    assert_eq!(
        google["state"],
        json!({"visits": 2, "user:lang": "fr", "app:calls": 2})
    );
    assert_same_events(&mine.events, &google["events"]);
    assert_eq!(google["listed"], json!(["s-1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adk_web_file_adk_ran_turns_on_stays_readable_by_google_adk() {
    // Before, a turn on a new session wrote `update_time` as TEXT into the REAL column, and
    // google-adk's list_sessions then failed ("last_update_time: Input should be a valid
    // number"): opening a user's `adk web` database with adk damaged it.
    let Some(python) = google_adk("an_adk_web_file_adk_ran_turns_on") else {
        return;
    };
    let (_folder, path) = copy_of("adk_web.db");
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    let (old, new) = (
        SessionKey::new("a", "u1", "s1"),
        SessionKey::new("a", "u1", "s2"),
    );
    let runner = weather_runner(store.clone());
    run_turn(&runner, &new, "Weather in Paris?").await;
    run_turn(&runner, &old, "And tomorrow?").await;
    let (mine_old, mine_new) = (
        with_events(&store, &old).await,
        with_events(&store, &new).await,
    );
    drop(runner);
    drop(store);

    assert_google_adk_types_kept(&path);

    let google_new = google_adk_reads(python, "sqlite", &path, &new);
    assert_eq!(google_new["listed"], json!(["s1", "s2"]));
    assert_eq!(google_new["state"], Value::Object(mine_new.state.clone()));
    assert_same_events(&mine_new.events, &google_new["events"]);
    let google_old = google_adk_reads(python, "sqlite", &path, &old);
    assert_eq!(google_old["state"], Value::Object(mine_old.state.clone()));
    assert_eq!(mine_old.events.len(), 8);
    assert_same_events(&mine_old.events, &google_old["events"]);
    assert_eq!(
        mine_old.events[4].content,
        Some(EventContent::user_text("And tomorrow?"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_adk_reads_a_session_adk_wrote_on_postgres_with_the_same_state_and_events() {
    let test = "google_adk_reads_a_session_adk_wrote_on_postgres";
    let Some(python) = google_adk(test) else {
        return;
    };
    let Some((url, schema)) = postgres_schema(test) else {
        return;
    };
    let store = postgres_store(&url, &schema).await;
    let key = SessionKey::new("weather", "ada", "s-1");
    let runner = weather_runner(store.clone());
    run_turn(&runner, &key, "Weather in Paris?").await;
    run_turn(&runner, &key, "And tomorrow?").await;
    let mine = with_events(&store, &key).await;
    assert_eq!(mine.events.len(), 8);
    drop(runner);

    let output = read_session_py(
        python,
        "read",
        "postgres",
        url.as_ref(),
        &key,
        Some(&schema),
    );
    let google: Value = serde_json::from_slice(&output).expect("the script prints JSON");
    assert_eq!(google["state"], Value::Object(mine.state.clone()));
    assert_eq!(
        google["state"],
        json!({"visits": 2, "user:lang": "fr", "app:calls": 2})
    );
    assert_same_events(&mine.events, &google["events"]);
    assert_eq!(google["listed"], json!(["s-1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_reads_a_session_google_adk_wrote_in_tables_google_adk_created() {
    let test = "postgres_store_reads_a_session_google_adk_wrote";
    let Some(python) = google_adk(test) else {
        return;
    };
    let Some((url, schema)) = postgres_schema(test) else {
        return;
    };
    let key = SessionKey::new("a", "u1", "s1");
    // google-adk creates its own tables (its column types, its metadata row) in an empty schema.
    read_session_py(
        python,
        "write",
        "postgres",
        url.as_ref(),
        &key,
        Some(&schema),
    );
    let google = read_session_py(
        python,
        "read",
        "postgres",
        url.as_ref(),
        &key,
        Some(&schema),
    );
    let google: Value = serde_json::from_slice(&google).expect("the script prints JSON");

    let store = postgres_store(&url, &schema).await;
    let session = with_events(&store, &key).await;
    assert_eq!(
        session.state,
        *json!({"step": 1, "city": "Paris", "user:lang": "fr", "app:calls": 1})
            .as_object()
            .unwrap()
    );
    assert_eq!(Value::Object(session.state.clone()), google["state"]);
    assert_eq!(session.events.len(), 4);
    assert_same_events(&session.events, &google["events"]);
    assert_eq!(
        session.events[0].content,
        Some(EventContent::user_text("Weather in Paris?"))
    );
    assert_eq!(
        session.events[2].state_delta,
        *json!({"city": "Paris", "app:calls": 1})
            .as_object()
            .unwrap()
    );
    let listed = store.list_sessions(&"a".into(), None).await.expect("lists");
    assert_eq!(listed.len(), 1);

    // A turn adk runs on it stays readable by google-adk.
    let runner = weather_runner(store.clone());
    run_turn(&runner, &key, "And tomorrow?").await;
    let mine = with_events(&store, &key).await;
    drop(runner);
    let after = read_session_py(
        python,
        "read",
        "postgres",
        url.as_ref(),
        &key,
        Some(&schema),
    );
    let after: Value = serde_json::from_slice(&after).expect("the script prints JSON");
    assert_eq!(after["state"], Value::Object(mine.state.clone()));
    assert_same_events(&mine.events, &after["events"]);
}
