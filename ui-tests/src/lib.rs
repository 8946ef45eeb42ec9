//! Holds no code: the cases live in folders beside `tests/`, run by trybuild from `tests/ui.rs`.
