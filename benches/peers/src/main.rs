//! The peers' turn workload, side by side in one process: checked-adk, adk-rust 2.3 and rig 0.44.
//!
//! Every row runs the same turn: a fresh session (a new id each turn), one user message, a mocked
//! model that answers at once with one assistant message that the session stores, and 4
//! pass-through callbacks, hooks or middleware, on a current-thread tokio runtime; the session is
//! removed after the turn so every turn starts from the same store. `PEERS_ENTRY` says how the
//! harness enters the runtime, the same for every row: `each-turn` (the default) is one
//! `block_on` a turn, so each turn also pays for entering the runtime and for moving its future
//! into `block_on`; `once` runs a sample's turns in one `block_on`, as criterion's
//! `b.to_async(&runtime).iter(..)` does (the peers' own benches use it).
//!
//! - `adk/in-memory adapter`, `adk/NoopStorage`: `adk/benches/support/peers_workload.rs` (the
//!   same code the `peers/*` rows of `adk/benches/turn.rs` run): 4 pass-through `#[middleware]`
//!   (one per pipeline), an executor that stores the answer through the adapter and acks.
//! - `adk-rust`: an `LlmAgent` over a mocked `Llm` (one `LlmResponse`, turn complete) with
//!   pass-through before/after agent and before/after model callbacks, run by `Runner` over an
//!   `InMemorySessionService`; per turn the session is created, the event stream drained and the
//!   session deleted.
//! - `rig`: a rig-agent `Agent` over a `Model` whose wire is rig-core's scripted completion wire
//!   (`MockScript`) and whose transport answers every request with one text response, with 4
//!   pass-through `AgentHook`s (every default method: they observe every run event) and an
//!   `InMemoryConversationMemory`; per turn a prompt on a new conversation id, which rig loads
//!   and appends to, then cleared.
//!
//! Modes:
//! - no arguments: `PEERS_ROUNDS` rounds (default 5), each running every row for
//!   `PEERS_TURNS` turns (default 20,000), rows alternating; prints each row's time per turn
//!   (median of the rounds), allocations per turn, and the ratios to adk.
//! - `PEERS_ROW=<row>` (`PEERS_ROW=list` lists them): runs that row `PEERS_ITERATIONS` times
//!   (default 1000) and exits, for `valgrind --tool=callgrind` (difference of two iteration
//!   counts, divided by the difference).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

#[path = "../../../adk/benches/support/peers_workload.rs"]
mod peers_workload;
use peers_workload::{ANSWER, PROMPT, PeersWorkload, SYSTEM};

#[path = "../../../adk/benches/support/counting_allocator.rs"]
mod counting_allocator;

#[global_allocator]
static GLOBAL: counting_allocator::CountingAllocator = counting_allocator::CountingAllocator;

mod adk_rust_row {
    use super::*;
    use adk_rust::agent::LlmAgentBuilder;
    use adk_rust::runner::Runner;
    use adk_rust::session::{CreateRequest, DeleteRequest, InMemorySessionService, SessionService};
    use adk_rust::{
        BeforeModelResult, Content, Llm, LlmRequest, LlmResponse, LlmResponseStream, async_trait,
    };
    use futures::StreamExt;

    /// The mocked model: one complete response with the answer, at once.
    struct MockModel;

    #[async_trait]
    impl Llm for MockModel {
        fn name(&self) -> &str {
            "mock-model"
        }

        async fn generate_content(
            &self,
            _request: LlmRequest,
            _stream: bool,
        ) -> adk_rust::Result<LlmResponseStream> {
            let response = LlmResponse::new(Content::new("model").with_text(ANSWER));
            Ok(Box::pin(futures::stream::once(async move { Ok(response) })))
        }
    }

    pub struct Row {
        runner: Runner,
        sessions: Arc<dyn SessionService>,
    }

    const APP: &str = "bench";
    const USER: &str = "user";

    impl Row {
        pub fn new() -> Self {
            let agent = LlmAgentBuilder::new("bench")
                .instruction(SYSTEM)
                .model(Arc::new(MockModel))
                .before_callback(Box::new(|_ctx| Box::pin(async { Ok(None) })))
                .before_model_callback(Box::new(|_ctx, request| {
                    Box::pin(async move { Ok(BeforeModelResult::Continue(request)) })
                }))
                .after_model_callback(Box::new(|_ctx, _response| Box::pin(async { Ok(None) })))
                .after_callback(Box::new(|_ctx| Box::pin(async { Ok(None) })))
                .build()
                .expect("a valid agent");
            let sessions: Arc<dyn SessionService> = Arc::new(InMemorySessionService::new());
            let runner = Runner::builder()
                .app_name(APP)
                .agent(Arc::new(agent))
                .session_service(sessions.clone())
                .build()
                .expect("a valid runner");
            Self { runner, sessions }
        }

