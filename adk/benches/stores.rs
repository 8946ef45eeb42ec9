//! Turns per second on real stores (issue 33 item 4): a turn that stores one assistant message
//! and commits a 3-key state delta (a session key, a `user:` key and an `app:` key, each read and
//! incremented), on SQLite and on PostgreSQL, at 1, 16 and 256 turns in flight. Side by side, in
//! the same invocation and alternating round by round:
//!
//! - adk on SQLite twice, on one file: with `storage.session_store_one_flush()` (row `adk
//!   SQLite`: the assistant message is inserted in the commit's transaction, one WAL commit a
//!   turn; what a user keeping storage and sessions in one file picks) and with
//!   `SqliteSessionStore::open` on the same file (row `adk SQLite, two commits`: the message's
//!   own commit, then the state's, each on a writer thread of its own);
//! - adk on PostgreSQL twice: with `storage.session_store()` (the assistant message and the
//!   state commit each flush the server's log) and with `storage.session_store_one_flush()`
//!   (the message is written in the commit's transaction: one flush a turn);
//! - raw `tokio-postgres` sending the statements adk sends for such a turn, one transaction a
//!   turn (same pool size): what adk's store did before it grouped concurrent turns into one
//!   transaction, so adk passes it in flight; and one autocommit `INSERT` a turn (one flush of
//!   the server's log, nothing else): the floor for a store that makes each turn durable in a
//!   transaction of its own;
//! - google-adk 2.13's `DatabaseSessionService` appending the same event (one model message
//!   carrying the same 3-key delta) on the same kind of database, driven by
//!   `benches/support/google_adk_turns.py` under the Python named by `ADK_GOOGLE_ADK_PYTHON`.
//!
//! Every in-flight worker has a session and a user of its own; all share one app, so the
//! `app:` key of each worker lives in the one `app_states` row every turn writes: the row every
//! concurrent turn queues for. Each row has an app of its own (as google-adk has a database of
//! its own), so each row's document holds only the keys of its own workers. Each worker runs one untimed turn first (it creates its session),
//! then the timed ones; the figures are turns per second over the timed part and the median
//! turn's latency.
//!
//! ```sh
//! ADK_GOOGLE_ADK_PYTHON=$(.ci/google-adk install) .ci/postgres run \
//!   cargo bench -p checked-adk --bench stores --features postgres
//! ```
//!
//! `ADK_BENCH_ROUNDS` (default 3) and `ADK_BENCH_CONCURRENCY` (default `1,16,256`) change the
//! shape; `ADK_BENCH_SQLITE=one-flush` or `=two-commits` runs only that SQLite row (for
//! instruction counts of one store), `ADK_BENCH_SQLITE=none` none, and
//! `ADK_BENCH_POSTGRES=one-flush` only the PostgreSQL one-flush row (for a before/after of it). Without `ADK_TEST_POSTGRES_URL` or the Python, the rows that need them are reported as
//! not run, loudly. `ADK_BENCH_STATE=add` makes the adk rows' three keys `add` counters
//! (`state_key!(.., on_conflict = add)`) instead of read-and-set keys, the `app:` counter one
//! for every worker of the app: merges, for a before/after of how a store commits them (the
//! google-adk and raw rows keep their workload, so compare adk rows only). `ADK_BENCH_POOL`
//! sets the adk and raw rows' pool size (default `adk::postgres::DEFAULT_POOL_SIZE`).

// A bench binary: its helpers need no documentation.
#![allow(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::postgres::{PostgresOptions, PostgresStorage};
use adk::primitives::Message;
use adk::sqlite::{SqliteSessionStore, SqliteStorage};
use adk::state::contention::Add;
use adk::state::{SharedSessionStore, StateKey};
use adk::storage::SharedStorage;
use serde_json::json;

#[path = "support/raw_postgres.rs"]
mod raw_postgres;

/// One measurement: timed turns per second and the median turn's latency.
#[derive(Clone, Copy, Debug)]
struct Figure {
    per_second: f64,
    p50: Duration,
}

/// Turns each measurement times, whatever the concurrency (at least 4 per worker).
fn timed_turns(concurrency: usize) -> usize {
    (concurrency * 4).max(400)
}

fn median(mut latencies: Vec<Duration>) -> Duration {
    latencies.sort_unstable();
    latencies[latencies.len() / 2]
}

