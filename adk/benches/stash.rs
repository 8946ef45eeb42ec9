//! Stash costs on a 3-level tree, next to direct `serde_json::Value` pointer access.
//!
//! Run: `cargo bench -p checked-adk --bench stash -- --measurement-time 2 --warm-up-time 1`.
//! After the measurements the bench prints each registry/pointer ratio; the target is 1.5x.
//! Figures and the machine they came from are in `docs/performance.md`.

use std::hint::black_box;

use adk::Registry;
use criterion::{BatchSize, Criterion};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};

const PATH: &str = "org-2.section-3.count";
const POINTER: &str = "/org-2/section-3/count";
const STRUCT_PATH: &str = "org-2.section-3.policy";
const STRUCT_POINTER: &str = "/org-2/section-3/policy";

#[derive(Clone, Serialize, Deserialize)]
struct Policy {
    mode: String,
    limits: Vec<u32>,
    enabled: bool,
}

fn policy() -> Policy {
    Policy {
        mode: "strict".to_owned(),
        limits: vec![1, 2, 3],
        enabled: true,
    }
}

/// Five namespaces of five sections, each holding a count, a label and a policy: 75 leaves.
fn tree() -> Value {
    let mut root = Map::new();
    for org in 0..5 {
        let mut sections = Map::new();
        for section in 0..5 {
            sections.insert(
                format!("section-{section}"),
                json!({
                    "count": org * 10 + section,
                    "label": "chunks",
                    "policy": serde_json::to_value(policy()).expect("serializable"),
                }),
            );
        }
        root.insert(format!("org-{org}"), Value::Object(sections));
    }
    Value::Object(root)
}

fn compare_reads(criterion: &mut Criterion) {
    let stash = Registry::from_nested(tree()).expect("valid seed");
    let direct = tree();

    let mut group = criterion.benchmark_group("stash_get_u64");
    group.bench_function("registry", |bencher| {
        bencher.iter(|| stash.get::<u64>(black_box(PATH)).expect("valid path"))
    });
    group.bench_function("pointer", |bencher| {
        bencher.iter(|| {
            direct
                .pointer(black_box(POINTER))
                .map(|value| u64::deserialize(value).expect("a number"))
        })
    });
    group.finish();

    let mut group = criterion.benchmark_group("stash_get_struct");
    group.bench_function("registry", |bencher| {
        bencher.iter(|| {
            stash
                .get::<Policy>(black_box(STRUCT_PATH))
                .expect("valid path")
        })
    });
    group.bench_function("pointer", |bencher| {
        bencher.iter(|| {
            direct
                .pointer(black_box(STRUCT_POINTER))
                .map(|value| Policy::deserialize(value).expect("a policy"))
        })
    });
    group.finish();
}

fn compare_writes(criterion: &mut Criterion) {
    let mut stash = Registry::from_nested(tree()).expect("valid seed");
    let mut direct = tree();

    let mut group = criterion.benchmark_group("stash_set_u64");
    group.bench_function("registry", |bencher| {
        bencher.iter(|| {
            stash
                .set(black_box(PATH), black_box(42_u64))
                .expect("valid")
        })
    });
    group.bench_function("pointer", |bencher| {
        bencher.iter(|| {
            if let Some(slot) = direct.pointer_mut(black_box(POINTER)) {
                *slot = serde_json::to_value(black_box(42_u64)).expect("serializable");
            }
        })
    });
    group.finish();

    let mut group = criterion.benchmark_group("stash_set_struct");
    group.bench_function("registry", |bencher| {
        bencher.iter_batched(
            policy,
            |value| stash.set(black_box(STRUCT_PATH), value).expect("valid"),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("pointer", |bencher| {
        bencher.iter_batched(
            policy,
            |value| {
                if let Some(slot) = direct.pointer_mut(black_box(STRUCT_POINTER)) {
                    *slot = serde_json::to_value(value).expect("serializable");
                }
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn whole_tree_operations(criterion: &mut Criterion) {
    let stash = Registry::from_nested(tree()).expect("valid seed");
    let mut group = criterion.benchmark_group("stash_whole");
    group.bench_function("has", |bencher| bencher.iter(|| stash.has(black_box(PATH))));
    group.bench_function("keys_75_leaves", |bencher| bencher.iter(|| stash.keys()));
    group.bench_function("all_75_leaves", |bencher| bencher.iter(|| stash.all()));
    group.bench_function("seed_copy_75_leaves", |bencher| {
        bencher.iter(|| stash.seed_copy())
    });
    group.finish();
}

fn print_ratios() {
    let Some(home) = criterion_home() else {
        return;
    };
    println!("\nregistry / pointer (median), target <= 1.5x:");
    for group in [
        "stash_get_u64",
        "stash_get_struct",
        "stash_set_u64",
        "stash_set_struct",
    ] {
        let registry = median_nanoseconds(&home, group, "registry");
        let pointer = median_nanoseconds(&home, group, "pointer");
        if let (Some(registry), Some(pointer)) = (registry, pointer) {
            println!(
                "  {group:<18} registry {registry:>8.1} ns  pointer {pointer:>8.1} ns  ratio {:.2}x",
                registry / pointer
            );
        }
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    compare_reads(&mut criterion);
    compare_writes(&mut criterion);
    whole_tree_operations(&mut criterion);
    criterion.final_summary();
    print_ratios();
}
