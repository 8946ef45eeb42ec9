//! Turn gates: suspend a middleware, executor or tool until someone outside the turn answers —
//! a human approval, a webhook, another service.
//!
//! `ctx.wait_for::<T>(request)` emits [`Event::TurnGateOpen`] carrying a [`GateHandle`]; whoever
//! listens resolves it with a value, rejects it, or aborts it. The waiting code resumes with the
//! value as a `T`, or with a [`GateError`]. A resolution that does not deserialize into `T` is
//! refused on the spot and the gate stays open. Timeouts, aborting the turn (or the dispatch)
//! and explicit aborts settle the gate with their own error kinds; [`Event::TurnGateClosed`]
//! reports how it ended.
//!
//! [`Event::TurnGateOpen`]: crate::events::Event::TurnGateOpen
//! [`Event::TurnGateClosed`]: crate::events::Event::TurnGateClosed
//!
//! A gate nobody answers must not hold its turn forever, so every gate has a timeout:
//! [`DEFAULT_GATE_TIMEOUT`] (ten minutes) unless [`GateRequest::timeout`] sets another. Waiting
//! without a limit is an explicit choice, [`GateRequest::wait_indefinitely`], for gates that
//! something is sure to answer or turns that have a deadline of their own. Where you open it decides what waits: before `next.run(ctx)` it
//! blocks every downstream middleware; after it, only your post-step.
//!
//! ```
//! use adk::gate::GateRequest;
//! # use adk::context::{RawTurnContext, TurnContext};
//! # use adk::primitives::ToolRegistry;
//! # use adk::storage::{NoopStorage, SharedStorage};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! # let ctx = TurnContext::new(RawTurnContext::new("c", "p"), SharedStorage::new(NoopStorage::new()), ToolRegistry::new()).unwrap();
//! let request = GateRequest::new("approve-refund", "refunds over 100 EUR need a human")
//!     .payload(serde_json::json!({ "amount": 250 }))
//!     .timeout(std::time::Duration::from_millis(10));
//! // Nobody answers in this example, so the gate times out.
//! let answer = ctx.wait_for::<bool>(request).await;
//! assert!(matches!(answer, Err(adk::gate::GateError::TimedOut { .. })));
//! # });
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::BoxError;
use crate::error::ErrorCode;
use crate::ids::TurnId;

/// How long a gate waits for an answer unless its request says otherwise: ten minutes, long
/// enough for a person to read and approve, short enough that a turn whose answerer is gone (no
/// listener, a crashed approval service) ends with [`GateError::TimedOut`] instead of waiting
/// forever.
pub const DEFAULT_GATE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// What a gate's answer can be decoded into: the `T` of `ctx.wait_for::<T>(request)`. A gate
/// is resolved with JSON (from a person, a webhook, another process), so `T` is owned serde data:
/// `Deserialize` derived, nothing borrowed.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Approval {
///     approved: bool,
///     note: Option<String>,
/// }
///
/// fn answer<T: adk::gate::GateValue>() {}
/// answer::<Approval>();
/// answer::<bool>();
/// ```
#[diagnostic::on_unimplemented(
    message = "a gate cannot be answered with `{Self}`: a gate's answer is decoded from JSON",
    label = "`wait_for` decodes the answer into `{Self}`, which is not `serde::de::DeserializeOwned`",
    note = "add `#[derive(serde::Deserialize)]` to `{Self}` (owned fields: `String`, not `&str`), or wait for a `serde_json::Value` and read it yourself"
)]
pub trait GateValue: DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> GateValue for T {}

/// What a gate asks for.
#[derive(Clone, Debug)]
pub struct GateRequest {
    id: String,
    reason: String,
    payload: Value,
    timeout: Option<Duration>,
}

impl GateRequest {
    /// A gate named `id` (unique within the turn) opened for `reason`, a sentence for whoever
    /// answers it. It times out after [`DEFAULT_GATE_TIMEOUT`] unless told otherwise.
    ///
    /// ```
    /// use adk::gate::{DEFAULT_GATE_TIMEOUT, GateRequest};
    /// let request = GateRequest::new("approve", "a human must approve");
    /// assert_eq!(request.timeout_after(), Some(DEFAULT_GATE_TIMEOUT));
    /// ```
    pub fn new(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            reason: reason.into(),
            payload: Value::Null,
            timeout: Some(DEFAULT_GATE_TIMEOUT),
        }
    }

    /// Data the answerer needs (what to approve, for example).
    pub fn payload(mut self, payload: Value) -> Self {
        self.payload = payload;
        self
    }

    /// Settles the gate with [`GateError::TimedOut`] if nobody answers within `timeout`
    /// (instead of [`DEFAULT_GATE_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Waits for an answer without a time limit. Only an answer, an explicit abort or the
    /// turn's (or dispatch's) abort settles the gate, so use it only when something is sure to
    /// answer, or the turn is cancelled on a deadline of its own.
    ///
    /// ```
    /// use adk::gate::GateRequest;
    /// let request = GateRequest::new("approve", "a human must approve").wait_indefinitely();
    /// assert_eq!(request.timeout_after(), None);
    /// ```
    pub fn wait_indefinitely(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// How long the gate waits before timing out, or `None` if it waits indefinitely.
    pub fn timeout_after(&self) -> Option<Duration> {
        self.timeout
    }
}

