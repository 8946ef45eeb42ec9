//! The OpenAI executor reading a streamed answer over real HTTP from a local server, beside the
//! hand-written floor measured in the same run: a plain reqwest client posting the same request
//! and draining the same bytes without parsing them.
//!
//! Two answers, each a shape that used to cost time quadratic in its size:
//! - one 8 MiB `content` delta in a single SSE line (the parser rescanned its pending buffer on
//!   every read);
//! - 32,768 small deltas (every `Event::Message` copied the whole text so far).
//!
//! Run: `cargo bench -p checked-adk --bench openai --features openai -- --measurement-time 2 --warm-up-time 1`.
//! The ratios of criterion's medians are printed after its output.

#[path = "support/http_request.rs"]
mod http_request;

use std::sync::Arc;

use adk::TurnRunner;
use adk::context::RawTurnContext;
use adk::openai::{OpenAiConfig, OpenAiExecutor};
use adk::storage::NoopStorage;
use criterion::Criterion;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};

fn event(delta: &serde_json::Value) -> String {
    let chunk = serde_json::json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    });
    format!("data: {chunk}\n\n")
}

fn response(events: &[String]) -> Arc<Vec<u8>> {
    let mut bytes =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec();
    for event in events {
        bytes.extend_from_slice(event.as_bytes());
    }
    let finish =
        serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    bytes.extend_from_slice(format!("data: {finish}\n\ndata: [DONE]\n\n").as_bytes());
    Arc::new(bytes)
}

/// Serves `body` to every request, in 16 KiB writes, until the runtime ends.
async fn serve(body: Arc<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base_url = format!("http://{}/v1", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = Arc::clone(&body);
            tokio::spawn(async move {
                if !http_request::read_request(&mut socket).await {
                    return;
                }
                for piece in body.chunks(16 * 1024) {
                    if socket.write_all(piece).await.is_err() {
                        return;
                    }
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    base_url
}

fn bench(criterion: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let long_line = response(&[event(&serde_json::json!({"content": "x".repeat(8 << 20)}))]);
    let many_deltas: Vec<String> = (0..32_768)
        .map(|_| event(&serde_json::json!({"content": "word "})))
        .collect();
    let many_deltas = response(&many_deltas);

    for (group_name, body) in [
        ("openai_long_line", long_line),
        ("openai_many_deltas", many_deltas),
    ] {
        let base_url = runtime.block_on(serve(body));
        let config = OpenAiConfig::new(&base_url, "bench")
            .expect("config")
            .with_total_timeout(None);
        let runner = TurnRunner::builder()
            .storage(NoopStorage::new())
            .executor(OpenAiExecutor::new(config).expect("executor"))
            .build();
        let client = reqwest::Client::new();
        let endpoint = format!("{base_url}/chat/completions");

        let mut group = criterion.benchmark_group(group_name);
        group.sample_size(10);
        let (runner, client, endpoint) = (&runner, &client, &endpoint);
        group.bench_function("executor", |bencher| {
            bencher.to_async(&runtime).iter(|| async move {
                let outcome = runner
                    .run(RawTurnContext::new("bench", "You are terse."))
                    .await
                    .expect("turn");
                assert!(outcome.is_completed(), "{:?}", outcome.status);
            });
        });
        group.bench_function("baseline", |bencher| {
            bencher.to_async(&runtime).iter(|| async move {
                use futures_util::StreamExt;
                let response = client.post(endpoint).body("{}").send().await.expect("send");
                let mut stream = response.bytes_stream();
                let mut total = 0;
                while let Some(chunk) = stream.next().await {
                    total += chunk.expect("chunk").len();
                }
                assert!(total > 0);
            });
        });
        group.finish();
    }
}

fn print_ratios() {
    let Some(home) = criterion_home() else {
        return;
    };
    println!("\nexecutor / baseline (criterion medians):");
    for group in ["openai_long_line", "openai_many_deltas"] {
        let executor = median_nanoseconds(&home, group, "executor").map(|ns| ns / 1e6);
        let baseline = median_nanoseconds(&home, group, "baseline").map(|ns| ns / 1e6);
        if let (Some(executor), Some(baseline)) = (executor, baseline) {
            println!(
                "  {group:<20} executor {executor:>8.2} ms  baseline {baseline:>8.2} ms  ratio {:.2}x",
                executor / baseline
            );
        }
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    print_ratios();
}
