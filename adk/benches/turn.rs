//! The cost of a turn, of each middleware layer, and of history, beside hand-written baselines
//! measured in the same run:
//! - a chain of boxed async closures (what any runtime-composed pipeline pays);
//! - a statically composed chain (the floor: the compiler sees every layer).
//!
//! Rows: a mocked turn with 0, 4 and 64 pass-through middleware (0, 1 and 16 per pipeline), the
//! two 64-layer baselines, and a turn whose `turn_input` loads 10, 1,000 or 10,000 turns of
//! history (two messages each) as a window of the last 20 messages and as a whole, beside the
//! load alone (fetch + `Collection::extend` + drop), so the runtime's own share is the
//! difference; and a turn whose executor makes one tool call (`ctx.call_tool`) of an
//! at-most-once tool (recorded in `NoopStorage`'s in-memory ledger), with no tool middleware and
//! with one pass-through `tool_execution` middleware, so the tool pipeline's cost is their
//! difference, beside the same call of a read-only tool (never recorded), so the ledger's CPU
//! cost is the difference from `tool call/0 tool middleware`. What the ledger costs in writes on
//! SQLite and PostgreSQL is `benches/ledger.rs`. And the peers' workload
//! (`support/peers_workload.rs`: a fresh `RawTurnContext` with a new session id and a user
//! message each turn, 4 pass-through middleware, an executor that stores one assistant message)
//! over a `storage_adapter!` holding sessions in a `Mutex<HashMap>` and over `NoopStorage`; the
//! side-by-side bench in `benches/peers/` runs the same turn beside adk-rust and rig.
//!
//! Criterion: `cargo bench -p checked-adk --bench turn -- --measurement-time 2 --warm-up-time 1`
//! prints allocation counts first and the medians and ratios last.
//!
//! Plain mode, for `valgrind --tool=callgrind`: with `ADK_BENCH_ROW=<row>` (and optionally
//! `ADK_BENCH_ITERATIONS=<n>`, default 1000) the binary runs that row `n` times and exits
//! without criterion; `ADK_BENCH_ROW=list` prints the rows, `ADK_BENCH_ROW=summary` the
//! medians and ratios of the last criterion run.

// The static baseline nests 64 layer types.
#![recursion_limit = "512"]

use std::future::Future;
use std::hint::black_box;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use adk::context::InvalidTurnContext;
use adk::context::{Collection, DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, Next, from_fn};
use adk::primitives::Message;
use adk::runner::TurnOutcome;
use adk::storage::{FetchWindow, NoopStorage, StorageAdapter, StorageContext};
use adk::{TurnRunner, middleware};
use criterion::Criterion;

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};
#[path = "support/peers_workload.rs"]
mod peers_workload;
use peers_workload::PeersWorkload;

#[path = "support/counting_allocator.rs"]
mod counting_allocator;

#[global_allocator]
static GLOBAL: counting_allocator::CountingAllocator = counting_allocator::CountingAllocator;

const PIPELINES: usize = 4;
const DEEP: usize = 64;
const WINDOW: usize = 20;
const HISTORY_TURNS: [usize; 3] = [10, 1_000, 10_000];
const PEERS_IN_MEMORY: &str = "peers/in-memory adapter";
const PEERS_NOOP: &str = "peers/NoopStorage";

