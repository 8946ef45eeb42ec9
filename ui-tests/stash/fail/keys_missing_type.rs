adk::stash_keys! {
    pub COUNT: "my-org.count",
    pub POLICY: "my-org.policy" => String,
}

fn main() {
    let _ = POLICY.path();
}
