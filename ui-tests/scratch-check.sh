#!/usr/bin/env bash
# Compiles ui-test cases in a scratch crate outside the workspace, as a user's crate sees them.
# rustc shortens long types in a normal crate (`Output = ...`, "the full name has been written
# to ...") where the ui-tests crate shows them whole, so a reviewed .stderr can read better than
# what a user gets. Compare this output with the case's .stderr by eye.
#
#   ui-tests/scratch-check.sh middleware/fail/next_run_dropped.rs storage/fail/fn_wrong_return_type.rs
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scratch="${SCRATCH_DIR:-/tmp/adk-ui-scratch}"
mkdir -p "$scratch/src/bin"
rm -f "$scratch"/src/bin/*.rs
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "adk-ui-scratch"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
adk = { package = "checked-adk", path = "$here/../adk" }
tokio = { version = "1", features = ["rt", "macros", "time"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

[workspace]
TOML
for case in "$@"; do
    name="$(echo "$case" | tr '/.' '__')"
    cp "$here/$case" "$scratch/src/bin/$name.rs"
done
# The workspace's target dir is reused so only the scratch crate itself is compiled.
cd "$scratch" && CARGO_TARGET_DIR="$here/../target" cargo check --offline --bins --keep-going 2>&1 \
    | grep -v '^\s*\(Compiling\|Checking\|Locking\|Adding\|Blocking\)' || true
