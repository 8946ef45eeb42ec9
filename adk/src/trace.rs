//! A readable console trace: one call installs a compact, human account of every turn.
//!
//! ```text
//! turn
//!   tool weather {"city":"Oslo"} -> sunny in Oslo
//!   model call 1 · 3 ms
//!   model call 2 · 120 in / 14 out tokens · 850 ms
//! turn done · 2 model calls · 853 ms
//! ```
//!
//! One line per step: the turn, each model call (tokens when the executor reports
//! [`GenerationStats`], and its time: the model's reported time,
//! else the iteration's), each finished tool call with its arguments and result cut to 80
//! characters, gates opening and closing, errors with their code and cause. Ids (turn, tool call) are
//! left out unless [`ConsoleTrace::with_ids`] asks for them. [`console`] writes to stderr in
//! colour only when stderr is a terminal and `NO_COLOR` is unset or empty.
//!
//! ```
//! use adk::prelude::*;
//!
//! let agent = Agent::builder("helper")
//!     .model(ScriptedModel::new())
//!     .storage(NoopStorage::new())
//!     .observe(adk::trace::console()) // the whole installation
//!     .build();
//! # let _ = agent;
//! ```

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::events::{Event, GenerationStats};

/// Longest argument or result text shown, in characters.
const SHORT: usize = 80;

/// The trace's listener on stderr: pass it to `.observe(..)` on an agent or a runner.
pub fn console() -> impl Fn(&Event) + Send + Sync + 'static {
    ConsoleTrace::stderr().listener()
}

/// A console trace's settings; [`console`] is the common case.
pub struct ConsoleTrace {
    writer: Box<dyn Write + Send>,
    colour: bool,
    ids: bool,
}

impl std::fmt::Debug for ConsoleTrace {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ConsoleTrace")
            .field("colour", &self.colour)
            .field("ids", &self.ids)
            .finish_non_exhaustive()
    }
}

impl ConsoleTrace {
    /// To stderr; in colour only when stderr is a terminal and `NO_COLOR` is unset or empty.
    #[must_use]
    pub fn stderr() -> Self {
        use std::io::IsTerminal;
        let colour = use_colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        );
        Self {
            writer: Box::new(std::io::stderr()),
            colour,
            ids: false,
        }
    }

    /// To any writer, without colour.
    #[must_use]
    pub fn to_writer(writer: impl Write + Send + 'static) -> Self {
        Self {
            writer: Box::new(writer),
            colour: false,
            ids: false,
        }
    }

    /// Shows the turn's and each tool call's id.
    #[must_use]
    pub fn with_ids(mut self) -> Self {
        self.ids = true;
        self
    }

    /// Forces colour on or off.
    #[must_use]
    pub fn with_colour(mut self, colour: bool) -> Self {
        self.colour = colour;
        self
    }

    /// The listener, for `.observe(..)`. A failed write is ignored: tracing never fails a turn.
    pub fn listener(self) -> impl Fn(&Event) + Send + Sync + 'static {
        let state = Arc::new(Mutex::new(Tracer {
            settings: self,
            model_calls: 0,
            reported: None,
            open: None,
        }));
        move |event: &Event| {
            state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .on(event);
        }
    }
}

/// Colour on a terminal unless `NO_COLOR` is set to something (<https://no-color.org>).
#[must_use]
pub fn use_colour(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|value| value.is_empty())
}

struct Tracer {
    settings: ConsoleTrace,
    /// Model calls of the current turn.
    model_calls: u32,
    /// The iteration whose model call was already written from its statistics.
    reported: Option<u32>,
    /// The iteration running, and when it began (the last one ends with the dispatch, without
    /// an `IterationEnd`).
    open: Option<(u32, std::time::SystemTime)>,
}