#[middleware(pipeline = [turn_input, turn_output])]
async fn pass_turn(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[middleware(pipeline = [dispatch_input, dispatch_output])]
async fn pass_dispatch(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

/// A mocked turn: no-op storage, an executor that returns at once, and `depth` pass-through
/// middleware on each pipeline. One extra `dispatch_output` middleware acknowledges after the
/// output pipeline so all four pipelines run; it is in every row, so it cancels out of the
/// per-layer figure.
#[middleware(pipeline = tool_execution)]
async fn pass_tool(
    ctx: &mut adk::ToolContext,
    next: Next<'_, adk::ToolContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

/// A turn whose executor calls the tool `echo` once and acks, with `tool_middleware`
/// pass-through `tool_execution` middleware.
fn tool_call_runner(tool_middleware: usize, read_only: bool) -> TurnRunner {
    let echo = adk::primitives::Tool::builder("echo").description("Answers at once.");
    // An untyped tool is at-most-once: its calls go through the ledger (here `NoopStorage`'s,
    // in memory); a read-only one is never recorded.
    let echo = if read_only {
        echo.read_only()
    } else {
        echo.at_most_once()
    };
    let echo = echo
        .handler(|_args: serde_json::Value, _| async move { Ok("echo") })
        .build()
        .expect("a valid tool");
    let mut builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .tool(echo)
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            let call = ctx.call_tool("echo", "call-1", serde_json::json!({}));
            Box::pin(async move {
                black_box(call.await.map_err(|error| error.to_string())?);
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }));
    for _ in 0..tool_middleware {
        builder = builder.tool_execution(pass_tool);
    }
    builder.build()
}

fn mocked_runner(depth: usize) -> TurnRunner {
    let mut builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                let _ = ctx;
                Ok::<(), BoxError>(())
            })
        }))
        .dispatch_output(from_fn(|ctx: &mut DispatchContext, next| {
            Box::pin(async move {
                let _ = next.run(ctx).await;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }));
    for _ in 0..depth {
        builder = builder
            .turn_input(pass_turn)
            .dispatch_input(pass_dispatch)
            .dispatch_output(pass_dispatch)
            .turn_output(pass_turn);
    }
    builder.build()
}

adk::storage_adapter! {
    /// A conversation held in memory that honours the fetch window by slicing; stores are
    /// accepted and dropped, so every run sees the same history.
    #[derive(Clone)]
    struct History {
        messages: Arc<Vec<Message>>,
    }

    impl {
        fetch_messages: async |ctx| Ok(copy_window(&self.messages, ctx.fetch_window())),
        store_message: async |_ctx, _message| Ok(()),
        ..noop
    }
}

fn history(turns: usize) -> History {
    let messages = (0..turns)
        .flat_map(|turn| {
            [
                Message::user(format!("u{turn}"), format!("question number {turn}")),
                Message::assistant(format!("a{turn}"), format!("answer number {turn}")),
            ]
        })
        .collect::<Result<Vec<_>, _>>()
        .expect("valid messages");
    History {
        messages: Arc::new(messages),
    }
}

fn window_of(whole: bool) -> FetchWindow {
    if whole {
        FetchWindow::All
    } else {
        FetchWindow::Last(WINDOW)
    }
}

// The history's own work, linear in its length: copying the window out of the adapter and
// adding it to a collection. The turn and the load-only row call these same out-of-line
// functions, so the two rows run identical code for it and their difference is the runtime's
// share (inlined into two different callers, the same work compiled differently and differed by
// up to 25 instructions a message). Freeing the history is left out of both: the turn's outcome
// (whose context holds the history) and the load-only row's collection are kept, and the loop
// that runs the rows frees them after the measured `block_on` (`free_kept_history`). Freed
// inside, the same messages would be freed by different code in each row, and glibc's cost to
// free 20,000 messages depends on what lies next to them: that swamped the runtime's share.

#[inline(never)]
fn copy_window(messages: &[Message], window: &FetchWindow) -> Vec<Message> {
    window.slice(messages).to_vec()
}

#[inline(never)]
fn extend_history(collection: &mut Collection<Message>, history: Vec<Message>) {
    collection.extend(history);
}

thread_local! {
    static KEPT_TURNS: std::cell::RefCell<Vec<Result<TurnOutcome, InvalidTurnContext>>> =
        const { std::cell::RefCell::new(Vec::new()) };
    static KEPT_LOADS: std::cell::RefCell<Vec<Collection<Message>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Frees what the history row that just ran kept; called after each `block_on`.
fn free_kept_history() {
    KEPT_TURNS.with(|kept| kept.borrow_mut().clear());
    KEPT_LOADS.with(|kept| kept.borrow_mut().clear());
}

/// A turn that loads history in `turn_input` and whose executor stores one reply and acks.
fn history_runner(storage: &History, whole: bool) -> TurnRunner {
    TurnRunner::builder()
        .storage(storage.clone())
        .turn_input(from_fn(move |ctx: &mut TurnContext, next| {
            Box::pin(async move {
                let history = ctx.fetch_messages_within(window_of(whole)).await?;
                extend_history(&mut ctx.messages, history);
                let _ = next.run(ctx).await;
                Ok::<(), BoxError>(())
            })
        }))
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.store_message(Message::assistant("reply", "done")?)
                    .await?;
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }))
        .build()
}