/// How a gate was settled, as reported by [`Event::TurnGateClosed`].
///
/// [`Event::TurnGateClosed`]: crate::events::Event::TurnGateClosed
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GateResult {
    /// Resolved with a value of the awaited type.
    Resolved,
    /// Rejected with an error.
    Rejected,
    /// Aborted: explicitly, or because the turn or dispatch was aborted.
    Aborted,
    /// Nobody answered before the timeout.
    Timeout,
}

impl GateResult {
    /// `"resolved"`, `"rejected"`, `"aborted"` or `"timeout"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resolved => "resolved",
            Self::Rejected => "rejected",
            Self::Aborted => "aborted",
            Self::Timeout => "timeout",
        }
    }
}

/// Why waiting on a gate did not produce a value.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The answerer rejected the gate.
    #[error("turn gate `{gate_id}` was rejected: {cause}")]
    Rejected {
        /// The gate.
        gate_id: String,
        /// The answerer's error.
        cause: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The gate was aborted, or the turn or dispatch it belongs to was.
    #[error("turn gate `{gate_id}` was aborted before it was resolved")]
    Aborted {
        /// The gate.
        gate_id: String,
    },
    /// Nobody answered in time.
    #[error("turn gate `{gate_id}` timed out after {after:?} without an answer")]
    TimedOut {
        /// The gate.
        gate_id: String,
        /// The timeout that elapsed.
        after: Duration,
    },
}

impl GateError {
    /// `E_TURN_GATE_REJECTED`, `E_TURN_GATE_ABORTED` or `E_TURN_GATE_TIMEOUT`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Rejected { .. } => ErrorCode::TurnGateRejected,
            Self::Aborted { .. } => ErrorCode::TurnGateAborted,
            Self::TimedOut { .. } => ErrorCode::TurnGateTimeout,
        }
    }

    /// The gate error `error` is, or the first one in its chain of sources: a middleware or
    /// executor that fails with `?` on a gate ends the turn under the gate's code, not under
    /// the pipeline's, so a timeout reads as a timeout on the bus and in the outcome.
    pub(crate) fn in_chain<'a>(
        error: &'a (dyn std::error::Error + 'static),
    ) -> Option<&'a GateError> {
        let mut current = Some(error);
        // Bounded: no real chain of sources is this deep.
        for _ in 0..64 {
            let error = current?;
            if let Some(gate) = error.downcast_ref::<GateError>() {
                return Some(gate);
            }
            current = error.source();
        }
        None
    }
}

/// Why a resolution was refused. The gate stays open.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// The value does not deserialize into the type the waiting code expects.
    #[error(
        "turn gate `{gate_id}` waits for a `{expected}`, and this value does not fit: {reason}; \
         the gate stays open, resolve it again with a matching value"
    )]
    WrongType {
        /// The gate.
        gate_id: String,
        /// The Rust type the waiting code expects.
        expected: &'static str,
        /// What did not fit.
        reason: String,
    },
    /// The value could not be serialized to JSON.
    #[error("turn gate `{gate_id}`: the resolution could not be serialized: {source}")]
    Serialize {
        /// The gate.
        gate_id: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// The gate was already settled.
    #[error("turn gate `{gate_id}` is already settled")]
    AlreadySettled {
        /// The gate.
        gate_id: String,
    },
}

impl ResolveError {
    /// `E_INVALID_TURN_GATE_RESOLUTION`.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidTurnGateResolution
    }
}

enum Settlement {
    Resolved(Value),
    Rejected(Arc<dyn std::error::Error + Send + Sync>),
    Aborted,
}

type Validator = dyn Fn(&Value) -> Result<(), String> + Send + Sync;

struct GateInner {
    id: String,
    turn_id: TurnId,
    reason: String,
    payload: Value,
    expected: &'static str,
    opened_at: SystemTime,
    validator: Box<Validator>,
    sender: Mutex<Option<oneshot::Sender<Settlement>>>,
}

/// The answering side of an open gate, carried by [`Event::TurnGateOpen`]. Cheap to clone and
/// `Send`: keep it, hand it to another task, answer it later.
///
/// [`Event::TurnGateOpen`]: crate::events::Event::TurnGateOpen
#[derive(Clone)]
pub struct GateHandle {
    inner: Arc<GateInner>,
}

impl fmt::Debug for GateHandle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("GateHandle")
            .field("id", &self.inner.id)
            .field("turn_id", &self.inner.turn_id)
            .field("reason", &self.inner.reason)
            .field("expected", &self.inner.expected)
            .field("settled", &self.is_settled())
            .finish()
    }
}

