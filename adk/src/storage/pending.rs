//! Where a turn's [ledger](super::ledger) results wait for their call's own tool-call write:
//! the result of a call made through `ctx.execute_tool` is parked here until the caller's
//! `ctx.mutate_tool_call(finished)` writes both in one adapter call
//! (`StorageAdapter::mutate_tool_call_with_result`); what is still here when the executor
//! returns is written on its own (`ledger::write_pending`). Held inline in the turn's
//! `StorageContext`, shared by its clones.
//!
//! A result is kept as the two columns [`ToolResult::to_columns`](super::ledger::ToolResult::to_columns)
//! gives, so this module depends on nothing else of storage.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A parked result: the call id and the result's kind and text.
pub(crate) type Parked = (String, &'static str, String);

/// The turn's parked results, oldest first.
#[derive(Debug, Default)]
pub(crate) struct PendingResults {
    results: Mutex<Vec<Parked>>,
}

/// A context changed by a `with_*` setter is a copy for one call (a windowed fetch, say): it
/// starts with nothing parked, and the turn's own context keeps what was.
impl Clone for PendingResults {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PendingResults {
    // Every critical section below is a single push, search or take: a panic cannot leave
    // the list half-changed, so a poisoned lock is still a sound list.
    fn lock(&self) -> MutexGuard<'_, Vec<Parked>> {
        self.results.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Parks the result of `call_id`; a re-run's result replaces an earlier one.
    pub(crate) fn park(&self, call_id: String, kind: &'static str, text: String) {
        let mut results = self.lock();
        results.retain(|(parked, ..)| *parked != call_id);
        results.push((call_id, kind, text));
    }

    /// The parked result of `call_id`, removed.
    pub(crate) fn take(&self, call_id: &str) -> Option<(&'static str, String)> {
        let mut results = self.lock();
        let index = results.iter().position(|(parked, ..)| parked == call_id)?;
        let (_, kind, text) = results.remove(index);
        Some((kind, text))
    }

    /// Whether no result is parked.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Every parked result, removed.
    pub(crate) fn drain(&self) -> Vec<Parked> {
        std::mem::take(&mut *self.lock())
    }
}
