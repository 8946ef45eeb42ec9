//! A string path holds any type, so the caller must name the one to read.
use adk::Registry;

fn main() {
    let stash = Registry::new();
    let count = stash.get("my-org.count");
    let _ = count;
}
