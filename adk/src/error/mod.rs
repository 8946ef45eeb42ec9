//! The ground floor: the error names every layer uses — [`BoxError`], [`ErrorCode`] and
//! [`TurnError`] — kept below everything else so no layer climbs to the bus for them (tower and
//! axum keep their boxed error at the bottom for the same reason).
//!
//! They are re-exported where they are used: `adk::pipeline::BoxError`,
//! `adk::events::{ErrorCode, TurnError}`.
//!
//! ```
//! use adk::error::{BoxError, ErrorCode, TurnError};
//!
//! let cause: BoxError = "the model timed out".into();
//! let error = TurnError::new(ErrorCode::ExecutorError, "the executor failed").with_source(cause);
//! assert_eq!(error.code().as_str(), "E_LLM_EXECUTION_EXECUTOR_ERROR");
//! assert_eq!(error.cause().map(|cause| cause.to_string()).as_deref(), Some("the model timed out"));
//! ```

mod code;
mod turn;

pub use code::ErrorCode;
pub use turn::TurnError;

/// The error type middleware return: any error, boxed. `?` converts your own errors into it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
