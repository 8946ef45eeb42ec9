//! A program whose stash keys agree passes the program-wide check, and its runner builds.
//!
//! Each `declared_keys_*` file is its own test binary: the check sees every key linked into the
//! program, so a conflicting pair would fail every test beside it.

use adk::TurnRunner;
use adk::context::DispatchContext;
use adk::dispatch::executor_fn;
use adk::storage::NoopStorage;

mod orders {
    adk::stash_keys! {
        pub COUNT: "shop.orders.count" => u32,
        pub LAST_ID: "shop.orders.last-id" => String,
    }
}

mod billing {
    // A key used in two modules is declared once and its constant shared (declaring the path
    // again, even with the same type, is reported: see declared_keys_same_path_twice.rs).
    pub const ORDER_COUNT: adk::StashKey<u32> = super::orders::COUNT;
    pub const TOTAL: adk::StashKey<u64> = adk::stash_key!("shop.billing.total" => u64);
}

#[test]
fn stash_keys_agree() {
    adk::stash::assert_declared_keys_agree();
}

#[test]
fn every_declaration_is_collected_with_its_location() {
    let declared: Vec<_> =
        adk::declarations::all(adk::declarations::DeclarationKind::STASH_KEY).collect();
    for key in [
        orders::COUNT.path(),
        orders::LAST_ID.path(),
        billing::TOTAL.path(),
    ] {
        assert!(
            declared.iter().any(|declaration| declaration.path == key),
            "{key}"
        );
    }
    assert_eq!(billing::ORDER_COUNT, orders::COUNT);
    let total = declared
        .iter()
        .find(|declaration| declaration.path == "shop.billing.total")
        .expect("the key is collected");
    assert_eq!(total.location(), "tests/tests/declared_keys_clean.rs:22");
    assert_eq!((total.type_name)(), "u64");
}

#[test]
fn a_runner_builds_when_the_keys_agree() {
    let _runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(executor_fn(|_: &mut DispatchContext| {
            Box::pin(async { Ok(()) })
        }))
        .build();
}
