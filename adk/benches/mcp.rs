//! What calling a tool through MCP over stdio adds to calling it directly, measured in the same
//! run: one `echo` tool, called as a plain adk `Tool` (`direct`) and as the adk tool an
//! `McpClient` made from the same tool served by `McpToolServer` in a child process over stdio
//! (`mcp_stdio`). The child is this bench binary itself, started with `ADK_MCP_BENCH_SERVE=1`,
//! so both sides are adk and the difference is the protocol: JSON-RPC encoding, two pipe hops,
//! rmcp's request bookkeeping and the result mapping.
//!
//! Run: `cargo bench -p checked-adk --bench mcp --features mcp -- --measurement-time 3 --warm-up-time 1`.
//! The medians, their difference (the added latency per call) and ratio are printed after
//! criterion's output.

use adk::mcp::{McpClient, McpServer, McpToolServer};
use adk::primitives::{Tool, ToolOutput, ToolRegistry};
use criterion::Criterion;
use serde_json::json;

#[path = "support/medians.rs"]
mod medians;
use medians::{criterion_home, median_nanoseconds};

const GROUP: &str = "mcp_tool_call";

fn echo() -> Tool {
    Tool::builder("echo")
        .description("Echoes its message.")
        .input_schema(json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"]
        }))
        .handler(
            |args, _| async move { Ok(args["message"].as_str().unwrap_or_default().to_owned()) },
        )
        .build()
        .expect("the echo tool builds")
}

fn serve() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tools = ToolRegistry::from_tools([echo()]).expect("registry");
    runtime
        .block_on(McpToolServer::new(tools).serve_stdio())
        .expect("serving over stdio");
}

fn bench(criterion: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let program = std::env::current_exe().expect("the bench's own path");
    let client = runtime
        .block_on(McpClient::connect(
            McpServer::stdio("bench", program).env("ADK_MCP_BENCH_SERVE", "1"),
        ))
        .expect("the bench server answers");
    let through_mcp = client.tools().remove(0);
    let direct = echo();
    let args = json!({"message": "hello"});

    let mut group = criterion.benchmark_group(GROUP);
    for (name, tool) in [("direct", &direct), ("mcp_stdio", &through_mcp)] {
        let args = &args;
        group.bench_function(name, |bencher| {
            bencher.to_async(&runtime).iter(|| async move {
                let checked = tool.validate(args.clone()).expect("valid");
                let output = tool.call(checked, tool.invocation("call")).await;
                assert!(matches!(output, Ok(ToolOutput::Text(ref text)) if text == "hello"));
            });
        });
    }
    group.finish();
    runtime.block_on(client.shutdown());
}

fn print_added_latency() {
    let Some(home) = criterion_home() else {
        return;
    };
    let direct = median_nanoseconds(&home, GROUP, "direct");
    let mcp = median_nanoseconds(&home, GROUP, "mcp_stdio");
    if let (Some(direct), Some(mcp)) = (direct, mcp) {
        println!(
            "\nper tool call (criterion medians): direct {:.2} µs, MCP over stdio {:.2} µs; \
             added by MCP {:.2} µs ({:.0}x)",
            direct / 1e3,
            mcp / 1e3,
            (mcp - direct) / 1e3,
            mcp / direct
        );
    }
}

fn main() {
    if std::env::var_os("ADK_MCP_BENCH_SERVE").is_some() {
        serve();
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    print_added_latency();
}
