//! [`McpError`]: every way talking to an MCP server (or serving one) fails, typed.

use std::time::Duration;

/// Why an MCP server could not be used, or a call to one of its tools failed.
///
/// A tool call's error reaches the model as the tool's error text (an MCP tool is an ordinary
/// [`Tool`](crate::primitives::Tool) whose handler returns this error inside a
/// [`ToolError`](crate::primitives::ToolError)); downcast
/// [`ToolError::source`](crate::primitives::ToolError::source) to `McpError` to branch on it.
///
/// ```
/// use adk::mcp::McpError;
///
/// /// Whether the next call may succeed once the client reconnects.
/// fn transient(error: &McpError) -> bool {
///     matches!(error, McpError::ServerClosed { .. } | McpError::Timeout { .. })
/// }
/// # let _ = transient;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A configuration value is unusable.
    #[error("invalid MCP server configuration `{field}` = {value:?}: {reason}")]
    InvalidConfig {
        /// The field.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The server's program could not be started.
    #[error("MCP server {server:?}: could not start {program:?}: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program.
        program: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake (`initialize`) failed or the server closed during it.
    #[error("MCP server {server:?} did not complete the MCP handshake: {reason}{}", diagnosis(.stderr))]
    Handshake {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: String,
        /// The end of the server's stderr (stdio servers), for diagnosis.
        stderr: String,
    },
    /// The server wrote lines to stdout that are not JSON-RPC messages, and never a valid
    /// answer: stdout is the protocol channel, so logging there breaks the server.
    #[error(
        "MCP server {server:?} wrote {lines} line(s) to stdout that are not JSON-RPC messages \
         (the first: {first_line:?}) and did not answer; an MCP stdio server must log to stderr, \
         never stdout{}",
        diagnosis(.stderr)
    )]
    NotJsonRpc {
        /// The server's name.
        server: String,
        /// How many such lines were seen.
        lines: u64,
        /// The first of them, cut to 200 characters.
        first_line: String,
        /// The end of the server's stderr, for diagnosis.
        stderr: String,
    },
    /// A message from the server was larger than
    /// [`McpServer::max_message_bytes`](super::McpServer::max_message_bytes); the connection
    /// was closed rather than buffer it.
    #[error(
        "MCP server {server:?} sent a message larger than the {limit}-byte limit; the connection \
         was closed (raise `McpServer::max_message_bytes` if such results are expected)"
    )]
    MessageTooLarge {
        /// The server's name.
        server: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The server exited, or its connection closed, before it answered.
    #[error("MCP server {server:?} closed the connection{}: {reason}{}", status(.exit), diagnosis(.stderr))]
    ServerClosed {
        /// The server's name.
        server: String,
        /// What was going on.
        reason: String,
        /// The exit status, when a child process exited.
        exit: Option<String>,
        /// The end of the server's stderr (stdio servers), for diagnosis.
        stderr: String,
    },
    /// The server did not answer within the deadline; the request was cancelled
    /// (`notifications/cancelled`).
    #[error(
        "MCP server {server:?} did not answer {what} within {limit:?}; the request was cancelled"
    )]
    Timeout {
        /// The server's name.
        server: String,
        /// What was asked (`tools/call "echo"`, `initialize`...).
        what: String,
        /// The deadline.
        limit: Duration,
    },
    /// The turn was cancelled while the tool ran; the MCP request was cancelled with it.
    #[error(
        "the turn was cancelled while MCP tool {tool:?} of server {server:?} ran; the request was cancelled"
    )]
    Cancelled {
        /// The server's name.
        server: String,
        /// The tool's MCP name.
        tool: String,
    },
    /// The server answered a request with a JSON-RPC error, or with something else than asked.
    #[error("MCP server {server:?} refused {what}: {reason}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What was asked.
        what: String,
        /// The server's error, or what was wrong with its answer.
        reason: String,
    },
    /// The tool ran and reported a failure (`isError: true`); the text is the tool's own.
    #[error("{text}")]
    ToolFailed {
        /// The server's name.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// The result's text, as the model reads it.
        text: String,
    },
    /// A tool the server lists cannot be offered as an adk tool (its name or schema is
    /// unusable); the server's other tools are still offered.
    #[error("MCP server {server:?} lists tool {tool:?}, which is not offered: {reason}")]
    InvalidTool {
        /// The server's name.
        server: String,
        /// The tool's MCP name, cut to 200 characters.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// A tool result's content could not be turned into adk values (bad base64, storage).
    #[error("MCP tool {tool:?} of server {server:?} returned content adk cannot use: {reason}")]
    BadResult {
        /// The server's name.
        server: String,
        /// The tool's MCP name.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// Serving a tool registry over MCP failed.
    #[error("serving MCP failed: {reason}")]
    Serve {
        /// What went wrong.
        reason: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl McpError {
    /// The name of the server concerned (`None` for [`InvalidConfig`](Self::InvalidConfig) and
    /// [`Serve`](Self::Serve)).
    pub fn server(&self) -> Option<&str> {
        match self {
            Self::InvalidConfig { .. } | Self::Serve { .. } => None,
            Self::Spawn { server, .. }
            | Self::Handshake { server, .. }
            | Self::NotJsonRpc { server, .. }
            | Self::MessageTooLarge { server, .. }
            | Self::ServerClosed { server, .. }
            | Self::Timeout { server, .. }
            | Self::Cancelled { server, .. }
            | Self::Protocol { server, .. }
            | Self::ToolFailed { server, .. }
            | Self::InvalidTool { server, .. }
            | Self::BadResult { server, .. } => Some(server),
        }
    }

    /// Whether the connection is gone, so the next call reconnects (by the server's
    /// [`ReconnectPolicy`](super::ReconnectPolicy)).
    pub fn connection_lost(&self) -> bool {
        matches!(
            self,
            Self::ServerClosed { .. } | Self::MessageTooLarge { .. } | Self::NotJsonRpc { .. }
        )
    }
}

fn diagnosis(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("; the end of its stderr:\n{}", stderr.trim_end())
    }
}

fn status(exit: &Option<String>) -> String {
    exit.as_ref()
        .map(|exit| format!(" ({exit})"))
        .unwrap_or_default()
}
