//! Time to first token (issue 33 item 2): how long a streamed chunk takes from the model's
//! server to a listener of the turn's events, through the OpenAI executor.
//!
//! A local HTTP server streams an SSE answer one chunk at a time, a millisecond apart, each
//! chunk's text its index; just before writing a chunk it notes the time. The turn's listener
//! (`TurnRunnerBuilder::observe`) notes when it sees the `Event::Message` of that chunk. The
//! figure is the median of the differences. It includes the loopback socket and the wake-up of
//! the reading task, so the baseline, run alternately in the same invocation against the same
//! server, is a plain reqwest client noting when the same chunk's bytes reach it: the
//! executor's own share is the difference of the medians.
//!
//! ```sh
//! cargo bench -p checked-adk --bench first_token --features openai
//! ```
//!
//! `ADK_BENCH_ROUNDS` (default 5) rounds of each, 200 chunks a round.

// A bench binary: its helpers need no documentation.
#![allow(missing_docs)]

#[path = "support/http_request.rs"]
mod http_request;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use adk::TurnRunner;
use adk::context::RawTurnContext;
use adk::events::Event;
use adk::openai::{OpenAiConfig, OpenAiExecutor};
use adk::storage::NoopStorage;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

const CHUNKS: usize = 200;

/// Times in nanoseconds since `base`, one slot per chunk (0: not yet).
struct Stamps {
    base: Instant,
    sent: Vec<AtomicU64>,
    seen: Vec<AtomicU64>,
}

impl Stamps {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            base: Instant::now(),
            sent: (0..CHUNKS).map(|_| AtomicU64::new(0)).collect(),
            seen: (0..CHUNKS).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn reset(&self) {
        for slot in self.sent.iter().chain(&self.seen) {
            slot.store(0, Ordering::SeqCst);
        }
    }

    /// Notes every chunk index in `text` (indices followed by a space) as seen now.
    fn saw(&self, text: &str) {
        let now = self.now();
        for index in text
            .split_whitespace()
            .filter_map(|n| n.parse::<usize>().ok())
        {
            if let Some(slot) = self.seen.get(index) {
                let _ = slot.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
    }

    /// The median latency over the chunks of this round.
    fn median(&self) -> Duration {
        let mut latencies: Vec<u64> = self
            .sent
            .iter()
            .zip(&self.seen)
            .map(|(sent, seen)| {
                let (sent, seen) = (sent.load(Ordering::SeqCst), seen.load(Ordering::SeqCst));
                assert!(sent > 0 && seen >= sent, "a chunk was not seen");
                seen - sent
            })
            .collect();
        latencies.sort_unstable();
        Duration::from_nanos(latencies[latencies.len() / 2])
    }
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

/// Streams the answer to every request, one chunk a millisecond, noting when each is written.
async fn serve(stamps: Arc<Stamps>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            socket.set_nodelay(true).expect("TCP_NODELAY");
            let stamps = Arc::clone(&stamps);
            tokio::spawn(async move {
                if !http_request::read_request(&mut socket).await {
                    return;
                }
                let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                if socket.write_all(head).await.is_err() {
                    return;
                }
                for index in 0..CHUNKS {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let bytes = chunk(index);
                    stamps.sent[index].store(stamps.now(), Ordering::SeqCst);
                    if socket.write_all(bytes.as_bytes()).await.is_err() {
                        return;
                    }
                }
                let finish = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
                let _ = socket
                    .write_all(format!("data: {finish}\n\ndata: [DONE]\n\n").as_bytes())
                    .await;
                let _ = socket.shutdown().await;
            });
        }
    });
    base_url
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
    let base_url = runtime.block_on(serve(Arc::clone(&stamps)));
    let config = OpenAiConfig::new(&base_url, "bench")
        .expect("config")
        .with_total_timeout(None);
    let listener_stamps = Arc::clone(&stamps);
    let runner = TurnRunner::builder()
        .storage(NoopStorage::new())
        .executor(OpenAiExecutor::new(config).expect("executor"))
        .observe(move |event| {
            if let Event::Message(content) = event {
                listener_stamps.saw(&content.delta);
            }
        })
        .build();
    let client = reqwest::Client::new();
    let endpoint = format!("{base_url}/chat/completions");

    let (mut executor, mut baseline) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        stamps.reset();
        runtime.block_on(async {
            let outcome = runner
                .run(RawTurnContext::new("bench", "You are terse."))
                .await
                .expect("the turn");
            assert!(outcome.is_completed(), "{:?}", outcome.status);
        });
        executor.push(stamps.median());

        stamps.reset();
        runtime.block_on(async {
            let response = client
                .post(&endpoint)
                .body("{}")
                .send()
                .await
                .expect("send");
            let mut stream = response.bytes_stream();
            while let Some(bytes) = stream.next().await {
                let bytes = bytes.expect("a chunk");
                // Each chunk's text is its index and a space, inside its `data:` line.
                let text = String::from_utf8_lossy(&bytes);
                for line in text.lines().filter_map(|line| line.strip_prefix("data: ")) {
                    if let Ok(value) = serde_json::from_str::<serde_json::Value>(line)
                        && let Some(content) = value["choices"][0]["delta"]["content"].as_str()
                    {
                        stamps.saw(content);
                    }
                }
            }
        });
        baseline.push(stamps.median());
        println!(
            "round {round}: median from the server's write to the listener {:>7.1} µs, \
             to the plain client {:>7.1} µs",
            micros(executor[round - 1]),
            micros(baseline[round - 1])
        );
    }
    executor.sort_unstable();
    baseline.sort_unstable();
    let (executor, baseline) = (executor[rounds / 2], baseline[rounds / 2]);
    println!(
        "\nmedian of the rounds: to the listener {:.1} µs, to the plain client {:.1} µs, \
         the executor's share {:.1} µs",
        micros(executor),
        micros(baseline),
        micros(executor) - micros(baseline)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
