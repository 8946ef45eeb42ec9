//! The main job: a short conversation through the full runtime.
//!
//! The conversation and its session state are kept in `examples-data/quickstart.sqlite3`
//! ([`SqliteStorage`], [`SqliteSessionStore`]), or in the PostgreSQL database `DATABASE_URL`
//! names when the `postgres` feature is on. Each user message is one turn: the runner stores it
//! (`RawTurnContext::user_message`), the ready `turn_input` middleware
//! [`LoadHistory`] loads the conversation's recent history from storage within a token
//! window, a `dispatch_input` middleware spends a budget kept in the stash under typed
//! keys, and the model (the deterministic [`ScriptedModel`] unless `ANTHROPIC_API_KEY`,
//! `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY` or `OPENAI_BASE_URL` names a server) calls a tool in
//! one iteration and answers in the next.
//! Progress goes to stdout; the transcript at the end is read back from storage. Logs go to
//! stderr at the level `RUST_LOG` asks for (warnings by default), in colour only on a terminal
//! and never with `NO_COLOR` set.
//!
//! ```sh
//! cargo run --example quickstart            # run it twice: the second run remembers the first
//! cargo run --example quickstart -- --reset # start the conversation over
//! cargo run --example quickstart -- --quick # a throw-away data folder
//! RUST_LOG=adk=debug cargo run --example quickstart   # each turn, its dispatch and tools, logged
//! ANTHROPIC_API_KEY=sk-ant-… cargo run --example quickstart --features adk-examples/anthropic
//! OPENAI_API_KEY=sk-… cargo run --example quickstart --features adk-examples/openai
//! OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example quickstart --features adk-examples/openai
//! DATABASE_URL=postgresql://me@localhost/agents cargo run --example quickstart --features adk-examples/postgres
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use adk::context::{RawTurnContext, TurnContext};
use adk::dispatch::{Executor, ScriptedModel};
use adk::events::{Event, LogLevel};
use adk::history::LoadHistory;
use adk::pipeline::{BoxError, Next};
use adk::primitives::{Tool, ToolCallResults};
use adk::sqlite::{SqliteSessionStore, SqliteStorage};
use adk::state::{SessionKey, SessionStore, SharedSessionStore, StateKey};
use adk::storage::{SharedStorage, StorageContext};
use adk::tokens::TokenCounter;
use adk::transcript::{Entry, Part, Transcript};
use adk::{DispatchContext, TurnRunner};
use serde::Deserialize;

/// The conversation every run continues.
pub const CONVERSATION: &str = "quickstart";

/// What one run asks, one turn per message.
pub const QUESTIONS: [&str; 3] = [
    "What is the weather in Oslo?",
    "What is 12 * (3 + 4)?",
    "What do you remember?",
];

adk::stash_keys! {
    /// How many model iterations a turn may spend.
    pub BUDGET_LIMIT: "quickstart.budget.limit" => u32,
    /// How many model iterations the turn has spent.
    pub BUDGET_USED: "quickstart.budget.used" => u32,
}

/// How the example runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the conversation is kept between runs.
    pub data_dir: PathBuf,
    /// Forget the conversation before starting.
    pub reset: bool,
    /// Use a throw-away folder, removed when the run ends.
    pub quick: bool,
    /// A PostgreSQL database to keep the conversation in instead of the SQLite file
    /// (`DATABASE_URL`).
    pub database_url: Option<String>,
}

