//! Criterion's own median estimates, read back after a run so a bench can print the ratios of
//! the rows it measured in that same run.

use std::path::{Path, PathBuf};

/// Where criterion wrote its estimates, resolved the way criterion resolves it.
pub fn criterion_home() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return Some(PathBuf::from(target).join("criterion"));
    }
    // The bench runs from `<target>/release/deps/`.
    let executable = std::env::current_exe().ok()?;
    Some(executable.parent()?.parent()?.parent()?.join("criterion"))
}

/// The median time of one iteration of `group`/`function` in this run, in nanoseconds.
pub fn median_nanoseconds(home: &Path, group: &str, function: &str) -> Option<f64> {
    let file = home
        .join(group)
        .join(function)
        .join("new")
        .join("estimates.json");
    let estimates: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}
