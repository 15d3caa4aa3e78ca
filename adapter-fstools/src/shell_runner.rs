//! [`ShellRunner`]: the production [`CommandRunner`] — `<shell> -c <command>` in its
//! own process group, stdout and stderr on one pipe, credentials stripped.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine_core::{CommandOutput, CommandRunner, OutputCap, RunnerError};
use engine_ports::CancellationToken;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use sandbox::{Confinement, Prepared, PrivateTemp};
use tokio::io::AsyncReadExt as _;
use tokio::net::unix::pipe;
use tokio::time::{Instant, sleep_until};

/// The shell used when none is configured.
pub const DEFAULT_SHELL: &str = "/bin/sh";

/// Bytes of output a [`ShellRunner`] keeps by default (1 MiB); the tool then applies
/// the environment's smaller D10 cap. Output beyond the limit is read and dropped, so
/// the command never blocks on a full pipe.
pub const DEFAULT_SHELL_CAPTURE_LIMIT: usize = 1024 * 1024;

/// Between SIGTERM and SIGKILL on a timeout or cancellation.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long output is still read after the shell exited while something it started
/// keeps the pipe open; then that process group is killed.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// How long output is still read once the group was sent SIGKILL.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(200);
/// Read buffer size.
const CHUNK_BYTES: usize = 8 * 1024;

/// Runs commands as `<shell> -c <command>`.
///
/// The child runs in `cwd` with stdin from `/dev/null`, in a new process group (its
/// pid), with stdout and stderr on the same pipe so the output keeps the order the
/// command wrote it in. Its environment is this process's (or the injected source's,
/// see [`ShellRunner::with_env_source`]) minus the credentials matched by
/// [`is_stripped_variable`]. Output is decoded as lossy UTF-8 and kept up to the
/// capture limit, cut with the D10 marker beyond it.
///
/// A timeout or a cancellation sends SIGTERM to the whole group, then SIGKILL after
/// 2 s, and returns the output read so far. When the shell exits while a process it
/// started in the background still holds the output pipe, output is read for another
/// 0.5 s, then that group is killed. Dropping the future mid-run kills the group too.
///
/// By default the command runs with the harness's user and file-system access (no
/// sandbox); [`ShellRunner::with_confinement`] confines every command to the
/// working directory it runs in (for a child on a workspace copy, the copy) and a
/// private temporary directory given as `TMPDIR`, or makes the runner refuse
/// commands. The permission policy decides whether a command runs at all.
#[derive(Clone)]
pub struct ShellRunner {
    shell: PathBuf,
    env_source: EnvSource,
    capture_limit: usize,
    confinement: Confinement,
    /// The confined commands' `TMPDIR` (removed when the last clone drops).
    temp: Option<Arc<PrivateTemp>>,
}

/// Where the child's environment starts from.
#[derive(Clone)]
enum EnvSource {
    /// This process's environment, read at each run.
    Inherit,
    /// A fixed set (tests, embedding hosts).
    Fixed(Arc<[(OsString, OsString)]>),
}

impl ShellRunner {
    /// A runner for `shell` (e.g. `/bin/sh`, `/bin/bash`), inheriting this process's
    /// environment minus credentials, with the default capture limit.
    pub fn new(shell: impl Into<PathBuf>) -> Self {
        Self {
            shell: shell.into(),
            env_source: EnvSource::Inherit,
            capture_limit: DEFAULT_SHELL_CAPTURE_LIMIT,
            confinement: Confinement::Unconfined,
            temp: None,
        }
    }

    /// The same runner starting commands as `confinement` says: confined (in a new
    /// private 0700 temporary directory, their `TMPDIR`, writable whatever the mode),
    /// unconfined, or not at all (each call fails with the refusal's text).
    ///
    /// # Errors
    /// The private temporary directory could not be created.
    pub fn with_confinement(mut self, confinement: Confinement) -> std::io::Result<Self> {
        self.temp = match &confinement {
            Confinement::Confined(_) => Some(Arc::new(PrivateTemp::create()?)),
            Confinement::Unconfined | Confinement::Refused(_) => None,
        };
        self.confinement = confinement;
        Ok(self)
    }

