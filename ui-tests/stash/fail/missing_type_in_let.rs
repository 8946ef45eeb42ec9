use adk::stash_key;

fn main() {
    let count = stash_key!("my-org.count");
    let _ = count.path();
}