/// The load alone, as the turn does it: fetch through the window, extend a collection, keep it.
async fn load_only(storage: &History, whole: bool) -> usize {
    let ctx = StorageContext::new("bench-conversation").with_fetch_window(window_of(whole));
    let fetched = storage.fetch_messages(&ctx).await.expect("in memory");
    let mut messages = Collection::new();
    extend_history(&mut messages, window_of(whole).apply(fetched));
    let count = messages.len();
    KEPT_LOADS.with(|kept| kept.borrow_mut().push(messages));
    count
}

// The boxed baseline: each layer is a boxed closure returning a boxed future, like any pipeline
// composed at run time.
type LayerFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

type LayerFn = dyn for<'a> Fn(&'a mut u64, &'a [BoxedLayer]) -> LayerFuture<'a> + Send + Sync;

struct BoxedLayer(Box<LayerFn>);

fn boxed_chain(depth: usize) -> Vec<BoxedLayer> {
    (0..depth)
        .map(|_| {
            BoxedLayer(Box::new(
                |state: &mut u64, rest: &[BoxedLayer]| -> LayerFuture<'_> {
                    Box::pin(async move {
                        *state += 1;
                        if let Some((next, rest)) = rest.split_first() {
                            (next.0)(state, rest).await;
                        }
                    })
                },
            ))
        })
        .collect()
}

async fn run_boxed(chain: &[BoxedLayer], state: &mut u64) {
    if let Some((first, rest)) = chain.split_first() {
        (first.0)(state, rest).await;
    }
}

// The static baseline: 64 nested layers whose types the compiler sees, so it can inline them.
trait StaticLayer {
    fn run(state: &mut u64) -> impl Future<Output = ()> + Send;
}

struct End;

impl StaticLayer for End {
    async fn run(_state: &mut u64) {}
}

struct Layer<Inner>(PhantomData<Inner>);

impl<Inner: StaticLayer> StaticLayer for Layer<Inner> {
    async fn run(state: &mut u64) {
        *state += 1;
        Inner::run(state).await;
    }
}

type Four<Inner> = Layer<Layer<Layer<Layer<Inner>>>>;
type Sixteen<Inner> = Four<Four<Four<Four<Inner>>>>;
type StaticChain = Sixteen<Sixteen<Sixteen<Sixteen<End>>>>;

fn raw() -> RawTurnContext {
    RawTurnContext::new("bench-conversation", "You are a benchmark.")
}

/// Every row, by name, as a future factory over the shared set-up.
struct Rows {
    mocked: [(usize, TurnRunner); 3],
    /// A turn with one tool call, under 0 and 1 tool middleware, and of a read-only tool (no
    /// ledger) under none, by row name.
    tool_calls: [(String, TurnRunner); 3],
    boxed: Vec<BoxedLayer>,
    histories: Vec<(usize, History, TurnRunner, TurnRunner)>,
    /// The peers' workload (`support/peers_workload.rs`): a fresh session each turn.
    peers: PeersWorkload,
    /// The session number of the next peers' turn: each turn has a new session id.
    next_session: std::cell::Cell<u64>,
}

impl Rows {
    fn new() -> Self {
        Self {
            mocked: [0, 1, DEEP / PIPELINES].map(|depth| (depth * PIPELINES, mocked_runner(depth))),
            tool_calls: [
                (
                    "tool call/0 tool middleware".to_owned(),
                    tool_call_runner(0, false),
                ),
                (
                    "tool call/1 tool middleware".to_owned(),
                    tool_call_runner(1, false),
                ),
                (
                    "tool call/read-only (no ledger)".to_owned(),
                    tool_call_runner(0, true),
                ),
            ],
            boxed: boxed_chain(DEEP),
            histories: HISTORY_TURNS
                .iter()
                .map(|&turns| {
                    let storage = history(turns);
                    let window = history_runner(&storage, false);
                    let whole = history_runner(&storage, true);
                    (turns, storage, window, whole)
                })
                .collect(),
            peers: PeersWorkload::new(),
            next_session: std::cell::Cell::new(0),
        }
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .mocked
            .iter()
            .map(|(layers, _)| format!("turn/{layers} middleware"))
            .collect();
        for (name, _) in &self.tool_calls {
            names.push(name.clone());
        }
        names.push(PEERS_IN_MEMORY.to_owned());
        names.push(PEERS_NOOP.to_owned());
        names.push(format!("baseline/boxed async closures ({DEEP})"));
        names.push(format!("baseline/static chain ({DEEP})"));
        names.push("baseline/empty block_on".to_owned());
        for (turns, ..) in &self.histories {
            for how in ["window", "whole"] {
                names.push(format!("history/{turns} turns, {how}: turn"));
                names.push(format!("history/{turns} turns, {how}: load only"));
            }
        }
        names
    }

