//! [`McpClient`]: one MCP server's tools as adk tools, with the connection kept alive,
//! reconnected by policy and its tool list refreshed when the server says it changed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use serde_json::Value;

use super::connection::{self, Connection, Diagnosis, handshake_failure};
use super::convert::{adk_tool, tool_output};
use super::{McpError, McpServer};
use crate::primitives::{Tool, ToolError, ToolHandler, ToolInvocation, ToolOutput, ToolRegistry};

/// A connection to one MCP server whose tools are offered as ordinary adk [`Tool`]s.
///
/// [`connect`](Self::connect) starts the server (stdio) or opens the session (HTTP), completes
/// the handshake and lists the tools. Each listed tool becomes a `Tool` with the server's
/// description and JSON Schema (validated by adk before the call, like any tool), named by the
/// server's prefix rule ([`McpServer::prefix`]) and carrying [`McpToolInfo`](super::McpToolInfo)
/// in its meta. A tool whose name or schema is unusable is left out, and
/// [`skipped`](Self::skipped) says why.
///
/// Calls carry the turn's cancellation (the invocation's storage context): cancelling the turn
/// cancels the MCP request (`notifications/cancelled`). Each call has a deadline
/// ([`McpServer::call_timeout`]) and each message a size limit
/// ([`McpServer::max_message_bytes`]), so a server that never answers or answers too much
/// fails the call with a typed [`McpError`] instead of hanging or exhausting memory. A server
/// that dies fails the call in flight ([`McpError::ServerClosed`], with its exit status and the
/// end of its stderr); the next call reconnects by the [`ReconnectPolicy`](super::ReconnectPolicy).
///
/// Cloning is cheap; clones share the connection. Dropping the last clone (or
/// [`shutdown`](Self::shutdown)) ends the connection and kills a stdio server.
///
/// ```no_run
/// use adk::mcp::{McpClient, McpServer};
/// use adk::TurnRunner;
/// # use adk::storage::NoopStorage;
/// # use adk::dispatch::ScriptedModel;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let time = McpClient::connect(McpServer::stdio("time", "mcp-server-time")).await?;
/// let runner = TurnRunner::builder()
///     .storage(NoopStorage::new())
///     .executor(ScriptedModel::new())
///     .tools(time.tools())              // time_get_current_time, time_convert_time
///     .dispatch_input(time.refresher()) // follows `tools/list_changed`
///     .build();
/// # let _ = runner;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpClient {
    shared: Arc<Shared>,
    built: Arc<Mutex<Built>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("McpClient")
            .field("server", &self.shared.config.name)
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

/// The connection's side, which the tools' handlers hold (strongly: a tool keeps its server
/// alive). It holds the tools as the server listed them, not adk tools, so there is no cycle:
/// when the last client and tool are gone, the connection ends and a stdio server is killed.
pub(super) struct Shared {
    pub(super) config: McpServer,
    live: tokio::sync::Mutex<Option<Arc<Connection>>>,
    shut_down: AtomicBool,
    diagnosis: RwLock<Arc<Diagnosis>>,
    listed: RwLock<(u64, Arc<Vec<rmcp::model::Tool>>)>,
}

/// The adk tools built from one listing.
#[derive(Default)]
struct Built {
    generation: u64,
    tools: Vec<Tool>,
    skipped: Vec<Arc<McpError>>,
}

impl McpClient {
    /// Connects to `server` and lists its tools, within its
    /// [`connect_timeout`](McpServer::connect_timeout).
    ///
    /// Fails with [`McpError::InvalidConfig`], [`Spawn`](McpError::Spawn),
    /// [`Handshake`](McpError::Handshake), [`NotJsonRpc`](McpError::NotJsonRpc) (a stdio
    /// server printing anything but JSON-RPC on stdout and never answering),
    /// [`MessageTooLarge`](McpError::MessageTooLarge), [`Timeout`](McpError::Timeout) or
    /// [`Protocol`](McpError::Protocol) (the tool list could not be read).
    pub async fn connect(server: McpServer) -> Result<Self, McpError> {
        server.check()?;
        let shared = Arc::new(Shared {
            config: server,
            live: tokio::sync::Mutex::new(None),
            shut_down: AtomicBool::new(false),
            diagnosis: RwLock::new(Arc::new(Diagnosis::default())),
            listed: RwLock::new((0, Arc::new(Vec::new()))),
        });
        let connection = shared.open_and_list().await?;
        *shared.live.lock().await = Some(connection);
        Ok(Self {
            shared,
            built: Arc::new(Mutex::new(Built::default())),
        })
    }

