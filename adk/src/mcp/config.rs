//! [`McpServer`]: where an MCP server is and how adk talks to it; [`ReconnectPolicy`].

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use super::McpError;

/// How adk reaches the server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process adk starts, speaking newline-delimited JSON-RPC on its stdin and stdout.
    /// Its stderr is kept (the last lines) for diagnosis; the process is killed when the
    /// client is dropped or shut down.
    Stdio {
        /// The program.
        program: OsString,
        /// Its arguments.
        args: Vec<OsString>,
        /// Environment variables added to the inherited environment.
        env: Vec<(OsString, OsString)>,
        /// Its working directory (the caller's by default).
        current_dir: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint (`http://127.0.0.1:3001/mcp`).
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (`Authorization` included).
        headers: Vec<(String, String)>,
    },
}

/// What happens when the connection to a server is lost (the process exited, the HTTP
/// session ended, a message was too large).
///
/// The call in flight when it happens fails with a typed [`McpError`] and is never sent
/// again (a tool may have side effects). The next call reconnects, trying up to
/// `attempts` times, `backoff` apart, before it fails too. Tools are re-listed after a
/// reconnection.
///
/// ```
/// use std::time::Duration;
/// use adk::mcp::ReconnectPolicy;
///
/// let patient = ReconnectPolicy::attempts(3).backoff(Duration::from_millis(500));
/// assert_eq!(patient.max_attempts(), 3);
/// assert_eq!(ReconnectPolicy::never().max_attempts(), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    attempts: u32,
    backoff: Duration,
}

impl ReconnectPolicy {
    /// Never reconnect: once lost, every call fails with [`McpError::ServerClosed`].
    pub const fn never() -> Self {
        Self {
            attempts: 0,
            backoff: Duration::ZERO,
        }
    }

    /// Up to `attempts` reconnection attempts per call that finds the connection lost.
    pub const fn attempts(attempts: u32) -> Self {
        Self {
            attempts,
            backoff: Duration::from_millis(200),
        }
    }

    /// The wait between two attempts (default 200 ms).
    pub const fn backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// How many attempts a call makes.
    pub const fn max_attempts(&self) -> u32 {
        self.attempts
    }

    /// The wait between attempts.
    pub const fn wait(&self) -> Duration {
        self.backoff
    }
}

impl Default for ReconnectPolicy {
    /// Two attempts, 200 ms apart.
    fn default() -> Self {
        Self::attempts(2)
    }
}

/// One MCP server: its name, how to reach it, and the limits adk holds it to.
///
/// The name is the default prefix of its tools' names (see [`prefix`](Self::prefix)), so it
/// must be 1–32 ASCII letters, digits, `_` or `-`.
///
/// ```
/// use std::time::Duration;
/// use adk::mcp::McpServer;
///
/// let everything = McpServer::stdio("everything", "npx")
///     .args(["-y", "@modelcontextprotocol/server-everything"])
///     .call_timeout(Duration::from_secs(20));
/// let remote = McpServer::http("search", "http://127.0.0.1:3001/mcp")
///     .bearer_token("secret")
///     .unprefixed();
/// assert_eq!(everything.name(), "everything");
/// assert_eq!(remote.tool_prefix(), None);
/// ```
#[derive(Debug, Clone)]
pub struct McpServer {
    pub(super) name: String,
    pub(super) transport: McpTransport,
    pub(super) prefix: Option<String>,
    pub(super) call_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) max_message_bytes: usize,
    pub(super) reconnect: ReconnectPolicy,
}

/// The default [`McpServer::max_message_bytes`]: 16 MiB, rmcp's own default.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

impl McpServer {
    fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        let name = name.into();
        Self {
            prefix: Some(name.clone()),
            name,
            transport,
            call_timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(30),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            reconnect: ReconnectPolicy::default(),
        }
    }

    /// A server adk starts as a child process running `program`.
    pub fn stdio(name: impl Into<String>, program: impl Into<OsString>) -> Self {
        Self::new(
            name,
            McpTransport::Stdio {
                program: program.into(),
                args: Vec::new(),
                env: Vec::new(),
                current_dir: None,
            },
        )
    }

    /// A server at a streamable-HTTP endpoint.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: Vec::new(),
            },
        )
    }

    /// Adds an argument to a stdio server's command line (ignored for HTTP).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.push(arg.into());
        }
        self
    }

    /// Adds arguments to a stdio server's command line (ignored for HTTP).
    pub fn args<Arg: Into<OsString>>(mut self, more: impl IntoIterator<Item = Arg>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.extend(more.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable for a stdio server (ignored for HTTP).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// Sets a stdio server's working directory (ignored for HTTP).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { current_dir, .. } = &mut self.transport {
            *current_dir = Some(dir.into());
        }
        self
    }

    /// Adds a header to every HTTP request (ignored for stdio).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// Sends `Authorization: Bearer {token}` with every HTTP request (ignored for stdio).
    pub fn bearer_token(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.header("Authorization", value)
    }

    /// Registers the server's tools as `{prefix}_{tool}` (default: the server's name).
    ///
    /// The rule: a tool keeps its MCP name behind the prefix and an underscore, so two
    /// servers with differently named prefixes never collide (`files_read`, `web_read`), and
    /// the name the model sees says which server answers. The full name must still be a name
    /// models accept (1–64 of `A–Z a–z 0–9 _ -`); a tool whose name does not fit is not
    /// offered (see [`McpClient::skipped`](super::McpClient::skipped)).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Registers the server's tools under their MCP names, unprefixed. Two servers offering
    /// the same name then collide when their tools are registered together
    /// (`E_TOOL_ALREADY_REGISTERED`).
    pub fn unprefixed(mut self) -> Self {
        self.prefix = None;
        self
    }

    /// How long one tool call may take (default 60 s); then it is cancelled and fails with
    /// [`McpError::Timeout`].
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How long starting, the handshake and listing the tools may take together (default
    /// 30 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest message accepted from the server (default
    /// [`DEFAULT_MAX_MESSAGE_BYTES`]); a larger one closes the connection with
    /// [`McpError::MessageTooLarge`] instead of being buffered.
    pub fn max_message_bytes(mut self, limit: usize) -> Self {
        self.max_message_bytes = limit;
        self
    }

    /// What happens when the connection is lost (default [`ReconnectPolicy::default`]).
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The prefix its tools' names get, if any.
    pub fn tool_prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// How adk reaches it.
    pub fn transport(&self) -> &McpTransport {
        &self.transport
    }

    pub(super) fn check(&self) -> Result<(), McpError> {
        let fail = |field: &'static str, value: &str, reason: &str| McpError::InvalidConfig {
            field,
            value: value.to_owned(),
            reason: reason.to_owned(),
        };
        if !is_name(&self.name, 32) {
            return Err(fail(
                "name",
                &self.name,
                "a server's name must be 1-32 ASCII letters, digits, '_' or '-'",
            ));
        }
        if let Some(prefix) = &self.prefix
            && !is_name(prefix, 32)
        {
            return Err(fail(
                "prefix",
                prefix,
                "a tool prefix must be 1-32 ASCII letters, digits, '_' or '-'",
            ));
        }
        if self.max_message_bytes < 1024 {
            return Err(fail(
                "max_message_bytes",
                &self.max_message_bytes.to_string(),
                "must be at least 1024 bytes",
            ));
        }
        if let McpTransport::Http { url, .. } = &self.transport
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(fail("url", url, "must be an http:// or https:// URL"));
        }
        Ok(())
    }
}

/// Whether `name` is 1..=`max` of `A–Z a–z 0–9 _ -` (what model APIs accept for tool names).
pub(super) fn is_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}
