adk::stash_keys! {
    pub POLICY: "my-org.policy" => String,
    pub POLICY_MODE: "my-org.policy.mode" => String,
}

fn main() {
    let _ = (POLICY.path(), POLICY_MODE.path());
}
