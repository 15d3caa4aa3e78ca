//! Dev-only helpers for tests that talk to real third-party peers.
//!
//! Peers are installed into `.peers/` by `tests/peers/install.sh` (the test command
//! runs it). A test asks for a peer with [`require`]: a missing peer **fails** the
//! test, naming the path and the install script; locally, `MECATED_SKIP_PEERS=1`
//! turns that into a skip announced on stderr with a `PEER-SKIP` line — except under
//! `CI=true`, where nothing is ever skipped. [`PeerProcess`] starts a peer on a free
//! loopback port, waits until it accepts connections and kills its whole process
//! group on drop. [`PgCluster`] runs a throwaway PostgreSQL server;
//! [`ReflinkFs`] mounts a throwaway filesystem that clones files by reference;
//! [`logs`] captures `tracing` events for tests that assert what was logged;
//! [`bench::latencies`] is the p50/p99 line the benches print. This crate
//! depends on no workspace crate.

// Test support: failing loudly is the point.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod bench;
pub mod logs;
pub mod postgres;
pub mod reflink;

pub use postgres::{PG_USER, PgCluster, postgres_bin};
pub use reflink::ReflinkFs;

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the peers are installed: `MECATED_PEERS_DIR`, else `.peers/` at the
/// repository root.
pub fn peers_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MECATED_PEERS_DIR") {
        return PathBuf::from(dir);
    }
    repo_root().join(".peers")
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Whether a missing peer may be skipped: `MECATED_SKIP_PEERS=1` and not `CI=true`.
pub fn skipping_allowed() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let skip = std::env::var("MECATED_SKIP_PEERS").is_ok_and(|v| v == "1" || v == "true");
    skip && !ci
}

