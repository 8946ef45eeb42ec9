//! The request loop every provider runs: post, wait for the status, retry what a wait can fix,
//! and read bodies within caps and idle timeouts.

use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use crate::context::DispatchContext;
use crate::events::LogLevel;

use super::RetryPolicy;
use super::retry::{retry_after, retryable_status};

/// How much of an error response's body is read: enough for any error message, little enough
/// that a misbehaving server cannot make the client hold megabytes.
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// Which wait of one attempt ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitPhase {
    /// The status and headers did not arrive within the request timeout.
    Response,
    /// The body stayed silent longer than the idle timeout.
    Stream,
}

/// How the shared loop builds a provider's own errors.
pub(crate) trait TransportError: Sized + fmt::Display {
    /// The request did not reach the server.
    fn connect(url: &str, source: reqwest::Error) -> Self;
    /// A wait ran out.
    fn timed_out(phase: WaitPhase, after: Duration) -> Self;
    /// Reading the body failed part-way.
    fn broken(source: reqwest::Error) -> Self;
    /// The HTTP status the error reports, if it is a status error.
    fn status(&self) -> Option<u16>;
}

/// One request to post, with what the loop needs to know about timing.
pub(crate) struct Post<'a> {
    pub(crate) client: &'a reqwest::Client,
    pub(crate) url: &'a str,
    pub(crate) headers: HeaderMap,
    pub(crate) body: bytes::Bytes,
    pub(crate) request_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    /// The provider's name in log kinds: `{kind}.retry`, `{kind}.retry_refused`.
    pub(crate) log_kind: &'static str,
}

/// An HTTP client with rustls on the `ring` provider (installed as the process default unless
/// another provider was installed first) and `connect_timeout`.
pub(crate) fn build_client(connect_timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: any installed provider will do.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
}

/// Posts the request until a success status arrives, a failure is final, or the retries run
/// out. Nothing of the answer has been read when this returns, so retrying here never repeats
/// text already reported.
///
/// `status_error` builds the error of a non-success response from its status, headers and
/// body (read up to [`MAX_ERROR_BODY`]; whether it was cut); `final_error` says whether an error
/// of a retryable status must still not be retried (a quota, not a rate).
pub(crate) async fn send<E: TransportError>(
    ctx: &DispatchContext,
    post: Post<'_>,
    status_error: impl Fn(StatusCode, &HeaderMap, &[u8], bool) -> E,
    final_error: impl Fn(&E) -> bool,
) -> Result<reqwest::Response, E> {
    let policy = post.retry;
    let mut retries = 0;
    loop {
        let attempt = post
            .client
            .post(post.url)
            .headers(post.headers.clone())
            .body(post.body.clone())
            .send();
        let (error, asked_delay) = match tokio::time::timeout(post.request_timeout, attempt).await {
            Err(_) => {
                // The server may be working on it: sending it again could be billed twice.
                return Err(E::timed_out(WaitPhase::Response, post.request_timeout));
            }
            Ok(Err(source)) => (E::connect(post.url, source), None),
            Ok(Ok(response)) if response.status().is_success() => return Ok(response),
            Ok(Ok(response)) => {
                let status = response.status();
                let headers = response.headers().clone();
                let asked_delay = retry_after(&headers);
                // A body that cannot be read (or stalls) still leaves the status to report.
                let (body, truncated) =
                    read_capped::<E>(response, MAX_ERROR_BODY, post.idle_timeout)
                        .await
                        .unwrap_or_default();
                let error = status_error(status, &headers, &body, truncated);
                if !retryable_status(status) || final_error(&error) {
                    return Err(error);
                }
                (error, asked_delay)
            }
        };
        if retries >= policy.max_retries {
            return Err(error);
        }
        retries += 1;
        let delay = match asked_delay {
            Some(asked) if asked > policy.max_delay => {
                ctx.log(
                    LogLevel::Warn,
                    format!("{}.retry_refused", post.log_kind),
                    format!(
                        "not retrying: the server asked to wait {asked:?}, longer than the \
                         retry ceiling of {:?}",
                        policy.max_delay
                    ),
                    Some(serde_json::json!({
                        "requested_delay_ms": duration_ms(asked),
                        "max_delay_ms": duration_ms(policy.max_delay),
                    })),
                );
                return Err(error);
            }
            Some(asked) => asked,
            None => policy.backoff(retries),
        };
        ctx.log(
            LogLevel::Warn,
            format!("{}.retry", post.log_kind),
            format!(
                "retry {retries} of {} in {delay:?}: {error}",
                policy.max_retries
            ),
            Some(serde_json::json!({
                "attempt": retries,
                "max_retries": policy.max_retries,
                "delay_ms": duration_ms(delay),
                "status": error.status(),
                "retry_after": asked_delay.is_some(),
                "error": error.to_string(),
            })),
        );
        tokio::time::sleep(delay).await;
    }
}

/// The next piece of a body, waiting at most `idle`; `None` at its end.
pub(crate) async fn next_chunk<E: TransportError>(
    stream: &mut (impl futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    idle: Duration,
) -> Result<Option<bytes::Bytes>, E> {
    match tokio::time::timeout(idle, stream.next()).await {
        Err(_) => Err(E::timed_out(WaitPhase::Stream, idle)),
        Ok(None) => Ok(None),
        Ok(Some(Err(source))) => Err(E::broken(source)),
        Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
    }
}

/// Reads at most `limit` bytes of a body, each piece within `idle`; whether more was left.
pub(crate) async fn read_capped<E: TransportError>(
    response: reqwest::Response,
    limit: usize,
    idle: Duration,
) -> Result<(Vec<u8>, bool), E> {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = next_chunk::<E>(&mut stream, idle).await? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            // Dropping the stream closes the connection: the rest is never read.
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// How many bytes of received data an error keeps (`data`, `excerpt`): enough to recognise what
/// came, little enough that an error message stays short whatever the server sent.
pub(crate) const MAX_EXCERPT: usize = 256;

/// The start of `text`, cut at a character boundary within `limit` bytes, with `…` when cut.
pub(crate) fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// [`cut`] at 256 bytes of bytes that may not be UTF-8.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(MAX_EXCERPT)];
    let mut text = String::from_utf8_lossy(head).into_owned();
    if bytes.len() > MAX_EXCERPT {
        text.push('…');
    }
    text
}
