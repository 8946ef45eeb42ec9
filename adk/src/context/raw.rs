//! What the caller hands to `TurnRunner::run`, and why it can be refused.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::ids::{AppName, SessionId, ThreadId, UserId};
use crate::primitives::{Identity, Message, PrimitiveError, StandingInstruction, Tokenizable};

/// The input of one turn.
///
/// A turn belongs to a session (the conversation id) of a user of an app, in a thread of that
/// session; see [`crate::ids`]. Only the session is required: the others default to app
/// `"default"`, user `"default"` and thread `"main"`.
///
/// ```
/// use adk::context::RawTurnContext;
///
/// let raw = RawTurnContext::new("conversation-42", "You are a helpful assistant.")
///     .app_name("shop")
///     .user_id("ada")
///     .standing_instruction("Answer in one paragraph.")
///     .stash(serde_json::json!({ "my-org": { "tier": "gold" } }));
/// # let _ = raw;
/// ```
#[derive(Clone)]
pub struct RawTurnContext {
    pub(crate) conversation_id: SessionId,
    pub(crate) app_name: AppName,
    pub(crate) user_id: UserId,
    pub(crate) thread_id: ThreadId,
    pub(crate) system_prompt: Tokenizable,
    pub(crate) cancellation: Option<CancellationToken>,
    pub(crate) user_message: Option<HeldUserMessage>,
    /// What most turns do not bring, boxed when one does (see [`RawExtras`]).
    pub(crate) extras: Option<Box<RawExtras>>,
    /// Set by `TurnRunner::run_retrying_stale` only, for the runs after the first: the user
    /// message (with the id the first run gave it) is stored already, so the turn admits it
    /// without storing it a second time.
    pub(crate) user_message_stored: bool,
}

/// The parts of a turn's input most turns leave empty, boxed together: inline they made every
/// `RawTurnContext` (and so every turn's future, which holds its input for the whole turn and
/// is moved by value) about 150 bytes larger.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawExtras {
    pub(crate) standing_instructions: Vec<StandingInstruction>,
    pub(crate) stash: Option<serde_json::Value>,
    pub(crate) identity: Option<Identity>,
    /// State the caller hands with the turn, applied right after the turn's state is loaded.
    pub(crate) state_delta: Vec<(String, serde_json::Value)>,
    /// Set by `TurnRunner::resume` only: the id of the interrupted turn it continues, so the
    /// ledger settles that turn's calls. Every other turn mints a fresh id.
    pub(crate) resumed_turn_id: Option<crate::ids::TurnId>,
}

/// The fields as they read before the rarely given ones were boxed together.
impl std::fmt::Debug for RawTurnContext {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let empty = RawExtras::default();
        let extras = self.extras.as_deref().unwrap_or(&empty);
        formatter
            .debug_struct("RawTurnContext")
            .field("conversation_id", &self.conversation_id)
            .field("app_name", &self.app_name)
            .field("user_id", &self.user_id)
            .field("thread_id", &self.thread_id)
            .field("system_prompt", &self.system_prompt)
            .field("standing_instructions", &extras.standing_instructions)
            .field("stash", &extras.stash)
            .field("cancellation", &self.cancellation)
            .field("identity", &extras.identity)
            .field("user_message", &self.user_message)
            .field("state_delta", &extras.state_delta)
            .field("resumed_turn_id", &extras.resumed_turn_id)
            .field("user_message_stored", &self.user_message_stored)
            .finish()
    }
}

/// What the user said this turn: text, or a whole [`Message`] (attachments, your own id).
///
/// Text becomes a user message with a fresh UUIDv7 id, so ids never collide, however many
/// messages were stored or deleted before. `&str`, `String`, `Tokenizable` and `Message` convert
/// into it; see [`RawTurnContext::user_message`].
#[derive(Debug, Clone)]
pub enum UserMessage {
    /// Text; the turn makes a user message of it.
    Text(Tokenizable),
    /// A message stored as given, id included.
    Message(Message),
}

/// How [`RawTurnContext`] keeps the user message: text as given, a whole message boxed. The
/// raw input is moved by every builder call and stays in the turn's future until the turn ends;
/// a [`Message`] inline would make it 144 bytes larger for every turn, for the few callers that
/// hand one (text, the common case, is 24 bytes and allocates nothing more).
#[derive(Debug, Clone)]
pub(crate) enum HeldUserMessage {
    /// [`UserMessage::Text`].
    Text(Tokenizable),
    /// [`UserMessage::Message`].
    Message(Box<Message>),
}

impl From<UserMessage> for HeldUserMessage {
    fn from(message: UserMessage) -> Self {
        match message {
            UserMessage::Text(text) => Self::Text(text),
            UserMessage::Message(message) => Self::Message(Box::new(message)),
        }
    }
}

