// Each key gets the same checks as `stash_key!`; valid keys and rejected keys both still
// exist as consts, so using them adds no errors.
adk::stash_keys! {
    pub COUNT: "count" => u32,
    pub RETRIES: "my-org.gpt-4.1" => u32,
    pub POLICY: "my-org.policy" => String,
}

fn main() {
    let _ = (COUNT.path(), RETRIES.path(), POLICY.path());
}
