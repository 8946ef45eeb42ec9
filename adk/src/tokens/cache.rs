//! The per-record cache of a [`TokenCounter`](super::TokenCounter).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::primitives::Timestamp;

/// Which collection a record is from: ids are unique per collection, not across them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Message,
    ToolCall,
    Thought,
    Memory,
}

/// How many counts the cache keeps before it starts over: far more than any window loads, small
/// enough (a few MB) to keep in every process.
const CAPACITY: usize = 100_000;

/// One collection's counts: by id, each with the `updated_at` it was counted at.
type Counts = HashMap<String, (Timestamp, usize)>;

/// Counts by kind and id, each with the `updated_at` it was counted at: a record changed since
/// is a miss. A lookup does not allocate.
#[derive(Debug, Default)]
pub(super) struct Cache {
    counts: Mutex<HashMap<Kind, Counts>>,
    hits: AtomicU64,
}

impl Cache {
    pub(super) fn get(&self, kind: Kind, id: &str, updated_at: Timestamp) -> Option<usize> {
        let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, tokens) = counts.get(&kind)?.get(id)?;
        if *at != updated_at {
            return None;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(*tokens)
    }

    pub(super) fn insert(&self, kind: Kind, id: &str, updated_at: Timestamp, tokens: usize) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.values().map(HashMap::len).sum::<usize>() >= CAPACITY {
            counts.clear();
        }
        counts
            .entry(kind)
            .or_default()
            .insert(id.to_owned(), (updated_at, tokens));
    }

    pub(super) fn len(&self) -> usize {
        let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.values().map(HashMap::len).sum()
    }

    pub(super) fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}