        /// One turn on a fresh session; returns how many events the turn yielded.
        pub async fn turn(&self, turn: u64) -> usize {
            let session = format!("session-{turn}");
            self.sessions
                .create(CreateRequest {
                    app_name: APP.to_owned(),
                    user_id: USER.to_owned(),
                    session_id: Some(session.clone()),
                    state: HashMap::new(),
                })
                .await
                .expect("a new session");
            let mut events = self
                .runner
                .run_str(USER, &session, Content::new("user").with_text(PROMPT))
                .await
                .expect("the turn starts");
            let mut count = 0;
            while let Some(event) = events.next().await {
                black_box(event.expect("an event"));
                count += 1;
            }
            drop(events);
            self.sessions
                .delete(DeleteRequest {
                    app_name: APP.to_owned(),
                    user_id: USER.to_owned(),
                    session_id: session,
                })
                .await
                .expect("the session is deleted");
            count
        }
    }
}

mod rig_row {
    use super::*;
    use rig_agent::{Agent, AgentBuilder, AgentHook};
    use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse, Usage};
    use rig_core::driver::{Exchange, Model, Opened, Opening, Transport};
    use rig_core::memory::{ConversationMemory, InMemoryConversationMemory};
    use rig_core::message::Origin;
    use rig_core::test_utils::{MOCK_API, MOCK_PROVIDER, MockFrame, MockScript};

    /// The mocked model's runtime: every request is answered with the same text response.
    #[derive(Clone)]
    struct Answering {
        response: Arc<CompletionResponse>,
    }

    impl Transport<MockScript> for Answering {
        fn send(&self, _request: CompletionRequest, _exchange: Exchange) -> Opening<MockFrame> {
            let response = (*self.response).clone();
            Opening::ready(Opened::new(futures::stream::iter([Ok(
                MockFrame::Response(Box::new(response)),
            )])))
        }
    }

    /// A hook that overrides nothing: every event proceeds.
    struct PassThrough;

    impl AgentHook for PassThrough {}

    pub struct Row {
        agent: Agent,
        memory: InMemoryConversationMemory,
    }

    impl Row {
        pub fn new() -> Self {
            let response = CompletionResponse::new(
                vec![AssistantContent::text(ANSWER)],
                Usage::default(),
                Origin::new(MOCK_API, MOCK_PROVIDER, ""),
                serde_json::Value::Null,
            );
            let model = Model::new(
                MockScript::default(),
                Answering {
                    response: Arc::new(response),
                },
            );
            let memory = InMemoryConversationMemory::new();
            let agent = AgentBuilder::new(model)
                .preamble(SYSTEM)
                .memory(memory.clone())
                .add_hook(PassThrough)
                .add_hook(PassThrough)
                .add_hook(PassThrough)
                .add_hook(PassThrough)
                .build();
            Self { agent, memory }
        }

        /// One turn on a fresh conversation; returns the answer's length.
        pub async fn turn(&self, turn: u64) -> usize {
            let conversation = format!("session-{turn}");
            let response = self
                .agent
                .prompt(PROMPT)
                .conversation(conversation.as_str())
                .await
                .expect("the turn completes");
            let answer = black_box(response).output().len();
            self.memory
                .clear(&conversation.as_str().into())
                .await
                .expect("the conversation is cleared");
            answer
        }
    }
}

const ROWS: [&str; 4] = [
    "adk/in-memory adapter",
    "adk/NoopStorage",
    "adk-rust",
    "rig",
];

struct Rows {
    adk: PeersWorkload,
    adk_rust: adk_rust_row::Row,
    rig: rig_row::Row,
}

impl Rows {
    fn new() -> Self {
        Self {
            adk: PeersWorkload::new(),
            adk_rust: adk_rust_row::Row::new(),
            rig: rig_row::Row::new(),
        }
    }

    fn index(name: &str) -> usize {
        ROWS.iter().position(|row| *row == name).unwrap_or_else(|| {
            panic!("no row named `{name}`; PEERS_ROW=list lists them");
        })
    }

    /// One turn of row `row` on session number `turn`, in a `block_on` of its own.
    fn turn(&self, runtime: &tokio::runtime::Runtime, row: usize, turn: u64) {
        match row {
            0 => {
                let stored = runtime.block_on(self.adk.turn_in_memory(turn));
                assert_eq!(stored, 2, "adk stored the user's message and the answer");
            }
            1 => {
                assert!(runtime.block_on(self.adk.turn_noop(turn)));
            }
            2 => {
                black_box(runtime.block_on(self.adk_rust.turn(turn)));
            }
            _ => {
                black_box(runtime.block_on(self.rig.turn(turn)));
            }
        }
    }