/// Runs `concurrency` workers, each one untimed turn and then its share of the timed ones;
/// `turn(worker, n)` runs worker's n-th turn.
async fn measure<F, Fut>(concurrency: usize, turn: F) -> Figure
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let turn = Arc::new(turn);
    let per_worker = timed_turns(concurrency).div_ceil(concurrency);
    let warm: Vec<_> = (0..concurrency)
        .map(|worker| tokio::spawn((turn)(worker, 0)))
        .collect();
    for task in warm {
        task.await.expect("a warm-up turn");
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let turn = Arc::clone(&turn);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_worker);
                for n in 1..=per_worker {
                    let at = Instant::now();
                    (turn)(worker, n).await;
                    latencies.push(at.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.expect("a worker"));
    }
    let elapsed = started.elapsed();
    Figure {
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: median(latencies),
    }
}

/// The session's, the user's and the app's counters of `ADK_BENCH_STATE=add`.
const SESSION_TURNS: StateKey<u64, Add> = adk::state_key!("turns" => u64, on_conflict = add);
const USER_TURNS: StateKey<u64, Add> = adk::state_key!("user:turns" => u64, on_conflict = add);
const APP_TURNS: StateKey<u64, Add> = adk::state_key!("app:turns" => u64, on_conflict = add);

/// The runner every adk row uses: the executor stores one assistant message and increments
/// three keys, one per scope; the `app:` key is the worker's own (named after its user). With
/// `merges`, each key is an `add` counter instead, and the `app:` one is the app's.
fn runner(storage: SharedStorage, sessions: SharedSessionStore, merges: bool) -> TurnRunner {
    TurnRunner::builder()
        .shared_storage(storage)
        .session_store(sessions)
        .executor(executor_fn(move |ctx: &mut DispatchContext| {
            Box::pin(async move {
                let app_key = format!("app:turns_{}", ctx.storage_context().user_id().as_str());
                let id = format!("m-{}", ctx.turn_id());
                ctx.store_message(Message::assistant(id, "an answer")?)
                    .await?;
                if merges {
                    for key in [SESSION_TURNS, USER_TURNS, APP_TURNS] {
                        ctx.state_mut().add(key, 1)?;
                    }
                } else {
                    for key in ["turns", "user:turns", app_key.as_str()] {
                        let turns = ctx.state().value(key).and_then(serde_json::Value::as_u64);
                        ctx.state_mut()
                            .set_value(key, json!(turns.unwrap_or(0) + 1))?;
                    }
                }
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

/// One round of an adk row. Each row writes an app of its own (`app`): every turn writes the
/// app's one `app_states` document, which holds every worker's `app:` key, so rows sharing an
/// app would each rewrite a document several times larger than google-adk's, which runs on a
/// database of its own.
async fn adk_round(
    runner: &TurnRunner,
    app: &'static str,
    round: usize,
    concurrency: usize,
) -> Figure {
    let runner = runner.clone();
    measure(concurrency, move |worker, _| {
        let runner = runner.clone();
        async move {
            let raw = RawTurnContext::new(format!("r{round}c{concurrency}w{worker}"), "A bench.")
                .app_name(app)
                .user_id(format!("r{round}c{concurrency}u{worker}"));
            let outcome = runner.run(raw).await.expect("the turn runs");
            assert!(outcome.is_completed(), "{:?}", outcome.status);
        }
    })
    .await
}

/// One round of google-adk: the script prints `turns_per_second p50_ms` on its last line.
fn google_adk_round(
    python: &Path,
    database: &str,
    round: usize,
    concurrency: usize,
) -> Result<Figure, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/support/google_adk_turns.py");
    let output = std::process::Command::new(python)
        .arg(&script)
        .args([
            database,
            &concurrency.to_string(),
            &timed_turns(concurrency).to_string(),
            &format!("r{round}c{concurrency}"),
        ])
        .output()
        .map_err(|error| format!("{}: {error}", python.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "the google-adk script failed: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let last = stdout.lines().last().unwrap_or_default();
    let mut fields = last.split_whitespace().map(str::parse::<f64>);
    match (fields.next(), fields.next()) {
        (Some(Ok(per_second)), Some(Ok(p50_ms))) => Ok(Figure {
            per_second,
            p50: Duration::from_secs_f64(p50_ms / 1e3),
        }),
        _ => Err(format!("the google-adk script printed `{last}`")),
    }
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

/// Figures by (row, concurrency), one per round.
type Table = Vec<(String, usize, Vec<Figure>)>;

fn record(table: &mut Table, row: &str, concurrency: usize, figure: Figure) {
    println!(
        "  {row:<28} c={concurrency:<4} {:>8.0} turns/s  p50 {:>9.3} ms",
        figure.per_second,
        figure.p50.as_secs_f64() * 1e3
    );
    match table
        .iter_mut()
        .find(|(name, at, _)| name == row && *at == concurrency)
    {
        Some((_, _, figures)) => figures.push(figure),
        None => table.push((row.to_owned(), concurrency, vec![figure])),
    }
}

fn median_figure(figures: &[Figure]) -> Figure {
    let mut rates: Vec<f64> = figures.iter().map(|figure| figure.per_second).collect();
    rates.sort_by(f64::total_cmp);
    Figure {
        per_second: rates[rates.len() / 2],
        p50: median(figures.iter().map(|figure| figure.p50).collect()),
    }
}

fn summary(table: &Table, pairs: &[(&str, &str, &str)]) {
    println!("\nMedians over the rounds (turns/s, p50 latency):");
    for (row, concurrency, figures) in table {
        let figure = median_figure(figures);
        println!(
            "  {row:<28} c={concurrency:<4} {:>8.0} turns/s  p50 {:>9.3} ms  ({} rounds)",
            figure.per_second,
            figure.p50.as_secs_f64() * 1e3,
            figures.len()
        );
    }
    println!("\nRatios of the medians:");
    for (label, numerator, denominator) in pairs {
        for (row, concurrency, figures) in table {
            if row != numerator {
                continue;
            }
            let Some((_, _, others)) = table
                .iter()
                .find(|(other, at, _)| other == denominator && at == concurrency)
            else {
                continue;
            };
            let ratio = median_figure(figures).per_second / median_figure(others).per_second;
            println!("  {label:<40} c={concurrency:<4} {ratio:>6.2}x");
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let rounds: usize = env_or("ADK_BENCH_ROUNDS", "3")
        .parse()
        .expect("ADK_BENCH_ROUNDS");
    let concurrencies: Vec<usize> = env_or("ADK_BENCH_CONCURRENCY", "1,16,256")
        .split(',')
        .map(|n| n.trim().parse().expect("ADK_BENCH_CONCURRENCY"))
        .collect();
    let python = std::env::var_os("ADK_GOOGLE_ADK_PYTHON").map(PathBuf::from);
    let url = std::env::var("ADK_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty());
    if python.is_none() {
        println!("NOTE: the google-adk rows do not run: ADK_GOOGLE_ADK_PYTHON is not set");
    }
    if url.is_none() {
        println!("NOTE: the PostgreSQL rows do not run: ADK_TEST_POSTGRES_URL is not set");
    }

    let folder = std::env::temp_dir().join(format!("adk-bench-stores-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let sqlite_path = folder.join("adk.sqlite3");
    let google_sqlite = format!(
        "sqlite+aiosqlite:///{}",
        folder.join("google-adk.sqlite3").display()
    );
    let sqlite_rows = env_or("ADK_BENCH_SQLITE", "both");
    let merges = match env_or("ADK_BENCH_STATE", "set").as_str() {
        "set" => false,
        "add" => true,
        other => panic!("ADK_BENCH_STATE is `set` or `add`, not `{other}`"),
    };
    let (sqlite_runner, sqlite_two_commits) = runtime.block_on(async {
        let storage = SqliteStorage::open(&sqlite_path)
            .await
            .expect("the SQLite file");
        let one_flush = storage
            .session_store_one_flush()
            .await
            .expect("the SQLite session tables");
        let sessions = SqliteSessionStore::open(&sqlite_path)
            .await
            .expect("the SQLite session tables");
        (
            matches!(sqlite_rows.as_str(), "both" | "one-flush").then(|| {
                runner(
                    SharedStorage::new(storage.clone()),
                    SharedSessionStore::new(one_flush),
                    merges,
                )
            }),
            matches!(sqlite_rows.as_str(), "both" | "two-commits").then(|| {
                runner(
                    SharedStorage::new(storage),
                    SharedSessionStore::new(sessions),
                    merges,
                )
            }),
        )
    });

    let only_one_flush = env_or("ADK_BENCH_POSTGRES", "all") == "one-flush";
    let pool_size: usize = env_or(
        "ADK_BENCH_POOL",
        &adk::postgres::DEFAULT_POOL_SIZE.to_string(),
    )
    .parse()
    .expect("ADK_BENCH_POOL");
    let schema = format!("bench_stores_{}", std::process::id());
    let google_database = format!("bench_google_adk_{}", std::process::id());
    let postgres = url.as_ref().map(|url| {
        runtime.block_on(async {
            let options = PostgresOptions::from_url(url)
                .expect("ADK_TEST_POSTGRES_URL")
                .schema(schema.as_str())
                .expect("a plain schema name")
                .pool_size(pool_size);
            let storage = PostgresStorage::connect_with(options)
                .await
                .expect("the PostgreSQL database");
            let sessions = storage.session_store().await.expect("the session tables");
            let one_flush = storage
                .session_store_one_flush()
                .await
                .expect("the session tables");
            let raw = raw_postgres::Raw::connect(url, &schema, pool_size)
                .await
                .expect("the raw tokio-postgres pool");
            raw_postgres::create_database(url, &google_database)
                .await
                .expect("a database for google-adk");
            (
                runner(
                    SharedStorage::new(storage.clone()),
                    SharedSessionStore::new(sessions),
                    merges,
                ),
                runner(
                    SharedStorage::new(storage),
                    SharedSessionStore::new(one_flush),
                    merges,
                ),
                raw,
            )
        })
    });
    let google_postgres = url
        .as_ref()
        .map(|url| raw_postgres::sqlalchemy_url(url, &google_database));

    let mut table = Table::new();
    for round in 0..rounds {
        println!("\nround {} of {rounds}", round + 1);
        for &concurrency in &concurrencies {
            if let Some(runner) = &sqlite_runner {
                let figure = runtime.block_on(adk_round(runner, "bench", round, concurrency));
                record(&mut table, "adk SQLite", concurrency, figure);
            }
            if let Some(runner) = &sqlite_two_commits {
                let figure =
                    runtime.block_on(adk_round(runner, "bench-two-commits", round, concurrency));
                record(&mut table, "adk SQLite, two commits", concurrency, figure);
            }
            if let Some(python) = &python {
                match google_adk_round(python, &google_sqlite, round, concurrency) {
                    Ok(figure) => record(&mut table, "google-adk SQLite", concurrency, figure),
                    Err(error) => println!("  google-adk SQLite c={concurrency}: {error}"),
                }
            }
            if let Some((runner, one_flush, raw)) = &postgres {
                if !only_one_flush {
                    let figure = runtime.block_on(adk_round(runner, "bench", round, concurrency));
                    record(&mut table, "adk PostgreSQL", concurrency, figure);
                }
                let figure =
                    runtime.block_on(adk_round(one_flush, "bench-one-flush", round, concurrency));
                record(&mut table, "adk PostgreSQL one flush", concurrency, figure);
                if !only_one_flush {
                    let figure = runtime.block_on(raw.round(round, concurrency));
                    record(&mut table, "raw tokio-postgres", concurrency, figure);
                    let figure = runtime.block_on(raw.flush_round(round, concurrency));
                    record(&mut table, "raw one INSERT a turn", concurrency, figure);
                }
            }
            if let (Some(python), Some(database)) = (&python, &google_postgres) {
                match google_adk_round(python, database, round, concurrency) {
                    Ok(figure) => record(&mut table, "google-adk PostgreSQL", concurrency, figure),
                    Err(error) => println!("  google-adk PostgreSQL c={concurrency}: {error}"),
                }
            }
        }
    }
    summary(
        &table,
        &[
            (
                "adk SQLite / google-adk SQLite",
                "adk SQLite",
                "google-adk SQLite",
            ),
            (
                "adk SQLite one flush / two commits",
                "adk SQLite",
                "adk SQLite, two commits",
            ),
            (
                "adk SQLite, two commits / google-adk",
                "adk SQLite, two commits",
                "google-adk SQLite",
            ),
            (
                "adk PostgreSQL / google-adk PostgreSQL",
                "adk PostgreSQL",
                "google-adk PostgreSQL",
            ),
            (
                "adk PostgreSQL one flush / google-adk",
                "adk PostgreSQL one flush",
                "google-adk PostgreSQL",
            ),
            (
                "adk PostgreSQL one flush / raw",
                "adk PostgreSQL one flush",
                "raw tokio-postgres",
            ),
            (
                "adk PG one flush / two flushes",
                "adk PostgreSQL one flush",
                "adk PostgreSQL",
            ),
            (
                "raw one INSERT a turn / google-adk PostgreSQL",
                "raw one INSERT a turn",
                "google-adk PostgreSQL",
            ),
        ],
    );

    let _ = std::fs::remove_dir_all(&folder);
    if let Some(url) = &url {
        runtime.block_on(raw_postgres::clean_up(url, &schema, &google_database));
    }
}
