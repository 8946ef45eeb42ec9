//! A deterministic stand-in for a model, for examples and tests: no network, no randomness.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::context::DispatchContext;
use crate::dispatch::{Executor, ToolCallUpdate};
use crate::pipeline::{BoxError, BoxFuture};
use crate::primitives::{Message, Role, ToolCall, ToolCallResults, ToolOutput};
use crate::transcript::AnswerParts;

pub use super::scripted_rules::Step;
use super::scripted_rules::{NoMatch, Rule, Rules};

/// A deterministic stand-in for a model, for examples and tests.
///
/// It answers the last user message in the dispatch by fixed rules, so the same conversation
/// always produces the same records and events:
///
/// 1. If the message asks for something a tool in `ctx.tools` provides, the first iteration
///    calls that tool: it announces the call (`ctx.report_tool_call`), stores it
///    (`ctx.store_tool_call`), runs it (`ctx.execute_tool`), then stores the result
///    (`ctx.mutate_tool_call`) and returns without acknowledging, so the loop runs again.
///    - the words "time" or "clock" call `clock` with `{}`;
///    - "weather" or "forecast" call `weather` with `{"city": ..}`, the word after "in"
///      (or `"here"`);
///    - an arithmetic expression such as `12 * (3 + 4)` calls `calculator` with
///      `{"expression": ..}`.
/// 2. Otherwise (or in the next iteration) it answers: from the tool's result when it called one,
///    by listing the user's earlier messages when asked what it "remembers", or by repeating the
///    message. The answer is streamed word by word through `ctx.report_message`, stored with
///    `ctx.store_message`, and the dispatch is acknowledged with `ctx.ack()`.
///
/// Record ids derive from the user message's id (`{id}-call-1`, `{id}-reply`), so they are
/// unique whenever user message ids are. Each model call's records are linked to one answer
/// ([`AnswerParts::for_model_call`]), as a real model's executor links them.
///
/// To script it yourself (your own tools, your own answers), give it [`Step`]s: a list with
/// [`ScriptedModel::steps`], or a function of the dispatch with [`ScriptedModel::from_fn`].
///
/// ```
/// use adk::TurnRunner;
/// use adk::context::{RawTurnContext, TurnContext};
/// use adk::dispatch::ScriptedModel;
/// use adk::pipeline::{BoxError, Next};
/// use adk::primitives::{Message, Tool};
/// use adk::storage::NoopStorage;
///
/// #[adk::middleware(pipeline = turn_input)]
/// async fn ask(ctx: &mut TurnContext, next: Next<'_, TurnContext>) -> Result<(), BoxError> {
///     ctx.store_message(Message::user("q1", "What is 6 * 7?")?).await?;
///     let _ = next.run(ctx).await;
///     Ok(())
/// }
///
/// let calculator = Tool::builder("calculator")
///     .description("Evaluates arithmetic.")
///     .handler(|_args: serde_json::Value, _invocation| async { Ok("42".to_owned()) })
///     .build()?;
/// let runner = TurnRunner::builder()
///     .storage(NoopStorage::new())
///     .executor(ScriptedModel::new())
///     .tool(calculator)
///     .turn_input(ask)
///     .build();
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let outcome = runner.run(RawTurnContext::new("conversation-1", "You are helpful.")).await?;
/// let reply = outcome.context.messages.get("q1-reply").and_then(Message::content);
/// assert_eq!(reply.map(ToString::to_string).as_deref(), Some("The calculator tool says: 42."));
/// # Ok::<(), BoxError>(())
/// # })?;
/// # Ok::<(), BoxError>(())
/// ```
#[derive(Clone, Default)]
pub struct ScriptedModel {
    script: Script,
}