    /// The server's configuration.
    pub fn server(&self) -> &McpServer {
        &self.shared.config
    }

    /// The server's tools as adk tools, as last listed, in the server's order.
    pub fn tools(&self) -> Vec<Tool> {
        self.with_built(|built| built.tools.clone())
    }

    /// Runs `read` on the adk tools of the latest listing, building them first if the server
    /// was listed again since.
    fn with_built<T>(&self, read: impl FnOnce(&Built) -> T) -> T {
        let (generation, listed) = self
            .shared
            .listed
            .read()
            .map(|listed| (listed.0, Arc::clone(&listed.1)))
            .unwrap_or_default();
        let mut built = match self.built.lock() {
            Ok(built) => built,
            Err(poisoned) => poisoned.into_inner(),
        };
        if built.generation != generation || generation == 0 {
            *built = self.shared.build(generation, &listed);
        }
        read(&built)
    }

    /// The tools as a registry (names are unique: the server's names are, and the prefix is
    /// shared).
    pub fn registry(&self) -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        for tool in self.tools() {
            registry.register_overwriting(tool);
        }
        registry
    }

    /// The adk names of the tools, as last listed.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools()
            .iter()
            .map(|tool| tool.name().to_owned())
            .collect()
    }

    /// The tools the server listed that are not offered, each with why
    /// ([`McpError::InvalidTool`]).
    pub fn skipped(&self) -> Vec<Arc<McpError>> {
        self.with_built(|built| built.skipped.clone())
    }

    /// The last lines the server wrote to stderr (stdio servers), for diagnosis.
    pub fn stderr_tail(&self) -> String {
        self.shared.diagnosis().stderr_tail()
    }

    /// Whether the server said its tool list changed since the tools were last listed.
    pub fn tools_changed(&self) -> bool {
        self.shared
            .diagnosis()
            .tools_changed
            .load(Ordering::Acquire)
    }

    /// Waits until the server says its tool list changed (returns at once if it already did
    /// and the tools were not listed since).
    pub async fn tools_changed_notice(&self) {
        let diagnosis = self.shared.diagnosis();
        let notified = diagnosis.changed.notified();
        if diagnosis.tools_changed.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }

    /// Lists the tools again (reconnecting by policy if the connection was lost).
    pub async fn refresh(&self) -> Result<(), McpError> {
        let connection = self.shared.connection().await?;
        self.shared.list(&connection).await
    }

    /// Lists the tools again if the server said they changed; otherwise does nothing.
    pub async fn refresh_if_changed(&self) -> Result<bool, McpError> {
        if !self.tools_changed() {
            return Ok(false);
        }
        self.refresh().await?;
        Ok(true)
    }

    /// Whether a connection is open now (a lost one is reopened by the next call).
    pub async fn is_connected(&self) -> bool {
        self.shared
            .live
            .lock()
            .await
            .as_ref()
            .is_some_and(|connection| !connection.is_closed())
    }

    /// The process id of a stdio server's current process (`None` for HTTP, or while the
    /// connection is lost).
    pub async fn process_id(&self) -> Option<u32> {
        let live = self.shared.live.lock().await;
        live.as_ref()
            .filter(|connection| !connection.is_closed())
            .and_then(|connection| connection.process_id)
    }

    /// Ends the connection and kills a stdio server. Tools obtained earlier then fail with
    /// [`McpError::ServerClosed`] (no reconnection after a shutdown).
    pub async fn shutdown(self) {
        self.shared.shut_down.store(true, Ordering::Release);
        let taken = self.shared.live.lock().await.take();
        if let Some(connection) = taken {
            connection.shut_down().await;
        }
    }

    /// The dispatch-input middleware that re-lists the tools when the server announced a
    /// change (`notifications/tools/list_changed`) and puts the current ones in the dispatch's
    /// tool registry: new tools are added, changed ones replaced, removed ones unregistered.
    /// Tools of other origins are left alone.
    pub fn refresher(&self) -> super::McpRefresher {
        super::McpRefresher::new(self.clone())
    }
}

