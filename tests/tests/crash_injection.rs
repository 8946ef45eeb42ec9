//! The crash-injection suite: a separate process (`tests/src/bin/crash_turn.rs`) runs a turn
//! whose scripted model calls a keyed tool (`deposit`, idempotent) and an at-most-once tool
//! (`notify`), each appending to a file it does not own, on SQLite and on PostgreSQL. The test
//! SIGKILLs it at every step boundary (before and after every storage write — the intent, the
//! result written with the finished call, the reply that ends the turn — and inside each tool
//! before and after its effect), through the child's pause protocol, then at random points
//! (a random boundary, or a random moment after one), sometimes killing the resume as well; then
//! resumes each conversation with `runner.resume` in a new process until the turn completes.
//!
//! What must hold for every conversation:
//! - the keyed tool's effect happened exactly once per call the model made, and every attempt
//!   was handed the same key;
//! - the at-most-once tool's effect happened at most once per call, and a call whose effect
//!   did not happen was answered with `OutcomeUnknown`;
//! - no session the model API would refuse: every tool call has exactly one result, and the
//!   turn ends with its reply.
//!
//! Bounded for CI: `ADK_CRASH_KILLS` kills per store (default 200), three conversations at a
//! time. `ADK_CRASH_SEED` replays a run's random points (the seed is printed).
#![allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use adk::postgres::PostgresStorage;
use adk::primitives::{ToolCall, ToolCallResults};
use adk::sqlite::SqliteStorage;
use adk::storage::{SharedStorage, StorageContext};
use adk_integration_tests::postgres_database::{fresh_options, fresh_schema_name, test_url};

const BINARY: &str = env!("CARGO_BIN_EXE_crash_turn");

/// How many conversations run at once.
const PARALLEL: usize = 3;

/// A small xorshift generator: the suite needs reproducible random points, not good randomness.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        // `bound` is small; the remainder fits.
        usize::try_from(self.0 % bound.max(1) as u64).unwrap()
    }
}

/// Where a run of the child is killed.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Never,
    /// At the n-th pause (1-based), while the child waits there: exactly that boundary.
    At(usize),
    /// Let the n-th pause go on, then kill this many microseconds later: a random point.
    After(usize, u64),
}

/// How a run of the child ended.
#[derive(Debug)]
enum End {
    /// Killed at this boundary (or `random`).
    Killed(String),
    /// Printed `done` with this status (`Completed`, `nothing to resume`, `Failed(..)`, ...).
    Done(String),
    /// Exited on its own without finishing: why.
    Failed(String),
}

