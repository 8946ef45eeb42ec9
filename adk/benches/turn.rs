//! The cost of a turn and of each middleware layer, beside two hand-written baselines of the
//! same depth measured in the same run:
//! - a chain of boxed async closures (what any runtime-composed pipeline pays);
//! - a statically composed chain (the floor: the compiler sees every layer).
//!
//! Run: `cargo bench -p checked-adk --bench turn`. Allocation counts come from a counting global
//! allocator and are printed once before the timings.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};

use adk::context::{DispatchContext, RawTurnContext, TurnContext};
use adk::dispatch::executor_fn;
use adk::pipeline::{BoxError, from_fn};
use adk::storage::NoopStorage;
use adk::{TurnRunner, middleware};
use criterion::{Criterion, criterion_main};

struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// Counting allocations needs a global allocator, which is an unsafe trait; this one only
// counts and forwards every call to the system allocator unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from `System.alloc` with this layout.
        unsafe { System.dealloc(pointer, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const DEPTH_PER_PIPELINE: usize = 8;
const PIPELINES: usize = 4;
const LAYERS: usize = DEPTH_PER_PIPELINE * PIPELINES;

#[middleware(pipeline = [turn_input, turn_output])]
async fn pass_turn(
    ctx: &mut TurnContext,
    next: adk::pipeline::Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

#[middleware(pipeline = [dispatch_input, dispatch_output])]
async fn pass_dispatch(
    ctx: &mut DispatchContext,
    next: adk::pipeline::Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    let _ = next.run(ctx).await;
    Ok(())
}

fn runner(depth: usize) -> TurnRunner {
    let mut builder = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|ctx: &mut DispatchContext| {
            Box::pin(async move {
                // Acking from the executor skips dispatch_output, as the loop's rules say; the
                // bench instead acks after the output pipeline so all four pipelines run.
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

// The static baseline: nested async fns the compiler can inline.
macro_rules! static_chain {
    ($name:ident, $inner:ident) => {
        async fn $name(state: &mut u64) {
            *state += 1;
            $inner(state).await;
        }
    };
}
async fn static_end(state: &mut u64) {
    *state += 1;
}
static_chain!(s31, static_end);
static_chain!(s30, s31);
static_chain!(s29, s30);
static_chain!(s28, s29);
static_chain!(s27, s28);
static_chain!(s26, s27);
static_chain!(s25, s26);
static_chain!(s24, s25);
static_chain!(s23, s24);
static_chain!(s22, s23);
static_chain!(s21, s22);
static_chain!(s20, s21);
static_chain!(s19, s20);
static_chain!(s18, s19);
static_chain!(s17, s18);
static_chain!(s16, s17);
static_chain!(s15, s16);
static_chain!(s14, s15);
static_chain!(s13, s14);
static_chain!(s12, s13);
static_chain!(s11, s12);
static_chain!(s10, s11);
static_chain!(s9, s10);
static_chain!(s8, s9);
static_chain!(s7, s8);
static_chain!(s6, s7);
static_chain!(s5, s6);
static_chain!(s4, s5);
static_chain!(s3, s4);
static_chain!(s2, s3);
static_chain!(s1, s2);

fn raw() -> RawTurnContext {
    RawTurnContext::new("bench-conversation", "You are a benchmark.")
}

fn allocations_of<F: Future>(runtime: &tokio::runtime::Runtime, future: F) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    runtime.block_on(future);
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

fn bench(criterion: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let empty = runner(0);
    let one_each = runner(1);
    let full = runner(DEPTH_PER_PIPELINE);
    let boxed = boxed_chain(LAYERS);

    let empty_allocations = allocations_of(&runtime, async {
        let _ = black_box(empty.run(raw()).await.expect("valid input"));
    });
    let full_allocations = allocations_of(&runtime, async {
        let _ = black_box(full.run(raw()).await.expect("valid input"));
    });
    let boxed_allocations = allocations_of(&runtime, async {
        let mut state = 0;
        run_boxed(&boxed, &mut state).await;
        black_box(state);
    });
    println!(
        "allocations per turn: {empty_allocations} with no middleware, {full_allocations} with \
         {LAYERS} middleware ({:.2} per middleware); boxed baseline: {boxed_allocations} for \
         {LAYERS} layers",
        (full_allocations - empty_allocations) as f64 / LAYERS as f64
    );

    let mut group = criterion.benchmark_group("turn");
    group.bench_function("turn/no middleware", |bencher| {
        bencher.iter(|| runtime.block_on(async { black_box(empty.run(raw()).await) }));
    });
    group.bench_function("turn/1 middleware per pipeline (4)", |bencher| {
        bencher.iter(|| runtime.block_on(async { black_box(one_each.run(raw()).await) }));
    });
    group.bench_function("turn/8 middleware per pipeline (32)", |bencher| {
        bencher.iter(|| runtime.block_on(async { black_box(full.run(raw()).await) }));
    });
    group.bench_function("baseline/boxed async closures (32)", |bencher| {
        bencher.iter(|| {
            runtime.block_on(async {
                let mut state = 0;
                run_boxed(&boxed, &mut state).await;
                black_box(state)
            })
        });
    });
    group.bench_function("baseline/static chain (32)", |bencher| {
        bencher.iter(|| {
            runtime.block_on(async {
                let mut state = 0;
                s1(&mut state).await;
                black_box(state)
            })
        });
    });
    group.bench_function("baseline/empty block_on", |bencher| {
        bencher.iter(|| runtime.block_on(async { black_box(0_u64) }));
    });
    group.finish();
}

mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}

criterion_main!(group::benches);
