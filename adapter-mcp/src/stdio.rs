//! Stdio children (D5): spawned in the workspace with the harness's credentials
//! stripped from the environment, in their own process group, stderr kept as a
//! tail for error messages, closed by the stdin → TERM → KILL sequence.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use sandbox::{Confinement, PrivateTemp};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

/// How much of a child's stderr is kept for error messages.
pub(crate) const STDERR_TAIL_BYTES: usize = 2048;

/// How long each step of the close sequence waits for the child to exit.
pub(crate) const CLOSE_STEP: Duration = Duration::from_secs(2);

/// Whether the environment variable `name` is one of the harness's credentials,
/// which a stdio child never inherits.
pub(crate) fn is_credential_variable(name: &str) -> bool {
    matches!(
        name,
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" | "MECATED_AUTH_TOKEN" | "PGPASSWORD"
    ) || (name.starts_with("MCP_") && name.ends_with("_TOKEN"))
}

/// A running stdio child: its process group, exit state and stderr tail.
pub(crate) struct ChildProcess {
    pid: u32,
    exited: Arc<AtomicBool>,
    exit_rx: watch::Receiver<Option<String>>,
    stderr: Arc<std::sync::Mutex<VecDeque<u8>>>,
    stderr_closed: watch::Receiver<bool>,
    server: Arc<str>,
    /// A confined child's `TMPDIR`, removed once the child is gone.
    _temp: Option<PrivateTemp>,
}

/// What spawning a child gives: the process and the two protocol pipes.
pub(crate) struct Spawned {
    pub(crate) process: Arc<ChildProcess>,
    pub(crate) stdout: ChildStdout,
    pub(crate) stdin: ChildStdin,
}

/// Spawns `program args` in `cwd` with the inherited environment minus credentials,
/// plus `extra_env`, in a new process group, confined as `confinement` says (writable:
/// `cwd` and a private `TMPDIR`; a refusal fails the spawn with its reason). The
/// child is reaped by a background task; dropping the last handle kills its group.
pub(crate) fn spawn(
    server: &Arc<str>,
    program: &str,
    args: &[String],
    cwd: &Path,
    extra_env: &[(String, String)],
    confinement: Option<&Confinement>,
) -> std::io::Result<Spawned> {
    let mut command = Command::new(program);
    let temp = match confinement {
        None | Some(Confinement::Unconfined) => None,
        Some(Confinement::Refused(reason)) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                reason.to_string(),
            ));
        }
        Some(Confinement::Confined(policy)) => {
            let temp = PrivateTemp::create()?;
            policy
                .prepare(cwd, temp.path())
                .map_err(|error| std::io::Error::other(format!("the sandbox could not be set up: {error}")))?
                .apply_to(command.as_std_mut());
            command.env("TMPDIR", temp.path());
            Some(temp)
        }
    };
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        if let Some(name) = name.to_str()
            && is_credential_variable(name)
        {
            command.env_remove(name);
        }
    }
    for (name, value) in extra_env {
        command.env(name, value);
    }
    die_with_parent(&mut command);
    let mut child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the child exited before its pid was read"))?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("child stdin missing"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("child stdout missing"))?;
    let stderr_pipe = child.stderr.take();

    let exited = Arc::new(AtomicBool::new(false));
    let (exit_tx, exit_rx) = watch::channel(None);
    let stderr = Arc::new(std::sync::Mutex::new(VecDeque::new()));
    let (stderr_tx, stderr_closed) = watch::channel(false);

    if let Some(pipe) = stderr_pipe {
        let tail = Arc::clone(&stderr);
        let server = Arc::clone(server);
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = line.trim_end_matches(['\n', '\r']);
                        tracing::debug!(server = %server, stderr = %line, "MCP server stderr");
                        push_tail(&tail, line);
                    }
                }
            }
            let _ = stderr_tx.send(true);
        });
    }
    {
        let exited = Arc::clone(&exited);
        let server = Arc::clone(server);
        tokio::spawn(async move {
            let status = child.wait().await;
            exited.store(true, Ordering::SeqCst);
            let text = match status {
                Ok(status) => status.to_string(),
                Err(error) => format!("wait failed: {error}"),
            };
            tracing::debug!(server = %server, pid, status = %text, "MCP stdio child exited");
            let _ = exit_tx.send(Some(text));
        });
    }
    Ok(Spawned {
        process: Arc::new(ChildProcess {
            pid,
            exited,
            exit_rx,
            stderr,
            stderr_closed,
            server: Arc::clone(server),
            _temp: temp,
        }),
        stdout,
        stdin,
    })
}

fn push_tail(tail: &std::sync::Mutex<VecDeque<u8>>, line: &str) {
    let mut tail = match tail.lock() {
        Ok(tail) => tail,
        Err(poisoned) => poisoned.into_inner(),
    };
    tail.extend(line.as_bytes());
    tail.push_back(b'\n');
    while tail.len() > STDERR_TAIL_BYTES {
        tail.pop_front();
    }
}

impl ChildProcess {
    /// The child's pid (also its process group id).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the child has exited (and was reaped).
    pub(crate) fn has_exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }

    /// The last ≤ 2 KiB of its stderr, trimmed, lossy UTF-8.
    pub(crate) fn stderr_tail(&self) -> String {
        let tail = match self.stderr.lock() {
            Ok(tail) => tail,
            Err(poisoned) => poisoned.into_inner(),
        };
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }

    /// Waits until the child has exited, at most `limit`; whether it did.
    pub(crate) async fn wait_exit(&self, limit: Duration) -> bool {
        let mut rx = self.exit_rx.clone();
        tokio::time::timeout(limit, rx.wait_for(Option::is_some))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Waits until the child's stderr reached its end, at most `limit`.
    pub(crate) async fn wait_stderr_closed(&self, limit: Duration) {
        let mut rx = self.stderr_closed.clone();
        let _ = tokio::time::timeout(limit, rx.wait_for(|closed| *closed)).await;
    }

    /// Waits for the child to exit on its own (the caller closed its stdin), then
    /// sends TERM to the group, then KILL; finally KILL reaches any grandchild left
    /// in the group.
    pub(crate) async fn shut_down(&self) {
        if !self.wait_exit(CLOSE_STEP).await {
            self.signal_group(Signal::SIGTERM);
            if !self.wait_exit(CLOSE_STEP).await {
                self.signal_group(Signal::SIGKILL);
                let _ = self.wait_exit(CLOSE_STEP).await;
            }
        }
        self.signal_group(Signal::SIGKILL);
    }

    /// Kills the whole process group now.
    pub(crate) fn kill(&self) {
        self.signal_group(Signal::SIGKILL);
    }

    fn signal_group(&self, signal: Signal) {
        let Ok(pid) = i32::try_from(self.pid) else {
            return;
        };
        if let Err(error) = killpg(Pid::from_raw(pid), signal)
            && error != nix::errno::Errno::ESRCH
        {
            tracing::debug!(server = %self.server, pid, %error, "signalling the MCP child group failed");
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // No child or grandchild outlives its handle, even without a close.
        self.signal_group(Signal::SIGKILL);
    }
}

/// Makes the child receive SIGKILL when the thread that spawned it dies — in
/// `mecated` a runtime worker thread, which lives as long as the process — so no
/// server outlives a `mecated` killed with SIGKILL (its own process group shields it
/// from the terminal's signals, and nothing else would end it). A parent that died
/// between `fork` and the `prctl` is caught by comparing the parent pid.
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    let parent = nix::unistd::getpid();
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before `exec` and calls only
    // async-signal-safe functions (`prctl`, `getppid`); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other(
                    "the parent exited before the child started",
                ));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}
