//! One live connection to an MCP server: the child process or HTTP session, rmcp's client
//! service over it, and what is known for diagnosis (stderr's tail, stdout that was not
//! JSON-RPC, an oversized message).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient, RunningService, serve_client};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientHandler, Peer};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, ReadBuf};
use tokio::process::{Child, ChildStdout};
use tokio::sync::Notify;

use super::{McpError, McpServer, McpTransport};

/// How many of the server's last stderr lines are kept.
const STDERR_LINES: usize = 40;
/// The longest stderr line kept, in characters.
const STDERR_LINE_CHARS: usize = 400;

/// What is known about a connection for diagnosis, shared with its reader tasks.
#[derive(Debug, Default)]
pub(super) struct Diagnosis {
    stderr: Mutex<VecDeque<String>>,
    non_json_lines: AtomicU64,
    first_non_json: Mutex<Option<String>>,
    pub(super) oversized: AtomicBool,
    pub(super) tools_changed: AtomicBool,
    pub(super) changed: Notify,
    stderr_done: AtomicBool,
    stderr_closed: Notify,
}

impl Diagnosis {
    pub(super) fn stderr_tail(&self) -> String {
        self.stderr
            .lock()
            .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }

    fn keep_stderr(&self, line: &str) {
        if let Ok(mut lines) = self.stderr.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line.chars().take(STDERR_LINE_CHARS).collect());
        }
    }

    fn note_non_json(&self, first_bytes: &[u8]) {
        if self.non_json_lines.fetch_add(1, Ordering::Relaxed) == 0
            && let Ok(mut first) = self.first_non_json.lock()
        {
            *first = Some(
                String::from_utf8_lossy(first_bytes)
                    .chars()
                    .take(200)
                    .collect(),
            );
        }
    }

    /// The stdout lines that were not JSON-RPC: how many and the first.
    pub(super) fn non_json(&self) -> Option<(u64, String)> {
        let lines = self.non_json_lines.load(Ordering::Relaxed);
        (lines > 0).then(|| {
            let first = self
                .first_non_json
                .lock()
                .ok()
                .and_then(|first| first.clone())
                .unwrap_or_default();
            (lines, first)
        })
    }
}

/// A child's stdout that refuses a line longer than the limit (so a huge message closes the
/// connection instead of being buffered) and notes lines that cannot be JSON-RPC.
struct GuardedStdout {
    inner: ChildStdout,
    diagnosis: Arc<Diagnosis>,
    limit: usize,
    line_length: usize,
    /// The first bytes of the current line (200 at most).
    head: Vec<u8>,
    /// Whether the line's first non-blank byte was seen, and whether it cannot start JSON.
    decided: bool,
    not_json: bool,
}

impl AsyncRead for GuardedStdout {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            for &byte in &buf.filled()[before..] {
                if byte == b'\n' {
                    if this.not_json {
                        this.diagnosis.note_non_json(&this.head);
                    }
                    this.line_length = 0;
                    this.head.clear();
                    this.decided = false;
                    this.not_json = false;
                    continue;
                }
                this.line_length += 1;
                if this.line_length > this.limit {
                    this.diagnosis.oversized.store(true, Ordering::Relaxed);
                    return Poll::Ready(Err(io::Error::other(
                        "an MCP message exceeded the size limit",
                    )));
                }
                if this.head.len() < 200 {
                    this.head.push(byte);
                }
                if !this.decided && !byte.is_ascii_whitespace() {
                    this.decided = true;
                    this.not_json = byte != b'{' && byte != b'[';
                }
            }
        }
        polled
    }
}

/// Receives the server's notifications.
#[derive(Clone)]
pub(super) struct Handler {
    diagnosis: Arc<Diagnosis>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("checked-adk", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(
            target: "adk::mcp",
            progress = params.progress,
            total = ?params.total,
            message = ?params.message,
            "a tool reported progress"
        );
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.diagnosis.tools_changed.store(true, Ordering::Release);
        self.diagnosis.changed.notify_waiters();
    }
}

/// A live connection.
pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, Handler>,
    pub(super) child: Mutex<Option<Child>>,
    pub(super) process_id: Option<u32>,
    pub(super) diagnosis: Arc<Diagnosis>,
}

