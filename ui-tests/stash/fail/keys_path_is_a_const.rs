const COUNT_PATH: &str = "my-org.count";

adk::stash_keys! {
    pub COUNT: COUNT_PATH => u32,
}

fn main() {
    let _ = COUNT.path();
}