#[derive(Clone, Default)]
enum Script {
    /// The built-in rules: clock, weather, calculator, memory, echo.
    #[default]
    Rules,
    /// One step per model call, in order, shared by every turn the model runs.
    Steps(Arc<Mutex<VecDeque<Step>>>),
    /// The first of the user's rules that holds.
    Written(Arc<Rules>),
    /// A step chosen from the dispatch.
    Function(Arc<dyn Fn(&DispatchContext) -> Step + Send + Sync>),
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let script = match &self.script {
            Script::Rules => "rules".to_owned(),
            Script::Steps(steps) => format!(
                "{} steps left",
                steps.lock().unwrap_or_else(PoisonError::into_inner).len()
            ),
            Script::Written(rules) => format!("{} rules", rules.len()),
            Script::Function(_) => "a function".to_owned(),
        };
        formatter
            .debug_struct("ScriptedModel")
            .field("script", &script)
            .finish()
    }
}

impl ScriptedModel {
    /// The scripted model with its built-in rules (see above).
    pub fn new() -> Self {
        Self::default()
    }

    /// A model that takes one step per model call, in order, across turns; past the last step
    /// a dispatch fails with [`ScriptedModelError::OutOfSteps`].
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::dispatch::Step;
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Lookup {
    ///     /// The word to look up.
    ///     word: String,
    /// }
    ///
    /// let dictionary = Tool::typed::<Lookup>("dictionary")
    ///     .description("Defines a word.")
    ///     .read_only()
    ///     .handler(|args: Lookup, _invocation| async move {
    ///         match args.word.as_str() {
    ///             "adk" => Ok("an agent development kit".to_owned()),
    ///             other => Err(format!("no entry for {other:?}").into()),
    ///         }
    ///     })
    ///     .build()?;
    /// let model = ScriptedModel::steps([
    ///     Step::call("dictionary", Lookup { word: "adk".into() }),
    ///     Step::reply("It means an agent development kit."),
    /// ]);
    /// let runner = TurnRunner::builder().storage(NoopStorage::new()).executor(model).tool(dictionary).build();
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let outcome = runner
    ///     .run(RawTurnContext::new("c", "You define words.").user_message("What is adk?"))
    ///     .await?
    ///     .into_result()?;
    /// let call = outcome.context.tool_calls.first().unwrap();
    /// assert_eq!(call.tool(), "dictionary");
    /// assert!(!call.is_error());
    /// assert_eq!(
    ///     outcome.reply().and_then(Message::content).map(|text| text.render()).as_deref(),
    ///     Some("It means an agent development kit.")
    /// );
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn steps(steps: impl IntoIterator<Item = Step>) -> Self {
        Self {
            script: Script::Steps(Arc::new(Mutex::new(steps.into_iter().collect()))),
        }
    }

    /// A model that follows rules you write, for any tools: each model call takes the step of
    /// the first [`Rule`] that holds — when the user's text or the last tool result matches,
    /// call this tool with these arguments, or answer this. When none holds the dispatch fails
    /// with [`ScriptedModelError::NoRuleMatched`]; end with [`Rule::always`] for a fallback.
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::dispatch::Rule;
    /// use serde_json::json;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Order { id: u32 }
    ///
    /// let orders = Tool::typed::<Order>("order_status")
    ///     .description("Where an order is.")
    ///     .read_only()
    ///     .handler(|order: Order, _| async move {
    ///         Ok(if order.id == 7 { "shipped".to_owned() } else { "unknown".to_owned() })
    ///     })
    ///     .build()?;
    /// let model = ScriptedModel::rules([
    ///     Rule::user_says("order 7").call("order_status", json!({ "id": 7 })),
    ///     Rule::tool_result_contains("order_status", "shipped").reply("Order 7 is on its way."),
    ///     Rule::after_tool("order_status").reply("I could not find it: {result}."),
    ///     Rule::always().reply("You said: {user}"),
    /// ]);
    /// let agent = Agent::builder("shop").model(model).tool(orders).storage(NoopStorage::new()).build();
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let outcome = agent.run("c", "Where is order 7?").await?.into_result()?;
    /// assert_eq!(outcome.context.tool_calls.first().unwrap().tool(), "order_status");
    /// let reply = outcome.reply().and_then(Message::content).map(|text| text.render());
    /// assert_eq!(reply.as_deref(), Some("Order 7 is on its way."));
    /// let outcome = agent.run("c", "Thanks!").await?.into_result()?;
    /// let reply = outcome.reply().and_then(Message::content).map(|text| text.render());
    /// assert_eq!(reply.as_deref(), Some("You said: Thanks!"));
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn rules(rules: impl IntoIterator<Item = Rule>) -> Self {
        Self {
            script: Script::Written(Arc::new(Rules::new(rules))),
        }
    }

    /// A model that asks `choose` for each model call's step, given the dispatch: its messages,
    /// its tool calls so far, its iteration.
    ///
    /// ```
    /// use adk::prelude::*;
    /// use adk::dispatch::Step;
    ///
    /// // Answers with the number of messages it was shown.
    /// let model = ScriptedModel::from_fn(|ctx: &DispatchContext| {
    ///     Step::reply(format!("I see {} messages.", ctx.messages.len()))
    /// });
    /// let runner = TurnRunner::builder().storage(NoopStorage::new()).executor(model).build();
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let outcome = runner.run(RawTurnContext::new("c", "p").user_message("hi")).await?.into_result()?;
    /// assert_eq!(outcome.reply().unwrap().content().unwrap().render(), "I see 1 messages.");
    /// # Ok::<(), BoxError>(())
    /// # })?;
    /// # Ok::<(), BoxError>(())
    /// ```
    pub fn from_fn(choose: impl Fn(&DispatchContext) -> Step + Send + Sync + 'static) -> Self {
        Self {
            script: Script::Function(Arc::new(choose)),
        }
    }

    /// The next step of a scripted model, or `None` for the built-in rules.
    fn next_step(&self, ctx: &DispatchContext) -> Result<Option<Step>, ScriptedModelError> {
        match &self.script {
            Script::Rules => Ok(None),
            Script::Steps(steps) => steps
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop_front()
                .map(Some)
                .ok_or(ScriptedModelError::OutOfSteps),
            Script::Written(rules) => rules.choose(ctx).map(Some).map_err(
                |NoMatch {
                     user_text,
                     last_tool,
                 }| ScriptedModelError::NoRuleMatched {
                    user_text,
                    last_tool,
                },
            ),
            Script::Function(choose) => Ok(Some(choose(ctx))),
        }
    }
}

/// Why the scripted model could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptedModelError {
    /// The dispatch held no user message to answer.
    #[error(
        "the scripted model found no user message with text in the dispatch; add one before the \
         dispatch, e.g. `ctx.store_message(Message::user(id, text)?)` in a `turn_input` middleware"
    )]
    NoUserMessage,
    /// A model made with [`ScriptedModel::steps`] was called after its last step.
    #[error(
        "the scripted model ran out of steps: add a step for every model call the turns make \
         (a tool call takes one, the reply after it another)"
    )]
    OutOfSteps,
    /// No rule of a model made with [`ScriptedModel::rules`] held for a model call.
    #[error(
        "no rule of the scripted model matched (user text {user_text:?}, last tool call of the \
         dispatch: {last_tool:?}): add a rule for it, or end the rules with \
         `Rule::always().reply(..)`"
    )]
    NoRuleMatched {
        /// The user's text the rules were matched against.
        user_text: String,
        /// The tool the dispatch called last, if any.
        last_tool: Option<String>,
    },
}

