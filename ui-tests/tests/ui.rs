//! Every compile-time rejection adk promises, one case per mistake, with the error text a user reads.
//!
//! Each area has its own test so one can be re-run alone:
//! `cargo test -p adk-ui-tests --test ui stash_keys`. To regenerate a `.stderr` after a compiler
//! upgrade, run with `TRYBUILD=overwrite` and read the diff before committing.

#[test]
fn stash_keys() {
    let cases = trybuild::TestCases::new();
    cases.pass("stash/pass/*.rs");
    cases.compile_fail("stash/fail/*.rs");
}

#[test]
fn stash_registry() {
    let cases = trybuild::TestCases::new();
    cases.pass("stash_registry/pass/*.rs");
    cases.compile_fail("stash_registry/fail/*.rs");
}

#[test]
fn storage_adapter() {
    let cases = trybuild::TestCases::new();
    cases.pass("storage/pass/*.rs");
    cases.compile_fail("storage/fail/*.rs");
}

#[test]
fn middleware() {
    let cases = trybuild::TestCases::new();
    cases.pass("middleware/pass/*.rs");
    cases.compile_fail("middleware/fail/*.rs");
}

#[test]
fn runner_builder() {
    let cases = trybuild::TestCases::new();
    cases.pass("runner/pass/*.rs");
    cases.compile_fail("runner/fail/*.rs");
}

#[test]
fn state_keys() {
    let cases = trybuild::TestCases::new();
    cases.pass("state/pass/*.rs");
    cases.compile_fail("state/fail/*.rs");
}

#[test]
fn middleware_state() {
    let cases = trybuild::TestCases::new();
    cases.pass("middleware_state/pass/*.rs");
    cases.compile_fail("middleware_state/fail/*.rs");
}

#[test]
fn structured_output() {
    let cases = trybuild::TestCases::new();
    cases.pass("structured_output/pass/*.rs");
    cases.compile_fail("structured_output/fail/*.rs");
}

#[test]
fn agent() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("agent/fail/*.rs");
}

#[test]
fn tool_effects() {
    let cases = trybuild::TestCases::new();
    cases.pass("tool_effect/pass/*.rs");
    cases.compile_fail("tool_effect/fail/*.rs");
}

#[test]
fn typed_tools() {
    let cases = trybuild::TestCases::new();
    cases.pass("tool/pass/*.rs");
    cases.compile_fail("tool/fail/*.rs");
}

#[test]
fn gates() {
    let cases = trybuild::TestCases::new();
    cases.pass("gate/pass/*.rs");
    cases.compile_fail("gate/fail/*.rs");
}
