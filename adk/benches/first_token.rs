//! Time to first token (issue 33 item 2): how long a streamed chunk takes from the model's
//! server to a listener of the turn's events, through the OpenAI executor, beyond what the
//! loopback transport itself takes.
//!
//! A local HTTP server streams an SSE answer one chunk at a time, a millisecond apart, each
//! chunk's text its index, to two clients at once: the turn's OpenAI executor and a plain
//! reqwest client (the baseline), each on its own connection. Both requests are in flight
//! together; once both have arrived the server writes every chunk to both sockets, noting the
//! time just before each write (which socket goes first alternates chunk by chunk). The turn's
//! listener (`TurnRunnerBuilder::observe`) notes when it sees that chunk's `Event::Message`,
//! the plain client when the chunk's bytes reach it. Per chunk, the executor's share is
//! (listener saw − its write) − (plain client saw − its write): the two paths share the
//! machine's spread at that moment (the loopback, the wake-ups, the other helpers' load), so
//! the difference cancels most of it. The figure is the median of those per-chunk differences.
//!
//! ```sh
//! cargo bench -p checked-adk --bench first_token --features openai
//! ```
//!
//! `ADK_BENCH_ROUNDS` (default 5) rounds, 200 chunks a round.

// A bench binary: its helpers need no documentation.
#![allow(missing_docs)]

#[path = "support/http_request.rs"]
mod http_request;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use adk::TurnRunner;
use adk::context::RawTurnContext;
use adk::events::Event;
use adk::openai::{OpenAiConfig, OpenAiExecutor};
use adk::storage::NoopStorage;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const CHUNKS: usize = 200;

/// One client's times in nanoseconds since the stamps' base, one slot per chunk (0: not yet).
struct Path {
    sent: Vec<AtomicU64>,
    seen: Vec<AtomicU64>,
}

