//! Running an answer's tool calls: stored pending first, run concurrently, each result
//! reported and recorded in the order the model made the calls.

use futures_util::StreamExt;
use serde_json::{Map, Value};

use crate::context::DispatchContext;
use crate::dispatch::ToolCallUpdate;
use crate::pipeline::BoxError;
use crate::primitives::{ToolCall, ToolCallResults, ToolOutput};

/// Where the calls of one answer are stored, pending, before any of them runs.
pub(crate) async fn store_tool_calls(
    ctx: &mut DispatchContext,
    calls: &[(ToolCall, Option<String>)],
) -> Result<(), BoxError> {
    for (call, _) in calls {
        ctx.store_tool_call(call.clone()).await?;
    }
    Ok(())
}

/// Runs the calls, at most `limit` at a time, and records each result in the model's order.
pub(crate) async fn run_tool_calls(
    ctx: &mut DispatchContext,
    calls: Vec<(ToolCall, Option<String>)>,
    limit: usize,
) -> Result<(), BoxError> {
    // `execute_tool`'s futures own what they need, so they run while `ctx` stays usable.
    let runs: Vec<_> = calls
        .iter()
        .map(|(call, problem)| {
            let run = problem.is_none().then(|| ctx.execute_tool(call));
            async move {
                match run {
                    Some(run) => Some(run.await),
                    None => None,
                }
            }
        })
        .collect();
    let outputs: Vec<_> = futures_util::stream::iter(runs)
        .buffered(limit.max(1))
        .collect()
        .await;
    for ((call, problem), output) in calls.into_iter().zip(outputs) {
        let finished = match (problem, output) {
            (Some(problem), _) => call.fail(problem),
            (None, Some(Ok(output))) => finish_with_output(call, output),
            (None, Some(Err(error))) => call.fail(error.to_string()),
            (None, None) => call.fail("the call did not run"),
        };
        let results = match finished.results() {
            Some(ToolCallResults::Text(text)) => Value::String(text.render()),
            Some(other) => serde_json::to_value(other).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let mut update = ToolCallUpdate::new().results(results).complete();
        if finished.is_error() {
            update = update.error();
        }
        ctx.report_tool_call(finished.id(), update)?;
        ctx.mutate_tool_call(finished).await?;
    }
    Ok(())
}

/// The arguments as an object, and the problem to report to the model when they are not one.
/// Unparseable arguments are kept verbatim under `arguments_as_sent`, so nothing is lost.
pub(crate) fn parse_arguments(tool: &str, arguments: &str) -> (Map<String, Value>, Option<String>) {
    if arguments.trim().is_empty() {
        return (Map::new(), None);
    }
    let problem = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => return (object, None),
        Ok(other) => format!("they are JSON {}, not an object", json_kind(&other)),
        Err(error) => format!("they are not valid JSON ({error})"),
    };
    let mut kept = Map::new();
    kept.insert(
        "arguments_as_sent".to_owned(),
        Value::String(arguments.to_owned()),
    );
    (
        kept,
        Some(format!(
            "the arguments for tool {tool:?} were refused: {problem}; send a JSON object that \
             matches the tool's parameters"
        )),
    )
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failed unwrap is the test failing")]
mod tests {
    use super::*;

    #[test]
    fn arguments_that_are_not_an_object_are_kept_and_explained() {
        let (args, problem) = parse_arguments("forecast", "[1, 2");
        assert_eq!(args["arguments_as_sent"], "[1, 2");
        let problem = problem.unwrap();
        assert!(
            problem.contains("forecast") && problem.contains("not valid JSON"),
            "{problem}"
        );

        let (args, problem) = parse_arguments("forecast", "\"Oslo\"");
        assert!(problem.unwrap().contains("a string, not an object"));
        assert_eq!(args.len(), 1);

        assert_eq!(parse_arguments("forecast", "  "), (Map::new(), None));
        let (args, problem) = parse_arguments("forecast", r#"{"city":"Oslo"}"#);
        assert_eq!((args["city"].as_str(), problem), (Some("Oslo"), None));
    }
}
