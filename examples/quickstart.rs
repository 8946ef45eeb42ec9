//! The main job. Until the runner lands this shows the stash at work.
fn main() {
    println!("adk quickstart: the runtime is being built; see README.md");
}
