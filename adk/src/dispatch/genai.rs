//! The spans of model calls and tool calls, with the attribute names of the OpenTelemetry GenAI
//! semantic conventions (`gen_ai.*`), so an OpenTelemetry layer exports them as GenAI spans (see
//! `adk::otel`, feature `otel`) and any other `tracing` subscriber sees the same fields.
//!
//! Content (tool arguments and results) is recorded only when [`capture_content`] says so:
//! off unless `adk::otel` was asked to capture it.

use std::sync::atomic::{AtomicBool, Ordering};

use tracing::Span;
use tracing::field::Empty;

use crate::events::GenerationStats;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether model-call and tool-call spans record content: tool arguments and results.
pub(crate) fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Turns content capture on or off for the whole process.
#[cfg_attr(not(feature = "otel"), allow(dead_code, reason = "set by adk::otel"))]
pub(crate) fn set_capture_content(capture: bool) {
    CAPTURE_CONTENT.store(capture, Ordering::Relaxed);
}

/// The span of one model call (one executor run): `chat`, named `chat {model}` once the
/// executor reported its model.
pub(crate) fn chat_span(iteration: u32) -> Span {
    tracing::info_span!(
        "adk.model_call",
        otel.name = "chat",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.request.model = Empty,
        gen_ai.response.model = Empty,
        gen_ai.provider.name = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        error.type = Empty,
        iteration,
    )
}

/// Records what the executor reported with `report_generation_stats` on its model call's span:
/// tokens summed over every report, the last model and provider named, every finish reason.
pub(crate) fn record_generation(span: &Span, stats: &[GenerationStats]) {
    if span.is_disabled() || stats.is_empty() {
        return;
    }
    let sum = |field: fn(&GenerationStats) -> Option<u64>| {
        stats.iter().filter_map(field).reduce(u64::saturating_add)
    };
    if let Some(input) = sum(|stats| stats.prompt_tokens) {
        span.record("gen_ai.usage.input_tokens", input);
    }
    if let Some(output) = sum(|stats| stats.completion_tokens) {
        span.record("gen_ai.usage.output_tokens", output);
    }
    if let Some(model) = stats.iter().rev().find_map(|stats| stats.model.as_deref()) {
        rename(span, format!("chat {model}"));
        span.record("gen_ai.request.model", model);
        span.record("gen_ai.response.model", model);
    }
    if let Some(provider) = stats
        .iter()
        .rev()
        .find_map(|stats| stats.provider.as_deref())
    {
        span.record("gen_ai.provider.name", provider);
    }
    let reasons: Vec<&str> = stats
        .iter()
        .filter_map(|stats| stats.finish_reason.as_deref())
        .collect();
    if !reasons.is_empty() {
        record_finish_reasons(span, &reasons);
    }
}

/// Names a span after it started: the `otel.name` field for any subscriber, and the exported
/// span's name itself (`tracing-opentelemetry` reads `otel.name` only until the span starts).
fn rename(span: &Span, name: String) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::trace::TraceContextExt;
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        span.context().span().update_name(name.clone());
    }
    span.record("otel.name", name);
}

/// `gen_ai.response.finish_reasons` is a string array: exported as one through OpenTelemetry,
/// recorded as the reasons joined by `,` for other subscribers.
#[cfg(feature = "otel")]
fn record_finish_reasons(span: &Span, reasons: &[&str]) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let values = reasons
        .iter()
        .map(|reason| opentelemetry::StringValue::from((*reason).to_owned()))
        .collect();
    span.set_attribute(
        "gen_ai.response.finish_reasons",
        opentelemetry::Value::Array(opentelemetry::Array::String(values)),
    );
}

#[cfg(not(feature = "otel"))]
fn record_finish_reasons(span: &Span, reasons: &[&str]) {
    span.record("gen_ai.response.finish_reasons", reasons.join(","));
}

/// Marks a span failed with `error_type` (an error code), as the conventions ask.
pub(crate) fn record_error(span: &Span, error_type: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error_type);
}

/// The span of one tool call: `execute_tool {tool}`.
pub(crate) fn tool_span(tool: &str, call_id: &str, args: &serde_json::Value) -> Span {
    let span = tracing::info_span!(
        "adk.tool_call",
        otel.name = format!("execute_tool {tool}"),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        error.type = Empty,
    );
    if capture_content() && !span.is_disabled() {
        span.record("gen_ai.tool.call.arguments", args.to_string());
    }
    span
}

/// Records a tool call's outcome on its span: the result text when content is captured, the
/// error otherwise.
pub(crate) fn record_tool_outcome(
    span: &Span,
    outcome: &Result<crate::primitives::ToolOutput, super::ToolExecutionError>,
) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(crate::primitives::ToolOutput::Text(text)) if capture_content() => {
            span.record("gen_ai.tool.call.result", text.as_str());
        }
        Ok(_) => {}
        Err(error) => {
            record_error(span, error.code().as_str());
            if capture_content() {
                span.record("gen_ai.tool.call.result", error.to_string());
            }
        }
    }
}
