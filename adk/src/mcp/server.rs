//! [`McpToolServer`]: a [`ToolRegistry`] served to MCP clients over stdio or streamable HTTP.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use base64::Engine;
use futures_util::FutureExt;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListToolsResult, PaginatedRequestParams, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::McpError;
use crate::primitives::{MediaKind, Tool, ToolInvocation, ToolOutput, ToolRegistry};
use crate::storage::{NoopStorage, SharedStorage, StorageContext};

/// A [`ToolRegistry`] served as an MCP server: `tools/list` lists its visible tools (name,
/// description, input schema: a [typed](Tool::typed) tool's derived schema as is), and
/// `tools/call` validates the arguments against the schema and runs the handler.
///
/// What a client sees:
/// - arguments that break the schema: a tool error result (`isError: true`) listing every
///   violation, so a model can correct itself; the handler does not run;
/// - a handler's [`ToolError`](crate::primitives::ToolError) or panic: a tool error result
///   with its text;
/// - [`ToolOutput::Text`] as text; [`ToolOutput::Bytes`] as text when UTF-8, otherwise an
///   embedded blob; an artifact as its text; [`Media`](crate::primitives::Media) as image or
///   audio content, other kinds as embedded blobs;
/// - an unknown or hidden tool: JSON-RPC `invalid_params`.
///
/// A client's `notifications/cancelled` cancels the call: the handler's invocation carries a
/// storage context whose cancellation token is cancelled.
///
/// ```no_run
/// use adk::mcp::McpToolServer;
/// use adk::primitives::{Tool, ToolRegistry};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let add = Tool::typed::<Add>("add")
///     .description("Adds two integers.")
///     .read_only()
///     .handler(|args: Add, _| async move { Ok((args.a + args.b).to_string()) })
///     .build()?;
/// // Claude Desktop, an IDE or another agent starts this program and talks on stdin/stdout.
/// McpToolServer::new(ToolRegistry::from_tools([add])?).serve_stdio().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct McpToolServer {
    tools: Arc<ToolRegistry>,
    name: String,
    version: String,
    instructions: Option<String>,
    storage: SharedStorage,
}

impl McpToolServer {
    /// A server offering the visible tools of `tools`, named `checked-adk`. Handlers get a
    /// [`NoopStorage`] (bytes kept in memory) unless [`storage`](Self::storage) says otherwise.
    pub fn new(tools: ToolRegistry) -> Self {
        Self {
            tools: Arc::new(tools),
            name: "checked-adk".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            instructions: None,
            storage: SharedStorage::new(NoopStorage::new()),
        }
    }

    /// The name and version the server gives in the handshake.
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Instructions for the client's model, sent in the handshake.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The storage tool handlers reach through their invocation.
    pub fn storage(mut self, storage: SharedStorage) -> Self {
        self.storage = storage;
        self
    }

    /// Serves one client on this process's stdin and stdout until the client closes them.
    /// Log to stderr only: stdout is the protocol channel.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client over any pair of byte streams (newline-delimited JSON-RPC) until the
    /// client closes them.
    pub async fn serve<Read, Write>(self, read: Read, write: Write) -> Result<(), McpError>
    where
        Read: tokio::io::AsyncRead + Send + Unpin + 'static,
        Write: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = ServiceExt::<RoleServer>::serve(self, (read, write))
            .await
            .map_err(|error| serve_error("the MCP handshake with the client failed", error))?;
        running
            .waiting()
            .await
            .map_err(|error| serve_error("the MCP service task failed", error))?;
        Ok(())
    }

    /// Serves streamable HTTP at `http://{address}/mcp` on an already bound listener, for
    /// any number of clients and sessions, until [`McpHttpServer::shutdown`]. Only loopback
    /// `Host` headers are accepted (rmcp's DNS-rebinding guard).
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
    ) -> Result<McpHttpServer, McpError> {
        use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService,
        };

        let address = listener
            .local_addr()
            .map_err(|error| serve_error("the listener has no address", error))?;
        let stop = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        let server = self;
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let service = hyper_util::service::TowerToHyperService::new(service);
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = stopped.cancelled() => break,
                    accepted = listener.accept() => accepted,
                };
                let Ok((stream, _peer)) = accepted else {
                    continue;
                };
                let service = service.clone();
                let stopped = stopped.clone();
                tokio::spawn(async move {
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                    tokio::select! {
                        () = stopped.cancelled() => {}
                        served = connection => {
                            if let Err(error) = served {
                                tracing::debug!(target: "adk::mcp", "an HTTP connection ended: {error}");
                            }
                        }
                    }
                });
            }
        });
        Ok(McpHttpServer {
            address,
            stop,
            task: Some(task),
        })
    }

    fn visible(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name).filter(|_| !self.tools.is_hidden(name))
    }

    async fn run(
        &self,
        request: CallToolRequestParams,
        cancellation: CancellationToken,
        call_id: String,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(tool) = self.visible(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named {:?}", request.name.as_ref()),
                None,
            ));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let args = match tool.validate(args) {
            Ok(args) => args,
            Err(invalid) => return Ok(failure(invalid.to_string())),
        };
        let context = StorageContext::new("mcp-server").with_cancellation(cancellation.clone());
        let invocation: ToolInvocation = tool
            .invocation(call_id)
            .with_storage(self.storage.clone(), context);
        let running = AssertUnwindSafe(tool.call(args, invocation)).catch_unwind();
        let outcome = tokio::select! {
            () = cancellation.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
            outcome = running => outcome,
        };
        match outcome {
            Ok(Ok(output)) => Ok(content(output).await),
            Ok(Err(error)) => Ok(failure(error.to_string())),
            Err(_panic) => Ok(failure(format!(
                "the handler of tool {:?} panicked",
                tool.name()
            ))),
        }
    }
}

