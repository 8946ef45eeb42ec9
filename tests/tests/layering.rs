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

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

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
        modules: &[Module {
            name: "error",
            may_import: &[],
        }],
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
                may_import: &["primitives", "storage", "pipeline", "context"],
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

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../adk/src")
}

/// Every `.rs` file under `dir`, as paths relative to `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).unwrap_or_else(|error| panic!("{next:?}: {error}")) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    files.sort();
    files
}

fn slash(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// The source without comments (doc comments included), with string and character literals
/// emptied, so only code is left. Line breaks are kept.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut at = 0;
    while at < bytes.len() {
        let rest = &source[at..];
        if rest.starts_with("//") {
            at += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while at < bytes.len() {
                let rest = &source[at..];
                if rest.starts_with("/*") {
                    depth += 1;
                    at += 2;
                } else if rest.starts_with("*/") {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if bytes[at] == b'\n' {
                        out.push('\n');
                    }
                    at += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(source, at) {
            let open = 2 + hashes;
            let close = format!("\"{}", "#".repeat(hashes));
            let end = source[at + open..]
                .find(&close)
                .map_or(bytes.len(), |end| at + open + end + close.len());
            out.push_str("\"\"");
            out.extend(source[at..end].chars().filter(|&c| c == '\n'));
            at = end;
        } else if bytes[at] == b'"' {
            let mut end = at + 1;
            while end < bytes.len() && bytes[end] != b'"' {
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            out.extend(
                source[at..end.min(bytes.len())]
                    .chars()
                    .filter(|&c| c == '\n'),
            );
            at = end + 1;
        } else if let Some(length) = char_literal(rest) {
            out.push_str("' '");
            at += length;
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, … at `at` (not the end of an identifier): how many `#`s.
fn raw_string_start(source: &str, at: usize) -> Option<usize> {
    let bytes = source.as_bytes();
    if bytes[at] != b'r'
        || (at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_'))
    {
        return None;
    }
    let hashes = bytes[at + 1..].iter().take_while(|&&b| b == b'#').count();
    (bytes.get(at + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The length of a character literal at the start of `rest` (not a lifetime).
fn char_literal(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let (_, first) = chars.next()?;
    if first == '\\' {
        let close = rest[2..].find('\'')?;
        return Some(close + 3);
    }
    let (index, second) = chars.next()?;
    (second == '\'').then_some(index + 1)
}

/// The code without its `#[cfg(test)]` items (a module, a function, an `impl`).
fn without_tests(code: &str) -> String {
    let mut code = code.to_owned();
    while let Some(start) = code.find("#[cfg(test)]") {
        let after = start + "#[cfg(test)]".len();
        let Some(open) = code[after..].find(['{', ';']).map(|offset| after + offset) else {
            break;
        };
        let end = if code.as_bytes()[open] == b';' {
            open + 1
        } else {
            let mut depth = 0;
            let mut end = code.len();
            for (offset, c) in code[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = open + offset + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        };
        let lines = code[start..end].matches('\n').count();
        code.replace_range(start..end, &"\n".repeat(lines));
    }
    code
}

/// The module path of a file: `context/turn.rs` is `[context, turn]`, `context/mod.rs`
/// `[context]`, `lib.rs` `[]`.
fn module_path(file: &str) -> Vec<String> {
    let mut segments: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if segments
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        segments.pop();
    }
    segments
}

/// Every path after `crate::`, `super::` or `self::` in `code`, with `{..}` groups expanded,
/// as the anchor and the segments that follow.
fn paths(code: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut found = Vec::new();
    for anchor in ["crate", "super", "self"] {
        let needle = format!("{anchor}::");
        let mut from = 0;
        while let Some(offset) = code[from..].find(&needle) {
            let start = from + offset;
            from = start + needle.len();
            let before = code[..start].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tail = path_text(&code[from..]);
            let anchor = match anchor {
                "crate" => "crate",
                "super" => "super",
                _ => "self",
            };
            for segments in expand(&tail) {
                found.push((anchor, segments));
            }
        }
    }
    found
}

/// The path text from the start of `rest`: segments, `::`, and balanced `{..}` groups.
fn path_text(rest: &str) -> String {
    let mut depth = 0;
    let mut end = 0;
    for (index, c) in rest.char_indices() {
        let keeps = c.is_alphanumeric()
            || c == '_'
            || c == ':'
            || c == '*'
            || (depth > 0 && (c == ',' || c.is_whitespace()));
        if c == '{' {
            depth += 1;
        } else if c == '}' {
            if depth == 0 {
                break;
            }
            depth -= 1;
        } else if !keeps {
            break;
        }
        end = index + c.len_utf8();
    }
    rest[..end].chars().filter(|c| !c.is_whitespace()).collect()
}

/// `a::{b::c,d}` as `[[a, b, c], [a, d]]`.
fn expand(text: &str) -> Vec<Vec<String>> {
    let Some(open) = text.find('{') else {
        return vec![
            text.split("::")
                .filter(|segment| !segment.is_empty())
                .map(str::to_owned)
                .collect(),
        ];
    };
    let head: Vec<String> = text[..open]
        .split("::")
        .filter(|segment| !segment.is_empty())
        .map(str::to_owned)
        .collect();
    let body = &text[open + 1..text.rfind('}').unwrap_or(text.len())];
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in body.chars() {
        match c {
            ',' if depth == 0 => parts.push(std::mem::take(&mut current)),
            '{' => {
                depth += 1;
                current.push(c);
            }
            '}' => {
                depth -= 1;
                current.push(c);
            }
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts
        .iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand(part))
        .map(|tail| head.iter().cloned().chain(tail).collect())
        .collect()
}

/// The file a module path lands in: the longest prefix that is a module with a file.
fn resolve(src: &Path, segments: &[String]) -> String {
    let mut dir = src.to_path_buf();
    let mut file = "lib.rs".to_owned();
    let mut relative = String::new();
    for segment in segments {
        let flat = dir.join(format!("{segment}.rs"));
        let folder = dir.join(segment).join("mod.rs");
        relative = if relative.is_empty() {
            segment.clone()
        } else {
            format!("{relative}/{segment}")
        };
        if flat.is_file() {
            file = format!("{relative}.rs");
        } else if folder.is_file() {
            file = format!("{relative}/mod.rs");
        } else if !dir.join(segment).is_dir() {
            break;
        }
        dir = dir.join(segment);
    }
    file
}

/// The imports of every file of `adk/src` (file → files it imports).
fn file_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = src();
    let mut imports = BTreeMap::new();
    for file in rust_files(&src) {
        let name = slash(&file);
        let source = fs::read_to_string(src.join(&file)).expect("a readable source file");
        let code = without_tests(&code_only(&source));
        let here = module_path(&name);
        // `super` of `context/turn.rs` ([context, turn]) and of `context/mod.rs` ([context])
        // alike is the path without its last segment.
        let parent: Vec<String> = here[..here.len().saturating_sub(1)].to_vec();
        let mut targets = BTreeSet::new();
        for (anchor, segments) in paths(&code) {
            let mut full = match anchor {
                "crate" => Vec::new(),
                "super" => parent.clone(),
                _ => here.clone(),
            };
            for segment in segments {
                if segment == "super" {
                    full.pop();
                } else if segment != "self" && segment != "*" {
                    full.push(segment);
                }
            }
            let target = resolve(&src, &full);
            if target != name {
                targets.insert(target);
            }
        }
        imports.insert(name, targets);
    }
    imports
}

/// The top-level module a file belongs to; `__private/<x>.rs` belongs to `x`.
fn module_of(file: &str) -> String {
    let first = file.split('/').next().expect("a path");
    if first == "__private" {
        let served = file
            .trim_start_matches("__private/")
            .trim_end_matches(".rs");
        return match served {
            "middleware" => "pipeline".to_owned(),
            "state_writes" => "runner".to_owned(),
            other => other.to_owned(),
        };
    }
    first.trim_end_matches(".rs").to_owned()
}

/// Module → modules it imports (the root, `lib.rs`, left out).
fn module_imports(
    files: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, targets) in files {
        if file == "lib.rs" {
            continue;
        }
        let from = module_of(file);
        let entry = modules.entry(from.clone()).or_default();
        for target in targets {
            let to = module_of(target);
            if to != from && to != "lib" {
                entry.insert(to);
            }
        }
    }
    modules
}

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

/// The groups of two or more files that import each other, directly or through others
/// (Tarjan's strongly connected components).
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Search<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        groups: Vec<Vec<String>>,
    }
    impl<'g> Search<'g> {
        fn visit(&mut self, node: &'g str) {
            let at = self.index.len();
            self.index.insert(node, at);
            self.low.insert(node, at);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut group = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    group.push(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for node in graph.keys() {
        if !search.index.contains_key(node.as_str()) {
            search.visit(node);
        }
    }
    search.groups
}
