//! Model Context Protocol (feature `mcp`): any MCP server's tools as adk tools, and adk's tools
//! served to any MCP client, over stdio and streamable HTTP.
//!
//! The protocol is the official Rust SDK's, [`rmcp`](https://docs.rs/rmcp) (pinned to one
//! minor release); this module maps between it and adk:
//!
//! - [`McpClient`] connects to one server ([`McpServer`]: a child process over stdio, or a
//!   streamable-HTTP endpoint with headers), lists its tools and offers each as an ordinary
//!   [`Tool`](crate::primitives::Tool), so MCP tools go through the same validation, events and
//!   tool pipeline as any other. [`McpToolInfo`] reads a tool's MCP facts (server, annotations,
//!   effect) back from its meta. [`McpRefresher`] follows `notifications/tools/list_changed`.
//! - [`McpToolServer`] serves a [`ToolRegistry`](crate::primitives::ToolRegistry) to MCP
//!   clients (typed tools keep their derived schemas), over stdio or streamable HTTP.
//! - Every failure is a typed [`McpError`]: a server that prints garbage, answers too much,
//!   never answers or dies fails the call, never hangs or crashes the turn.
//!
//! ```no_run
//! use adk::mcp::{McpClient, McpServer};
//!
//! # async fn run() -> Result<(), adk::mcp::McpError> {
//! let everything = McpClient::connect(
//!     McpServer::stdio("everything", "npx").args(["-y", "@modelcontextprotocol/server-everything"]),
//! )
//! .await?;
//! for tool in everything.tools() {
//!     println!("{}: {}", tool.name(), tool.description()); // everything_echo: Echoes back…
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Guide
//!
//! The rest of this page is `docs/mcp.md`; its examples are compiled as doc-tests.
//!
#![doc = include_str!("../../docs/mcp.md")]

mod client;
mod config;
mod connection;
mod convert;
mod error;
mod server;

pub use client::McpClient;
pub use config::{DEFAULT_MAX_MESSAGE_BYTES, McpServer, McpTransport, ReconnectPolicy};
pub use convert::McpToolInfo;
pub use error::McpError;
pub use server::{McpHttpServer, McpToolServer};

use crate::context::DispatchContext;
use crate::pipeline::{BoxError, BoxFuture, DispatchInput, Middleware, Next};

/// Dispatch-input middleware that keeps a dispatch's tools in step with an MCP server's list:
/// made by [`McpClient::refresher`].
///
/// Before each model call it re-lists the server's tools if the server announced a change
/// (`notifications/tools/list_changed`), then makes the dispatch's registry hold exactly the
/// server's current tools: new ones registered, changed ones replaced in place (hidden flags
/// kept), removed ones unregistered. Tools from elsewhere are not touched. A failed re-listing
/// is logged (`adk::mcp`, WARN) and the previous tools stay; the calls then report the
/// server's state themselves.
#[derive(Debug, Clone)]
pub struct McpRefresher {
    client: McpClient,
}

impl McpRefresher {
    pub(crate) fn new(client: McpClient) -> Self {
        Self { client }
    }

    /// Brings `tools` in step with the server's current list.
    pub async fn sync(&self, tools: &mut crate::primitives::ToolRegistry) {
        if let Err(error) = self.client.refresh_if_changed().await {
            tracing::warn!(target: "adk::mcp", "re-listing the tools failed: {error}");
        }
        let current = self.client.tools();
        let server = self.client.server().name();
        let stale: Vec<String> = tools
            .all()
            .iter()
            .filter(|tool| {
                McpToolInfo::of(tool).is_some_and(|info| info.server == server)
                    && !current.iter().any(|kept| kept.name() == tool.name())
            })
            .map(|tool| tool.name().to_owned())
            .collect();
        for name in stale {
            tools.unregister(&name);
        }
        for tool in current {
            tools.register_overwriting(tool);
        }
    }
}

impl Middleware<DispatchInput> for McpRefresher {
    fn handle<'a>(
        &'a self,
        ctx: &'a mut DispatchContext,
        next: Next<'a, DispatchContext>,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move {
            self.sync(&mut ctx.tools).await;
            let _downstream = next.run(ctx).await;
            Ok(())
        })
    }

    fn name(&self) -> &'static str {
        "McpRefresher"
    }
}
