//! A key declared with an inferred type (`=> _`) is collected too: its path is checked against
//! the parents and children declared elsewhere, and it agrees with any type written for its path.

use adk::declarations::Conflict;

mod cart {
    pub const CART: adk::StashKey<Vec<String>> = adk::stash_key!("shop.cart" => _);
    pub const COUNT: adk::StashKey<u32> = adk::stash_key!("shop.count" => _);
}

mod totals {
    adk::stash_keys! {
        pub TOTAL: "shop.cart.total" => u64,
        pub COUNT: "shop.count" => u32,
    }
}

#[test]
fn a_key_of_inferred_type_under_another_declared_apart_is_reported() {
    let _ = (cart::CART, cart::COUNT, totals::TOTAL, totals::COUNT);
    let conflicts = adk::stash::check_declared_keys().expect_err("the keys disagree");
    assert_eq!(
        conflicts.conflicts,
        [Conflict::ParentAndChild {
            parent: (
                "shop.cart",
                "tests/tests/declared_keys_inferred_type.rs:7".to_owned()
            ),
            child: (
                "shop.cart.total",
                "tests/tests/declared_keys_inferred_type.rs:13".to_owned()
            ),
        }]
    );
}
