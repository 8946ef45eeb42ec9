//! Where a turn's [ledger](super::ledger) results wait for their call's own tool-call write:
//! the result of a call made through `ctx.execute_tool` is parked here until the caller's
//! `ctx.mutate_tool_call(finished)` writes both in one adapter call
//! (`StorageAdapter::mutate_tool_call_with_result`); what is still here when the executor
//! returns is written on its own (`ledger::write_pending`). Held inline in the turn's
//! `StorageContext`, shared by its clones.
//!
//! A result is kept as the two columns [`ToolResult::to_columns`](super::ledger::ToolResult::to_columns)
//! gives, so this module depends on nothing else of storage.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A parked result: the call id and the result's kind and text.
pub(crate) type Parked = (String, &'static str, String);

/// The turn's parked results, oldest first.
#[derive(Debug, Default)]
pub(crate) struct PendingResults {
    results: Mutex<Vec<Parked>>,
    /// Whether `results` holds any, written under its lock: every dispatch asks (and drains)
    /// once as it ends, and almost never finds one, so those reads take no lock. A result
    /// parked on another thread while the dispatch reads `false` is one parked after the read.
    any: AtomicBool,
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
        self.any.store(true, Ordering::Release);
    }

    /// The parked result of `call_id`, removed.
    pub(crate) fn take(&self, call_id: &str) -> Option<(&'static str, String)> {
        let mut results = self.lock();
        let index = results.iter().position(|(parked, ..)| parked == call_id)?;
        let (_, kind, text) = results.remove(index);
        self.any.store(!results.is_empty(), Ordering::Release);
        Some((kind, text))
    }

    /// Whether no result is parked.
    pub(crate) fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// Every parked result, removed.
    pub(crate) fn drain(&self) -> Vec<Parked> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut results = self.lock();
        self.any.store(false, Ordering::Release);
        std::mem::take(&mut *results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parked_results_are_seen_until_taken_or_drained() {
        let pending = PendingResults::default();
        assert!(pending.is_empty());
        assert!(pending.drain().is_empty());
        pending.park("a".into(), "text", "one".into());
        pending.park("b".into(), "text", "two".into());
        assert!(!pending.is_empty());
        assert_eq!(pending.take("a"), Some(("text", "one".to_owned())));
        assert!(!pending.is_empty(), "b is still parked");
        assert_eq!(pending.take("b"), Some(("text", "two".to_owned())));
        assert!(pending.is_empty());
        pending.park("c".into(), "text", "three".into());
        assert_eq!(pending.drain().len(), 1);
        assert!(pending.is_empty());
        assert!(pending.drain().is_empty());
    }
}