impl Shared {
    fn diagnosis(&self) -> Arc<Diagnosis> {
        self.diagnosis
            .read()
            .map(|diagnosis| Arc::clone(&diagnosis))
            .unwrap_or_default()
    }

    /// Opens a fresh connection and lists its tools, within the connect timeout.
    async fn open_and_list(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let diagnosis = Arc::new(Diagnosis::default());
        if let Ok(mut current) = self.diagnosis.write() {
            *current = Arc::clone(&diagnosis);
        }
        let limit = self.config.connect_timeout;
        let server = self.config.name.clone();
        let opened = tokio::time::timeout(limit, async {
            let connection =
                Arc::new(connection::open(&self.config, Arc::clone(&diagnosis)).await?);
            self.list(&connection).await?;
            Ok::<_, McpError>(connection)
        })
        .await;
        match opened {
            Ok(result) => result,
            Err(_elapsed) => {
                // A stdio server that never answered: say what it printed instead, if anything.
                let failure = handshake_failure(
                    &server,
                    &diagnosis,
                    self.config.max_message_bytes,
                    String::new(),
                    None,
                );
                Err(match failure {
                    McpError::Handshake { .. } => McpError::Timeout {
                        server,
                        what: "the handshake and `tools/list`".to_owned(),
                        limit,
                    },
                    specific => specific,
                })
            }
        }
    }

    /// Lists the tools over `connection` and replaces the listing.
    async fn list(self: &Arc<Self>, connection: &Connection) -> Result<(), McpError> {
        connection
            .diagnosis
            .tools_changed
            .store(false, Ordering::Release);
        let listed = match connection.peer().list_all_tools().await {
            Ok(listed) => listed,
            Err(error) => return Err(self.failure(connection, error, "`tools/list`").await),
        };
        if let Ok(mut current) = self.listed.write() {
            *current = (current.0 + 1, Arc::new(listed));
        }
        Ok(())
    }

    /// The adk tools for a listing.
    fn build(self: &Arc<Self>, generation: u64, listed: &[rmcp::model::Tool]) -> Built {
        let mut tools: Vec<Tool> = Vec::with_capacity(listed.len());
        let mut skipped = Vec::new();
        for entry in listed {
            let handler = handler_for(Arc::clone(self), entry.name.to_string());
            let prefix = self.config.prefix.as_deref();
            match adk_tool(&self.config.name, prefix, entry, handler) {
                Ok(tool) if tools.iter().any(|kept| kept.name() == tool.name()) => {
                    skipped.push(Arc::new(McpError::InvalidTool {
                        server: self.config.name.clone(),
                        tool: entry.name.to_string(),
                        reason: "the server lists this name twice".to_owned(),
                    }));
                }
                Ok(tool) => tools.push(tool),
                Err(error) => {
                    tracing::warn!(target: "adk::mcp", "{error}");
                    skipped.push(Arc::new(error));
                }
            }
        }
        Built {
            generation,
            tools,
            skipped,
        }
    }