impl HeldUserMessage {
    /// The same user message with its id fixed: text becomes the message `into_message` would
    /// make, so every run of the turn (see `TurnRunner::run_retrying_stale`) stores and admits
    /// one message, not one per run.
    pub(crate) fn with_fixed_id(self) -> Result<Self, PrimitiveError> {
        self.into_message()
            .map(|message| Self::Message(Box::new(message)))
    }

    /// The message the turn stores: text gets a fresh, time-ordered id.
    pub(crate) fn into_message(self) -> Result<Message, PrimitiveError> {
        self.into_message_with(None)
    }

    /// [`into_message`](Self::into_message), text taking `minted` as its id and time when given
    /// (the id minted with the turn's, `crate::ids::time_ordered_id_pair`, from the clock
    /// reading that dates the message), else a fresh id and the time now. A whole message
    /// keeps its own.
    #[inline]
    pub(crate) fn into_message_with(
        self,
        minted: Option<(Arc<str>, Option<Duration>)>,
    ) -> Result<Message, PrimitiveError> {
        match (self, minted) {
            (Self::Text(text), Some((id, since))) => Message::user_since(id, text, since),
            (Self::Text(text), None) => Message::user(crate::ids::time_ordered_id(), text),
            (Self::Message(message), _) => Ok(*message),
        }
    }
}

impl From<&str> for UserMessage {
    fn from(text: &str) -> Self {
        Self::Text(text.into())
    }
}

impl From<String> for UserMessage {
    fn from(text: String) -> Self {
        Self::Text(text.into())
    }
}

impl From<Tokenizable> for UserMessage {
    fn from(text: Tokenizable) -> Self {
        Self::Text(text)
    }
}

impl From<Message> for UserMessage {
    fn from(message: Message) -> Self {
        Self::Message(message)
    }
}

impl RawTurnContext {
    /// A turn of `conversation_id` (the session) with this system prompt, run as app
    /// `"default"`, user `"default"`, in thread `"main"` until [`app_name`](Self::app_name),
    /// [`user_id`](Self::user_id) or [`thread_id`](Self::thread_id) say otherwise. The
    /// conversation id is what storage callbacks see in `StorageContext::conversation_id` to find
    /// the conversation's records.
    ///
    /// A `&str` prompt is copied into each turn's context; a prompt the program holds for its
    /// whole run can be given as [`Tokenizable::from_static`], which copies nothing.
    ///
    /// ```
    /// use adk::context::{RawTurnContext, TurnContext};
    /// use adk::primitives::ToolRegistry;
    /// use adk::storage::{NoopStorage, SharedStorage};
    ///
    /// let raw = RawTurnContext::new("conversation-1", "Be brief.");
    /// let ctx = TurnContext::new(raw, SharedStorage::new(NoopStorage::new()), ToolRegistry::new())?;
    /// let storage = ctx.storage_context();
    /// assert_eq!(storage.session_id().as_str(), "conversation-1");
    /// assert_eq!(storage.app_name().as_str(), "default");
    /// assert_eq!(storage.user_id().as_str(), "default");
    /// assert_eq!(storage.thread_id().as_str(), "main");
    /// # Ok::<(), adk::context::InvalidTurnContext>(())
    /// ```
    pub fn new(
        conversation_id: impl Into<SessionId>,
        system_prompt: impl Into<Tokenizable>,
    ) -> Self {
        Self {
            conversation_id: conversation_id.into(),
            app_name: AppName::default(),
            user_id: UserId::default(),
            thread_id: ThreadId::default(),
            system_prompt: system_prompt.into(),
            cancellation: None,
            user_message: None,
            extras: None,
            user_message_stored: false,
        }
    }

    /// What the user said this turn. The runner stores it through the storage adapter before
    /// `turn_input` runs (a storage failure fails the turn before any middleware), and middleware
    /// reads it with [`TurnContext::user_message`](crate::TurnContext::user_message). It joins
    /// `ctx.messages`, last, before the dispatch, unless middleware already put it there (a
    /// history loader fetching the conversation finds it as the newest message).
    ///
    /// Text gets a fresh UUIDv7 id; a [`Message`] keeps its own. Empty text is refused by `run`.
    ///
    /// ```
    /// use adk::prelude::*;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let runner = TurnRunner::builder().storage(NoopStorage::new()).executor(ScriptedModel::new()).build();
    /// let outcome = runner
    ///     .run(RawTurnContext::new("conversation-1", "Be brief.").user_message("What is 2 + 3?"))
    ///     .await?
    ///     .into_result()?;
    /// let first = outcome.context.messages.first().unwrap();
    /// assert_eq!(first.content().unwrap().render(), "What is 2 + 3?");
    /// assert_eq!(outcome.reply().unwrap().content().unwrap().render(), r#"You said "What is 2 + 3?"."#);
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn user_message(mut self, message: impl Into<UserMessage>) -> Self {
        self.user_message = Some(HeldUserMessage::from(message.into()));
        self
    }

