//! OpenTelemetry export (feature `otel`): turns, model calls and tool calls as spans following
//! the OpenTelemetry GenAI semantic conventions, sent to any OTLP/HTTP receiver (the
//! OpenTelemetry Collector, Jaeger, Grafana Tempo, Langfuse, Phoenix…).
//!
//! ```no_run
//! # fn main() -> Result<(), adk::otel::OtelError> {
//! // Keep the guard for the program's life: dropping it sends what is left.
//! let _otel = adk::otel::install("http://localhost:4318")?;
//! # Ok(())
//! # }
//! ```
//!
//! adk's own `tracing` spans carry the conventions' attribute names, and this module exports
//! them through [`tracing-opentelemetry`](https://docs.rs/tracing-opentelemetry) and
//! [`opentelemetry-otlp`](https://docs.rs/opentelemetry-otlp) (OTLP over HTTP, protobuf bodies,
//! traces at `{endpoint}/v1/traces`):
//!
//! | span | `gen_ai.operation.name` | attributes |
//! |---|---|---|
//! | `invoke_agent {app}`, one per turn | `invoke_agent` | `gen_ai.agent.name` (the app, an [`Agent`](crate::Agent)'s name), `gen_ai.conversation.id` |
//! | `chat {model}`, one per model call (executor run), child of the turn | `chat` | `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.provider.name`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.response.finish_reasons` |
//! | `execute_tool {tool}`, one per tool call, child of the model call that made it | `execute_tool` | `gen_ai.tool.name`, `gen_ai.tool.call.id`; with content capture `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result` |
//!
//! The model, provider, token counts and finish reasons are what the executor reported with
//! [`report_generation_stats`](crate::DispatchContext::report_generation_stats) during that call
//! (tokens summed when it reported more than once); the OpenAI-compatible and Anthropic
//! executors report them, an executor that reports nothing leaves them out. A failed model or
//! tool call has status `ERROR` and `error.type` set to its error code.
//!
//! Content — tool arguments and results — is left out unless [`Otel::capture_content`] turns it
//! on: it may hold what users typed.
//!
//! [`install`] makes the export the process's `tracing` subscriber. To keep your own subscriber
//! (a `fmt` layer, a filter), add [`Otel::layer`] to it instead.
//!
//! The guard's drop (or [`OtelGuard::shutdown`]) waits until the spans still buffered are sent:
//! drop it where blocking is allowed (the end of `main`, or a multi-threaded runtime), not
//! inside a single-threaded runtime that also serves the receiver.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;

/// Why the export could not be set up, flushed or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The OTLP exporter could not be built (an endpoint that is not a URL, no HTTP client).
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Another `tracing` subscriber was installed first; use [`Otel::layer`] with it.
    #[error(
        "a tracing subscriber is already installed: add `Otel::layer()` to it instead of `install`"
    )]
    AlreadyInstalled(#[from] tracing::subscriber::SetGlobalDefaultError),
    /// Sending the buffered spans failed or timed out.
    #[error("the spans could not be sent: {0}")]
    Export(#[from] opentelemetry_sdk::error::OTelSdkError),
}

/// The export's settings; [`install`] is the common case.
#[derive(Clone, Debug)]
#[must_use = "settings do nothing until `.install()` or `.layer()`"]
pub struct Otel {
    endpoint: String,
    service_name: String,
    capture_content: bool,
    timeout: Duration,
}

impl Otel {
    /// Export to the OTLP/HTTP receiver at `endpoint` (`http://localhost:4318` for a local
    /// collector); spans are posted to `{endpoint}/v1/traces`.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            service_name: "adk".to_owned(),
            capture_content: false,
            timeout: Duration::from_secs(10),
        }
    }

    /// The `service.name` resource attribute the spans carry (`"adk"` unless set).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// Whether spans carry content: tool calls' arguments (`gen_ai.tool.call.arguments`) and
    /// results (`gen_ai.tool.call.result`). Off by default. The setting holds for the whole
    /// process from `install`/`layer` on.
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// How long one export may take before it is given up (10 s unless set).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Installs the export as the process's `tracing` subscriber: spans at `INFO` and above,
    /// adk's and your own (the exporter's HTTP stack left out, so sending spans makes none).
    ///
    /// # Errors
    ///
    /// [`OtelError::Exporter`] when the exporter cannot be built,
    /// [`OtelError::AlreadyInstalled`] when a subscriber was installed before.
    pub fn install(self) -> Result<OtelGuard, OtelError> {
        let (layer, guard) = self.layer()?;
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber)?;
        Ok(guard)
    }

    /// The export as a `tracing-subscriber` layer for a subscriber you build, filtered as
    /// [`install`](Self::install) filters, and the guard that flushes it.
    ///
    /// ```no_run
    /// use tracing_subscriber::layer::SubscriberExt;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (otel, _guard) = adk::otel::Otel::new("http://localhost:4318")
    ///     .service_name("support-bot")
    ///     .layer()?;
    /// let subscriber = tracing_subscriber::registry().with(otel);
    /// tracing::subscriber::set_global_default(subscriber)?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`OtelError::Exporter`] when the exporter cannot be built.
    pub fn layer<S>(self) -> Result<(impl Layer<S> + Send + Sync + 'static, OtelGuard), OtelError>
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        // The blocking reqwest client of the exporter takes its TLS provider from the process
        // default: install rustls' `ring` one unless another was installed first.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let endpoint = format!("{}/v1/traces", self.endpoint.trim_end_matches('/'));
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(self.timeout)
            .build()?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(self.service_name)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("adk");
        crate::dispatch::set_capture_content(self.capture_content);
        let filter = Targets::new().with_default(LevelFilter::INFO).with_targets(
            [
                "opentelemetry",
                "opentelemetry_sdk",
                "opentelemetry_otlp",
                "opentelemetry_http",
            ]
            .into_iter()
            .chain(["reqwest", "hyper", "hyper_util", "h2", "tower", "rustls"])
            .map(|target| (target, LevelFilter::OFF)),
        );
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(filter);
        Ok((layer, OtelGuard { provider }))
    }
}

/// Installs the export to the OTLP/HTTP receiver at `endpoint` with the default settings; see
/// [`Otel::install`].
///
/// # Errors
///
/// As [`Otel::install`].
pub fn install(endpoint: impl Into<String>) -> Result<OtelGuard, OtelError> {
    Otel::new(endpoint).install()
}

/// Keeps the export running; dropping it sends the spans still buffered and stops it.
#[derive(Debug)]
#[must_use = "dropping the guard stops the export"]
pub struct OtelGuard {
    provider: SdkTracerProvider,
}

impl OtelGuard {
    /// Sends the spans buffered so far and waits until they were sent (or failed).
    ///
    /// # Errors
    ///
    /// [`OtelError::Export`] when sending failed or timed out.
    pub fn flush(&self) -> Result<(), OtelError> {
        Ok(self.provider.force_flush()?)
    }

    /// Sends what is buffered and stops the export, reporting a failure the drop would swallow.
    ///
    /// # Errors
    ///
    /// [`OtelError::Export`] when the last spans could not be sent.
    pub fn shutdown(self) -> Result<(), OtelError> {
        Ok(self.provider.shutdown()?)
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        // A second shutdown (after `shutdown()`) only reports that it already happened.
        let _ = self.provider.shutdown();
    }
}