impl Connection {
    pub(super) fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// Whether the transport is gone.
    pub(super) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Waits (half a second at most) for a dying child's last stderr lines and its exit, so
    /// the error can quote them.
    pub(super) async fn settle(&self) {
        if self
            .child
            .lock()
            .map(|child| child.is_none())
            .unwrap_or(true)
        {
            return;
        }
        let diagnosis = Arc::clone(&self.diagnosis);
        let _ = tokio::time::timeout(std::time::Duration::from_millis(500), async move {
            loop {
                let closed = diagnosis.stderr_closed.notified();
                if diagnosis.stderr_done.load(Ordering::Acquire) {
                    break;
                }
                closed.await;
            }
        })
        .await;
        for _ in 0..10 {
            if self.exit_status().is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// The child's exit status, if it exited.
    pub(super) fn exit_status(&self) -> Option<String> {
        let mut child = self.child.lock().ok()?;
        match child.as_mut()?.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    /// Ends the connection: cancels the session and kills a child process.
    pub(super) async fn shut_down(&self) {
        self.service.cancellation_token().cancel();
        let child = self.child.lock().ok().and_then(|mut child| child.take());
        if let Some(mut child) = child {
            let _ = child.kill().await;
        }
    }
}

/// Starts the server (stdio) or opens the session (HTTP) and completes the handshake. The
/// caller bounds it with the connect timeout.
pub(super) async fn open(
    config: &McpServer,
    diagnosis: Arc<Diagnosis>,
) -> Result<Connection, McpError> {
    let handler = Handler {
        diagnosis: Arc::clone(&diagnosis),
    };
    let server = config.name.clone();
    match &config.transport {
        McpTransport::Stdio {
            program,
            args,
            env,
            current_dir,
        } => {
            let mut command = tokio::process::Command::new(program);
            command
                .args(args)
                .envs(env.iter().map(|(key, value)| (key, value)))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            if let Some(dir) = current_dir {
                command.current_dir(dir);
            }
            let spawn_error = |source| McpError::Spawn {
                server: server.clone(),
                program: program.to_string_lossy().into_owned(),
                source,
            };
            let mut child = command.spawn().map_err(spawn_error)?;
            let missing = || spawn_error(io::Error::other("a standard stream was not piped"));
            let stdin = child.stdin.take().ok_or_else(missing)?;
            let stdout = child.stdout.take().ok_or_else(missing)?;
            let stderr = child.stderr.take().ok_or_else(missing)?;
            let kept = Arc::clone(&diagnosis);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(target: "adk::mcp", "{line}");
                    kept.keep_stderr(&line);
                }
                kept.stderr_done.store(true, Ordering::Release);
                kept.stderr_closed.notify_waiters();
            });
            let guarded = GuardedStdout {
                inner: stdout,
                diagnosis: Arc::clone(&diagnosis),
                limit: config.max_message_bytes,
                line_length: 0,
                head: Vec::new(),
                decided: false,
                not_json: false,
            };
            // rmcp's own limit sits above ours, so ours decides (and says so).
            let transport = AsyncRwTransport::<RoleClient, _, _>::new_client(guarded, stdin)
                .with_max_line_length(config.max_message_bytes.saturating_add(2));
            let service = serve_client(handler, transport).await;
            match service {
                Ok(service) => Ok(Connection {
                    service,
                    process_id: child.id(),
                    child: Mutex::new(Some(child)),
                    diagnosis,
                }),
                Err(error) => {
                    // Give stderr's reader a moment to catch the child's last words.
                    let exit =
                        tokio::time::timeout(std::time::Duration::from_millis(300), child.wait())
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .map(|status| status.to_string());
                    let _ = child.kill().await;
                    Err(handshake_failure(
                        &server,
                        &diagnosis,
                        config.max_message_bytes,
                        error.to_string(),
                        exit,
                    ))
                }
            }
        }
        McpTransport::Http { url, headers } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client =
                reqwest::Client::builder()
                    .build()
                    .map_err(|error| McpError::Handshake {
                        server: server.clone(),
                        reason: format!("could not build the HTTP client: {error}"),
                        stderr: String::new(),
                    })?;
            let mut custom = std::collections::HashMap::new();
            let mut auth = None;
            for (name, value) in headers {
                if name.eq_ignore_ascii_case("authorization") {
                    auth = Some(value.clone());
                    continue;
                }
                let invalid = |reason: String| McpError::InvalidConfig {
                    field: "header",
                    value: name.clone(),
                    reason,
                };
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|error| invalid(error.to_string()))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|error| invalid(error.to_string()))?;
                custom.insert(name, value);
            }
            let mut transport_config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
            if let Some(auth) = auth {
                // rmcp sends this as `Authorization: Bearer {value}`.
                let token = auth.strip_prefix("Bearer ").unwrap_or(&auth).to_owned();
                transport_config = transport_config.auth_header(token);
            }
            transport_config.max_sse_event_size = config.max_message_bytes;
            transport_config.max_json_response_size = config.max_message_bytes;
            let transport = StreamableHttpClientTransport::with_client(client, transport_config);
            let service =
                serve_client(handler, transport)
                    .await
                    .map_err(|error| McpError::Handshake {
                        server: server.clone(),
                        reason: error.to_string(),
                        stderr: String::new(),
                    })?;
            Ok(Connection {
                service,
                child: Mutex::new(None),
                process_id: None,
                diagnosis,
            })
        }
    }
}

/// The error for a handshake that failed, most specific first.
pub(super) fn handshake_failure(
    server: &str,
    diagnosis: &Diagnosis,
    limit: usize,
    reason: String,
    exit: Option<String>,
) -> McpError {
    if diagnosis.oversized.load(Ordering::Relaxed) {
        return McpError::MessageTooLarge {
            server: server.to_owned(),
            limit,
        };
    }
    if let Some((lines, first_line)) = diagnosis.non_json() {
        return McpError::NotJsonRpc {
            server: server.to_owned(),
            lines,
            first_line,
            stderr: diagnosis.stderr_tail(),
        };
    }
    let reason = match exit {
        Some(exit) => format!("{reason} (the process exited: {exit})"),
        None => reason,
    };
    McpError::Handshake {
        server: server.to_owned(),
        reason,
        stderr: diagnosis.stderr_tail(),
    }
}