impl Tracer {
    fn on(&mut self, event: &Event) {
        let line = match event {
            Event::TurnStart { turn_id, .. } => {
                self.model_calls = 0;
                self.reported = None;
                Some(if self.settings.ids {
                    format!("turn {turn_id}")
                } else {
                    "turn".to_owned()
                })
            }
            Event::GenerationStats {
                iteration, stats, ..
            } => {
                self.reported = Some(*iteration);
                self.model_calls += 1;
                let time = stats.total_duration_ns.map(Duration::from_nanos);
                Some(self.dim(&model_line(*iteration, Some(stats), time)))
            }
            Event::IterationStart {
                iteration,
                started_at,
                ..
            } => {
                self.open = Some((*iteration, *started_at));
                None
            }
            Event::IterationEnd {
                iteration,
                duration,
                ..
            } => {
                self.open = None;
                self.unreported(*iteration, *duration)
            }
            Event::DispatchEnd { ended_at, .. } => {
                self.open.take().and_then(|(iteration, started_at)| {
                    let duration = ended_at.duration_since(started_at).unwrap_or_default();
                    self.unreported(iteration, duration)
                })
            }
            Event::ToolCall(call) if call.is_complete => {
                let result = call.results.as_ref().map(text_of).unwrap_or_default();
                let id = if self.settings.ids {
                    format!(" [{}]", call.id)
                } else {
                    String::new()
                };
                let arrow = if call.is_error { "-> error:" } else { "->" };
                let line = format!(
                    "  tool {}{id} {} {arrow} {}",
                    call.tool,
                    short(&call.args.to_string()),
                    short(&result)
                );
                Some(if call.is_error {
                    self.paint("31", &line)
                } else {
                    self.paint("36", &line)
                })
            }
            Event::TurnGateOpen { gate } => Some(self.paint(
                "33",
                &format!("  gate {} open: {}", gate.id(), short(gate.reason())),
            )),
            Event::TurnGateClosed {
                gate_id, result, ..
            } => Some(self.paint("33", &format!("  gate {gate_id} {}", result.as_str()))),
            Event::Error { error, .. } => Some(self.paint("31", &format!("  error {error:#}"))),
            Event::TurnEnd { duration, .. } => {
                let calls = match self.model_calls {
                    1 => "1 model call".to_owned(),
                    n => format!("{n} model calls"),
                };
                Some(format!("turn done · {calls} · {}", millis(*duration)))
            }
            _ => None,
        };
        if let Some(line) = line {
            let _ = writeln!(self.settings.writer, "{line}");
        }
    }

    /// The model call line of an iteration not written from its statistics.
    fn unreported(&mut self, iteration: u32, duration: Duration) -> Option<String> {
        if self.reported == Some(iteration) {
            return None;
        }
        self.model_calls += 1;
        Some(self.dim(&model_line(iteration, None, Some(duration))))
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.settings.colour {
            format!("\u{1b}[{code}m{text}\u{1b}[0m")
        } else {
            text.to_owned()
        }
    }

    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
}

fn model_line(iteration: u32, stats: Option<&GenerationStats>, time: Option<Duration>) -> String {
    let mut line = format!("  model call {}", iteration + 1);
    if let Some(stats) = stats {
        if let (Some(prompt), Some(completion)) = (stats.prompt_tokens, stats.completion_tokens) {
            line.push_str(&format!(" · {prompt} in / {completion} out tokens"));
        }
        if let Some(model) = &stats.model {
            line.push_str(&format!(" · {model}"));
        }
    }
    if let Some(time) = time {
        line.push_str(&format!(" · {}", millis(time)));
    }
    line
}

fn millis(duration: Duration) -> String {
    format!("{} ms", duration.as_millis())
}

fn text_of(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `text` on one line, cut to [`SHORT`] characters with an ellipsis.
fn short(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= SHORT {
        line
    } else {
        let cut: String = line.chars().take(SHORT - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(std::ffi::OsStr::new(""))));
        assert!(!use_colour(true, Some(std::ffi::OsStr::new("1"))));
        assert!(!use_colour(false, None));
    }

    #[test]
    fn long_text_is_cut_to_one_short_line() {
        assert_eq!(short("a\n  b"), "a b");
        let cut = short(&"x".repeat(200));
        assert_eq!(cut.chars().count(), SHORT);
        assert!(cut.ends_with('…'));
    }
}
