//! The machinery the model executors share (`adk::openai`, `adk::anthropic`): what every HTTP
//! model provider needs and none of them words differently.
//!
//! - [`RetryPolicy`] and the reading of `Retry-After` (`retry`);
//! - the request loop: post, wait for the status within the request timeout, retry what a wait
//!   can fix, read an error body up to a cap (`http`);
//! - the server-sent-event splitter, bounded per line (`sse`);
//! - running an answer's tool calls and recording their results in the model's order (`tools`).
//!
//! Each provider keeps its own public error type; the shared code reaches it through
//! [`TransportError`], so a provider's errors name its own fields and phases.

mod contents;
mod http;
mod retry;
mod sse;
mod tools;

pub use retry::RetryPolicy;

pub(crate) use contents::{Contents, describe_media, text_part};
pub use http::MAX_ERROR_BODY;
pub(crate) use http::{
    MAX_EXCERPT, Post, TransportError, WaitPhase, build_client, cut, excerpt, next_chunk,
    read_capped, send,
};
pub(crate) use sse::{LineTooLong, SseEvent, SseParser};
pub(crate) use tools::{parse_arguments, run_tool_calls, store_tool_calls};
