use adk::{Registry, StashKey, stash_key};

const COUNT: StashKey<u32> = stash_key!("my-org.count" => u32);

fn main() {
    let mut stash = Registry::new();
    let _ = stash.set(COUNT, String::from("five"));
}
