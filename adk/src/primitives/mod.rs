//! The persisted primitives and the tools the model can call.
//!
//! This module owns the six persisted primitives — [`Message`], [`Memory`], [`Thought`],
//! [`ToolCall`], [`Retrievable`] and [`StandingInstruction`] — plus what they are made of
//! ([`Tokenizable`], [`Identity`], [`Media`], [`SpooledArtifact`]), the [`AnswerLink`] that ties
//! a message, thought or tool call to the model answer that made it, and [`Tool`] /
//! [`ToolRegistry`].
//!
//! Every primitive validates itself when built and again when deserialized, so a bad record read
//! back from storage is rejected with a [`PrimitiveError`] naming the field and the rule instead
//! of travelling on. Ids are chosen by the caller (only [`Media`] generates one). Timestamps are
//! [`Timestamp`]s (from `jiff`), serialized as RFC 3339 strings.
//!
//! ```
//! use adk::primitives::{Message, Role};
//!
//! let message = Message::user("m-1", "What is the capital of France?")?;
//! assert_eq!(message.id(), "m-1");
//! assert_eq!(message.role(), Role::User);
//!
//! let stored = serde_json::to_string(&message).unwrap();
//! let restored: Message = serde_json::from_str(&stored).unwrap();
//! assert_eq!(restored.content().map(|content| content.render()).as_deref(),
//!            Some("What is the capital of France?"));
//! # Ok::<(), adk::primitives::PrimitiveError>(())
//! ```

mod answer_link;
mod error;
mod identity;
mod legacy_links;
mod media;
mod memory;
mod message;
mod record;
mod retrievable;
mod spooled_artifact;
mod standing_instruction;
mod thought;
mod tool;
mod tool_arguments;
mod tool_bounds;
mod tool_call;
mod tool_effect;
mod tool_invocation;
mod tool_registry;

pub use answer_link::AnswerLink;
pub use error::{PrimitiveError, PrimitiveKind};
pub use identity::Identity;
pub(crate) use legacy_links::{LegacyGrouping, LegacyKind};
pub use legacy_links::{LegacyLinked, link_legacy_answers};
pub use media::{Media, MediaKind, MediaMetadata, MediaStashEntry, ModalityHazard};
pub use memory::Memory;
pub use message::{Message, Role};
pub use record::Record;
pub use retrievable::{Retrievable, RetrievableContent, TrustTier};
pub use spooled_artifact::{GrepMatch, SpooledArtifact, SpooledArtifactHandle};
pub use standing_instruction::{StandingInstruction, Tokenizable};
pub use thought::Thought;
pub use tool::{Tool, ToolBuilder, Typed, Untyped};
pub use tool_arguments::{
    ArgumentViolation, ENUM_LISTING_CHARS, ENUM_VALUES_LISTED, InvalidToolArgs,
};
pub use tool_bounds::{ToolArguments, TypedToolHandler};
pub use tool_call::{ToolCall, ToolCallResults, tool_call_checksum};
pub use tool_effect::{
    Declared, EffectDeclared, EffectKeyError, EffectKind, ToolEffect, Undeclared,
};
pub use tool_invocation::{HandlerFailed, ToolError, ToolHandler, ToolInvocation, ToolOutput};
pub(crate) use tool_invocation::{
    InvocationGates, InvocationState, InvocationStorage, TurnGates, TurnState, TurnStorage,
};
pub use tool_registry::{CollisionPolicy, ToolRegistry, ToolRegistryError};

/// An instant in time, serialized as an RFC 3339 string (`"2026-01-02T03:04:05Z"`).
///
/// Re-exported from [`jiff`](https://docs.rs/jiff) so you need not depend on it yourself.
///
/// ```
/// let created: adk::primitives::Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
/// assert_eq!(created.to_string(), "2026-01-02T03:04:05Z");
/// ```
pub use jiff::Timestamp;
