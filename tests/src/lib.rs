//! Shared helpers for adk's integration tests. The tests themselves live in `tests/tests/`,
//! one file per capability, each test named after the rule it checks.