impl Path {
    fn new() -> Self {
        Self {
            sent: (0..CHUNKS).map(|_| AtomicU64::new(0)).collect(),
            seen: (0..CHUNKS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Chunk `index`'s latency from its write to its sight, in nanoseconds.
    fn latency(&self, index: usize) -> i64 {
        let (sent, seen) = (
            self.sent[index].load(Ordering::SeqCst),
            self.seen[index].load(Ordering::SeqCst),
        );
        assert!(sent > 0 && seen >= sent, "chunk {index} was not seen");
        i64::try_from(seen - sent).unwrap_or(i64::MAX)
    }
}

/// The two clients' paths: the executor's (to the turn's listener) and the plain client's.
struct Stamps {
    base: Instant,
    executor: Path,
    plain: Path,
}

impl Stamps {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            base: Instant::now(),
            executor: Path::new(),
            plain: Path::new(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn reset(&self) {
        for path in [&self.executor, &self.plain] {
            for slot in path.sent.iter().chain(&path.seen) {
                slot.store(0, Ordering::SeqCst);
            }
        }
    }

    /// Notes every chunk index in `text` (indices followed by a space) as seen now on `path`.
    fn saw(&self, path: &Path, text: &str) {
        let now = self.now();
        for index in text
            .split_whitespace()
            .filter_map(|n| n.parse::<usize>().ok())
        {
            if let Some(slot) = path.seen.get(index) {
                let _ = slot.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }

    /// This round's per-chunk latencies: the executor's, the plain client's, and their
    /// differences, each in nanoseconds.
    fn round(&self) -> Round {
        let executor: Vec<i64> = (0..CHUNKS).map(|i| self.executor.latency(i)).collect();
        let plain: Vec<i64> = (0..CHUNKS).map(|i| self.plain.latency(i)).collect();
        let differences = executor.iter().zip(&plain).map(|(e, p)| e - p).collect();
        Round {
            executor,
            plain,
            differences,
        }
    }
}

struct Round {
    executor: Vec<i64>,
    plain: Vec<i64>,
    differences: Vec<i64>,
}

fn median(values: &[i64]) -> i64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

fn chunk(index: usize) -> String {
    let chunk = serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "bench",
        "choices": [{"index": 0, "delta": {"content": format!("{index} ")}, "finish_reason": null}],
    });
    format!("data: {chunk}\n\n")
}

/// Accepts one connection on `listener`, reads its request and answers with the SSE head.
async fn accept(listener: &TcpListener) -> Option<TcpStream> {
    let (mut socket, _) = listener.accept().await.ok()?;
    socket.set_nodelay(true).ok()?;
    if !http_request::read_request(&mut socket).await {
        return None;
    }
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    socket.write_all(head).await.ok()?;
    Some(socket)
}

/// Serves rounds: each takes one request on each listener, then streams the answer to both at
/// once, one chunk a millisecond, noting when each chunk is written to each socket. Returns
/// the executor's base URL and the plain client's endpoint.
async fn serve(stamps: Arc<Stamps>) -> (String, String) {
    let executor_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let plain_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base_url = format!(
        "http://{}/v1",
        executor_listener.local_addr().expect("address")
    );
    let plain_url = format!(
        "http://{}/v1/chat/completions",
        plain_listener.local_addr().expect("address")
    );
    tokio::spawn(async move {
        loop {
            let (executor, plain) =
                tokio::join!(accept(&executor_listener), accept(&plain_listener));
            let (Some(mut executor), Some(mut plain)) = (executor, plain) else {
                continue;
            };
            for index in 0..CHUNKS {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                let bytes = chunk(index);
                // Which socket is written first alternates, so neither path always waits for
                // the other's write.
                let mut order = [
                    (&mut executor, &stamps.executor),
                    (&mut plain, &stamps.plain),
                ];
                if index % 2 == 1 {
                    order.reverse();
                }
                for (socket, path) in order {
                    path.sent[index].store(stamps.now(), Ordering::SeqCst);
                    if socket.write_all(bytes.as_bytes()).await.is_err() {
                        return;
                    }
                }
            }
            let finish = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
            let tail = format!("data: {finish}\n\ndata: [DONE]\n\n");
            for socket in [&mut executor, &mut plain] {
                let _ = socket.write_all(tail.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        }
    });
    (base_url, plain_url)
}

/// The plain client: posts to the server and notes when each chunk's bytes arrive.
async fn plain_client(client: &reqwest::Client, endpoint: &str, stamps: &Stamps) {
    let response = client.post(endpoint).body("{}").send().await.expect("send");
    let mut stream = response.bytes_stream();
    while let Some(bytes) = stream.next().await {
        let bytes = bytes.expect("a chunk");
        // Each chunk's text is its index and a space, inside its `data:` line.
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines().filter_map(|line| line.strip_prefix("data: ")) {
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(line)
                && let Some(content) = value["choices"][0]["delta"]["content"].as_str()
            {
                stamps.saw(&stamps.plain, content);
            }
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let rounds: usize = std::env::var("ADK_BENCH_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(5);
    let stamps = Stamps::new();
    let (base_url, endpoint) = runtime.block_on(serve(Arc::clone(&stamps)));
    let config = OpenAiConfig::new(&base_url, "bench")
        .expect("config")
        .with_total_timeout(None);
    let listener_stamps = Arc::clone(&stamps);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(OpenAiExecutor::new(config).expect("executor"))
        .observe(move |event| {
            if let Event::Message(content) = event {
                listener_stamps.saw(&listener_stamps.executor, &content.delta);
            }
        })
        .build();
    let client = reqwest::Client::new();

    let mut all_differences = Vec::new();
    let mut round_medians = Vec::new();
    for round in 1..=rounds {
        stamps.reset();
        runtime.block_on(async {
            let turn = async {
                let outcome = runner
                    .run(RawTurnContext::new("bench", "You are terse."))
                    .await
                    .expect("the turn");
                assert!(outcome.is_completed(), "{:?}", outcome.status);
            };
            tokio::join!(turn, plain_client(&client, &endpoint, &stamps));
        });
        let measured = stamps.round();
        let difference = median(&measured.differences);
        println!(
            "round {round}: median per chunk from the server's write to the listener {:>7.1} µs, \
             to the plain client {:>7.1} µs; median of the per-chunk differences {:>6.1} µs",
            micros(median(&measured.executor)),
            micros(median(&measured.plain)),
            micros(difference),
        );
        round_medians.push(difference);
        all_differences.extend(measured.differences);
    }
    all_differences.sort_unstable();
    let quartile = |q: usize| all_differences[all_differences.len() * q / 4];
    println!(
        "\nthe executor's share, median of the per-chunk differences: {:.1} µs over all {} \
         chunks (quartiles {:.1} / {:.1} µs); median of the rounds' medians {:.1} µs",
        micros(median(&all_differences)),
        all_differences.len(),
        micros(quartile(1)),
        micros(quartile(3)),
        micros(median(&round_medians)),
    );
}

fn micros(nanoseconds: i64) -> f64 {
    nanoseconds as f64 / 1e3
}
