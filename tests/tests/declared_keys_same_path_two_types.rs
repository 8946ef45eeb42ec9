//! One path declared with two types in two modules: the program-wide check names both
//! declarations, and the runner refuses to build, in every build profile: `try_build` returns
//! the report, `build` panics with it. (Nothing here depends on `debug_assertions`: a release
//! build runs the same code.)

use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::declarations::Conflict;
use adk::dispatch::executor_fn;
use adk::storage::NoopStorage;

mod counting {
    pub const COUNT: adk::StashKey<u32> = adk::stash_key!("shop.orders.count" => u32);
}

mod reporting {
    adk::stash_keys! {
        pub COUNT: "shop.orders.count" => String,
    }
}

#[test]
fn one_path_with_two_types_is_reported_with_both_declarations() {
    assert_eq!(counting::COUNT.path(), reporting::COUNT.path());
    let conflicts = adk::stash::check_declared_keys().expect_err("the keys disagree");
    assert_eq!(conflicts.conflicts.len(), 1, "{conflicts}");
    let Conflict::TwoTypes {
        path,
        first,
        second,
    } = &conflicts.conflicts[0]
    else {
        panic!("expected a type conflict: {conflicts}");
    };
    assert_eq!(*path, "shop.orders.count");
    let mut declared = [first.clone(), second.clone()];
    declared.sort();
    assert_eq!(
        declared,
        [
            (
                "alloc::string::String",
                "tests/tests/declared_keys_same_path_two_types.rs:18".to_owned()
            ),
            (
                "u32",
                "tests/tests/declared_keys_same_path_two_types.rs:13".to_owned()
            ),
        ]
    );
    let report = conflicts.to_string();
    assert!(
        report.contains("declared_keys_same_path_two_types.rs:13"),
        "{report}"
    );
    assert!(
        report.contains("declared_keys_same_path_two_types.rs:18"),
        "{report}"
    );
}

#[test]
fn try_build_returns_the_conflict_instead_of_a_runner() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async { Ok(()) })
        }))
        .try_build();
    let Err(conflicts) = result else {
        panic!("the runner was built although two keys disagree");
    };
    assert!(
        conflicts
            .to_string()
            .contains("`shop.orders.count` is declared as"),
        "{conflicts}"
    );
}

#[test]
#[should_panic(expected = "`shop.orders.count` is declared as")]
fn build_refuses_to_build_the_runner_in_every_profile() {
    let _runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async { Ok(()) })
        }))
        .build();
}