fn drive(mode: &str, store: &str, conversation: &str, effects: &Path, kill: Kill) -> End {
    let log = File::options()
        .create(true)
        .append(true)
        .open(effects.join("stderr.log"))
        .unwrap();
    let mut command = Command::new(BINARY);
    if store.starts_with("postgres:") {
        // Named after its conversation, so a kill can wait for the child's server sessions.
        command.env("ADK_TEST_POSTGRES_URL", url_named(conversation));
    }
    let mut child = command
        .args([mode, store, conversation])
        .arg(effects)
        .env("ADK_CRASH_PAUSES", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pauses = 0;
    let mut killed = None;
    while let Some(Ok(line)) = lines.next() {
        if let Some(status) = line.strip_prefix("done ") {
            let _ = child.wait();
            return End::Done(status.to_owned());
        }
        let Some(label) = line.strip_prefix("pause ") else {
            continue;
        };
        pauses += 1;
        match kill {
            Kill::At(at) if at == pauses => {
                // SIGKILL on Unix: nothing in the child runs after it.
                child.kill().unwrap();
                killed = Some(label.to_owned());
                break;
            }
            Kill::After(at, micros) if at == pauses => {
                let _ = writeln!(stdin, "go");
                std::thread::sleep(Duration::from_micros(micros));
                let _ = child.kill();
                killed = Some("random".to_owned());
                break;
            }
            _ => {
                if writeln!(stdin, "go").is_err() {
                    break;
                }
            }
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    // A child that finished before a late kill printed `done`: it was not killed.
    for line in lines.map_while(Result::ok) {
        if let Some(status) = line.strip_prefix("done ") {
            return End::Done(status.to_owned());
        }
    }
    match killed {
        Some(label) => End::Killed(label),
        None => End::Failed(format!(
            "{mode} of {conversation} exited with {status} (see {})",
            effects.join("stderr.log").display()
        )),
    }
}

/// The test server's URL with the conversation's children named in `pg_stat_activity`.
fn url_named(conversation: &str) -> String {
    let url = test_url().unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}application_name=adk-crash-{conversation}")
}

/// After a child on PostgreSQL is killed, waits until the server has ended its sessions.
///
/// A SIGKILL does not stop a statement the child already sent: the server runs it to its end,
/// commits it when it is an autocommit write, and only then finds the client gone. A resume
/// started before that reads a transcript the dead child's last write is not in yet, and that
/// write lands afterwards (a CI run once left a conversation holding only its question that
/// way). A process that resumes another's turns must likewise start after the dead process's
/// sessions ended; `docs/durability.md` says so.
/// Returns how long it waited (zero when the sessions had already ended).
fn wait_for_killed_sessions(store: &str, conversation: &str) -> Result<Duration, String> {
    if !store.starts_with("postgres:") {
        return Ok(Duration::ZERO);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        use adk::postgres::tokio_postgres;
        let (client, connection) =
            tokio_postgres::connect(&test_url().unwrap(), tokio_postgres::NoTls)
                .await
                .map_err(|error| {
                    format!("{conversation}: connecting to watch its sessions: {error}")
                })?;
        tokio::spawn(connection);
        let name = format!("adk-crash-{conversation}");
        let started = Instant::now();
        let deadline = started + Duration::from_secs(60);
        let mut first = true;
        loop {
            let row = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                    &[&name],
                )
                .await
                .map_err(|error| format!("{conversation}: reading pg_stat_activity: {error}"))?;
            if row.get::<_, i64>(0) == 0 {
                return Ok(if first {
                    Duration::ZERO
                } else {
                    started.elapsed()
                });
            }
            first = false;
            if Instant::now() > deadline {
                return Err(format!(
                    "{conversation}: the killed child's server sessions did not end within 60 s"
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// One conversation: its first run is killed, its resumes run until the turn completes.
struct Scenario {
    conversation: String,
    effects: PathBuf,
    first: Kill,
    resume: Kill,
}

#[derive(Default)]
struct Tally {
    kills: usize,
    kills_by_boundary: BTreeMap<String, usize>,
    failures: Vec<String>,
    /// Kills after which the dead child's server sessions were still listed, and the longest
    /// wait for them to end (PostgreSQL).
    session_waits: usize,
    longest_session_wait: Duration,
    /// How each child of a conversation ended, in order: printed beside a failure of it.
    ends: BTreeMap<String, Vec<String>>,
}

fn run_scenario(store: &str, scenario: &Scenario, tally: &Mutex<Tally>) {
    std::fs::create_dir_all(&scenario.effects).unwrap();
    let record = |end: &End| {
        // The next child must not start before the killed one's last statement ended.
        let waited = match end {
            End::Killed(_) => wait_for_killed_sessions(store, &scenario.conversation),
            _ => Ok(Duration::ZERO),
        };
        let mut tally = tally.lock().unwrap();
        match waited {
            Ok(waited) if waited > Duration::ZERO => {
                tally.session_waits += 1;
                tally.longest_session_wait = tally.longest_session_wait.max(waited);
            }
            Ok(_) => {}
            Err(why) => tally.failures.push(why),
        }
        tally
            .ends
            .entry(scenario.conversation.clone())
            .or_default()
            .push(match end {
                End::Killed(label) => format!("killed ({label})"),
                End::Done(status) => format!("done {status}"),
                End::Failed(why) => format!("failed: {why}"),
            });
        match end {
            End::Killed(label) => {
                tally.kills += 1;
                *tally.kills_by_boundary.entry(label.clone()).or_default() += 1;
            }
            End::Failed(why) => tally.failures.push(why.clone()),
            End::Done(_) => {}
        }
    };
    let conversation = scenario.conversation.as_str();
    record(&drive(
        "run",
        store,
        conversation,
        &scenario.effects,
        scenario.first,
    ));
    record(&drive(
        "resume",
        store,
        conversation,
        &scenario.effects,
        scenario.resume,
    ));
    // Then resume without a kill until the turn is done (a resume that was not killed already
    // finished it, and this one finds nothing to resume).
    for _ in 0..3 {
        match drive(
            "resume",
            store,
            conversation,
            &scenario.effects,
            Kill::Never,
        ) {
            done @ End::Done(_) => return record(&done),
            other => record(&other),
        }
    }
    tally.lock().unwrap().failures.push(format!(
        "{conversation}: three resumes did not finish the turn"
    ));
}

/// The labels of a full run's pauses, in order (a run nobody kills).
fn pauses_of_a_full_run(store: &str, folder: &Path) -> Vec<String> {
    let effects = folder.join("dry-run");
    std::fs::create_dir_all(&effects).unwrap();
    let mut child = Command::new(BINARY)
        .args(["run", store, "dry-run"])
        .arg(&effects)
        .env("ADK_CRASH_PAUSES", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut labels = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        match line.strip_prefix("pause ") {
            Some(label) => {
                labels.push(label.to_owned());
                writeln!(stdin, "go").unwrap();
            }
            None => assert!(line.starts_with("done Completed"), "dry run: {line}"),
        }
    }
    assert!(child.wait().unwrap().success());
    labels
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn result_text(call: &ToolCall) -> String {
    match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        Some(_) => "a non-text result".to_owned(),
        None => String::new(),
    }
}

#[derive(Default, Debug)]
struct Figures {
    conversations: usize,
    deposit_effects_per_call: BTreeMap<usize, usize>,
    notify_effects_per_call: BTreeMap<usize, usize>,
    outcome_unknown: usize,
    refused_sessions: usize,
    never_began: usize,
}

/// Checks one finished conversation against the promises; returns what failed.
async fn check(storage: &SharedStorage, scenario: &Scenario, figures: &mut Figures) -> Vec<String> {
    let name = &scenario.conversation;
    let ctx = StorageContext::new(name.clone());
    let calls = storage.fetch_tool_calls(&ctx).await.unwrap();
    let messages = storage.fetch_messages(&ctx).await.unwrap();
    let mut failures = Vec::new();
    figures.conversations += 1;
    // Killed before the question was stored: the turn never began, and nothing may have run.
    if messages.is_empty() {
        figures.never_began += 1;
        let effects = ["deposits.log", "attempts.log", "notifications.log"]
            .iter()
            .map(|file| lines(&scenario.effects.join(file)).len())
            .sum::<usize>();
        if effects > 0 || !calls.is_empty() {
            failures.push(format!(
                "{name}: no question stored, yet {} calls and {effects} effects",
                calls.len()
            ));
        }
        return failures;
    }

    // The model API refuses a tool call without exactly one result, and a turn without its end.
    let mut ids: Vec<&str> = calls.iter().map(ToolCall::id).collect();
    ids.sort_unstable();
    ids.dedup();
    let unanswered = calls.iter().filter(|call| !call.is_complete()).count();
    let replies = messages
        .iter()
        .filter(|message| {
            message
                .content()
                .is_some_and(|text| text.render() == "Paid and notified.")
        })
        .count();
    if unanswered > 0 || ids.len() != calls.len() || replies != 1 {
        figures.refused_sessions += 1;
        failures.push(format!(
            "{name}: {unanswered} calls without a result, {} duplicate ids, {replies} replies",
            calls.len() - ids.len()
        ));
    }

    let of = |tool: &str| -> Vec<&ToolCall> {
        calls.iter().filter(|call| call.tool() == tool).collect()
    };
    let (deposits, notifies) = (of("deposit"), of("notify"));
    if deposits.len() != 1 || notifies.len() != 1 {
        failures.push(format!(
            "{name}: the model made {} deposit and {} notify calls, expected one each",
            deposits.len(),
            notifies.len()
        ));
        return failures;
    }

    let effects = lines(&scenario.effects.join("deposits.log"));
    *figures
        .deposit_effects_per_call
        .entry(effects.len())
        .or_default() += 1;
    if effects.len() != 1 {
        failures.push(format!(
            "{name}: the keyed deposit took effect {} times",
            effects.len()
        ));
    }
    for attempt in lines(&scenario.effects.join("attempts.log")) {
        let key = attempt.split_once(' ').map(|(_, key)| key.to_owned());
        if key.as_deref() != effects.first().map(String::as_str) {
            failures.push(format!(
                "{name}: a deposit attempt had another key: {attempt}"
            ));
        }
    }

    let notified = lines(&scenario.effects.join("notifications.log"));
    *figures
        .notify_effects_per_call
        .entry(notified.len())
        .or_default() += 1;
    let notify = notifies[0];
    let unknown = notify.is_error() && result_text(notify).contains("outcome of this call");
    if unknown {
        figures.outcome_unknown += 1;
    }
    if notified.len() > 1 {
        failures.push(format!(
            "{name}: the at-most-once notify took effect {} times",
            notified.len()
        ));
    }
    if notified.is_empty() && !unknown {
        failures.push(format!(
            "{name}: notify took no effect and its result is not OutcomeUnknown: {:?}",
            result_text(notify)
        ));
    }
    failures
}

fn seed() -> u64 {
    std::env::var("ADK_CRASH_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            u64::from(nanos) | 1
        })
}

/// Runs the suite on `store` (`sqlite:PATH` or `postgres:SCHEMA`) and checks every
/// conversation through `storage`.
fn crash_suite(label: &str, store: &str, storage: SharedStorage, folder: &Path) {
    let started = Instant::now();
    let target: usize = std::env::var("ADK_CRASH_KILLS")
        .ok()
        .and_then(|kills| kills.parse().ok())
        .unwrap_or(200);
    let seed = seed();
    let mut random = Random(seed);
    let boundaries = pauses_of_a_full_run(store, folder);
    assert!(
        boundaries
            .iter()
            .any(|label| label == "before record_tool_intent")
            && boundaries
                .iter()
                .any(|label| label == "after mutate_tool_call_with_result")
            && boundaries
                .iter()
                .any(|label| label.ends_with("before effect")),
        "the child does not pause at the ledger's boundaries: {boundaries:?}"
    );

    // Every boundary once, resumed without a kill; then random points, a third of them with a
    // killed resume too, until the target is reached.
    let mut scenarios = Vec::new();
    let mut planned = 0;
    let mut next = |first: Kill, resume: Kill| {
        let conversation = format!("{label}-{}", scenarios.len());
        scenarios.push(Scenario {
            effects: folder.join(&conversation),
            conversation,
            first,
            resume,
        });
    };
    for at in 1..=boundaries.len() {
        next(Kill::At(at), Kill::Never);
        planned += 1;
    }
    // A kill "after" a pause can come too late (the run finished), and a resume's kill point
    // past its last pause never comes: half as many again are planned.
    while planned < target + target / 2 {
        let first = if random.below(2) == 0 {
            Kill::At(1 + random.below(boundaries.len()))
        } else {
            Kill::After(
                1 + random.below(boundaries.len()),
                random.below(3000) as u64,
            )
        };
        let resume = if random.below(3) == 0 {
            planned += 1;
            Kill::At(1 + random.below(boundaries.len()))
        } else {
            Kill::Never
        };
        next(first, resume);
        planned += 1;
    }

    let tally = Mutex::new(Tally::default());
    let queue = Mutex::new(scenarios.iter());
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| {
                loop {
                    let Some(scenario) = queue.lock().unwrap().next() else {
                        return;
                    };
                    run_scenario(store, scenario, &tally);
                }
            });
        }
    });
    let mut tally = tally.into_inner().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut figures = Figures::default();
    for scenario in &scenarios {
        let failures = runtime.block_on(check(&storage, scenario, &mut figures));
        tally.failures.extend(failures);
    }
    let report = format!(
        "\ncrash injection on {label} (seed {seed}): {} kills (each of the {} boundaries once, \
         the rest at random points), {} conversations, {:.1} s\n  kills by boundary: {:?}\n  keyed deposit: \
         effects per call {:?}\n  at-most-once notify: effects per call {:?}, OutcomeUnknown \
         answers {}\n  sessions the model API would refuse: {}; killed before the question was \
         stored (nothing ran, nothing to resume): {}\n{}",
        tally.kills,
        boundaries.len(),
        figures.conversations,
        started.elapsed().as_secs_f64(),
        tally.kills_by_boundary,
        figures.deposit_effects_per_call,
        figures.notify_effects_per_call,
        figures.outcome_unknown,
        figures.refused_sessions,
        figures.never_began,
        if store.starts_with("postgres:") {
            format!(
                "  kills after which the dead child's server sessions were still open: {} \
                 (longest wait {:?})\n",
                tally.session_waits, tally.longest_session_wait
            )
        } else {
            String::new()
        },
    );
    // Written past the harness's capture, so a passing run shows its figures.
    let _ = std::io::stderr().write_all(report.as_bytes());
    assert!(
        tally.failures.is_empty(),
        "{} failures:\n{}",
        tally.failures.len(),
        tally
            .failures
            .iter()
            .map(|failure| {
                // A failure names its conversation first: say how each of its children ended.
                let conversation = failure.split(':').next().unwrap_or_default();
                match tally.ends.get(conversation) {
                    Some(ends) => format!("{failure}\n    children: {}", ends.join(", ")),
                    None => failure.clone(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        tally.kills >= target,
        "only {} kills landed (target {target})",
        tally.kills
    );
    assert_eq!(figures.refused_sessions, 0);
}

#[test]
fn sqlite_every_effect_is_accounted_for_across_200_kills_and_resumes() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("crash.db");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let storage = runtime.block_on(async { SqliteStorage::open(&path).await.unwrap() });
    drop(runtime);
    crash_suite(
        "sqlite",
        &format!("sqlite:{}", path.display()),
        SharedStorage::new(storage),
        folder.path(),
    );
}

#[test]
fn postgres_every_effect_is_accounted_for_across_200_kills_and_resumes() {
    // Without ADK_TEST_POSTGRES_URL this says loudly that it did not run (and fails when
    // ADK_REQUIRE_POSTGRES is set, as in CI).
    if test_url().is_none() {
        return;
    }
    let schema = fresh_schema_name("crash");
    let options = fresh_options("crash")
        .unwrap()
        .schema(schema.as_str())
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let storage = runtime.block_on(async { PostgresStorage::connect_with(options).await.unwrap() });
    let folder = tempfile::tempdir().unwrap();
    crash_suite(
        "postgres",
        &format!("postgres:{schema}"),
        SharedStorage::new(storage),
        folder.path(),
    );
    drop(runtime);
}
