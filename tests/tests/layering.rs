//! The crate's layering, checked from its source (docs/architecture.md draws it).
//!
//! Every `crate::`, `super::` and `self::` path in `adk/src` — outside comments, doc comments,
//! string literals and `#[cfg(test)]` items — is an import of the file or module it names (the
//! longest prefix that is a module of its own file). From those imports this test checks that
//! each top-level module imports only the modules [`LAYERS`] lets it (which are all placed
//! before it, so no two modules import each other), that no files import each other in a
//! circle, that none of the wrong-way imports issue 24 removed is back, and that no source file
//! of `adk` or `adk-macros` is longer than [`MAX_LINES`]. A new top-level module fails the test
//! until it is placed in [`LAYERS`]. There is no exception.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// The source scan the rules below run on.
#[path = "layering/scan.rs"]
mod scan;

use scan::*;

/// One top-level module of `adk/src` and the modules it may import.
struct Module {
    name: &'static str,
    may_import: &'static [&'static str],
}

/// One layer: its rule, in the words of docs/architecture.md, and its modules.
struct Layer {
    rule: &'static str,
    modules: &'static [Module],
}

/// The layers, bottom up. A module may import only modules placed before it; within a layer the
/// order is the order below. The macro-support files `__private/<x>.rs` count with module `x`
/// (`__private/middleware.rs`, behind `#[middleware]`, with `pipeline`;
/// `__private/state_writes.rs`, which resolves the state writes `#[middleware]` found for the
/// runner's build-time check, with `runner`); `lib.rs` is the root,
/// which re-exports and is imported by no layer.
const LAYERS: &[Layer] = &[
    Layer {
        rule: "the floor imports nothing of the crate",
        modules: &[
            Module {
                name: "error",
                may_import: &[],
            },
            Module {
                name: "lean",
                may_import: &[],
            },
        ],
    },
    Layer {
        rule: "values know no storage",
        modules: &[
            Module {
                name: "ids",
                may_import: &["error"],
            },
            Module {
                name: "declarations",
                may_import: &["error"],
            },
            Module {
                name: "stash",
                may_import: &["error", "declarations"],
            },
            Module {
                name: "bytes",
                may_import: &["error"],
            },
            Module {
                name: "primitives",
                may_import: &["error", "ids", "bytes"],
            },
        ],
    },
    Layer {
        rule: "the storage contract and state know no turn",
        modules: &[
            Module {
                name: "storage",
                may_import: &["error", "ids", "bytes", "primitives"],
            },
            Module {
                name: "middleware_state",
                may_import: &["error", "ids", "declarations"],
            },
            Module {
                name: "state",
                may_import: &[
                    "error",
                    "lean",
                    "ids",
                    "declarations",
                    "storage",
                    "middleware_state",
                ],
            },
        ],
    },
    Layer {
        rule: "the bus carries data, not handles into higher layers",
        modules: &[
            Module {
                name: "gate",
                may_import: &["error", "ids"],
            },
            Module {
                name: "events",
                may_import: &["error", "ids", "primitives", "middleware_state", "gate"],
            },
            Module {
                name: "pipeline",
                may_import: &["error"],
            },
        ],
    },
    Layer {
        rule: "contexts do not drive",
        modules: &[
            Module {
                name: "context",
                may_import: &[
                    "error",
                    "lean",
                    "ids",
                    "stash",
                    "bytes",
                    "primitives",
                    "storage",
                    "middleware_state",
                    "state",
                    "gate",
                    "events",
                    "pipeline",
                ],
            },
            Module {
                name: "transcript",
                may_import: &["error", "primitives", "context"],
            },
        ],
    },
    Layer {
        rule: "the loop drives the contexts",
        modules: &[
            Module {
                name: "dispatch",
                may_import: &[
                    "error",
                    "ids",
                    "primitives",
                    "storage",
                    "gate",
                    "events",
                    "pipeline",
                    "context",
                    "transcript",
                ],
            },
            Module {
                name: "runner",
                may_import: &[
                    "error",
                    "ids",
                    "declarations",
                    "stash",
                    "primitives",
                    "storage",
                    "middleware_state",
                    "state",
                    "events",
                    "pipeline",
                    "context",
                    "transcript",
                    "dispatch",
                ],
            },
        ],
    },
    Layer {
        rule: "batteries implement the core's contracts from above",
        modules: &[
            Module {
                name: "sqlite",
                may_import: &["error", "ids", "bytes", "primitives", "storage", "state"],
            },
            Module {
                name: "postgres",
                may_import: &["error", "ids", "bytes", "primitives", "storage", "state"],
            },
            Module {
                name: "provider",
                may_import: &[
                    "error",
                    "primitives",
                    "events",
                    "pipeline",
                    "context",
                    "dispatch",
                ],
            },
            Module {
                name: "approval",
                may_import: &["gate", "pipeline", "context", "storage"],
            },
            Module {
                name: "openai",
                may_import: &[
                    "error",
                    "primitives",
                    "events",
                    "pipeline",
                    "context",
                    "transcript",
                    "dispatch",
                    "provider",
                ],
            },
            Module {
                name: "anthropic",
                may_import: &[
                    "error",
                    "primitives",
                    "events",
                    "pipeline",
                    "context",
                    "transcript",
                    "dispatch",
                    "provider",
                ],
            },
            Module {
                name: "mcp",
                may_import: &["ids", "primitives", "storage", "pipeline", "context"],
            },
            Module {
                name: "tokens",
                may_import: &["primitives", "events", "transcript"],
            },
            Module {
                name: "history",
                may_import: &[
                    "primitives",
                    "storage",
                    "pipeline",
                    "context",
                    "transcript",
                    "tokens",
                ],
            },
            Module {
                name: "budget",
                may_import: &["error", "middleware_state", "pipeline", "context", "tokens"],
            },
            Module {
                name: "compaction",
                may_import: &[
                    "primitives",
                    "storage",
                    "middleware_state",
                    "pipeline",
                    "context",
                    "transcript",
                    "dispatch",
                    "runner",
                    "tokens",
                    "history",
                ],
            },
            Module {
                name: "trace",
                may_import: &["events"],
            },
            Module {
                name: "otel",
                may_import: &["dispatch"],
            },
            Module {
                name: "agent",
                may_import: &[
                    "ids",
                    "primitives",
                    "storage",
                    "state",
                    "events",
                    "pipeline",
                    "context",
                    "dispatch",
                    "runner",
                    "history",
                ],
            },
        ],
    },
    Layer {
        rule: "facades only re-export",
        modules: &[
            Module {
                name: "prelude",
                may_import: &[
                    "error",
                    "stash",
                    "primitives",
                    "storage",
                    "events",
                    "pipeline",
                    "context",
                    "dispatch",
                    "runner",
                    "agent",
                ],
            },
            Module {
                name: "guide",
                may_import: &[],
            },
        ],
    },
];