/// Whether a test needing the kernel feature `feature` (Landlock, say) may run:
/// `true` when `present`; otherwise a `PEER-SKIP <test> <feature>` line on stderr and
/// `false` — except under `CI=true`, where a missing feature fails the test loudly.
///
/// # Panics
/// When the feature is missing under `CI=true`.
pub fn kernel_feature(test: &str, feature: &str, present: bool) -> bool {
    if present {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !ci,
        "test {test} needs the kernel feature {feature}, which this kernel lacks (CI=true never skips)"
    );
    let line = format!("PEER-SKIP {test} {feature}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// The installed peer at `relative` (inside [`peers_dir`]).
///
/// Returns `None` only when the peer is missing and [`skipping_allowed`]; then a
/// `PEER-SKIP <test> <peer>` line goes straight to stderr (not through the test
/// harness's capture).
///
/// # Panics
/// When the peer is missing and skipping is not allowed, naming the missing path and
/// the install script.
pub fn require(test: &str, relative: &str) -> Option<PathBuf> {
    let path = peers_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    if skipping_allowed() {
        let line = format!("PEER-SKIP {test} {relative}\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
        return None;
    }
    panic!(
        "test {test} needs the peer {} which is missing: run tests/peers/install.sh \
         (or set MECATED_SKIP_PEERS=1 locally to skip; never under CI=true)",
        path.display()
    );
}

/// Node 22 shipped with the npm peers (`.peers/npm/node_modules/.bin/node`).
pub fn node(test: &str) -> Option<PathBuf> {
    require(test, "npm/node_modules/.bin/node")
}

/// A file of an npm package (`.peers/npm/node_modules/<package>/<file>`).
pub fn npm_file(test: &str, package_file: &str) -> Option<PathBuf> {
    require(test, &format!("npm/node_modules/{package_file}"))
}

/// An executable of the Python venv (`.peers/venv/bin/<name>`).
pub fn venv_bin(test: &str, name: &str) -> Option<PathBuf> {
    require(test, &format!("venv/bin/{name}"))
}

/// A loopback port that was free a moment ago (bind `127.0.0.1:0`, read, close).
///
/// # Panics
/// When no port can be bound at all.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A running peer: its own process group, stderr kept in a file, killed on drop.
pub struct PeerProcess {
    child: Child,
    port: u16,
    stderr: tempfile::NamedTempFile,
}

/// How long a peer gets to accept connections (Node start-up is slow on 2 cores).
pub const READY_DEADLINE: Duration = Duration::from_secs(20);

impl PeerProcess {
    /// Starts `make(port)` on a free port and waits until `127.0.0.1:port` accepts
    /// TCP connections. If the child exits before it is ready (someone took the
    /// port), retries with a new port, at most 3 times.
    ///
    /// # Errors
    /// The child's exit status and stderr when it never became ready.
    pub fn start(mut make: impl FnMut(u16) -> Command) -> Result<Self, String> {
        let mut last_error = String::new();
        for _ in 0..3 {
            let port = free_port();
            let mut command = make(port);
            match Self::spawn_ready(&mut command, port) {
                Ok(peer) => return Ok(peer),
                Err(error) => last_error = error,
            }
        }
        Err(last_error)
    }

    /// Starts `command` on `port` (a restart on the port a stopped peer had) and waits
    /// until it accepts connections.
    ///
    /// # Errors
    /// The child's exit status and stderr when it never became ready.
    pub fn start_on(port: u16, command: &mut Command) -> Result<Self, String> {
        Self::spawn_ready(command, port)
    }

    /// Starts a peer that does not listen (stdio peers); it still dies on drop.
    ///
    /// # Errors
    /// When it cannot be spawned.
    pub fn spawn(command: &mut Command) -> Result<Self, String> {
        let stderr = tempfile::NamedTempFile::new().map_err(|e| format!("temp file: {e}"))?;
        let child = Self::spawn_child(command, &stderr)?;
        Ok(Self {
            child,
            port: 0,
            stderr,
        })
    }

    fn spawn_child(command: &mut Command, stderr: &tempfile::NamedTempFile) -> Result<Child, String> {
        use std::os::unix::process::CommandExt as _;
        let err_file = stderr.reopen().map_err(|e| format!("temp file: {e}"))?;
        command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(err_file))
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))
    }

    fn spawn_ready(command: &mut Command, port: u16) -> Result<Self, String> {
        let stderr = tempfile::NamedTempFile::new().map_err(|e| format!("temp file: {e}"))?;
        let child = Self::spawn_child(command, &stderr)?;
        let mut peer = Self { child, port, stderr };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            if let Ok(Some(status)) = peer.child.try_wait() {
                return Err(format!(
                    "peer {command:?} exited ({status}) before listening on {port}; stderr:\n{}",
                    peer.stderr_text()
                ));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(peer);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "peer {command:?} did not listen on {port} within {READY_DEADLINE:?}; stderr:\n{}",
                    peer.stderr_text()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The loopback port it listens on (0 for stdio peers).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the peer wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap_or_default()
    }

    /// Kills the peer's process group and waits for it (the port is free afterwards).
    pub fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let pid = i32::try_from(self.child.id()).unwrap_or(i32::MAX);
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server-everything entry point of the current build.
pub const EVERYTHING: &str = "@modelcontextprotocol/server-everything/dist/index.js";

/// The server-everything 2025.11.25 build (100 paginated resources).
pub const EVERYTHING_2025: &str = "everything-2025/dist/index.js";

/// Starts an npm MCP server (`package_file`, e.g. [`EVERYTHING`]) in streamable-HTTP
/// mode on a free port with the pinned Node 22; it serves
/// `http://127.0.0.1:<port>/mcp`. `None` when the peer is missing and skipping is
/// allowed.
///
/// # Panics
/// When the peer is missing (and skipping is not allowed) or never listens.
pub fn everything_http(test: &str, package_file: &str) -> Option<PeerProcess> {
    everything_serving(test, package_file, "streamableHttp")
}

/// Starts server-everything ([`EVERYTHING`]) with the legacy HTTP+SSE transport on a
/// free port: its event stream is `http://127.0.0.1:<port>/sse`. `None` when the
/// peer is missing and skipping is allowed.
///
/// # Panics
/// When the peer is missing (and skipping is not allowed) or never listens.
pub fn everything_sse(test: &str) -> Option<PeerProcess> {
    everything_serving(test, EVERYTHING, "sse")
}

/// Starts `package_file` with its `transport` argument on a free port (`PORT`).
fn everything_serving(test: &str, package_file: &str, transport: &str) -> Option<PeerProcess> {
    let node = node(test)?;
    let entry = npm_file(test, package_file)?;
    let peer = PeerProcess::start(|port| {
        let mut command = Command::new(&node);
        command.arg(&entry).arg(transport).env("PORT", port.to_string());
        command
    })
    .unwrap_or_else(|error| panic!("{package_file} did not start: {error}"));
    Some(peer)
}

/// The command that starts an npm MCP server (`package_file`) in streamable-HTTP
/// mode on `port`; `None` when the peer is missing and skipping is allowed.
pub fn everything_command(test: &str, package_file: &str, port: u16) -> Option<Command> {
    let node = node(test)?;
    let entry = npm_file(test, package_file)?;
    let mut command = Command::new(&node);
    command
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    Some(command)
}

/// The command that starts `tests/peers/py/live_server.py PORT` (Python MCP SDK:
/// `echo`, `hang`, `tick`, `grow`); `None` when the venv is missing and skipping is
/// allowed.
pub fn live_server_command(test: &str, port: u16) -> Option<Command> {
    let python = venv_bin(test, "python3")?;
    let mut command = Command::new(python);
    command
        .arg(repo_root().join("tests/peers/py/live_server.py"))
        .arg(port.to_string());
    Some(command)
}

/// Starts `tests/peers/py/live_server.py` on a free port.
///
/// # Panics
/// When the venv is missing (and skipping is not allowed) or the server never listens.
pub fn live_server(test: &str) -> Option<PeerProcess> {
    live_server_command(test, 0)?;
    let peer = PeerProcess::start(|port| live_server_command(test, port).expect("venv checked above"))
        .unwrap_or_else(|error| panic!("live_server.py did not start: {error}"));
    Some(peer)
}

/// Starts `tests/peers/py/bearer_server.py PORT TOKEN` (Python MCP SDK, bearer auth)
/// with the peers' venv; it serves `http://127.0.0.1:<port>/mcp`.
///
/// # Panics
/// When the venv is missing (and skipping is not allowed) or the server never listens.
pub fn bearer_server(test: &str, token: &str) -> Option<PeerProcess> {
    let python = venv_bin(test, "python3")?;
    let script = repo_root().join("tests/peers/py/bearer_server.py");
    let peer = PeerProcess::start(|port| {
        let mut command = Command::new(&python);
        command.arg(&script).arg(port.to_string()).arg(token);
        command
    })
    .unwrap_or_else(|error| panic!("bearer_server.py did not start: {error}"));
    Some(peer)
}

/// The program and arguments that run `tests/peers/py/elicit_server.py` over stdio
/// (for an MCP client that spawns it); `None` when the venv is missing and skipping
/// is allowed. `legacy`: the server answers `server/discover` as a server from before
/// 2026-07-28 does (method not found), so a client falls back to `initialize`.
pub fn elicit_server_stdio(test: &str, legacy: bool) -> Option<(PathBuf, Vec<String>)> {
    let python = venv_bin(test, "python3")?;
    let script = repo_root().join("tests/peers/py/elicit_server.py");
    let mut args = vec![script.display().to_string(), "stdio".to_owned()];
    if legacy {
        args.push("--legacy".to_owned());
    }
    Some((python, args))
}

/// Starts `tests/peers/py/elicit_server.py` (Python MCP SDK: `ask_name` elicits,
/// `measure` and `loose` return structured output) on a free port; it serves
/// `http://127.0.0.1:<port>/mcp`, protocol 2026-07-28 and the older revisions.
///
/// # Panics
/// When the venv is missing (and skipping is not allowed) or the server never listens.
pub fn elicit_server(test: &str) -> Option<PeerProcess> {
    start_elicit_server(test, false)
}

/// [`elicit_server`] as a server from before 2026-07-28: it answers
/// `server/discover` with "method not found", so a client falls back to
/// `initialize` and the server's questions are requests sent during the call.
///
/// # Panics
/// When the venv is missing (and skipping is not allowed) or the server never listens.
pub fn elicit_server_legacy(test: &str) -> Option<PeerProcess> {
    start_elicit_server(test, true)
}

fn elicit_command(test: &str, first: &str, legacy: bool) -> Option<Command> {
    let python = venv_bin(test, "python3")?;
    let mut command = Command::new(python);
    command
        .arg(repo_root().join("tests/peers/py/elicit_server.py"))
        .arg(first);
    if legacy {
        command.arg("--legacy");
    }
    Some(command)
}

fn start_elicit_server(test: &str, legacy: bool) -> Option<PeerProcess> {
    elicit_command(test, "0", legacy)?;
    let peer = PeerProcess::start(|port| {
        elicit_command(test, &port.to_string(), legacy).expect("venv checked above")
    })
    .unwrap_or_else(|error| panic!("elicit_server.py did not start: {error}"));
    Some(peer)
}