impl GateHandle {
    /// The gate's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The turn that opened it.
    pub fn turn_id(&self) -> &TurnId {
        &self.inner.turn_id
    }

    /// Why it was opened.
    pub fn reason(&self) -> &str {
        &self.inner.reason
    }

    /// The data the answerer needs.
    pub fn payload(&self) -> &Value {
        &self.inner.payload
    }

    /// The Rust type the waiting code expects, e.g. `bool`.
    pub fn expected_type(&self) -> &'static str {
        self.inner.expected
    }

    /// When it was opened.
    pub fn opened_at(&self) -> SystemTime {
        self.inner.opened_at
    }

    /// Whether it was resolved, rejected, aborted or timed out.
    pub fn is_settled(&self) -> bool {
        self.sender().is_none()
    }

    fn sender(&self) -> std::sync::MutexGuard<'_, Option<oneshot::Sender<Settlement>>> {
        self.inner
            .sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Resolves the gate with `value`. A value that does not deserialize into the awaited type
    /// is refused and the gate stays open.
    pub fn resolve(&self, value: impl Serialize) -> Result<(), ResolveError> {
        let gate_id = self.inner.id.clone();
        let value = serde_json::to_value(value).map_err(|source| ResolveError::Serialize {
            gate_id: gate_id.clone(),
            source,
        })?;
        (self.inner.validator)(&value).map_err(|reason| ResolveError::WrongType {
            gate_id: gate_id.clone(),
            expected: self.inner.expected,
            reason,
        })?;
        self.settle(Settlement::Resolved(value))
            .then_some(())
            .ok_or(ResolveError::AlreadySettled { gate_id })
    }

    /// Rejects the gate with `error`; the waiting code receives [`GateError::Rejected`]. Returns
    /// false when the gate was already settled.
    pub fn reject(&self, error: impl Into<BoxError>) -> bool {
        self.settle(Settlement::Rejected(Arc::from(error.into())))
    }

    /// Aborts the gate; the waiting code receives [`GateError::Aborted`]. Returns false when the
    /// gate was already settled.
    pub fn abort(&self) -> bool {
        self.settle(Settlement::Aborted)
    }

    fn settle(&self, settlement: Settlement) -> bool {
        match self.sender().take() {
            // The receiver is gone only when the waiting future was dropped; the gate is
            // settled either way.
            Some(sender) => {
                let _ = sender.send(settlement);
                true
            }
            None => false,
        }
    }
}

/// Opens a gate and waits for it: the shared body of both contexts' `wait_for`. `opened`
/// receives the handle when the gate opens (not when the wait was already cancelled), `closed`
/// the gate's id, how it was settled and when; the contexts announce both on the event bus, so
/// gates need not know it.
pub(crate) async fn wait_for<T: DeserializeOwned>(
    request: GateRequest,
    turn_id: &TurnId,
    cancellation: &CancellationToken,
    opened: impl FnOnce(GateHandle),
    closed: impl FnOnce(String, GateResult, SystemTime),
) -> Result<T, GateError> {
    let (sender, receiver) = oneshot::channel();
    let handle = GateHandle {
        inner: Arc::new(GateInner {
            id: request.id.clone(),
            turn_id: turn_id.clone(),
            reason: request.reason,
            payload: request.payload,
            expected: std::any::type_name::<T>(),
            opened_at: SystemTime::now(),
            validator: Box::new(|value| {
                T::deserialize(value)
                    .map(drop)
                    .map_err(|error| error.to_string())
            }),
            sender: Mutex::new(Some(sender)),
        }),
    };
    let gate_id = request.id;
    if cancellation.is_cancelled() {
        handle.abort();
    } else {
        opened(handle.clone());
    }

    let timeout = async {
        match request.timeout {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    let settled = tokio::select! {
        settlement = receiver => match settlement {
            Ok(Settlement::Resolved(value)) => T::deserialize(value).map_err(|_| GateError::Aborted {
                gate_id: gate_id.clone(),
            }),
            Ok(Settlement::Rejected(cause)) => Err(GateError::Rejected { gate_id: gate_id.clone(), cause }),
            // Every sender was dropped unsent: only possible once the gate is settled elsewhere.
            Ok(Settlement::Aborted) | Err(_) => Err(GateError::Aborted { gate_id: gate_id.clone() }),
        },
        () = timeout => Err(GateError::TimedOut {
            gate_id: gate_id.clone(),
            after: request.timeout.unwrap_or_default(),
        }),
        () = cancellation.cancelled() => Err(GateError::Aborted { gate_id: gate_id.clone() }),
    };
    // Close the handle so late answers are refused.
    handle.sender().take();
    let result = match &settled {
        Ok(_) => GateResult::Resolved,
        Err(GateError::Rejected { .. }) => GateResult::Rejected,
        Err(GateError::Aborted { .. }) => GateResult::Aborted,
        Err(GateError::TimedOut { .. }) => GateResult::Timeout,
    };
    closed(gate_id, result, SystemTime::now());
    settled
}
