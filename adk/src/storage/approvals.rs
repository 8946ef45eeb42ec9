//! Durable approvals: a tool call waiting for a human's decision, kept by the storage so the
//! decision can be given by another process, after the one that asked has exited.
//!
//! [`adk::approval::Approval`](crate::approval::Approval) writes an [`ApprovalRequest`] before
//! it opens its gate ([`StorageAdapter::record_approval_request`]); another process lists the
//! requests still waiting ([`StorageAdapter::pending_approvals`]) and answers one
//! ([`StorageAdapter::answer_approval`]), through
//! [`adk::approval::Approvals`](crate::approval::Approvals); and when the turn runs the call
//! again (`runner.resume`), the middleware finds the answer and applies it without asking
//! again. The three callbacks are an optional part of the storage contract: the defaults keep
//! nothing (approvals live in the process, as gates do). `SqliteStorage` and `PostgresStorage`
//! keep them.
//!
//! [`StorageAdapter::record_approval_request`]: super::StorageAdapter::record_approval_request
//! [`StorageAdapter::pending_approvals`]: super::StorageAdapter::pending_approvals
//! [`StorageAdapter::answer_approval`]: super::StorageAdapter::answer_approval

use serde_json::Value;

/// A tool call waiting for approval: what the reviewer is shown.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The call's id: the request's key within its conversation and thread.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The call's arguments, as the model sent them.
    pub args: Value,
    /// What the reviewer is asked.
    pub prompt: String,
    /// The turn that made the call.
    pub turn_id: String,
}

impl ApprovalRequest {
    /// A request to approve the call `call_id` of `tool` with `args`, made in turn `turn_id`.
    pub fn new(
        call_id: impl Into<String>,
        tool: impl Into<String>,
        args: Value,
        prompt: impl Into<String>,
        turn_id: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            args,
            prompt: prompt.into(),
            turn_id: turn_id.into(),
        }
    }
}

/// A stored request and, once given, its decision (the JSON form of
/// [`adk::approval::Decision`](crate::approval::Decision)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ApprovalRecord {
    /// The request.
    pub request: ApprovalRequest,
    /// The decision; `None` while the request waits.
    pub decision: Option<Value>,
}

impl ApprovalRecord {
    /// A record of `request` with `decision`.
    pub fn new(request: ApprovalRequest, decision: Option<Value>) -> Self {
        Self { request, decision }
    }
}

/// How [`answer_approval`](super::StorageAdapter::answer_approval) went.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answered {
    /// The decision was recorded.
    Recorded,
    /// No request of this call id is stored in this conversation and thread.
    NotFound,
    /// The request was answered before; its decision stands.
    AlreadyAnswered(Value),
}