    /// Finds the row named `name`, once: matching names inside the measured loop would put
    /// string formatting into every row's figures.
    fn resolve(&self, name: &str) -> Row {
        if let Some(index) = self
            .mocked
            .iter()
            .position(|(layers, _)| name == format!("turn/{layers} middleware"))
        {
            return Row::Mocked(index);
        }
        if let Some(index) = self.tool_calls.iter().position(|(row, _)| name == row) {
            return Row::ToolCall(index);
        }
        if name == PEERS_IN_MEMORY {
            return Row::Peers { noop: false };
        }
        if name == PEERS_NOOP {
            return Row::Peers { noop: true };
        }
        if name.starts_with("baseline/boxed") {
            return Row::Boxed;
        }
        if name.starts_with("baseline/static") {
            return Row::Static;
        }
        if name.starts_with("baseline/empty") {
            return Row::Empty;
        }

        for (index, (turns, ..)) in self.histories.iter().enumerate() {
            for (how, whole) in [("window", false), ("whole", true)] {
                if name == format!("history/{turns} turns, {how}: turn") {
                    return Row::HistoryTurn { index, whole };
                }
                if name == format!("history/{turns} turns, {how}: load only") {
                    return Row::HistoryLoad { index, whole };
                }
            }
        }
        panic!("no bench row named `{name}`; ADK_BENCH_ROW=list lists them");
    }

    /// Runs the row once.
    async fn run(&self, row: Row) {
        match row {
            Row::Mocked(index) => {
                let _ = black_box(self.mocked[index].1.run(raw()).await);
            }
            Row::ToolCall(index) => {
                let _ = black_box(self.tool_calls[index].1.run(raw()).await);
            }
            Row::Peers { noop } => {
                let turn = self.next_session.get();
                self.next_session.set(turn + 1);
                if noop {
                    black_box(self.peers.turn_noop(turn).await);
                } else {
                    black_box(self.peers.turn_in_memory(turn).await);
                }
            }
            Row::Boxed => {
                let mut state = 0;
                run_boxed(&self.boxed, &mut state).await;
                black_box(state);
            }
            Row::Static => {
                let mut state = 0;
                StaticChain::run(&mut state).await;
                black_box(state);
            }
            Row::Empty => {
                black_box(0_u64);
            }

            Row::HistoryTurn { index, whole } => {
                let (_, _, window, whole_runner) = &self.histories[index];
                let runner = if whole { whole_runner } else { window };
                let outcome = black_box(runner.run(raw()).await);
                KEPT_TURNS.with(|kept| kept.borrow_mut().push(outcome));
            }
            Row::HistoryLoad { index, whole } => {
                black_box(load_only(&self.histories[index].1, whole).await);
            }
        }
    }
}

/// A row, resolved from its name before measuring.
#[derive(Clone, Copy)]
enum Row {
    Mocked(usize),
    ToolCall(usize),
    Peers { noop: bool },
    Boxed,
    Static,
    Empty,
    HistoryTurn { index: usize, whole: bool },
    HistoryLoad { index: usize, whole: bool },
}

