//! Names for the six kinds of record a storage adapter persists, used by errors and by the
//! conformance suite to say which kind a problem concerns.

use std::fmt;

/// One of the six kinds of record the storage contract persists.
///
/// ```
/// use adk::storage::Primitive;
///
/// assert_eq!(Primitive::ALL.len(), 6);
/// assert_eq!(Primitive::ToolCalls.to_string(), "tool calls");
/// assert_eq!(Primitive::ToolCalls.singular(), "tool call");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Primitive {
    /// Durable facts kept across turns ([`Memory`](crate::primitives::Memory)).
    Memories,
    /// User and assistant conversation entries ([`Message`](crate::primitives::Message)).
    Messages,
    /// Reasoning traces ([`Thought`](crate::primitives::Thought)).
    Thoughts,
    /// Records of tool invocations and their results ([`ToolCall`](crate::primitives::ToolCall)).
    ToolCalls,
    /// Knowledge chunks from retrieval ([`Retrievable`](crate::primitives::Retrievable)).
    Retrievables,
    /// Operator instructions, identified by value
    /// ([`StandingInstruction`](crate::primitives::StandingInstruction)).
    StandingInstructions,
}

impl Primitive {
    /// Every persisted primitive, in the order the contract lists their callbacks.
    pub const ALL: [Primitive; 6] = [
        Primitive::Memories,
        Primitive::Messages,
        Primitive::Thoughts,
        Primitive::ToolCalls,
        Primitive::Retrievables,
        Primitive::StandingInstructions,
    ];

    /// The name of one record of this kind, for messages such as "no message with id `m1`".
    ///
    /// ```
    /// assert_eq!(adk::storage::Primitive::Memories.singular(), "memory");
    /// ```
    #[must_use]
    pub const fn singular(self) -> &'static str {
        match self {
            Primitive::Memories => "memory",
            Primitive::Messages => "message",
            Primitive::Thoughts => "thought",
            Primitive::ToolCalls => "tool call",
            Primitive::Retrievables => "retrievable",
            Primitive::StandingInstructions => "standing instruction",
        }
    }

    /// The name of many records of this kind.
    ///
    /// ```
    /// assert_eq!(adk::storage::Primitive::StandingInstructions.plural(), "standing instructions");
    /// ```
    #[must_use]
    pub const fn plural(self) -> &'static str {
        match self {
            Primitive::Memories => "memories",
            Primitive::Messages => "messages",
            Primitive::Thoughts => "thoughts",
            Primitive::ToolCalls => "tool calls",
            Primitive::Retrievables => "retrievables",
            Primitive::StandingInstructions => "standing instructions",
        }
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.plural())
    }
}
