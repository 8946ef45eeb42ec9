//! The first step of a resumed turn's dispatch: the calls the interrupted turn stored without a
//! result are run again under the ledger's rules (a recorded result is used, an idempotent call
//! runs under its recorded key, an at-most-once call whose intent has no result fails with
//! `OutcomeUnknown`), and each result is stored, before the model is called: the model never
//! reads a call without its result.

use serde_json::Value;

use crate::context::DispatchContext;
use crate::events::{ErrorCode, TurnError};
use crate::primitives::{ToolCall, ToolCallResults, ToolOutput};

use super::ToolCallUpdate;

/// Settles `calls`, in order. A call the abort of the dispatch (or the turn) stopped is left
/// without a result, so a later resume settles it again; a result that cannot be stored ends
/// the dispatch with `E_STORAGE_ERROR` before the model is called.
pub(super) async fn settle_unanswered(
    ctx: &mut DispatchContext,
    calls: Vec<ToolCall>,
) -> Result<(), TurnError> {
    for call in calls {
        let outcome = ctx.execute_tool(&call).await;
        if ctx.is_aborted() {
            return Ok(());
        }
        let finished = match outcome {
            Ok(output) => finish_with_output(call, output),
            Err(error) => call.fail(error.to_string()),
        };
        let results = match finished.results() {
            Some(ToolCallResults::Text(text)) => Value::String(text.render()),
            Some(other) => serde_json::to_value(other).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let mut update = ToolCallUpdate::new()
            .tool(finished.tool())
            .args(Value::Object(finished.args().clone()))
            .results(results)
            .complete();
        if finished.is_error() {
            update = update.error();
        }
        // A report only feeds the bus; the stored result below is what counts.
        let _ = ctx.report_tool_call(finished.id(), update);
        let id = finished.id().to_owned();
        ctx.mutate_tool_call(finished).await.map_err(|error| {
            TurnError::new(
                ErrorCode::StorageFailed,
                format!(
                    "the result of call {id:?}, which the interrupted turn left without one, \
                     could not be stored; the model was not called"
                ),
            )
            .with_source(error)
        })?;
    }
    Ok(())
}

/// The call finished with `output`, as adk's executors record it.
fn finish_with_output(call: ToolCall, output: ToolOutput) -> ToolCall {
    match output {
        ToolOutput::Text(text) => call.complete(text),
        ToolOutput::Bytes(bytes) => match String::from_utf8(bytes.to_vec()) {
            Ok(text) => call.complete(text),
            Err(_) => call.fail(format!(
                "the tool returned {} bytes of binary output, which cannot be sent to the model",
                bytes.len()
            )),
        },
        ToolOutput::Artifact(artifact) => call.complete(artifact),
        ToolOutput::Media(media) if media.is_empty() => call.complete(""),
        ToolOutput::Media(media) => call.complete(ToolCallResults::MediaList(media)),
    }
}