    /// How commands are started.
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
    }

    /// The confined commands' temporary directory, when confined.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_deref().map(PrivateTemp::path)
    }

    /// The sandbox for one command in `cwd`: nothing, a prepared one, or the refusal.
    fn prepare(&self, cwd: &Path) -> Result<Option<(Prepared, &Path)>, RunnerError> {
        match (&self.confinement, self.temp.as_deref()) {
            (Confinement::Unconfined, _) => Ok(None),
            (Confinement::Refused(reason), _) => Err(RunnerError::Refused {
                reason: reason.to_string(),
            }),
            (Confinement::Confined(policy), Some(temp)) => policy
                .prepare(cwd, temp.path())
                .map(|prepared| Some((prepared, temp.path())))
                .map_err(|error| RunnerError::Refused {
                    reason: format!("Shell is refused: the sandbox could not be set up: {error}"),
                }),
            (Confinement::Confined(_), None) => Err(RunnerError::Refused {
                reason: "Shell is refused: the sandbox has no temporary directory".to_owned(),
            }),
        }
    }

    /// The same runner starting children from `vars` instead of this process's
    /// environment (credentials are still stripped).
    #[must_use]
    pub fn with_env_source<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        let vars: Vec<(OsString, OsString)> = vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self.env_source = EnvSource::Fixed(vars.into());
        self
    }

    /// The same runner keeping at most `bytes` of output (at least the environment's
    /// output cap, or the model sees this limit's marker instead of the D10 one).
    #[must_use]
    pub fn with_capture_limit(mut self, bytes: usize) -> Self {
        self.capture_limit = bytes;
        self
    }

    /// The shell program.
    pub fn shell(&self) -> &Path {
        &self.shell
    }

    /// The capture limit in bytes.
    pub fn capture_limit(&self) -> usize {
        self.capture_limit
    }

    /// The environment a child gets: the source minus stripped credentials.
    fn child_env(&self) -> Vec<(OsString, OsString)> {
        let keep = |(name, _): &(OsString, OsString)| !is_stripped_variable(name);
        match &self.env_source {
            EnvSource::Inherit => std::env::vars_os().filter(keep).collect(),
            EnvSource::Fixed(vars) => vars.iter().filter(|pair| keep(pair)).cloned().collect(),
        }
    }
}

impl std::fmt::Debug for ShellRunner {
    /// Never shows variable values (an injected source may hold secrets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env_source = match &self.env_source {
            EnvSource::Inherit => "inherit".to_owned(),
            EnvSource::Fixed(vars) => format!("fixed ({} variables)", vars.len()),
        };
        f.debug_struct("ShellRunner")
            .field("shell", &self.shell)
            .field("env_source", &env_source)
            .field("capture_limit", &self.capture_limit)
            .field("confinement", &self.confinement)
            .finish()
    }
}

impl Default for ShellRunner {
    /// [`DEFAULT_SHELL`].
    fn default() -> Self {
        Self::new(DEFAULT_SHELL)
    }
}

/// Whether the variable `name` is kept from shell children: `OPENAI_API_KEY`,
/// `ANTHROPIC_API_KEY`, `MECATED_AUTH_TOKEN`, `PGPASSWORD` (the store's database
/// password) and every `MCP_<NAME>_TOKEN`, compared
/// ASCII case-insensitively (a lower-case copy of a credential is still one).
pub fn is_stripped_variable(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let upper = name.to_ascii_uppercase();
    const PREFIX: &str = "MCP_";
    const SUFFIX: &str = "_TOKEN";
    matches!(
        upper.as_str(),
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" | "MECATED_AUTH_TOKEN" | "PGPASSWORD"
    ) || (upper.len() > PREFIX.len() + SUFFIX.len() && upper.starts_with(PREFIX) && upper.ends_with(SUFFIX))
}

#[async_trait]
impl CommandRunner for ShellRunner {
    async fn run(
        &self,
        command: &str,
        cwd: &Path,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<CommandOutput, RunnerError> {
        let deadline = Instant::now() + timeout;
        let sandbox = self.prepare(cwd)?;
        let spawn_error = |source| RunnerError::Spawn {
            program: self.shell.display().to_string(),
            source,
        };
        let (reader, writer) = std::io::pipe().map_err(spawn_error)?;
        let writer_for_stderr = writer.try_clone().map_err(spawn_error)?;
        let mut output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(spawn_error)?;
        let mut child = {
            let mut cmd = tokio::process::Command::new(&self.shell);
            cmd.arg("-c")
                .arg(command)
                .current_dir(cwd)
                .env_clear()
                .envs(self.child_env())
                .stdin(Stdio::null())
                .stdout(Stdio::from(writer))
                .stderr(Stdio::from(writer_for_stderr))
                .process_group(0)
                .kill_on_drop(true);
            if let Some((prepared, temp)) = sandbox {
                cmd.env("TMPDIR", temp);
                prepared.apply_to(cmd.as_std_mut());
            }
            // `cmd` (holding the parent's copies of the write end) drops at the end of
            // this block, so the pipe reaches EOF once the command's side closes.
            cmd.spawn().map_err(spawn_error)?
        };
        let mut group = GroupGuard::new(child.id());
        let mut run = Running::default();
        let mut buf = vec![0_u8; CHUNK_BYTES];
        let mut capture = Capture::new(self.capture_limit);

        // Until the command finishes, times out or is cancelled.
        let mut drain_deadline: Option<Instant> = None;
        let ending = loop {
            if run.done() {
                break Ending::Finished;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => break Ending::Cancelled,
                () = sleep_until(deadline) => break Ending::TimedOut,
                () = sleep_until(drain_deadline.unwrap_or(deadline)), if drain_deadline.is_some() => {
                    break Ending::LeftOver;
                }
                read = output.read(&mut buf), if !run.eof => run.on_read(read, &buf, &mut capture),
                waited = child.wait(), if run.exit.is_none() => {
                    run.on_exit(waited);
                    drain_deadline = Some((Instant::now() + DRAIN_AFTER_EXIT).min(deadline));
                }
            }
        };

        match ending {
            Ending::Finished => {}
            Ending::LeftOver => group.signal(Signal::SIGKILL),
            Ending::TimedOut | Ending::Cancelled => {
                group.signal(Signal::SIGTERM);
                let grace_end = Instant::now() + KILL_GRACE;
                while !run.done() {
                    tokio::select! {
                        biased;
                        () = sleep_until(grace_end) => break,
                        read = output.read(&mut buf), if !run.eof => run.on_read(read, &buf, &mut capture),
                        waited = child.wait(), if run.exit.is_none() => run.on_exit(waited),
                    }
                }
                group.signal(Signal::SIGKILL);
                if run.exit.is_none() {
                    run.on_exit(child.wait().await);
                }
            }
        }
        if ending != Ending::Finished {
            // What the killed group still had in the pipe.
            drain(
                &mut output,
                &mut run,
                &mut buf,
                &mut capture,
                Instant::now() + DRAIN_AFTER_KILL,
            )
            .await;
        }
        group.disarm();
        Ok(CommandOutput {
            output: capture.into_text(),
            exit_code: run.exit.flatten(),
            timed_out: matches!(ending, Ending::TimedOut),
            cancelled: matches!(ending, Ending::Cancelled),
        })
    }
}

/// How the main wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// The shell exited and the pipe reached EOF.
    Finished,
    /// The shell exited but something kept the pipe open past the drain window.
    LeftOver,
    TimedOut,
    Cancelled,
}

