use adk::{StashKey, stash_key};

struct Item;

const FIRST_ITEM: StashKey<Item> = stash_key!("my-org.items.0" => Item);

fn main() {
    let _ = FIRST_ITEM.path();
}