impl Executor for ScriptedModel {
    fn execute<'a>(&'a self, ctx: &'a mut DispatchContext) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            if let Some(step) = self.next_step(ctx)? {
                return take_step(ctx, step).await;
            }
            let (question_id, question) = last_user_message(ctx)?;
            let call_prefix = format!("{question_id}-call-");
            let earlier_calls: Vec<ToolCall> = ctx
                .tool_calls
                .iter()
                .filter(|call| call.id().starts_with(&call_prefix))
                .cloned()
                .collect();
            if earlier_calls.is_empty()
                && let Some((tool, args)) = choose_tool(&question, ctx)
            {
                return call_tool(ctx, format!("{call_prefix}1"), tool, args).await;
            }
            let reply = compose_reply(ctx, &question_id, &question, &earlier_calls);
            let reply_id = format!("{question_id}-reply");
            stream_words(ctx, &reply_id, &reply)?;
            let link = AnswerParts::for_model_call(ctx).next_link();
            ctx.store_message(Message::assistant(reply_id, reply)?.with_answer(link)?)
                .await?;
            ctx.ack()?;
            Ok(())
        })
    }
}

/// Ids are the dispatch's (unique per turn) plus the iteration, so steps never collide.
async fn take_step(ctx: &mut DispatchContext, step: Step) -> Result<(), BoxError> {
    match step {
        Step::Call { tool, args } => {
            let id = format!("{}/call-{}", ctx.dispatch_id(), ctx.iteration());
            call_tool(ctx, id, &tool, args).await
        }
        Step::Reply(text) => {
            let id = format!("{}/reply", ctx.dispatch_id());
            stream_words(ctx, &id, &text)?;
            let link = AnswerParts::for_model_call(ctx).next_link();
            ctx.store_message(Message::assistant(id, text)?.with_answer(link)?)
                .await?;
            ctx.ack()?;
            Ok(())
        }
    }
}

