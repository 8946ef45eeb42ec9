//! adk's typed tools served over MCP, for the tests that call them from the Python `mcp`
//! client (tests/tests/mcp.rs).
//!
//! `mcp_tool_server stdio` serves on stdin/stdout. `mcp_tool_server http` serves streamable
//! HTTP on 127.0.0.1 and a free port, prints the endpoint's URL on one line of stdout, and
//! stops when stdin closes.

use adk::mcp::McpToolServer;
use adk::primitives::{Tool, ToolRegistry};
use tokio::io::AsyncReadExt;

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

/// Where and how far ahead.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// The city to forecast.
    city: String,
    /// How many days, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    days: Option<u8>,
}

fn registry() -> Result<ToolRegistry, Box<dyn std::error::Error>> {
    let add = Tool::typed::<Add>("add")
        .description("Adds two integers.")
        .read_only()
        .handler(|args: Add, _| async move { Ok((args.a + args.b).to_string()) })
        .build()?;
    let forecast = Tool::typed::<Forecast>("forecast")
        .description("Weather forecast for a city.")
        .read_only()
        .handler(|args: Forecast, _| async move {
            Ok(format!(
                "{}: sunny for {} days",
                args.city,
                args.days.unwrap_or(1)
            ))
        })
        .build()?;
    let fail = Tool::builder("fail")
        .description("Always fails.")
        .handler(|_, _| async { Err::<String, _>("the disk is full".into()) })
        .build()?;
    let secret = Tool::builder("secret")
        .description("Hidden from clients.")
        .handler(|_, _| async { Ok("hidden") })
        .build()?;
    let mut tools = ToolRegistry::from_tools([add, forecast, fail, secret])?;
    tools.hide(["secret"]);
    Ok(tools)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = McpToolServer::new(registry()?).named("adk-test-tools", "1.0.0");
    match std::env::args().nth(1).as_deref() {
        Some("stdio") => server.serve_stdio().await?,
        Some("http") => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let running = server.serve_http(listener).await?;
            println!("{}", running.url());
            let mut sink = Vec::new();
            let _ = tokio::io::stdin().read_to_end(&mut sink).await;
            running.shutdown().await;
        }
        _ => return Err("usage: mcp_tool_server stdio | http".into()),
    }
    Ok(())
}
