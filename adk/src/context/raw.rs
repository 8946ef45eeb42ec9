//! What the caller hands to `TurnRunner::run`, and why it can be refused.

use tokio_util::sync::CancellationToken;

use crate::primitives::{Identity, StandingInstruction, Tokenizable};

/// The input of one turn.
///
/// ```
/// use adk::context::RawTurnContext;
///
/// let raw = RawTurnContext::new("conversation-42", "You are a helpful assistant.")
///     .standing_instruction("Answer in one paragraph.")
///     .stash(serde_json::json!({ "my-org": { "tier": "gold" } }));
/// # let _ = raw;
/// ```
#[derive(Debug, Clone)]
pub struct RawTurnContext {
    pub(crate) conversation_id: String,
    pub(crate) system_prompt: Tokenizable,
    pub(crate) standing_instructions: Vec<StandingInstruction>,
    pub(crate) stash: Option<serde_json::Value>,
    pub(crate) cancellation: Option<CancellationToken>,
    pub(crate) identity: Option<Identity>,
}

impl RawTurnContext {
    /// A turn of `conversation_id` with this system prompt. The conversation id is what storage
    /// callbacks see in `StorageContext::conversation_id` to find the conversation's records.
    pub fn new(conversation_id: impl Into<String>, system_prompt: impl Into<Tokenizable>) -> Self {
        Self {
            conversation_id: conversation_id.into(),
            system_prompt: system_prompt.into(),
            standing_instructions: Vec::new(),
            stash: None,
            cancellation: None,
            identity: None,
        }
    }

    /// Adds a standing instruction; they keep the order given.
    pub fn standing_instruction(mut self, instruction: impl Into<StandingInstruction>) -> Self {
        self.standing_instructions.push(instruction.into());
        self
    }

    /// Seeds the turn's stash with the nested form `Registry::all()` returns, so state stored
    /// after one turn can be handed to the next. A flat-keyed seed (`{"my-org.count": 5}`) is
    /// refused by `run`.
    pub fn stash(mut self, nested: serde_json::Value) -> Self {
        self.stash = Some(nested);
        self
    }

    /// A token the caller can cancel to abort the turn.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Who is speaking; storage callbacks see it in `StorageContext::identity`.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }
}

/// Why `run` refused a raw turn context. Nothing ran and no event was emitted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidTurnContext {
    /// The system prompt is an empty string.
    #[error("the system prompt is empty: give the turn a non-empty system prompt")]
    EmptySystemPrompt,
    /// The conversation id is empty.
    #[error("the conversation id is empty: storage finds a conversation's records by it")]
    EmptyConversationId,
    /// The stash seed was not in the nested form, or was otherwise invalid.
    #[error("the stash seed was refused: {0}")]
    Stash(#[from] crate::StashError),
    /// Two tools share a name.
    #[error("the turn's tools are invalid: {0}")]
    Tools(#[from] crate::primitives::ToolRegistryError),
}

impl InvalidTurnContext {
    /// Always `E_INVALID_TURN_CONTEXT`, except for duplicate tools: `E_TOOL_ALREADY_REGISTERED`.
    pub fn code(&self) -> crate::events::ErrorCode {
        match self {
            Self::Tools(_) => crate::events::ErrorCode::ToolAlreadyRegistered,
            _ => crate::events::ErrorCode::InvalidTurnContext,
        }
    }
}
