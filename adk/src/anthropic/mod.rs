//! A native executor for Anthropic's Messages API (feature `anthropic`): Claude through the
//! hosted API, or any proxy that speaks `/v1/messages` (LiteLLM's, a gateway's).
//!
//! Unlike the OpenAI-compatible layer, the native protocol keeps what agents need: thinking
//! blocks and their signatures (sent back unchanged within a tool loop), prompt caching with
//! `cache_control` breakpoints and its token counts, PDF documents.
//!
//! The module owns the exchange: [`AnthropicConfig`] (where, how to authenticate, the request
//! fields, how long), [`RetryPolicy`] (shared with `adk::openai`), the mapping of a dispatch
//! context to a [`MessagesRequest`] from the ordered [`Transcript`](crate::transcript), the
//! event-stream parsing (bounded per line and per answer), the [`AnthropicExecutor`] that sends,
//! reports, stores and runs tools, and the typed [`AnthropicError`].
//!
//! What the request holds: the system prompt and standing instructions as `system` text blocks;
//! the conversation as alternating `user` / `assistant` turns, each model answer one assistant
//! turn with its thinking, text and `tool_use` blocks in the order the model produced them, and
//! the calls' results as `tool_result` blocks (with `is_error`) in the next user turn; images
//! and PDF or text documents from [`Media`](crate::primitives::Media); the visible tools with
//! their input schemas; `max_tokens`, `thinking`, `tool_choice`, `temperature`,
//! `stop_sequences`, `metadata`; `stream: true`; `cache_control` breakpoints as
//! [`CachePolicy`] says.
//!
//! ```no_run
//! use adk::TurnRunner;
//! use adk::anthropic::{AnthropicConfig, AnthropicExecutor};
//! use adk::context::RawTurnContext;
//! use adk::storage::NoopStorage;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // ANTHROPIC_API_KEY for the hosted API; ANTHROPIC_BASE_URL for a proxy; ANTHROPIC_MODEL.
//! let config = AnthropicConfig::from_env()?
//!     .ok_or("set ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL")?
//!     .with_thinking(2048)
//!     .with_max_tokens(8192);
//! let runner = TurnRunner::builder()
//!     .storage(NoopStorage::new())
//!     .executor(AnthropicExecutor::new(config)?)
//!     .build();
//! let outcome = runner
//!     .run(RawTurnContext::new("conversation-1", "Answer in one word.").user_message("2 + 2?"))
//!     .await?;
//! for message in outcome.context.messages.iter() {
//!     println!("{}: {:?}", message.role().as_str(), message.content());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Guide
//!
//! The rest of this page is `docs/anthropic.md`.
//!
#![doc = include_str!("../../docs/anthropic.md")]

mod config;
mod error;
mod executor;
mod media;
mod options;
mod request;
mod stream;

pub use crate::provider::{MAX_ERROR_BODY, RetryPolicy};
pub use config::{
    ANTHROPIC_API_BASE_URL, AnthropicConfig, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_TOKENS, DEFAULT_MODEL, DEFAULT_VERSION,
};
pub use error::{AnthropicError, MAX_ERROR_MESSAGE, MAX_EXCERPT, ResponsePart, TimeoutPhase};
pub use executor::AnthropicExecutor;
pub use options::{CachePolicy, MessagesOptions, ToolChoice};
pub use request::MessagesRequest;

/// The [`replay_compatibility`](crate::primitives::Thought::replay_compatibility) tag of the
/// thoughts this executor stores: their payload is an Anthropic thinking or redacted thinking
/// block, sent back unchanged. Thoughts with another tag (or none) are not sent to Anthropic.
pub const REPLAY_TAG: &str = "anthropic";