fn failure(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

fn serve_error(reason: &str, error: impl std::error::Error + Send + Sync + 'static) -> McpError {
    McpError::Serve {
        reason: format!("{reason}: {error}"),
        source: Some(Box::new(error)),
    }
}

/// A tool's output as MCP content.
async fn content(output: ToolOutput) -> CallToolResult {
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let parts = match output {
        ToolOutput::Text(text) => vec![ContentBlock::text(text)],
        ToolOutput::Bytes(bytes) => match std::str::from_utf8(&bytes) {
            Ok(text) => vec![ContentBlock::text(text)],
            Err(_) => vec![ContentBlock::resource(ResourceContents::blob(
                encode(&bytes),
                "adk:bytes",
            ))],
        },
        ToolOutput::Artifact(artifact) => match artifact.reader().read_all().await {
            Ok(bytes) => vec![ContentBlock::text(String::from_utf8_lossy(&bytes))],
            Err(error) => {
                return failure(format!("the tool's artifact could not be read: {error}"));
            }
        },
        ToolOutput::Media(media) => {
            let mut parts = Vec::with_capacity(media.len());
            for item in media {
                let bytes = match item.reader().read_all().await {
                    Ok(bytes) => bytes,
                    Err(error) => {
                        return failure(format!(
                            "the tool's media {:?} could not be read: {error}",
                            item.filename()
                        ));
                    }
                };
                parts.push(match item.kind() {
                    MediaKind::Image => ContentBlock::image(encode(&bytes), item.mime_type()),
                    MediaKind::Audio => ContentBlock::audio(encode(&bytes), item.mime_type()),
                    MediaKind::Video | MediaKind::Document => {
                        ContentBlock::resource(ResourceContents::BlobResourceContents {
                            uri: format!("adk:media/{}", item.id()),
                            mime_type: Some(item.mime_type().to_owned()),
                            blob: encode(&bytes),
                            meta: None,
                        })
                    }
                });
            }
            parts
        }
    };
    CallToolResult::success(parts)
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name.clone(), self.version.clone()));
        if let Some(instructions) = &self.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .tools
            .visible()
            .iter()
            .map(|tool| {
                let schema = match tool.input_schema() {
                    Value::Object(schema) => schema.clone(),
                    _ => serde_json::Map::new(),
                };
                rmcp::model::Tool::new(
                    tool.name().to_owned(),
                    tool.description().to_owned(),
                    Arc::new(schema),
                )
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let tool = self.visible(name)?;
        let schema = match tool.input_schema() {
            Value::Object(schema) => schema.clone(),
            _ => serde_json::Map::new(),
        };
        Some(rmcp::model::Tool::new(
            tool.name().to_owned(),
            tool.description().to_owned(),
            Arc::new(schema),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call_id = format!("mcp-{}", context.id);
        self.run(request, context.ct.clone(), call_id)
            .await
            .map(CallToolResponse::Complete)
    }
}

/// A streamable-HTTP MCP server running in the background, made by
/// [`McpToolServer::serve_http`].
#[derive(Debug)]
pub struct McpHttpServer {
    address: SocketAddr,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl McpHttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The MCP endpoint's URL, `http://{address}/mcp` (any path is served).
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops accepting, ends every session and waits for the accept loop to end.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