    /// Names the app this turn runs as; `app:` state and app-partitioned records belong to it.
    ///
    /// ```
    /// let raw = adk::context::RawTurnContext::new("c", "p").app_name("shop");
    /// # let ctx = adk::TurnContext::new(raw, adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()), Default::default()).unwrap();
    /// # assert_eq!(ctx.storage_context().app_name().as_str(), "shop");
    /// ```
    pub fn app_name(mut self, app_name: impl Into<AppName>) -> Self {
        self.app_name = app_name.into();
        self
    }

    /// Names the user this turn runs for; `user:` state belongs to (app, user).
    ///
    /// ```
    /// let raw = adk::context::RawTurnContext::new("c", "p").user_id("ada");
    /// # let ctx = adk::TurnContext::new(raw, adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()), Default::default()).unwrap();
    /// # assert_eq!(ctx.storage_context().user_id().as_str(), "ada");
    /// ```
    pub fn user_id(mut self, user_id: impl Into<UserId>) -> Self {
        self.user_id = user_id.into();
        self
    }

    /// Names the thread of the session this turn runs in.
    ///
    /// ```
    /// let raw = adk::context::RawTurnContext::new("c", "p").thread_id("draft-2");
    /// # let ctx = adk::TurnContext::new(raw, adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()), Default::default()).unwrap();
    /// # assert_eq!(ctx.storage_context().thread_id().as_str(), "draft-2");
    /// ```
    pub fn thread_id(mut self, thread_id: impl Into<ThreadId>) -> Self {
        self.thread_id = thread_id.into();
        self
    }

    /// Adds a standing instruction; they keep the order given.
    pub fn standing_instruction(mut self, instruction: impl Into<StandingInstruction>) -> Self {
        self.extras_mut()
            .standing_instructions
            .push(instruction.into());
        self
    }

    /// Seeds the turn's stash with the nested form `Registry::all()` returns, so state stored
    /// after one turn can be handed to the next. A flat-keyed seed (`{"my-org.count": 5}`) is
    /// refused by `run`.
    pub fn stash(mut self, nested: serde_json::Value) -> Self {
        self.extras_mut().stash = Some(nested);
        self
    }

    /// Seeds one typed stash key: a misspelled key or a value of another type is a compile
    /// error, where a path in [`stash`](Self::stash)'s JSON would be silently ignored. Seeds add
    /// to an earlier [`stash`](Self::stash) seed and to each other.
    ///
    /// ```rust,standalone_crate
    /// use adk::prelude::*;
    ///
    /// adk::stash_keys! {
    ///     BUDGET_LIMIT: "my-agent.budget.limit" => u32,
    ///     TIER: "my-agent.tier" => String,
    /// }
    ///
    /// let raw = RawTurnContext::new("c", "Be brief.")
    ///     .seed(BUDGET_LIMIT, 2)?
    ///     .seed(TIER, "gold".to_owned())?;
    /// let ctx = TurnContext::new(raw, SharedStorage::new(NoopStorage::new()), Default::default())?;
    /// assert_eq!(ctx.stash.get(BUDGET_LIMIT)?, Some(2));
    /// assert_eq!(ctx.stash.get(TIER)?.as_deref(), Some("gold"));
    /// # Ok::<(), BoxError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StashError`](crate::StashError) when the value cannot be stored there (a value nested
    /// deeper than the stash allows, or a path an earlier seed holds a plain value above), or
    /// when an earlier [`stash`](Self::stash) seed is not in the nested form.
    pub fn seed<T: serde::Serialize>(
        mut self,
        key: crate::StashKey<T>,
        value: T,
    ) -> Result<Self, crate::StashError> {
        let mut registry = match self.extras.as_mut().and_then(|extras| extras.stash.take()) {
            Some(nested) => crate::Registry::from_nested(nested)?,
            None => crate::Registry::new(),
        };
        registry.set(key, value)?;
        self.extras_mut().stash = Some(registry.all());
        Ok(self)
    }

