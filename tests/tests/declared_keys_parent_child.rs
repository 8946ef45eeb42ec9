//! A path declared in one module under a path declared in another: setting the parent would
//! erase the child, so the program-wide check reports both declarations.

use adk::declarations::Conflict;

mod policy {
    pub const POLICY: adk::StashKey<String> = adk::stash_key!("shop.policy" => String);
}

mod checkout {
    adk::stash_keys! {
        pub MODE: "shop.policy.mode" => String,
    }
}

#[test]
fn a_parent_and_a_child_declared_apart_are_reported_with_both_declarations() {
    let _ = (policy::POLICY, checkout::MODE);
    let conflicts = adk::stash::check_declared_keys().expect_err("the keys disagree");
    assert_eq!(
        conflicts.conflicts,
        [Conflict::ParentAndChild {
            parent: (
                "shop.policy",
                "tests/tests/declared_keys_parent_child.rs:7".to_owned()
            ),
            child: (
                "shop.policy.mode",
                "tests/tests/declared_keys_parent_child.rs:12".to_owned()
            ),
        }]
    );
    assert!(
        std::panic::catch_unwind(adk::stash::assert_declared_keys_agree).is_err(),
        "the one-line test helper fails on the same conflict"
    );
}