    /// `count` turns of row `row` on sessions `first..first + count`, all in one `block_on`, as
    /// criterion's `b.to_async(&runtime).iter(..)` runs its iterations (the peers' own benches
    /// use it): the runtime is entered once for the lot, so no turn pays for entering it.
    fn turns_in_one_block_on(
        &self,
        runtime: &tokio::runtime::Runtime,
        row: usize,
        first: u64,
        count: u64,
    ) {
        let sessions = first..first + count;
        match row {
            0 => runtime.block_on(async {
                for turn in sessions {
                    let stored = self.adk.turn_in_memory(turn).await;
                    assert_eq!(stored, 2, "adk stored the user's message and the answer");
                }
            }),
            1 => runtime.block_on(async {
                for turn in sessions {
                    assert!(self.adk.turn_noop(turn).await);
                }
            }),
            2 => runtime.block_on(async {
                for turn in sessions {
                    black_box(self.adk_rust.turn(turn).await);
                }
            }),
            _ => runtime.block_on(async {
                for turn in sessions {
                    black_box(self.rig.turn(turn).await);
                }
            }),
        }
    }

    /// `count` turns of row `row` from session `first` on, entered as `entry` says.
    fn turns(
        &self,
        runtime: &tokio::runtime::Runtime,
        entry: Entry,
        row: usize,
        first: u64,
        count: u64,
    ) {
        match entry {
            Entry::EachTurn => {
                for turn in first..first + count {
                    self.turn(runtime, row, turn);
                }
            }
            Entry::Once => self.turns_in_one_block_on(runtime, row, first, count),
        }
    }
}

/// How the harness enters the runtime (`PEERS_ENTRY`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// `each-turn` (the default): one `block_on` a turn, so every turn also pays for entering
    /// the runtime and for moving its future into `block_on`.
    EachTurn,
    /// `once`: one `block_on` for all the turns of a sample, as criterion's async bencher.
    Once,
}

impl Entry {
    fn from_env() -> Self {
        match std::env::var("PEERS_ENTRY").as_deref() {
            Ok("once") => Self::Once,
            Ok("each-turn") | Err(_) => Self::EachTurn,
            Ok(other) => panic!("PEERS_ENTRY is `each-turn` or `once`, not `{other}`"),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::EachTurn => "one block_on a turn",
            Self::Once => "one block_on a sample, as criterion's to_async(..).iter",
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let rows = Rows::new();
    let entry = Entry::from_env();
    let mut session = 0_u64;
    // The first of `count` fresh session numbers.
    let mut next_sessions = |count: u64| {
        let first = session + 1;
        session += count;
        first
    };

    if let Ok(row) = std::env::var("PEERS_ROW") {
        if row == "list" {
            for name in ROWS {
                println!("{name}");
            }
            return;
        }
        let row = Rows::index(&row);
        let iterations = env_number("PEERS_ITERATIONS", 1000);
        rows.turns(&runtime, entry, row, next_sessions(iterations), iterations);
        return;
    }

    let rounds = env_number("PEERS_ROUNDS", 5);
    let turns = env_number("PEERS_TURNS", 20_000);
    // Warm-up, and a check that every row completes its turn (the row asserts it).
    let mut allocations = [0_f64; ROWS.len()];
    for (row, per_turn) in allocations.iter_mut().enumerate() {
        rows.turns(&runtime, entry, row, next_sessions(100), 100);
        let first = next_sessions(100);
        let counted = counting_allocator::counted(|| rows.turns(&runtime, entry, row, first, 100));
        *per_turn = counted as f64 / 100.0;
    }

    println!("the runtime entered with {}", entry.describe());
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); ROWS.len()];
    for round in 0..rounds {
        for (row, samples) in times.iter_mut().enumerate() {
            let first = next_sessions(turns);
            let start = Instant::now();
            rows.turns(&runtime, entry, row, first, turns);
            let per_turn = start.elapsed().as_nanos() as f64 / turns as f64;
            println!(
                "round {}/{rounds}  {:<22} {:>9.0} ns a turn",
                round + 1,
                ROWS[row],
                per_turn
            );
            samples.push(per_turn);
        }
    }

    let medians: Vec<f64> = times
        .iter_mut()
        .map(|samples| {
            samples.sort_by(f64::total_cmp);
            samples[samples.len() / 2]
        })
        .collect();
    println!(
        "\n{rounds} rounds of {turns} turns a row, alternating; median of the rounds \
         (ratio = row / adk's in-memory row; adk's NoopStorage row in brackets):"
    );
    for (row, name) in ROWS.iter().enumerate() {
        println!(
            "  {name:<22} {:>9.2} µs a turn  {:>6.1} allocations a turn  {:>6.2}x  ({:.2}x)",
            medians[row] / 1000.0,
            allocations[row],
            medians[row] / medians[0],
            medians[row] / medians[1]
        );
    }
}
