//! [`Record`]: a primitive with a stable id, what collections index and fetch windows count.

use super::{Memory, Message, Retrievable, Thought, ToolCall};

/// A record a collection holds: anything with a stable id.
///
/// ```
/// use adk::primitives::{Message, Record};
///
/// let message = Message::user("m-1", "hello")?;
/// assert_eq!(message.record_id(), "m-1");
/// # Ok::<(), adk::primitives::PrimitiveError>(())
/// ```
pub trait Record: Clone + Send + Sync + 'static {
    /// The record's id.
    fn record_id(&self) -> &str;
}

macro_rules! record {
    ($($primitive:ty),*) => {$(
        impl Record for $primitive {
            fn record_id(&self) -> &str {
                self.id()
            }
        }
    )*};
}

record!(Message, Memory, Thought, ToolCall, Retrievable);
