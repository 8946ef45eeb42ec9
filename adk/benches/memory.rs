//! Sessions per process (issue 33 item 3): the memory an idle session costs in each session store,
//! and the memory a turn in flight costs while it waits on its model.
//!
//! A counting global allocator keeps the bytes live on the Rust heap, so each figure is the
//! growth of that count divided by the number of sessions or turns: deterministic, not a
//! sample. SQLite's own caches live outside it (the bundled SQLite allocates with the C
//! allocator), so the persistent stores also print the growth of the process's resident set
//! (`/proc/self/statm`), which counts them but also rounds to pages and keeps freed memory.
//!
//! Rows:
//! - idle sessions: `create_session` with an empty state, each session of its own user, in one
//!   app: 1k, 10k and 100k sessions in `InMemorySessionStore`; 1k and 10k in SQLite (one WAL
//!   file) and, with `ADK_TEST_POSTGRES_URL` set, PostgreSQL;
//! - turns in flight: 1k turns run at once through a runner with `InMemorySessionStore` and
//!   `NoopStorage`, each with a user message, whose executor waits until every turn has reached
//!   it (a model that has not answered yet); the figure is taken while all of them wait, and
//!   includes each turn's spawned task. The baseline row is the same number of spawned tasks
//!   waiting on the same signal without a turn.
//!
//! ```sh
//! .ci/postgres run cargo bench -p checked-adk --bench memory --features postgres
//! ```

// A bench binary: its helpers need no documentation.
#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::BoxError;
use adk::postgres::{PostgresOptions, PostgresSessionStore};
use adk::sqlite::SqliteSessionStore;
use adk::state::{InMemorySessionStore, SessionKey, SessionStore};
use adk::storage::NoopStorage;
use serde_json::Map;
use tokio::sync::Notify;

struct CountingAllocator;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// Counting live bytes needs a global allocator, which is an unsafe trait; this one only counts
// and forwards every call to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `pointer` came from `System.alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn live() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The resident set in bytes.
fn resident() -> isize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: isize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|pages| pages.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn report(row: &str, count: usize, heap: isize, rss: Option<isize>) {
    let per = |bytes: isize| bytes as f64 / count as f64;
    match rss {
        Some(rss) => println!(
            "  {row:<44} {count:>7}: {:>9.0} B heap each   {:>9.0} B resident each",
            per(heap),
            per(rss)
        ),
        None => println!("  {row:<44} {count:>7}: {:>9.0} B heap each", per(heap)),
    }
}

/// Creates `count` idle sessions in `store` (16 at a time) and reports the growth.
async fn idle_sessions(row: &str, store: &impl SessionStore, count: usize, with_rss: bool) {
    let (heap, rss) = (live(), resident());
    for chunk in (0..count).collect::<Vec<_>>().chunks(16) {
        let creates = chunk.iter().map(|n| async move {
            let key = SessionKey::new(
                "bench",
                format!("user-{count}-{n:06}"),
                format!("session-{count}-{n:06}"),
            );
            store
                .create_session(&key, Map::new())
                .await
                .expect("a new session");
        });
        futures_util::future::join_all(creates).await;
    }
    report(
        row,
        count,
        live() - heap,
        with_rss.then(|| resident() - rss),
    );
}

/// Holds `count` waiters until every one of them waits, then lets them all go at once.
struct Gate {
    count: usize,
    arrived: AtomicUsize,
    all_arrived: Notify,
    release: Notify,
}

impl Gate {
    fn new(count: usize) -> Arc<Self> {
        Arc::new(Self {
            count,
            arrived: AtomicUsize::new(0),
            all_arrived: Notify::new(),
            release: Notify::new(),
        })
    }

    /// Waits to be let go. The wait is made before this waiter counts itself arrived:
    /// `notify_waiters` wakes only the waits made before it.
    async fn wait(&self) {
        let waiting = self.release.notified();
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 == self.count {
            self.all_arrived.notify_one();
        }
        waiting.await;
    }

