adk::stash_keys! {
    pub const COUNT: "my-org.count" => u32,
    pub POLICY: "my-org.policy" => String,
}

fn main() {
    let _ = (COUNT.path(), POLICY.path());
}