impl Row {
    /// History rows keep what holds the history until the loop frees it (`free_kept_history`);
    /// the other rows keep nothing, and skip the call so their counts stay their own.
    fn keeps_history(self) -> bool {
        matches!(self, Self::HistoryTurn { .. } | Self::HistoryLoad { .. })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

fn allocations_of(runtime: &tokio::runtime::Runtime, rows: &Rows, name: &str) -> usize {
    let row = rows.resolve(name);
    // One warm-up run, so lazily initialised statics and reused buffers do not count.
    runtime.block_on(rows.run(row));
    if row.keeps_history() {
        free_kept_history();
    }
    let allocations = counting_allocator::counted(|| runtime.block_on(rows.run(row)));
    if row.keeps_history() {
        free_kept_history();
    }
    allocations
}

/// Criterion's median for a row, in nanoseconds.
fn median(home: &std::path::Path, name: &str) -> Option<f64> {
    // Criterion names the folder after the function, with `/` and `:` made safe.
    let folder: String = name
        .chars()
        .map(|character| match character {
            '/' | ':' => '_',
            other => other,
        })
        .collect();
    median_nanoseconds(home, "turn", &folder)
}

fn print_summary(rows: &Rows) {
    let Some(home) = criterion_home() else {
        return;
    };
    let get = |name: &str| median(&home, name);
    println!("\nmedians and ratios (this run):");
    let (Some(empty), Some(four), Some(deep), Some(boxed), Some(fixed), Some(block_on)) = (
        get("turn/0 middleware"),
        get("turn/4 middleware"),
        get(&format!("turn/{DEEP} middleware")),
        get(&format!("baseline/boxed async closures ({DEEP})")),
        get(&format!("baseline/static chain ({DEEP})")),
        get("baseline/empty block_on"),
    ) else {
        println!("  (criterion estimates not found under {home:?})");
        return;
    };
    let per_layer = (deep - empty) / DEEP as f64;
    let boxed_layer = (boxed - block_on) / DEEP as f64;
    let static_layer = (fixed - block_on) / DEEP as f64;
    println!("  turn, 0 middleware      {empty:>10.0} ns");
    println!("  turn, 4 middleware      {four:>10.0} ns");
    println!("  turn, {DEEP} middleware     {deep:>10.0} ns");
    println!(
        "  per middleware          {per_layer:>10.1} ns   boxed baseline {boxed_layer:.1} ns \
         (ratio {:.2}x)   static {static_layer:.1} ns (ratio {:.1}x)",
        per_layer / boxed_layer,
        per_layer / static_layer.max(0.01)
    );
    for name in [PEERS_IN_MEMORY, PEERS_NOOP] {
        if let Some(turn) = get(name) {
            println!("  {name:<24}{turn:>10.0} ns");
        }
    }
    println!("  history (runtime share = turn - load only; window = last {WINDOW} messages):");
    let mut shares = Vec::new();
    for (turns, ..) in &rows.histories {
        for how in ["window", "whole"] {
            let turn = get(&format!("history/{turns} turns, {how}: turn"));
            let load = get(&format!("history/{turns} turns, {how}: load only"));
            if let (Some(turn), Some(load)) = (turn, load) {
                println!(
                    "    {turns:>6} turns, {how:<6} turn {turn:>12.0} ns  load {load:>12.0} ns  \
                     runtime share {:>8.0} ns",
                    turn - load
                );
                shares.push((*turns, how, turn - load, load));
            }
        }
    }
    for how in ["window", "whole"] {
        let of = |turns: usize| {
            shares
                .iter()
                .find(|(t, h, ..)| *t == turns && *h == how)
                .map(|(_, _, share, load)| (*share, *load))
        };
        if let (Some((small_share, small_load)), Some((large_share, large_load))) =
            (of(HISTORY_TURNS[0]), of(HISTORY_TURNS[2]))
        {
            println!(
                "    {how}: runtime share at {} / at {} turns: {:.2}x (target <= 1.5x); load \
                 {:.1}x for {}x the history",
                HISTORY_TURNS[2],
                HISTORY_TURNS[0],
                large_share / small_share,
                large_load / small_load,
                HISTORY_TURNS[2] / HISTORY_TURNS[0]
            );
        }
    }
}

fn main() {
    let rows = Rows::new();
    let runtime = runtime();
    if let Ok(row) = std::env::var("ADK_BENCH_ROW") {
        if row == "list" {
            for name in rows.names() {
                println!("{name}");
            }
            return;
        }
        if row == "summary" {
            print_summary(&rows);
            return;
        }
        let iterations: usize = std::env::var("ADK_BENCH_ITERATIONS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1000);
        let row = rows.resolve(&row);
        for _ in 0..iterations {
            runtime.block_on(rows.run(row));
            if row.keeps_history() {
                free_kept_history();
            }
        }
        return;
    }

    println!("allocations per run of each row:");
    for name in rows.names() {
        println!("  {name:<44} {}", allocations_of(&runtime, &rows, &name));
    }

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("turn");
    for name in rows.names() {
        let row = rows.resolve(&name);
        group.bench_function(name.as_str(), |bencher| {
            bencher.iter(|| {
                runtime.block_on(rows.run(row));
                if row.keeps_history() {
                    free_kept_history();
                }
            });
        });
    }
    group.finish();
    criterion.final_summary();
    print_summary(&rows);
}