impl Options {
    /// Reads `--reset` and `--quick` from the command line.
    pub fn from_args() -> Self {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let quick = args.iter().any(|arg| arg == "--quick")
            || std::env::var_os("ADK_EXAMPLE_QUICK").is_some();
        let data_dir = if quick {
            std::env::temp_dir().join(format!("adk-quickstart-{}", std::process::id()))
        } else {
            // Beside the workspace's Cargo.toml wherever the command runs from (.gitignore has it).
            let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            manifest.parent().unwrap_or(manifest).join("examples-data")
        };
        Self {
            data_dir,
            reset: args.iter().any(|arg| arg == "--reset"),
            quick,
            database_url: std::env::var("DATABASE_URL")
                .ok()
                .filter(|url| !url.is_empty()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Middleware

/// How much of the conversation the model sees, in tokens. A window keeps a turn's cost flat
/// however long the conversation grows: the ready history middleware ([`LoadHistory`]) reads a
/// tail of the conversation (SQLite serves it from its index) and keeps whole turns, each
/// answer with its tool calls and their results, newest first, until the window is full.
pub const HISTORY_TOKENS: usize = 4_000;

/// Loads the recent conversation into the turn (the new user message, stored by the runner
/// before this middleware, comes last), counting tokens for `model`: with OpenAI's real
/// tokenizer when adk's `tiktoken` feature is on, with the documented heuristic otherwise.
pub fn load_history(model: &str) -> LoadHistory {
    LoadHistory::within_tokens(HISTORY_TOKENS, TokenCounter::for_model(model))
}

/// Session state: the user's question count is `user:` state, remembered across runs by the
/// session store; the turn's start mark is `temp:` state, which no store ever keeps.
const QUESTIONS_ASKED: StateKey<u32> = adk::state_key!("user:questions_asked" => u32);
const TURN_STARTED: StateKey<bool> = adk::state_key!("temp:turn_started" => bool);

/// Counts the user's questions in `user:` state and marks the turn in `temp:` state.
#[adk::middleware(pipeline = turn_input)]
pub async fn count_questions(
    ctx: &mut TurnContext,
    next: Next<'_, TurnContext>,
) -> Result<(), BoxError> {
    let asked = ctx.state().get(QUESTIONS_ASKED)?.unwrap_or(0);
    ctx.state_mut().set(QUESTIONS_ASKED, asked + 1)?;
    ctx.state_mut().set(TURN_STARTED, true)?;
    let _ = next.run(ctx).await;
    Ok(())
}

/// Counts model iterations against the budget in the stash; refuses the dispatch when spent.
#[adk::middleware(pipeline = dispatch_input)]
pub async fn enforce_budget(
    ctx: &mut DispatchContext,
    next: Next<'_, DispatchContext>,
) -> Result<(), BoxError> {
    let limit = ctx.stash.get(BUDGET_LIMIT)?.unwrap_or(4);
    let used = ctx.stash.get(BUDGET_USED)?.unwrap_or(0) + 1;
    if used > limit {
        ctx.nack(format!(
            "the turn spent its budget of {limit} model iterations"
        ))?;
    } else {
        ctx.stash.set(BUDGET_USED, used)?;
        ctx.log(
            LogLevel::Info,
            "budget",
            format!("model iteration {used} of {limit}"),
            None,
        );
    }
    // A nack lets this pipeline finish, then ends the dispatch; there is no post-step.
    let _ = next.run(ctx).await;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Tools

#[derive(Deserialize, schemars::JsonSchema)]
struct WeatherArgs {
    /// The city.
    city: String,
}

/// Made-up weather, the same for a city every time, so the example is reproducible.
pub fn weather() -> Result<Tool, BoxError> {
    Ok(Tool::typed::<WeatherArgs>("weather")
        .description("Today's weather in a city.")
        .read_only()
        .handler(|args: WeatherArgs, _invocation| async move {
            let conditions = ["sunny", "cloudy", "rainy", "windy"];
            let index = args.city.bytes().map(usize::from).sum::<usize>() % conditions.len();
            Ok(format!("{} is {} today", args.city, conditions[index]))
        })
        .build()?)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct CalculatorArgs {
    /// Arithmetic with + - * / and parentheses.
    expression: String,
}

/// Evaluates arithmetic.
pub fn calculator() -> Result<Tool, BoxError> {
    Ok(Tool::typed::<CalculatorArgs>("calculator")
        .description("Evaluates arithmetic with + - * / and parentheses.")
        .read_only()
        .handler(|args: CalculatorArgs, _invocation| async move {
            let value = evaluate(&args.expression)?; // a `String` error becomes a `ToolError`
            Ok(format!("{} = {value}", args.expression))
        })
        .build()?)
}

/// `expression := term (('+' | '-') term)*`, `term := factor (('*' | '/') factor)*`,
/// `factor := number | '(' expression ')' | '-' factor`.
fn evaluate(expression: &str) -> Result<f64, String> {
    let tokens: Vec<char> = expression.chars().filter(|c| !c.is_whitespace()).collect();
    let mut position = 0;
    let value = sum(&tokens, &mut position)?;
    match tokens.get(position) {
        None => Ok(value),
        Some(unexpected) => Err(format!("unexpected `{unexpected}` in `{expression}`")),
    }
}

fn sum(tokens: &[char], position: &mut usize) -> Result<f64, String> {
    let mut value = product(tokens, position)?;
    while let Some(&operator) = tokens.get(*position).filter(|c| matches!(c, '+' | '-')) {
        *position += 1;
        let right = product(tokens, position)?;
        value = if operator == '+' {
            value + right
        } else {
            value - right
        };
    }
    Ok(value)
}

fn product(tokens: &[char], position: &mut usize) -> Result<f64, String> {
    let mut value = factor(tokens, position)?;
    while let Some(&operator) = tokens.get(*position).filter(|c| matches!(c, '*' | '/')) {
        *position += 1;
        let right = factor(tokens, position)?;
        value = if operator == '*' {
            value * right
        } else {
            value / right
        };
    }
    Ok(value)
}

fn factor(tokens: &[char], position: &mut usize) -> Result<f64, String> {
    match tokens.get(*position) {
        Some('(') => {
            *position += 1;
            let value = sum(tokens, position)?;
            if tokens.get(*position) != Some(&')') {
                return Err("a `(` is never closed".to_owned());
            }
            *position += 1;
            Ok(value)
        }
        Some('-') => {
            *position += 1;
            Ok(-factor(tokens, position)?)
        }
        _ => {
            let start = *position;
            while tokens
                .get(*position)
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                *position += 1;
            }
            let number: String = tokens[start..*position].iter().collect();
            number
                .parse()
                .map_err(|_| format!("expected a number at position {start}"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Storage

/// The database file the conversation is kept in.
pub fn database_path(options: &Options) -> PathBuf {
    options.data_dir.join("quickstart.sqlite3")
}

/// Opens (or creates) the conversation's SQLite database under `options.data_dir`, or connects
/// to the PostgreSQL database `options.database_url` names.
pub async fn open_storage(options: &Options) -> Result<SharedStorage, BoxError> {
    if let Some(url) = &options.database_url {
        #[cfg(feature = "postgres")]
        {
            let storage = adk::postgres::PostgresStorage::connect(url).await?;
            println!("storage: the PostgreSQL database in DATABASE_URL (--reset starts over)");
            return Ok(SharedStorage::new(storage));
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = url;
            return Err(
                "`DATABASE_URL` is set, but the example was built without PostgreSQL; \
                        run `cargo run --example quickstart --features adk-examples/postgres`, \
                        or unset it to keep the conversation in SQLite"
                    .into(),
            );
        }
    }
    std::fs::create_dir_all(&options.data_dir)?;
    let path = database_path(options);
    let storage = SqliteStorage::open(&path).await?;
    println!(
        "storage: {} (run again to continue the conversation; --reset starts over)",
        path.display()
    );
    Ok(SharedStorage::new(storage))
}

// ---------------------------------------------------------------------------------------------
// The conversation

/// The model: Anthropic's Messages API when `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` (or their
/// `ADK_ANTHROPIC_*` forms) name it and adk was built with its `anthropic` feature; otherwise an
/// OpenAI-compatible server when `OPENAI_API_KEY` / `OPENAI_BASE_URL` (or `ADK_OPENAI_*`) name
/// one and adk was built with its `openai` feature; the deterministic scripted model otherwise.
pub fn choose_model() -> Result<Arc<dyn Executor>, BoxError> {
    #[cfg(feature = "anthropic")]
    if let Some(config) = adk::anthropic::AnthropicConfig::from_env()? {
        println!("model: `{}` at {}", config.model, config.endpoint());
        return Ok(Arc::new(adk::anthropic::AnthropicExecutor::new(config)?));
    }
    #[cfg(not(feature = "anthropic"))]
    if std::env::var_os("ADK_ANTHROPIC_BASE_URL").is_some() {
        return Err(
            "`ADK_ANTHROPIC_BASE_URL` is set, but adk was built without its `anthropic` \
                    feature; run `cargo run --example quickstart --features adk-examples/anthropic`, \
                    or unset it to use another model"
                .into(),
        );
    }
    #[cfg(feature = "openai")]
    if let Some(config) = adk::openai::OpenAiConfig::from_env()? {
        println!("model: `{}` at {}", config.model, config.endpoint());
        return Ok(Arc::new(adk::openai::OpenAiExecutor::new(config)?));
    }
    #[cfg(not(feature = "openai"))]
    if std::env::var_os("ADK_OPENAI_BASE_URL").is_some() {
        return Err(
            "`ADK_OPENAI_BASE_URL` is set, but adk was built without its `openai` \
                    feature; run `cargo run --example quickstart --features adk-examples/openai`, or \
                    unset it to use the scripted model"
                .into(),
        );
    }
    println!(
        "model: the scripted model (set ANTHROPIC_API_KEY and add `--features \
         adk-examples/anthropic`, or OPENAI_API_KEY / OPENAI_BASE_URL and `--features \
         adk-examples/openai`, to use a real one)"
    );
    Ok(Arc::new(ScriptedModel::new()))
}

/// One line per record, in the order of the conversation's [`Transcript`]: each question, then
/// each model answer whole — its reasoning, its text and the tools it called, in the order the
/// model produced them (not the order they were written to storage).
pub async fn transcript(storage: &SharedStorage) -> Result<Vec<String>, BoxError> {
    let ctx = StorageContext::new(CONVERSATION);
    let messages = storage.fetch_messages(&ctx).await?;
    let thoughts = storage.fetch_thoughts(&ctx).await?;
    let tool_calls = storage.fetch_tool_calls(&ctx).await?;
    let text = |message: &adk::primitives::Message| {
        let text = message
            .content()
            .map(|content| content.render())
            .unwrap_or_default();
        format!("{:>9}: {text}", message.role().as_str())
    };
    let mut lines = Vec::new();
    for entry in &Transcript::new(&messages, &thoughts, &tool_calls) {
        let answer = match entry {
            Entry::User(message) => {
                lines.push(text(message));
                continue;
            }
            Entry::Answer(answer) => answer,
        };
        for part in answer.parts() {
            let line = match part {
                Part::Reasoning(thought) => {
                    let text = thought.content().render();
                    // Redacted thinking has no readable text: only its payload, for the provider.
                    let text = if text.is_empty() {
                        "(redacted)".to_owned()
                    } else {
                        text
                    };
                    format!("{:>9}: {text}", "reasoning")
                }
                Part::Text(message) => text(message),
                Part::Call(call) => {
                    let record = call.tool_call();
                    let result = match record.results() {
                        Some(ToolCallResults::Text(text)) => text.render(),
                        _ => "(no result)".to_owned(),
                    };
                    let args = serde_json::Value::Object(record.args().clone());
                    format!("{:>9}: {}({args}) -> {result}", "tool", record.tool())
                }
            };
            lines.push(line);
        }
    }
    Ok(lines)
}

/// Deletes the conversation's messages, reasoning and tool calls, for `--reset`.
pub async fn forget(storage: &SharedStorage) -> Result<(), BoxError> {
    let ctx = StorageContext::new(CONVERSATION);
    for message in storage.fetch_messages(&ctx).await? {
        storage
            .delete_message(&ctx, message.id().to_owned())
            .await?;
    }
    for thought in storage.fetch_thoughts(&ctx).await? {
        storage
            .delete_thought(&ctx, thought.id().to_owned())
            .await?;
    }
    for call in storage.fetch_tool_calls(&ctx).await? {
        storage.delete_tool_call(&ctx, call.id().to_owned()).await?;
    }
    Ok(())
}

/// Opens the store that keeps session state between runs: Google ADK's tables in the same
/// SQLite file as the conversation, or in the PostgreSQL database `options.database_url` names.
pub async fn open_sessions(options: &Options) -> Result<SharedSessionStore, BoxError> {
    if let Some(url) = &options.database_url {
        #[cfg(feature = "postgres")]
        {
            let sessions = adk::postgres::PostgresSessionStore::connect(url).await?;
            println!(
                "session state: Google ADK's tables in the PostgreSQL database in DATABASE_URL"
            );
            return Ok(SharedSessionStore::new(sessions));
        }
        #[cfg(not(feature = "postgres"))]
        {
            let _ = url;
            return Err(
                "`DATABASE_URL` is set, but the example was built without PostgreSQL; \
                        run `cargo run --example quickstart --features adk-examples/postgres`, \
                        or unset it to keep session state in SQLite"
                    .into(),
            );
        }
    }
    Ok(SharedSessionStore::new(
        SqliteSessionStore::open(database_path(options)).await?,
    ))
}

/// Runs one conversation of [`QUESTIONS`] with `model` and returns the transcript read back
/// from storage.
pub async fn run(options: &Options, model: Arc<dyn Executor>) -> Result<Vec<String>, BoxError> {
    let storage = open_storage(options).await?;
    let sessions = open_sessions(options).await?;
    if options.reset {
        // Through the stores, not by deleting the file: a connection of an earlier run that is
        // still closing would otherwise unlink the new file's write-ahead log. `user:` state
        // outlives a session by design, so the question count survives a reset.
        forget(&storage).await?;
        sessions
            .delete_session(&SessionKey::new("default", "default", CONVERSATION))
            .await?;
        println!("reset: forgot the conversation");
    }
    let earlier = storage
        .fetch_messages(&StorageContext::new(CONVERSATION))
        .await?
        .len();
    if earlier == 0 {
        println!("a new conversation");
    } else {
        println!("continuing the conversation: {earlier} messages from earlier runs loaded");
    }
    let remembered = sessions
        .user_state(&Default::default(), &Default::default())
        .await?;
    println!(
        "session state: {} questions asked in earlier runs (user:), temp: keys stored: {}",
        remembered
            .get("questions_asked")
            .map_or(0, |n| n.as_u64().unwrap_or(0)),
        sessions
            .get_session(&SessionKey::new("default", "default", CONVERSATION))
            .await?
            .is_some_and(|session| session.state.keys().any(|key| key.starts_with("temp:")))
    );
    let runner = TurnRunner::builder()
        .shared_storage(storage.clone())
        .session_store(sessions)
        .turn_input(count_questions)
        .executor(model)
        .tool(weather()?)
        .tool(calculator()?)
        // The model named in `OPENAI_MODEL` picks the tokenizer; the scripted model has none.
        .turn_input(load_history(
            &std::env::var("OPENAI_MODEL").unwrap_or_default(),
        ))
        .dispatch_input(enforce_budget)
        .observe(show_progress)
        .build();

    for question in QUESTIONS {
        println!("\n> {question}");
        let raw = RawTurnContext::new(CONVERSATION, "You are a helpful assistant.")
            .user_message(question)
            .stash(serde_json::json!({ "quickstart": { "budget": { "limit": 3 } } }));
        let outcome = runner.run(raw).await?.into_result()?;
        if !outcome.is_completed() {
            return Err(format!("the turn did not complete: {:?}", outcome.status).into());
        }
    }

    let lines = transcript(&storage).await?;
    println!("\ntranscript of `{CONVERSATION}`, read back from storage:");
    for line in &lines {
        println!("{line}");
    }
    Ok(lines)
}

/// Prints the assistant's answer as it streams, word by word, and each tool call as it is
/// announced and finished.
fn show_progress(event: &Event) {
    use std::io::Write;
    match event {
        // Shown before the first token: a real model may take seconds to start answering.
        Event::IterationStart { iteration, .. } => {
            println!("  (model call {}…)", iteration + 1);
        }
        Event::Message(content) => {
            if content.full == content.delta {
                print!("< ");
            }
            print!("{}", content.delta);
            if content.is_complete {
                println!();
            }
        }
        Event::ToolCall(call) => {
            let state = match (&call.results, call.is_error) {
                (None, _) => "requested".to_owned(),
                (Some(results), false) => format!("returned {results}"),
                (Some(results), true) => format!("failed: {results}"),
            };
            println!(
                "  tool call {} {}({}) {state}",
                call.id, call.tool, call.args
            );
        }
        _ => {}
    }
    // A failed flush only delays the words; the next line break prints them.
    let _ = std::io::stdout().flush();
}

/// Colour only on a terminal, and not when `NO_COLOR` is set to anything but the empty string.
pub fn use_colour(is_terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    is_terminal && no_color.is_none_or(|value| value.is_empty())
}

fn main() -> Result<(), BoxError> {
    use std::io::IsTerminal;
    // Logs: stderr, at the level RUST_LOG names (`RUST_LOG=adk=debug` shows each turn, its
    // dispatch and tool calls under the turn's span), warnings otherwise; colour only when
    // stderr is a terminal and NO_COLOR is unset (https://no-color.org).
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let colour = use_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
    );
    tracing_subscriber::fmt()
        .compact()
        .without_time()
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .with_env_filter(filter)
        .init();
    let options = Options::from_args();
    let ran = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async { run(&options, choose_model()?).await });
    if options.quick {
        // The quick mode's folder is private to this process; keep nothing behind.
        let _ = std::fs::remove_dir_all(&options.data_dir);
    }
    ran?;
    Ok(())
}