    /// Returns once all `count` waiters wait.
    async fn all_waiting(&self) {
        self.all_arrived.notified().await;
    }

    fn release(&self) {
        self.release.notify_waiters();
    }
}

/// Runs `count` turns at once whose executor waits at a gate until all have arrived, and
/// reports the growth while they wait.
async fn turns_in_flight(count: usize) {
    let gate = Gate::new(count);
    let runner = {
        let gate = gate.clone();
        TurnRunner::builder()
            .storage(NoopStorage::new())
            .session_store(InMemorySessionStore::new())
            .executor(executor_fn(move |ctx: &mut DispatchContext| {
                let gate = gate.clone();
                Box::pin(async move {
                    gate.wait().await;
                    ctx.ack()?;
                    Ok::<(), BoxError>(())
                })
            }))
            .build()
    };
    let heap = live();
    let tasks: Vec<_> = (0..count)
        .map(|n| {
            let runner = runner.clone();
            tokio::spawn(async move {
                let raw = RawTurnContext::new(format!("session-{n:06}"), "You are a bench.")
                    .user_message("What is the weather like today?");
                runner.run(raw).await.expect("the turn runs")
            })
        })
        .collect();
    gate.all_waiting().await;
    report("a turn waiting on its model", count, live() - heap, None);
    gate.release();
    for task in tasks {
        assert!(task.await.expect("a turn's task").is_completed());
    }

    // The baseline: as many tasks waiting at a gate, without a turn.
    let gate = Gate::new(count);
    let heap = live();
    let tasks: Vec<_> = (0..count)
        .map(|_| {
            let gate = gate.clone();
            tokio::spawn(async move { gate.wait().await })
        })
        .collect();
    // A task's memory is allocated when it is spawned.
    report(
        "baseline: a spawned task waiting",
        count,
        live() - heap,
        None,
    );
    gate.all_waiting().await;
    gate.release();
    for task in tasks {
        task.await.expect("a waiting task");
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    println!("Idle sessions, empty state, one user each (live heap growth / sessions):");
    for count in [1_000, 10_000, 100_000] {
        let store = InMemorySessionStore::new();
        runtime.block_on(idle_sessions("InMemorySessionStore", &store, count, false));
        drop(store);
    }
    let folder = std::env::temp_dir().join(format!("adk-bench-memory-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    for count in [1_000, 10_000] {
        let path = folder.join(format!("sessions-{count}.sqlite3"));
        runtime.block_on(async {
            let store = SqliteSessionStore::open(&path)
                .await
                .expect("the SQLite file");
            idle_sessions("SqliteSessionStore", &store, count, true).await;
        });
    }
    let _ = std::fs::remove_dir_all(&folder);
    match std::env::var("ADK_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
    {
        Some(url) => {
            let schema = format!("bench_memory_{}", std::process::id());
            runtime.block_on(async {
                let options = PostgresOptions::from_url(&url)
                    .expect("ADK_TEST_POSTGRES_URL")
                    .schema(schema.as_str())
                    .expect("a plain schema name");
                let store = PostgresSessionStore::connect_with(options)
                    .await
                    .expect("the PostgreSQL database");
                for count in [1_000, 10_000] {
                    idle_sessions("PostgresSessionStore", &store, count, true).await;
                }
                drop_schema(&url, &schema).await;
            });
        }
        None => {
            println!("  NOTE: the PostgreSQL row did not run: ADK_TEST_POSTGRES_URL is not set")
        }
    }

    println!("\nTurns in flight, each waiting on its model (live heap growth / turns):");
    runtime.block_on(turns_in_flight(1_000));
}

async fn drop_schema(url: &str, schema: &str) {
    use adk::postgres::tokio_postgres;
    if let Ok((client, connection)) = tokio_postgres::connect(url, tokio_postgres::NoTls).await {
        tokio::spawn(connection);
        let _ = client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await;
    }
}
