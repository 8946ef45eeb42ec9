//! A real LiteLLM proxy for the provider tests: `litellm[proxy]` from PyPI, installed by
//! `.ci/litellm` into a cached virtual environment (`~/.cache/adk-litellm`), started once per
//! test binary on 127.0.0.1 and a free port with the scripted models of `tests/litellm/`
//! (`scripted/*` for chat completions, `scripted_messages/*` for Anthropic's `/v1/messages`),
//! which record every request they receive. The proxy exits with the test binary.
//!
//! Without Python, or when the install fails, [`proxy`] prints a banner saying the tests did NOT
//! run and returns `None`; with `CI` set it fails the test instead.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The proxy's master key: the key every request is sent with.
pub const MASTER_KEY: &str = "sk-adk-litellm-test";

/// How long the install may take (a cold pip cache downloads about 100 MB).
const INSTALL_LIMIT: Duration = Duration::from_secs(20 * 60);
/// How long the proxy may take to answer its liveness probe.
const START_LIMIT: Duration = Duration::from_secs(180);

/// The running proxy.
pub struct Proxy {
    /// `http://127.0.0.1:PORT/v1`: the chat-completions root.
    pub base_url: String,
    /// `http://127.0.0.1:PORT`: the root the Anthropic SDKs take as `ANTHROPIC_BASE_URL`.
    pub root: String,
    /// One JSON line per request the scripted model received.
    record: PathBuf,
    /// Holds the record and the proxy's log.
    _folder: tempfile::TempDir,
    /// Never waited for: the proxy exits when this process does (see `scripted_model.py`).
    _child: Child,
}

static PROXY: OnceLock<Result<Proxy, String>> = OnceLock::new();

/// The shared proxy, started by the first test that asks; `None` (after a banner) when it
/// cannot run here. With `CI` set, a proxy that cannot run fails the test.
pub fn proxy(test: &str) -> Option<&'static Proxy> {
    match PROXY.get_or_init(start) {
        Ok(proxy) => Some(proxy),
        Err(reason) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and the LiteLLM proxy cannot run: {reason}"
            );
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                // The real stderr, not the harness's capture: the banner shows in a passing run.
                let _ = writeln!(
                    std::io::stderr(),
                    "\n{rule}\nNOTE: the LiteLLM tests did NOT run: {reason}\n      \
                     They need Python 3 with venv and pip, and PyPI (or a warm pip cache):\n      \
                     .ci/litellm install   creates the environment they use.\n{rule}\n",
                    rule = "=".repeat(78)
                );
            });
            // One write, so the line is not split by other tests' output.
            let line = format!("NOT RUN: {test} (no LiteLLM proxy)\n");
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            None
        }
    }
}

fn start() -> Result<Proxy, String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace folder")?;
    let program = install(&repo.join(".ci/litellm"))?;
    let folder = tempfile::tempdir().map_err(|error| format!("a temporary folder: {error}"))?;
    let record = folder.path().join("requests.jsonl");
    let log_path = folder.path().join("litellm.log");
    let log = std::fs::File::create(&log_path).map_err(|error| format!("the log: {error}"))?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|error| format!("a free port: {error}"))?
        .port();
    let mut child = Command::new(&program)
        .arg("--config")
        .arg(repo.join("tests/litellm/config.yaml"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .current_dir(folder.path())
        .env("LITELLM_MASTER_KEY", MASTER_KEY)
        // The model price list bundled with LiteLLM, not a download at every start.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("ADK_LITELLM_RECORD", &record)
        .env("ADK_LITELLM_EXIT_WITH_PARENT", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|error| error.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|error| format!("starting {}: {error}", program.display()))?;
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "the proxy exited ({status}) before it was ready; its log:\n{}",
                tail(&log_path)
            ));
        }
        if is_live(port) {
            break;
        }
        if started.elapsed() > START_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the proxy was not ready within {START_LIMIT:?}; its log:\n{}",
                tail(&log_path)
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let _ = writeln!(
        std::io::stderr(),
        "litellm: proxy ready on 127.0.0.1:{port} after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(Proxy {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        root: format!("http://127.0.0.1:{port}"),
        record,
        _folder: folder,
        _child: child,
    })
}

/// Runs `.ci/litellm install` (a no-op once the environment exists) and returns the path of
/// the `litellm` program it prints.
fn install(script: &Path) -> Result<PathBuf, String> {
    let mut child = Command::new("bash")
        .arg(script)
        .arg("install")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("running {}: {error}", script.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > INSTALL_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the install took longer than {INSTALL_LIMIT:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(error) => return Err(format!("waiting for the install: {error}")),
        }
    };
    let mut printed = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut printed);
    }
    if !status.success() {
        return Err(format!(
            "`.ci/litellm install` failed ({status}); its messages are above"
        ));
    }
    let program = PathBuf::from(printed.trim());
    if program.is_file() {
        Ok(program)
    } else {
        Err(format!(
            "`.ci/litellm install` printed no program: {printed:?}"
        ))
    }
}

/// Whether the proxy answers its liveness probe with 200.
fn is_live(port: u16) -> bool {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /health/liveliness HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).is_ok() && status.contains(" 200 ")
}

fn tail(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl Proxy {
    /// The requests the scripted model received for `model` (the part after the provider
    /// prefix), in order: their `messages`, in the chat-completions shape the proxy sent.
    pub fn requests(&self, model: &str) -> Vec<Vec<Value>> {
        let record = std::fs::read_to_string(&self.record).unwrap_or_default();
        record
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|request| request["model"] == model)
            .filter_map(|request| request["messages"].as_array().cloned())
            .collect()
    }
}
