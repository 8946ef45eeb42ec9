//! An executor for OpenAI-compatible chat-completions servers (feature `openai`): the hosted
//! API, Azure OpenAI, llama.cpp's server, vLLM, Ollama, LiteLLM, OpenRouter and anything else
//! that speaks `/chat/completions` with tool calling.
//!
//! The module owns the whole exchange: [`OpenAiConfig`] (where, how to authenticate, how long),
//! [`RetryPolicy`] (what is tried again), the mapping of a dispatch context to a
//! [`ChatRequest`] (`request`, media included), the server-sent-event parsing and delta
//! accumulation (`stream`), the [`OpenAiExecutor`] that sends, reports, stores and runs tools,
//! and the typed [`OpenAiError`].
//!
//! What the request holds, in order: the system prompt and each standing instruction as
//! `system` messages; the context's messages and finished tool calls in the order they were
//! created (calls as an assistant message's `tool_calls`, each followed by its `tool` result;
//! ids as [`ToolCallIds`] says: the provider's own by default); the visible tools as `function` tools whose
//! `parameters` are their input schemas; `stream: true`. Attachments and media tool results are
//! sent as content parts (see the guide below).
//!
//! HTTP goes through reqwest with rustls on the `ring` provider, so building needs nothing
//! beyond a Rust toolchain (no cmake, no system OpenSSL).
//!
//! ```no_run
//! use adk::TurnRunner;
//! use adk::context::{RawTurnContext, TurnContext};
//! use adk::openai::{OpenAiConfig, OpenAiExecutor};
//! use adk::pipeline::{BoxError, from_fn};
//! use adk::primitives::Message;
//! use adk::storage::NoopStorage;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // OPENAI_API_KEY for the hosted API, or OPENAI_BASE_URL=http://127.0.0.1:8080/v1 for a
//! // local server; OPENAI_MODEL names the model.
//! let config = OpenAiConfig::from_env()?.ok_or("set OPENAI_API_KEY or OPENAI_BASE_URL")?;
//! let runner = TurnRunner::builder()
//!     .storage(NoopStorage::new())
//!     .turn_input(from_fn(|ctx: &mut TurnContext, next| {
//!         Box::pin(async move {
//!             ctx.store_message(Message::user("m-1", "What is 2 + 2?")?).await?;
//!             let _downstream = next.run(ctx).await;
//!             Ok::<(), BoxError>(())
//!         })
//!     }))
//!     .executor(OpenAiExecutor::new(config)?)
//!     .build();
//! let outcome = runner
//!     .run(RawTurnContext::new("conversation-1", "Answer in one word."))
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
//! The rest of this page is `docs/openai.md`; its examples are compiled as doc-tests.
//!
#![doc = include_str!("../../docs/openai.md")]

mod config;
mod error;
mod executor;
mod ids;
mod options;
mod request;
mod retry;
mod stream;
mod structured;

pub use crate::provider::{MAX_ERROR_BODY, RetryPolicy};
/// Derives [`StructuredOutput`] and [`StrictSchema`], checking the type against OpenAI's
/// strict-mode subset while your crate compiles; see [`StructuredOutput`].
pub use adk_macros::StructuredOutput;
pub use config::{
    ApiKeyHeader, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_LINE_BYTES, DEFAULT_MODEL,
    OPENAI_API_BASE_URL, OpenAiConfig, USER_AGENT,
};
pub use error::{MAX_ERROR_MESSAGE, MAX_EXCERPT, OpenAiError, ResponsePart, TimeoutPhase};
pub use executor::OpenAiExecutor;
pub use ids::ToolCallIds;
pub use options::{ChatOptions, ReasoningEffort, ReasoningReplay};
pub use request::ChatRequest;
pub use retry::PERMANENT_ERROR_CODES;
pub use structured::{
    __assert_strict, StrictSchema, StructuredOutput, StructuredOutputError, strict_schema,
};
