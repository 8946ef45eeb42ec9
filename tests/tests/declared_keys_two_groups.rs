//! Keys in two `stash_keys!` groups are two expansions, so neither sees the other at compile
//! time: the same path with two types, and a child declared before its parent, are caught by
//! the program-wide check instead, which names both declarations, and the runner refuses to
//! build on them. Nothing here depends on `debug_assertions` (adk has no `cfg(debug_assertions)`
//! anywhere; `the_declaration_check_is_not_behind_debug_assertions` below reads its sources), so
//! a release build refuses the same program.

use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::declarations::Conflict;
use adk::dispatch::executor_fn;
use adk::storage::NoopStorage;

mod retrieval {
    adk::stash_keys! {
        pub CHUNKS: "shop.retrieval.count" => u32,
        /// Declared before its parent, which the next group declares.
        pub MODE: "shop.policy.mode" => String,
    }
}

mod reporting {
    adk::stash_keys! {
        pub CHUNK_LABEL: "shop.retrieval.count" => String,
        pub POLICY: "shop.policy" => String,
    }
}

const FILE: &str = "tests/tests/declared_keys_two_groups.rs";

#[test]
fn two_groups_declaring_one_path_with_two_types_are_reported_with_both_declarations() {
    assert_eq!(retrieval::CHUNKS.path(), reporting::CHUNK_LABEL.path());
    let conflicts = adk::stash::check_declared_keys().expect_err("the keys disagree");
    let two_types: Vec<_> = conflicts
        .conflicts
        .iter()
        .filter_map(|conflict| match conflict {
            Conflict::TwoTypes {
                path,
                first,
                second,
            } => Some((*path, first.clone(), second.clone())),
            _ => None,
        })
        .collect();
    let [(path, first, second)] = two_types.as_slice() else {
        panic!("expected one type conflict: {conflicts}");
    };
    assert_eq!(*path, "shop.retrieval.count");
    let mut declared = [first.clone(), second.clone()];
    declared.sort();
    assert_eq!(
        declared,
        [
            ("alloc::string::String", format!("{FILE}:24")),
            ("u32", format!("{FILE}:16")),
        ]
    );
}

#[test]
fn a_child_declared_in_a_group_before_its_parent_is_reported_with_both_declarations() {
    let conflicts = adk::stash::check_declared_keys().expect_err("the keys disagree");
    let nested: Vec<_> = conflicts
        .conflicts
        .iter()
        .filter(|conflict| matches!(conflict, Conflict::ParentAndChild { .. }))
        .collect();
    assert_eq!(
        nested,
        [&Conflict::ParentAndChild {
            parent: ("shop.policy", format!("{FILE}:25")),
            child: ("shop.policy.mode", format!("{FILE}:18")),
        }],
        "{conflicts}"
    );
}

#[test]
fn the_runner_refuses_both_conflicts_naming_every_declaration() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async { Ok(()) })
        }))
        .try_build();
    let Err(conflicts) = result else {
        panic!("the runner was built although the keys disagree");
    };
    let report = conflicts.to_string();
    for line in [16, 18, 24, 25] {
        assert!(
            report.contains(&format!("{FILE}:{line}")),
            "line {line} missing: {report}"
        );
    }
}

#[test]
fn the_declaration_check_is_not_behind_debug_assertions() {
    let adk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../adk/src");
    let mut pending = vec![adk];
    let mut read = 0;
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("adk/src is readable") {
                pending.push(entry.expect("a directory entry").path());
            }
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            let source = std::fs::read_to_string(&path).expect("a source file is readable");
            read += 1;
            assert!(
                !source.contains("debug_assertions"),
                "{} depends on debug_assertions: the runner's refusals must hold in release",
                path.display()
            );
        }
    }
    assert!(read > 50, "read only {read} files under adk/src");
}
