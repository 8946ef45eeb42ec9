adk::stash_keys! {
    /// Declared first, under a path the next key takes whole.
    pub POLICY_MODE: "my-org.policy.mode" => String,
    pub POLICY: "my-org.policy" => String,
}

fn main() {
    let _ = (POLICY_MODE.path(), POLICY.path());
}
