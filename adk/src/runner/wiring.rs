//! The build-time half of "state needs a session store": the writes a runner's middleware are
//! known to make (what `#[middleware]` found in their bodies), judged against whether the
//! runner has a store. The first-turn check (`E_STATE_NO_SESSION_STORE`) stays the backstop for
//! every write the runner cannot know of when it is built.

use std::fmt;

use crate::pipeline::{Pipeline, Stack, StateWrite};
use crate::state::Scope;

/// A write a runner's middleware makes that only a session store keeps between turns: a key
/// outside `temp:`, or persistent middleware state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnkeptWrite {
    /// The pipeline the middleware is registered on (`"turn_input"`).
    pub pipeline: &'static str,
    /// Its position there, counted from zero in registration order (messages count from one).
    pub position: usize,
    /// Its name (the fn's name for a `#[middleware]` fn).
    pub middleware: &'static str,
    /// What it writes.
    pub write: StateWrite,
}

impl fmt::Display for UnkeptWrite {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "middleware #{} `{}` of the `{}` pipeline ",
            self.position + 1,
            self.middleware,
            self.pipeline
        )?;
        match self.write {
            StateWrite::Key(key) => {
                let scope = match Scope::of(key).0 {
                    Scope::User => "user",
                    Scope::App => "app",
                    Scope::Session | Scope::Temp => "session",
                };
                write!(formatter, "writes the {scope} state key `{key}`")
            }
            StateWrite::MiddlewareState { type_name, key, .. } => write!(
                formatter,
                "updates the persistent middleware state `{type_name}` (key `{key}`)"
            ),
        }
    }
}

/// Every write of `stack`'s middleware that a session store would keep.
pub(crate) fn unkept_writes<P: Pipeline>(stack: &Stack<P>, found: &mut Vec<UnkeptWrite>) {
    for (position, middleware, write) in stack.state_writes() {
        let kept = match write {
            StateWrite::Key(key) => Scope::of(key).0.is_persistent(),
            StateWrite::MiddlewareState { persistent, .. } => persistent,
        };
        if kept {
            found.push(UnkeptWrite {
                pipeline: P::NAME,
                position,
                middleware,
                write,
            });
        }
    }
}

/// The report of [`BuildError::StateWithoutStore`](super::BuildError::StateWithoutStore): one
/// line per write.
pub(crate) fn report(writes: &[UnkeptWrite]) -> String {
    let mut text = String::new();
    for write in writes {
        text.push_str("\n  - ");
        text.push_str(&write.to_string());
    }
    text
}