    /// The open connection, reopened by the reconnect policy when it was lost.
    async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let mut slot = self.live.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.is_closed()
        {
            return Ok(Arc::clone(connection));
        }
        let gone = |reason: &str| McpError::ServerClosed {
            server: self.config.name.clone(),
            reason: reason.to_owned(),
            exit: None,
            stderr: String::new(),
        };
        if self.shut_down.load(Ordering::Acquire) {
            return Err(gone("the client was shut down"));
        }
        let mut last = match slot.take() {
            Some(lost) => {
                self.closed(&lost, "the connection was lost before this call")
                    .await
            }
            None => gone("the last reconnection failed"),
        };
        let policy = self.config.reconnect;
        for attempt in 0..policy.max_attempts() {
            if attempt > 0 {
                tokio::time::sleep(policy.wait()).await;
            }
            match self.open_and_list().await {
                Ok(connection) => {
                    tracing::info!(target: "adk::mcp", server = %self.config.name, "reconnected");
                    *slot = Some(Arc::clone(&connection));
                    return Ok(connection);
                }
                Err(error) => last = error,
            }
        }
        Err(last)
    }

    /// Calls the tool `tool` (its MCP name) for an adk tool call.
    async fn call(
        self: Arc<Self>,
        tool: String,
        args: Value,
        invocation: ToolInvocation,
    ) -> Result<ToolOutput, McpError> {
        let cancellation = invocation.storage_context().cancellation().clone();
        let server = self.config.name.clone();
        let cancelled = || McpError::Cancelled {
            server: server.clone(),
            tool: tool.clone(),
        };
        if cancellation.is_cancelled() {
            return Err(cancelled());
        }
        let connection = tokio::select! {
            biased;
            () = cancellation.cancelled() => return Err(cancelled()),
            connection = self.connection() => connection?,
        };
        let mut params = CallToolRequestParams::new(tool.clone());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments);
        }
        let peer = connection.peer();
        let limit = self.config.call_timeout;
        // Dropping rmcp's call future (cancellation, deadline) sends `notifications/cancelled`.
        let answered = tokio::select! {
            biased;
            () = cancellation.cancelled() => return Err(cancelled()),
            answered = tokio::time::timeout(limit, peer.call_tool(params)) => answered,
        };
        let result = match answered {
            Err(_elapsed) => {
                return Err(McpError::Timeout {
                    server,
                    what: format!("`tools/call` {tool:?}"),
                    limit,
                });
            }
            Ok(Err(error)) => {
                let what = format!("`tools/call` {tool:?}");
                return Err(self.failure(&connection, error, &what).await);
            }
            Ok(Ok(result)) => result,
        };
        tool_output(&server, &tool, result, &invocation).await
    }

    /// The error for a failed request: the connection's fate if it was lost, the server's
    /// refusal otherwise.
    async fn failure(&self, connection: &Connection, error: ServiceError, what: &str) -> McpError {
        match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.closed(connection, &format!("while waiting for {what}"))
                    .await
            }
            ServiceError::Cancelled { .. } if connection.is_closed() => {
                self.closed(connection, &format!("while waiting for {what}"))
                    .await
            }
            other => McpError::Protocol {
                server: self.config.name.clone(),
                what: what.to_owned(),
                reason: other.to_string(),
            },
        }
    }

    /// The error for a lost connection, most specific first.
    async fn closed(&self, connection: &Connection, reason: &str) -> McpError {
        connection.settle().await;
        let diagnosis = &connection.diagnosis;
        if diagnosis.oversized.load(Ordering::Relaxed) {
            return McpError::MessageTooLarge {
                server: self.config.name.clone(),
                limit: self.config.max_message_bytes,
            };
        }
        McpError::ServerClosed {
            server: self.config.name.clone(),
            reason: reason.to_owned(),
            exit: connection.exit_status(),
            stderr: diagnosis.stderr_tail(),
        }
    }
}

/// The handler of an adk tool standing for the MCP tool `tool`.
fn handler_for(shared: Arc<Shared>, tool: String) -> ToolHandler {
    Arc::new(move |args, invocation| {
        let shared = Arc::clone(&shared);
        let tool = tool.clone();
        Box::pin(async move {
            shared
                .call(tool, args, invocation)
                .await
                .map_err(ToolError::new)
        })
    })
}