/// The longest a source file of `adk/src` or `adk-macros/src` may be.
const MAX_LINES: usize = 900;

/// Imports issue 24 turned around, by importing file (or folder) and imported module: each
/// would also break [`LAYERS`] or make a circle, but is named here so the failure says which
/// rule it breaks.
const REMOVED_IMPORTS: &[(&str, &str, &str)] = &[
    (
        "gate.rs",
        "events",
        "gates announce themselves through the contexts",
    ),
    ("gate.rs", "pipeline", "`BoxError` is on the floor"),
    (
        "pipeline/",
        "events",
        "`ErrorCode` and `TurnError` are on the floor",
    ),
    (
        "pipeline/",
        "context",
        "the contexts bind the pipeline markers",
    ),
    (
        "middleware_state/",
        "pipeline",
        "`BoxError` is on the floor",
    ),
    (
        "middleware_state/",
        "state",
        "the records are middleware state's",
    ),
    (
        "__private/middleware_state.rs",
        "pipeline",
        "`BoxError` is on the floor",
    ),
    (
        "events/",
        "state",
        "mismatches are middleware state's own types",
    ),
    ("storage/", "context", "`Record` is a primitive"),
    (
        "primitives/",
        "storage",
        "a tool invocation's storage half is storage's (`storage/invocation.rs`)",
    ),
    (
        "context/",
        "dispatch",
        "the stream accumulators are the context's",
    ),
];

fn placed() -> Vec<&'static Module> {
    LAYERS.iter().flat_map(|layer| layer.modules).collect()
}

#[test]
fn the_layer_table_places_each_module_after_everything_it_may_import() {
    let order = placed();
    for (position, module) in order.iter().enumerate() {
        for lower in module.may_import {
            let at = order.iter().position(|placed| placed.name == *lower);
            assert!(
                at.is_some_and(|at| at < position),
                "`{}` may import `{lower}`, which is not placed before it",
                module.name
            );
        }
    }
    for layer in LAYERS {
        assert!(!layer.rule.is_empty() && !layer.modules.is_empty());
    }
}