    /// Hands the turn a state delta (Google ADK's `run_async(state_delta=...)`): after the
    /// turn's state is loaded and before `turn_input`, each entry is written as a middleware
    /// would write it, so every middleware, the executor and the templating see it, and it is
    /// committed with the turn's own writes, atomically, when the turn completes. The key's
    /// prefix picks the scope (`app:`, `user:`, none for the session); a `temp:` key is visible
    /// to the turn and never stored. The same stale rule applies: a key another turn changed
    /// after this turn loaded it fails the commit. A turn that fails or is aborted commits none
    /// of it. Entries add to an earlier delta; a later value for a key wins. Without a session
    /// store the delta lives for the turn.
    ///
    /// A key with an empty name (`""`, `"user:"`) is refused by `run` before anything ran.
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::state::{InMemorySessionStore, SessionKey, SessionStore};
    /// use serde_json::json;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let store = InMemorySessionStore::new();
    /// let runner = TurnRunner::builder()
    ///     .storage(NoopStorage::new())
    ///     .session_store(store.clone())
    ///     .executor(ScriptedModel::new())
    ///     .build();
    /// let delta = json!({"user:locale": "de", "step": 2, "temp:trace": true});
    /// let raw = RawTurnContext::new("s-1", "Be brief.")
    ///     .user_message("Hallo")
    ///     .state_delta(delta.as_object().unwrap().clone());
    /// runner.run(raw).await?.into_result()?;
    ///
    /// let session = store.get_session(&SessionKey::new("default", "default", "s-1")).await?.unwrap();
    /// assert_eq!(session.state, *json!({"user:locale": "de", "step": 2}).as_object().unwrap());
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn state_delta(mut self, delta: serde_json::Map<String, serde_json::Value>) -> Self {
        self.extras_mut().state_delta.extend(delta);
        self
    }

    /// Hands the turn one state entry; see [`state_delta`](Self::state_delta).
    ///
    /// ```
    /// let raw = adk::context::RawTurnContext::new("c", "p").state_value("user:theme", "dark".into());
    /// # let ctx = adk::TurnContext::new(raw, adk::storage::SharedStorage::new(adk::storage::NoopStorage::new()), Default::default()).unwrap();
    /// # assert!(ctx.state().has("user:theme"));
    /// ```
    pub fn state_value(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.extras_mut().state_delta.push((key.into(), value));
        self
    }

    /// A token the caller can cancel to abort the turn.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Who is speaking; storage callbacks see it in `StorageContext::identity`.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.extras_mut().identity = Some(identity);
        self
    }

    /// The boxed extras, made with the first one given.
    fn extras_mut(&mut self) -> &mut RawExtras {
        self.extras.get_or_insert_with(Box::default)
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
    /// The app name, user id or thread id is empty.
    #[error(
        "the {which} is empty: give it a name, or leave it out to use the default (see `adk::ids`)"
    )]
    EmptyId {
        /// Which id: `"app name"`, `"user id"` or `"thread id"`.
        which: &'static str,
    },
    /// The thread id is too long or holds a control character ([`ThreadId::check`](crate::ids::ThreadId::check)).
    #[error("{0}")]
    InvalidThreadId(#[from] crate::ids::InvalidThreadId),
    /// The stash seed was not in the nested form, or was otherwise invalid.
    #[error("the stash seed was refused: {0}")]
    Stash(#[from] crate::StashError),
    /// The user message is not a valid message (empty text, for instance).
    #[error("the user message was refused: {0}")]
    UserMessage(#[from] PrimitiveError),
    /// A key of the caller's state delta is invalid (an empty name).
    #[error("the turn's state delta was refused: {0}")]
    StateDelta(#[from] crate::state::StateError),
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

#[cfg(test)]
mod tests {
    use super::RawTurnContext;

    /// The turn's future holds its input for the whole turn and is moved by value (into
    /// `block_on`, and by each `await` of it): what most turns leave empty (standing
    /// instructions, stash, identity, state delta, a resumed turn's id) is boxed, and the input
    /// stays small. It was 304 bytes with those parts inline, then 136; each of its four ids is
    /// 24 bytes since ids keep up to 23 bytes of text inline (16 as an `Arc<str>`).
    #[test]
    fn a_turn_input_stays_within_168_bytes() {
        let size = std::mem::size_of::<RawTurnContext>();
        assert!(size <= 168, "a raw turn context is {size} bytes");
    }

    /// The boxed parts still read as fields of the input.
    #[test]
    fn a_turn_input_debugs_its_boxed_parts_as_its_own_fields() {
        let raw = RawTurnContext::new("c-1", "Be brief.")
            .standing_instruction("Answer in one line.")
            .state_value("tier", serde_json::json!("gold"));
        let text = format!("{raw:?}");
        assert!(text.starts_with("RawTurnContext {"), "{text}");
        assert!(text.contains("standing_instructions: ["), "{text}");
        assert!(text.contains("state_delta: [(\"tier\""), "{text}");
        assert!(!text.contains("extras"), "{text}");
    }
}