fn last_user_message(ctx: &DispatchContext) -> Result<(String, String), ScriptedModelError> {
    ctx.messages
        .iter()
        .rev()
        .filter(|message| message.role() == Role::User)
        .find_map(|message| {
            let text = message.content()?.render();
            Some((message.id().to_owned(), text))
        })
        .ok_or(ScriptedModelError::NoUserMessage)
}

/// Lower-cased words of `text`, split on everything that is not a letter, digit or apostrophe.
fn words(text: &str) -> Vec<String> {
    text.split(|character: char| !(character.is_alphanumeric() || character == '\''))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn choose_tool(question: &str, ctx: &DispatchContext) -> Option<(&'static str, Value)> {
    let available = |name: &str| ctx.tools.contains(name) && !ctx.tools.is_hidden(name);
    let words = words(question);
    let mentions =
        |candidates: &[&str]| words.iter().any(|word| candidates.contains(&word.as_str()));
    if mentions(&["weather", "forecast"]) && available("weather") {
        return Some(("weather", json!({ "city": city_in(question) })));
    }
    if mentions(&["time", "clock"]) && available("clock") {
        return Some(("clock", json!({})));
    }
    if let Some(expression) = arithmetic_in(question)
        && available("calculator")
    {
        return Some(("calculator", json!({ "expression": expression })));
    }
    None
}

/// The word after "in", without punctuation: "weather in Oslo?" → "Oslo".
fn city_in(question: &str) -> String {
    let mut tokens = question.split_whitespace();
    while let Some(token) = tokens.next() {
        if token.eq_ignore_ascii_case("in")
            && let Some(city) = tokens.next()
        {
            let city = city.trim_matches(|character: char| !character.is_alphanumeric());
            if !city.is_empty() {
                return city.to_owned();
            }
        }
    }
    "here".to_owned()
}

/// The longest run of digits, operators, parentheses and spaces holding a digit and an operator.
fn arithmetic_in(question: &str) -> Option<String> {
    let is_arithmetic =
        |character: char| character.is_ascii_digit() || "+-*/(). ".contains(character);
    question
        .split(|character: char| !is_arithmetic(character))
        .map(str::trim)
        .filter(|run| {
            run.chars().any(|character| character.is_ascii_digit())
                && run.chars().any(|character| "+-*/".contains(character))
        })
        .max_by_key(|run| run.len())
        .map(str::to_owned)
}

async fn call_tool(
    ctx: &mut DispatchContext,
    id: String,
    tool: &str,
    args: Value,
) -> Result<(), BoxError> {
    ctx.report_tool_call(&id, ToolCallUpdate::new().tool(tool).args(args.clone()))?;
    let link = AnswerParts::for_model_call(ctx).next_link();
    let call = ToolCall::new(id.clone(), tool, args)?.with_answer(link)?;
    ctx.store_tool_call(call.clone()).await?;
    let finished = match ctx.execute_tool(&call).await {
        Ok(output) => call.complete(describe_output(output)),
        Err(error) => call.fail(error.to_string()),
    };
    let mut update = ToolCallUpdate::new()
        .results(Value::String(result_text(&finished)))
        .complete();
    if finished.is_error() {
        update = update.error();
    }
    ctx.report_tool_call(&id, update)?;
    ctx.mutate_tool_call(finished).await?;
    Ok(())
}

fn describe_output(output: ToolOutput) -> String {
    match output {
        ToolOutput::Text(text) => text,
        ToolOutput::Bytes(bytes) => format!("{} bytes", bytes.len()),
        ToolOutput::Artifact(_) => "an artifact".to_owned(),
        ToolOutput::Media(media) => format!("{} media attachments", media.len()),
    }
}

fn result_text(call: &ToolCall) -> String {
    match call.results() {
        Some(ToolCallResults::Text(text)) => text.render(),
        Some(_) => "a non-text result".to_owned(),
        None => "nothing".to_owned(),
    }
}

fn compose_reply(
    ctx: &DispatchContext,
    question_id: &str,
    question: &str,
    calls: &[ToolCall],
) -> String {
    if let Some(call) = calls.last() {
        let verb = if call.is_error() { "failed" } else { "says" };
        return format!("The {} tool {verb}: {}.", call.tool(), result_text(call));
    }
    let words = words(question);
    if words
        .iter()
        .any(|word| ["remember", "earlier", "before"].contains(&word.as_str()))
    {
        let earlier: Vec<String> = ctx
            .messages
            .iter()
            .filter(|message| message.role() == Role::User && message.id() != question_id)
            .filter_map(|message| Some(format!("\"{}\"", message.content()?.render())))
            .collect();
        return if earlier.is_empty() {
            "This is the first thing you have told me.".to_owned()
        } else {
            format!("Earlier you said: {}.", earlier.join(", "))
        };
    }
    if words
        .first()
        .is_some_and(|word| ["hello", "hi", "hey"].contains(&word.as_str()))
    {
        return "Hello! I am a scripted model: ask me the time, the weather in a city, or a sum \
                like 2 + 3."
            .to_owned();
    }
    format!("You said \"{question}\".")
}

fn stream_words(ctx: &mut DispatchContext, id: &str, reply: &str) -> Result<(), BoxError> {
    let chunks: Vec<&str> = reply.split_inclusive(' ').collect();
    let last = chunks.len().saturating_sub(1);
    for (index, chunk) in chunks.iter().enumerate() {
        ctx.report_message(id, chunk, index == last)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_ignore_punctuation_and_case() {
        assert_eq!(words("What TIME is it?"), ["what", "time", "is", "it"]);
    }

    #[test]
    fn the_city_is_the_word_after_in() {
        assert_eq!(city_in("Weather in Bergen tomorrow?"), "Bergen");
        assert_eq!(city_in("Weather in Oslo?"), "Oslo");
        assert_eq!(city_in("What is the weather?"), "here");
    }

    #[test]
    fn the_longest_arithmetic_run_is_the_expression() {
        assert_eq!(
            arithmetic_in("What is 12 * (3 + 4)?").as_deref(),
            Some("12 * (3 + 4)")
        );
        assert_eq!(arithmetic_in("Room 12 please"), None);
    }
}
