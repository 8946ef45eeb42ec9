//! [`ToolCallIds`]: which id a stored tool call carries when it goes back to the server.
//!
//! A call is stored under `{dispatch id}-{iteration}-{provider id}` (or
//! `{dispatch id}-{iteration}-call-{index}` when the server sent none), unique within the turn
//! even when a server repeats its ids across answers. The request pairs each call with its
//! result by an id the server must accept; which one is the policy's choice.

use std::collections::HashSet;

/// The policy for the tool-call ids sent back to the server, per
/// [`OpenAiConfig::tool_call_ids`](super::OpenAiConfig::tool_call_ids).
///
/// Whatever the policy, the ids of one request are distinct, and a call and its `tool` result
/// carry the same id. The mapping is deterministic, so the same history is sent the same way
/// (prompt caches keep working).
///
/// ```
/// use adk::openai::{OpenAiConfig, ToolCallIds};
///
/// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "local")?;
/// assert_eq!(config.tool_call_ids, ToolCallIds::Provider);
/// let renumbered = config.with_tool_call_ids(ToolCallIds::Renumber);
/// # let _ = renumbered;
/// # Ok::<(), adk::openai::OpenAiError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolCallIds {
    /// The id the server gave the call, when it is safe to send back: 1 to 64 ASCII letters,
    /// digits, `_` or `-`, and not already used in the request. A call that has no such id
    /// (none was sent, it was repeated, a call stored by other code with another shape) is
    /// sent under `call_1`, `call_2`, … instead. The default: servers that check ids (the
    /// hosted API, vLLM) get back what they issued.
    #[default]
    Provider,
    /// `call_1`, `call_2`, … in the order of the request, whatever the server sent.
    Renumber,
    /// Nine ASCII letters and digits derived from the stored id: the only shape Mistral models
    /// accept (on vLLM, llama.cpp, Mistral's API).
    Alphanumeric9,
}

/// The ids of one request, assigned in the order its calls are written.
#[derive(Debug)]
pub(crate) struct WireIds {
    policy: ToolCallIds,
    used: HashSet<String>,
    next: usize,
}

impl WireIds {
    pub(crate) fn new(policy: ToolCallIds) -> Self {
        Self {
            policy,
            used: HashSet::new(),
            next: 1,
        }
    }

    /// The id to send for the call stored as `stored`.
    pub(crate) fn assign(&mut self, stored: &str) -> String {
        let id = match self.policy {
            ToolCallIds::Provider => {
                match provider_id(stored).filter(|id| is_safe(id) && !self.used.contains(*id)) {
                    Some(id) => id.to_owned(),
                    None => self.numbered(),
                }
            }
            ToolCallIds::Renumber => self.numbered(),
            ToolCallIds::Alphanumeric9 => {
                let mut attempt = 0_u64;
                loop {
                    let id = alphanumeric9(stored, attempt);
                    if !self.used.contains(&id) {
                        break id;
                    }
                    attempt += 1;
                }
            }
        };
        self.used.insert(id.clone());
        id
    }

    fn numbered(&mut self) -> String {
        loop {
            let id = format!("call_{}", self.next);
            self.next += 1;
            if !self.used.contains(&id) {
                return id;
            }
        }
    }
}

/// The provider's id inside a stored id (`{turn}/dispatch-{iteration}-{provider id}`), or the
/// stored id itself when it has another shape (stored by other code).
fn provider_id(stored: &str) -> Option<&str> {
    let Some((_, tail)) = stored.rsplit_once("/dispatch-") else {
        return Some(stored);
    };
    let (iteration, id) = tail.split_once('-')?;
    (!iteration.is_empty() && iteration.bytes().all(|byte| byte.is_ascii_digit())).then_some(id)
}

/// Whether an id can go back to any server as it is.
fn is_safe(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

/// Nine base-62 digits of the FNV-1a hash of `stored` and `attempt`.
fn alphanumeric9(stored: &str, attempt: u64) -> String {
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in stored.bytes().chain(attempt.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (0..9)
        .map(|_| {
            let digit = DIGITS[usize::try_from(hash % 62).unwrap_or_default()];
            hash /= 62;
            char::from(digit)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_ids_go_back_as_issued_unless_unsafe_or_repeated() {
        let mut ids = WireIds::new(ToolCallIds::Provider);
        assert_eq!(ids.assign("turn-1/dispatch-0-call_abc123"), "call_abc123");
        assert_eq!(
            ids.assign("turn-1/dispatch-1-chatcmpl-tool-9f"),
            "chatcmpl-tool-9f"
        );
        // Repeated by the server in a later answer: unique within the turn, not on the wire.
        assert_eq!(ids.assign("turn-1/dispatch-2-call_abc123"), "call_1");
        assert_eq!(ids.assign("turn-1/dispatch-2-has space"), "call_2");
        assert_eq!(ids.assign("t-1"), "t-1");
        assert_eq!(
            ids.assign(&format!("t/dispatch-0-{}", "x".repeat(65))),
            "call_3"
        );
    }

    #[test]
    fn renumbering_skips_ids_already_taken() {
        let mut ids = WireIds::new(ToolCallIds::Provider);
        assert_eq!(ids.assign("call_1"), "call_1");
        assert_eq!(ids.assign("a/dispatch-0-bad id"), "call_2");
        let mut ids = WireIds::new(ToolCallIds::Renumber);
        assert_eq!(ids.assign("t/dispatch-0-call_x"), "call_1");
        assert_eq!(ids.assign("t/dispatch-0-call_y"), "call_2");
    }

    #[test]
    fn mistral_ids_are_nine_alphanumerics_stable_and_distinct() {
        let mut ids = WireIds::new(ToolCallIds::Alphanumeric9);
        let first = ids.assign("t/dispatch-0-call_x");
        assert_eq!(first.len(), 9);
        assert!(first.bytes().all(|byte| byte.is_ascii_alphanumeric()));
        let again = ids.assign("t/dispatch-0-call_x");
        assert_ne!(first, again, "the same stored id twice in one request");
        let mut fresh = WireIds::new(ToolCallIds::Alphanumeric9);
        assert_eq!(fresh.assign("t/dispatch-0-call_x"), first, "deterministic");
    }
}