#[test]
fn every_top_level_module_is_placed_in_a_layer() {
    let names: BTreeSet<&str> = placed().iter().map(|module| module.name).collect();
    let modules: BTreeSet<String> = rust_files(&src())
        .iter()
        .map(|file| module_of(&slash(file)))
        .filter(|module| module != "lib")
        .collect();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|module| !names.contains(module.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "place these modules in LAYERS (tests/tests/layering.rs) and docs/architecture.md: {unplaced:?}"
    );
    let gone: Vec<&&str> = names
        .iter()
        .filter(|name| !modules.contains(**name))
        .collect();
    assert!(
        gone.is_empty(),
        "LAYERS names modules that do not exist: {gone:?}"
    );
}

#[test]
fn each_module_imports_only_what_its_layer_allows() {
    let files = file_imports();
    let modules = module_imports(&files);
    let mut broken = Vec::new();
    for module in placed() {
        for imported in modules.get(module.name).into_iter().flatten() {
            if !module.may_import.contains(&imported.as_str()) {
                let by: Vec<&String> = files
                    .iter()
                    .filter(|(file, targets)| {
                        module_of(file) == module.name
                            && targets.iter().any(|target| module_of(target) == *imported)
                    })
                    .map(|(file, _)| file)
                    .collect();
                broken.push(format!(
                    "`{}` imports `{imported}` (in {by:?})",
                    module.name
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "imports against the layering:\n{}",
        broken.join("\n")
    );
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let modules = module_imports(&file_imports());
    let mut pairs = Vec::new();
    for (module, imported) in &modules {
        for other in imported {
            if module < other && modules.get(other).is_some_and(|back| back.contains(module)) {
                pairs.push(format!("{module} <-> {other}"));
            }
        }
    }
    assert!(pairs.is_empty(), "modules importing each other: {pairs:?}");
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let files = file_imports();
    let circles = strongly_connected(&files);
    assert!(
        circles.is_empty(),
        "files importing each other in a circle: {circles:?}"
    );
}

#[test]
fn no_removed_wrong_way_import_is_back() {
    let files = file_imports();
    let mut back = Vec::new();
    for (from, to, why) in REMOVED_IMPORTS {
        for (file, targets) in &files {
            let matches = if from.ends_with('/') {
                file.starts_with(from)
            } else {
                file == from
            };
            if matches && targets.iter().any(|target| module_of(target) == *to) {
                back.push(format!("{file} imports `{to}` again ({why})"));
            }
        }
    }
    assert!(back.is_empty(), "{}", back.join("\n"));
}

#[test]
fn no_source_file_is_longer_than_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut long = Vec::new();
    for crate_src in ["adk/src", "adk-macros/src"] {
        let dir = root.join(crate_src);
        for file in rust_files(&dir) {
            let lines = fs::read_to_string(dir.join(&file))
                .expect("a readable source file")
                .lines()
                .count();
            if lines > MAX_LINES {
                long.push(format!("{crate_src}/{}: {lines} lines", slash(&file)));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these along their concepts: {long:?}"
    );
}

#[test]
fn the_scan_sees_imports_the_rules_are_about() {
    // Guards the scanner itself: a scan that found nothing would pass every rule above.
    let files = file_imports();
    let of = |file: &str| files.get(file).cloned().unwrap_or_default();
    assert!(of("context/turn.rs").contains("state/mod.rs"));
    assert!(of("context/turn.rs").contains("context/abort.rs"));
    assert!(of("gate.rs").contains("error/mod.rs"));
    assert!(of("storage/invocation.rs").contains("primitives/mod.rs"));
    assert!(
        !of("pipeline/mod.rs")
            .iter()
            .any(|file| file.starts_with("context/"))
    );
    let code = without_tests(&code_only(
        "// crate::gate::X\n/// crate::gate::Y\nlet s = \"crate::gate\";\n#[cfg(test)]\nmod tests { use crate::gate::Z; }\nuse crate::{ids::TurnId, events::{Event, EventSink}};\n",
    ));
    let found: Vec<Vec<String>> = paths(&code)
        .into_iter()
        .map(|(_, segments)| segments)
        .collect();
    assert_eq!(
        found,
        [
            vec!["ids".to_owned(), "TurnId".to_owned()],
            vec!["events".to_owned(), "Event".to_owned()],
            vec!["events".to_owned(), "EventSink".to_owned()],
        ]
    );
}