/// What is known about the child so far.
#[derive(Default)]
struct Running {
    /// `Some(code)` once the shell was reaped (`Some(None)`: killed by a signal, or
    /// the wait failed).
    exit: Option<Option<i32>>,
    /// Whether the pipe reached EOF (or failed).
    eof: bool,
}

impl Running {
    fn done(&self) -> bool {
        self.eof && self.exit.is_some()
    }

    fn on_read(&mut self, read: std::io::Result<usize>, buf: &[u8], capture: &mut Capture) {
        match read {
            Ok(0) => self.eof = true,
            Ok(n) => capture.push(&buf[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                tracing::warn!(%error, "reading shell output failed");
                self.eof = true;
            }
        }
    }

    fn on_exit(&mut self, waited: std::io::Result<std::process::ExitStatus>) {
        self.exit = Some(match waited {
            Ok(status) => status.code(),
            Err(error) => {
                tracing::warn!(%error, "waiting for the shell failed");
                None
            }
        });
    }
}

/// Reads what is left in the pipe until EOF or `until`.
async fn drain(
    output: &mut pipe::Receiver,
    run: &mut Running,
    buf: &mut [u8],
    capture: &mut Capture,
    until: Instant,
) {
    while !run.eof {
        tokio::select! {
            biased;
            () = sleep_until(until) => break,
            read = output.read(buf) => run.on_read(read, buf, capture),
        }
    }
}

/// Output kept up to a limit; one byte beyond it marks the overflow.
struct Capture {
    bytes: Vec<u8>,
    limit: usize,
}

impl Capture {
    fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let room = self.limit.saturating_add(1).saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    /// Lossy UTF-8, cut with the D10 marker when the limit was passed. Lossy decoding
    /// never shortens the bytes, so an overflow always exceeds the limit.
    fn into_text(self) -> String {
        let text = String::from_utf8_lossy(&self.bytes).into_owned();
        OutputCap::new(self.limit).truncate_owned(text)
    }
}

/// Kills the child's process group with SIGKILL when dropped armed (the future was
/// dropped mid-run).
struct GroupGuard {
    pgid: Option<Pid>,
    armed: bool,
}

impl GroupGuard {
    fn new(child_pid: Option<u32>) -> Self {
        let pgid = child_pid
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw);
        Self { pgid, armed: true }
    }

    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH: the group is already gone.
            let _ = killpg(pgid, signal);
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.signal(Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_and_the_rest_kept() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "MECATED_AUTH_TOKEN",
            "PGPASSWORD",
            "pgpassword",
            "MCP_GITHUB_TOKEN",
            "MCP_A_B_TOKEN",
            "mcp_vmcp_token",
        ] {
            assert!(is_stripped_variable(OsStr::new(name)), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "MCP_TOKEN",
            "MCP_GITHUB_URL",
            "MECATED_LOG",
            "OPENAI_BASE_URL",
        ] {
            assert!(!is_stripped_variable(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn capture_marks_an_overflow_with_the_marker() {
        let mut capture = Capture::new(100);
        capture.push(&[b'x'; 80]);
        capture.push(&[b'y'; 80]);
        let text = capture.into_text();
        assert_eq!(text.len(), 100);
        assert!(text.ends_with(&engine_core::truncation_marker(100)));

        let mut exact = Capture::new(100);
        exact.push(&[b'x'; 100]);
        assert_eq!(exact.into_text(), "x".repeat(100));
    }
}
