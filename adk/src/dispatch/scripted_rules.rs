//! Rules a user writes for [`ScriptedModel`](super::ScriptedModel): when the user's text or the
//! last tool result matches, call this tool with these arguments, or answer this.

use crate::context::DispatchContext;
use crate::primitives::{Role, ToolCall, ToolCallResults};

use serde_json::{Value, json};

/// One rule of a [`ScriptedModel::rules`](super::ScriptedModel::rules) script: a condition and
/// what the model does when it holds.
///
/// Conditions match case-insensitively, as substrings:
///
/// - [`Rule::user_says`] holds on the first model call after the user's message (no tool called
///   yet in the dispatch) when the user's text contains the pattern;
/// - [`Rule::after_tool`] holds when the dispatch's last tool call was to that tool;
///   [`Rule::tool_result_contains`] narrows it to a result containing the pattern (an error
///   result counts, with its error text);
/// - [`Rule::always`] holds whenever it is reached.
///
/// Actions: [`RuleCondition::call`] a tool with arguments, or [`RuleCondition::reply`] with a text in which
/// `{user}` is replaced by the user's text and `{result}` by the last tool result's text.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    when: When,
    then: Step,
}

#[derive(Clone, Debug, PartialEq)]
enum When {
    UserSays(String),
    AfterTool {
        tool: String,
        result_contains: Option<String>,
    },
    Always,
}

/// A rule's condition, waiting for its action; see [`Rule`].
#[derive(Clone, Debug, PartialEq)]
#[must_use = "a condition does nothing until `.call(..)` or `.reply(..)` gives its action"]
pub struct RuleCondition {
    when: When,
}

impl Rule {
    /// When the user's text contains `pattern` (and no tool was called yet in the dispatch).
    pub fn user_says(pattern: impl Into<String>) -> RuleCondition {
        RuleCondition {
            when: When::UserSays(pattern.into().to_lowercase()),
        }
    }

    /// When the dispatch's last tool call was to `tool`, whatever it returned.
    pub fn after_tool(tool: impl Into<String>) -> RuleCondition {
        RuleCondition {
            when: When::AfterTool {
                tool: tool.into(),
                result_contains: None,
            },
        }
    }

    /// When the dispatch's last tool call was to `tool` and its result contains `pattern`.
    pub fn tool_result_contains(
        tool: impl Into<String>,
        pattern: impl Into<String>,
    ) -> RuleCondition {
        RuleCondition {
            when: When::AfterTool {
                tool: tool.into(),
                result_contains: Some(pattern.into().to_lowercase()),
            },
        }
    }

    /// Whenever the rule is reached (put it last, as the fallback).
    pub fn always() -> RuleCondition {
        RuleCondition { when: When::Always }
    }
}

impl RuleCondition {
    /// Then call `tool` with arguments serialized from `args` (see [`Step::call`]).
    pub fn call(self, tool: impl Into<String>, args: impl serde::Serialize) -> Rule {
        Rule {
            when: self.when,
            then: Step::call(tool, args),
        }
    }

    /// Then answer with `text` (`{user}` and `{result}` filled in) and acknowledge.
    pub fn reply(self, text: impl Into<String>) -> Rule {
        Rule {
            when: self.when,
            then: Step::reply(text),
        }
    }
}

/// What a scripted model does in one model call (one iteration of the dispatch loop).
///
/// A [`Step::call`] calls a tool and lets the loop run again, as a model asking for a tool
/// does; a [`Step::reply`] answers and acknowledges the dispatch.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Step {
    /// Call `tool` with `args`: announce, store, run (arguments validated, as for a real model),
    /// store the result. The dispatch is not acknowledged, so the next step follows.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object.
        args: Value,
    },
    /// Answer with this text, streamed word by word, stored, and acknowledge the dispatch.
    Reply(String),
}

impl Step {
    /// Calls `tool` with arguments serialized from `args` (a `serde_json::json!` object, or
    /// your tool's own argument type).
    pub fn call(tool: impl Into<String>, args: impl serde::Serialize) -> Self {
        Self::Call {
            tool: tool.into(),
            args: serde_json::to_value(args)
                .unwrap_or_else(|error| json!({ "unserializable_arguments": error.to_string() })),
        }
    }

    /// Answers with `text` and acknowledges the dispatch.
    pub fn reply(text: impl Into<String>) -> Self {
        Self::Reply(text.into())
    }
}

/// No rule held: what they were matched against.
pub(super) struct NoMatch {
    pub(super) user_text: String,
    pub(super) last_tool: Option<String>,
}

/// The rules of one scripted model, in order.
#[derive(Clone, Debug, Default)]
pub(super) struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub(super) fn new(rules: impl IntoIterator<Item = Rule>) -> Self {
        Self {
            rules: rules.into_iter().collect(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.rules.len()
    }

    /// The step of the first rule that holds for this model call.
    pub(super) fn choose(&self, ctx: &DispatchContext) -> Result<Step, NoMatch> {
        let user = last_user_text(ctx).unwrap_or_default();
        // The dispatch's own calls only: history loaded into `tool_calls` does not count.
        let last_call = ctx.tool_calls_this_turn().next_back();
        let result = last_call.map(result_text);
        let rule = self
            .rules
            .iter()
            .find(|rule| holds(&rule.when, &user, last_call, result.as_deref()))
            .ok_or_else(|| NoMatch {
                user_text: user.clone(),
                last_tool: last_call.map(|call| call.tool().to_owned()),
            })?;
        Ok(match &rule.then {
            Step::Reply(text) => Step::Reply(
                text.replace("{user}", &user)
                    .replace("{result}", result.as_deref().unwrap_or_default()),
            ),
            other => other.clone(),
        })
    }
}

fn holds(when: &When, user: &str, last_call: Option<&ToolCall>, result: Option<&str>) -> bool {
    match when {
        When::UserSays(pattern) => last_call.is_none() && user.to_lowercase().contains(pattern),
        When::AfterTool {
            tool,
            result_contains,
        } => last_call.is_some_and(|call| {
            call.tool() == tool
                && result_contains.as_ref().is_none_or(|pattern| {
                    result.is_some_and(|text| text.to_lowercase().contains(pattern))
                })
        }),
        When::Always => true,
    }
}

fn last_user_text(ctx: &DispatchContext) -> Option<String> {
    ctx.messages
        .iter()
        .rev()
        .filter(|message| message.role() == Role::User)
        .find_map(|message| Some(message.content()?.render()))
}

fn result_text(call: &ToolCall) -> String {
    match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        Some(_) => "a non-text result".to_owned(),
        None => String::new(),
    }
}
