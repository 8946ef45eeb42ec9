//! One path declared twice with one type, in two `stash_keys!` groups: two constants kept in
//! step by hand. The program-wide check names both places, and the runner refuses to build (in
//! every build profile: nothing here depends on `debug_assertions`).

use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::declarations::Conflict;
use adk::dispatch::executor_fn;
use adk::storage::NoopStorage;

mod orders {
    adk::stash_keys! {
        pub COUNT: "shop.orders.count" => u32,
    }
}

mod reports {
    adk::stash_keys! {
        pub ORDER_COUNT: "shop.orders.count" => u32,
    }
}

#[test]
fn one_path_declared_in_two_groups_is_reported_with_both_places() {
    assert_eq!(orders::COUNT.path(), reports::ORDER_COUNT.path());
    let conflicts = adk::stash::check_declared_keys().expect_err("the path is declared twice");
    assert_eq!(
        conflicts.conflicts,
        [Conflict::DeclaredTwice {
            path: "shop.orders.count",
            type_name: "u32",
            first: "tests/tests/declared_keys_same_path_twice.rs:13".to_owned(),
            second: "tests/tests/declared_keys_same_path_twice.rs:19".to_owned(),
        }],
        "{conflicts}"
    );
}

#[test]
fn try_build_returns_the_report_rather_than_panicking() {
    let result = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async { Ok(()) })
        }))
        .try_build();
    let Err(conflicts) = result else {
        panic!("the runner was built although a path is declared twice");
    };
    let report = conflicts.to_string();
    assert!(report.contains("declared twice as `u32`"), "{report}");
    assert!(
        report.contains("declared_keys_same_path_twice.rs:13"),
        "{report}"
    );
    assert!(
        report.contains("declared_keys_same_path_twice.rs:19"),
        "{report}"
    );
}
