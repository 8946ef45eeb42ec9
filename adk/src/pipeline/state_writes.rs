//! What a middleware writes to session state, as the runner learns it when it is built.
//!
//! `#[middleware]` reads its fn's body and records the state writes it can resolve there (see
//! `docs/state.md`, "Without a session store"); the runner asks each registered middleware for
//! them once, in `try_build`, and refuses a runner without a session store whose middleware
//! write state only a store keeps. The pipeline layer knows no state type: a write is recorded
//! as the key or the middleware state's type, key and persistence, and the runner judges it.

/// One write a middleware's body makes, recorded by the code `#[middleware]` generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateWrite {
    /// A write of a session-state key, prefix included (`user:theme`, `step`, `temp:x`).
    Key(&'static str),
    /// An update of a middleware state type (`update_middleware_state::<T>`).
    MiddlewareState {
        /// `std::any::type_name` of the type.
        type_name: &'static str,
        /// Its `MiddlewareState::KEY`.
        key: &'static str,
        /// Whether it is persistent (kept between turns by a session store).
        persistent: bool,
    },
}

/// The writes one middleware records. Not a public API: `#[middleware]` fills it.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct StateWrites {
    writes: Vec<StateWrite>,
}

impl StateWrites {
    /// Records a write of `key` (prefix included).
    pub fn key(&mut self, key: &'static str) {
        self.push(StateWrite::Key(key));
    }

    /// Records an update of a middleware state type.
    pub fn middleware_state(
        &mut self,
        type_name: &'static str,
        key: &'static str,
        persistent: bool,
    ) {
        self.push(StateWrite::MiddlewareState {
            type_name,
            key,
            persistent,
        });
    }

    fn push(&mut self, write: StateWrite) {
        if !self.writes.contains(&write) {
            self.writes.push(write);
        }
    }

    /// The writes recorded, in the order first recorded.
    pub fn into_vec(self) -> Vec<StateWrite> {
        self.writes
    }
}
