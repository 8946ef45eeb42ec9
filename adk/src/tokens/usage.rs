//! [`Usage`]: the tokens a provider reported for one model call.

use crate::events::GenerationStats;

/// The tokens one model call spent, as the provider reported them
/// ([`GenerationStats`], which executors report after each call).
///
/// ```
/// use adk::events::GenerationStats;
/// use adk::tokens::Usage;
///
/// let mut stats = GenerationStats::new();
/// stats.prompt_tokens = Some(1200);
/// stats.completion_tokens = Some(80);
/// let usage = Usage::from_stats(&stats).unwrap();
/// assert_eq!((usage.input, usage.output, usage.total()), (1200, 80, 1280));
/// assert!(Usage::from_stats(&GenerationStats::new()).is_none());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens.
    pub input: u64,
    /// Completion (output) tokens, reasoning included.
    pub output: u64,
}

impl Usage {
    /// What `stats` reports; `None` when it reports no token counts at all. A provider that
    /// reports only a total has it counted as input (the larger side of nearly every call).
    pub fn from_stats(stats: &GenerationStats) -> Option<Self> {
        match (
            stats.prompt_tokens,
            stats.completion_tokens,
            stats.total_tokens,
        ) {
            (None, None, None) => None,
            (None, None, Some(total)) => Some(Self {
                input: total,
                output: 0,
            }),
            (input, output, _) => Some(Self {
                input: input.unwrap_or(0),
                output: output.unwrap_or(0),
            }),
        }
    }

    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    /// The sum of two usages.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
        }
    }
}
