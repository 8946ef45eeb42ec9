//! Typed middleware state per update: a mocked turn whose 4 `turn_input` middleware each update
//! their own state, against the same turn whose middleware each update a field of a plain
//! struct (the baseline, in the same run); the same pair with a session store and persistent
//! states (one load, one commit); and one update in isolation against a plain `+= 1`.
//!
//! `cargo bench -p checked-adk --bench middleware_state -- --measurement-time 2 --warm-up-time 1`
//!
//! Plain mode, for `valgrind --tool=callgrind`: `ADK_BENCH_ROW=<row>` (`list` lists them) and
//! `ADK_BENCH_ITERATIONS=<n>` (default 1000) run one row `n` times without criterion.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;

use adk::TurnRunner;
use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::middleware_state::{MiddlewareState, MiddlewareStates};
use adk::pipeline::{BoxError, Next, TurnInput, from_fn};
use adk::state::InMemorySessionStore;
use adk::storage::NoopStorage;
use criterion::{Criterion, criterion_group};
use serde::{Deserialize, Serialize};

macro_rules! counters {
    ($($transient:ident / $persistent:ident),*) => {$(
        #[derive(MiddlewareState, Default, Clone)]
        struct $transient {
            count: u64,
        }

        #[derive(MiddlewareState, Default, Clone, Serialize, Deserialize)]
        #[middleware_state(persistent)]
        struct $persistent {
            count: u64,
        }
    )*};
}

counters!(A / PA, B / PB, C / PC, D / PD);

/// What the baseline's middleware update instead: a plain struct each, reached by `&mut`.
#[derive(Default)]
struct Plain {
    counts: [u64; 4],
}

type Update = fn(&mut TurnContext) -> Result<(), BoxError>;

fn middleware(update: Update) -> impl adk::pipeline::Middleware<TurnInput> {
    from_fn(move |ctx: &mut TurnContext, next: Next<'_, TurnContext>| {
        Box::pin(async move {
            update(ctx)?;
            let _ = next.run(ctx).await;
            Ok::<(), BoxError>(())
        })
    })
}

fn runner(updates: [Update; 4], store: Option<InMemorySessionStore>) -> TurnRunner {
    let mut builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                ctx.ack()?;
                Ok::<(), BoxError>(())
            })
        }));
    for update in updates {
        builder = builder.turn_input(middleware(update));
    }
    match store {
        Some(store) => builder.session_store(store).build(),
        None => builder.build(),
    }
}

/// One plain struct per turn, as a state container would be; each middleware bumps its field.
const PLAIN: [Update; 4] = [
    |_| bump_plain(0),
    |_| bump_plain(1),
    |_| bump_plain(2),
    |_| bump_plain(3),
];

fn bump_plain(field: usize) -> Result<(), BoxError> {
    let mut plain = black_box(Plain::default());
    plain.counts[field] += 1;
    black_box(&plain);
    Ok(())
}

const TRANSIENT: [Update; 4] = [
    |ctx| Ok(ctx.update_middleware_state::<A>(|state| state.count += 1)?),
    |ctx| Ok(ctx.update_middleware_state::<B>(|state| state.count += 1)?),
    |ctx| Ok(ctx.update_middleware_state::<C>(|state| state.count += 1)?),
    |ctx| Ok(ctx.update_middleware_state::<D>(|state| state.count += 1)?),
];

const PERSISTENT: [Update; 4] = [
    |ctx| Ok(ctx.update_middleware_state::<PA>(|state| state.count += 1)?),
    |ctx| Ok(ctx.update_middleware_state::<PB>(|state| state.count += 1)?),
    |ctx| Ok(ctx.update_middleware_state::<PC>(|state| state.count += 1)?),
    |ctx| Ok(ctx.update_middleware_state::<PD>(|state| state.count += 1)?),
];

type Row = (&'static str, Box<dyn FnMut()>);

/// Every row, each a closure that runs one iteration; criterion and the plain mode share them.
fn rows(runtime: &'static tokio::runtime::Runtime) -> Vec<Row> {
    let raw = || RawTurnContext::new("bench", "You are a benchmark.");
    let mut rows: Vec<Row> = Vec::new();
    for (name, updates, store) in [
        ("turn/baseline_plain_struct", PLAIN, None),
        ("turn/transient_states", TRANSIENT, None),
        (
            "turn/baseline_plain_struct_in_memory_store",
            PLAIN,
            Some(InMemorySessionStore::new()),
        ),
        (
            "turn/persistent_states_in_memory_store",
            PERSISTENT,
            Some(InMemorySessionStore::new()),
        ),
    ] {
        let runner = runner(updates, store);
        rows.push((
            name,
            Box::new(move || {
                let outcome = runtime.block_on(runner.run(raw())).expect("runs");
                assert!(outcome.is_completed(), "{:?}", outcome.status);
                let _ = black_box(outcome);
            }),
        ));
    }
    let mut plain = Plain::default();
    rows.push((
        "one_update/baseline_plain_field",
        Box::new(move || black_box(&mut plain).counts[0] += 1),
    ));
    let mut states = MiddlewareStates::default();
    rows.push((
        "one_update/update_existing_state",
        Box::new(move || {
            black_box(&mut states)
                .update::<A>(|state| state.count += 1)
                .expect("transient state is always writable");
        }),
    ));
    rows.push((
        "one_update/first_update_of_a_turn",
        Box::new(|| {
            let mut states = MiddlewareStates::default();
            states
                .update::<A>(|state| state.count += 1)
                .expect("transient state is always writable");
            black_box(states);
        }),
    ));
    rows
}

fn runtime() -> &'static tokio::runtime::Runtime {
    Box::leak(Box::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
    ))
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("middleware_state");
    for (name, mut row) in rows(runtime()) {
        group.bench_function(name, |b| b.iter(&mut row));
    }
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    // Plain mode, for callgrind: ADK_BENCH_ROW=<row> ADK_BENCH_ITERATIONS=<n> runs one row n
    // times without criterion (ADK_BENCH_ROW=list lists the rows).
    let Ok(wanted) = std::env::var("ADK_BENCH_ROW") else {
        benches();
        Criterion::default().configure_from_args().final_summary();
        return;
    };
    let iterations: usize = std::env::var("ADK_BENCH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    for (name, mut row) in rows(runtime()) {
        if wanted == "list" {
            println!("{name}");
        } else if name == wanted {
            for _ in 0..iterations {
                row();
            }
        }
    }
}
