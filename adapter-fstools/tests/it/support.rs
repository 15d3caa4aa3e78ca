//! Temporary workspaces, tool calls and process probes shared by the tests.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use adapter_fstools::ShellRunner;
use engine_core::{Environment, OutputCap, Tool};
use engine_ports::{CancellationToken, ToolCall, ToolResult};
use tempfile::TempDir;

/// A temporary workspace and the environment rooted at it.
pub(crate) struct Ws {
    dir: TempDir,
    pub(crate) env: Environment,
}

impl Ws {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let env = Environment::new(dir.path()).unwrap();
        Self { dir, env }
    }

    /// The same workspace with another output cap.
    pub(crate) fn with_cap(mut self, bytes: usize) -> Self {
        self.env = self.env.with_output_cap(OutputCap::new(bytes));
        self
    }

    /// The same workspace with `runner` as its command runner.
    pub(crate) fn with_runner(mut self, runner: ShellRunner) -> Self {
        self.env = self.env.with_runner(Arc::new(runner));
        self
    }

    /// The same workspace with the default `/bin/sh` runner.
    pub(crate) fn with_shell(self) -> Self {
        self.with_runner(ShellRunner::default())
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    /// Writes `content` at `relative`, creating parent directories.
    pub(crate) fn file(&self, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub(crate) fn dir(&self, relative: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    pub(crate) fn symlink(&self, relative: &str, target: impl AsRef<Path>) -> PathBuf {
        let path = self.path(relative);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    }

    pub(crate) fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    /// Sorted entry names of the directory `relative`.
    pub(crate) fn names(&self, relative: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(relative))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// A directory outside every workspace, for symlinks pointing out.
pub(crate) fn outside() -> TempDir {
    tempfile::tempdir().unwrap()
}

pub(crate) fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

pub(crate) fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Calls `tool` with JSON arguments.
pub(crate) async fn call(tool: &dyn Tool, env: &Environment, args: serde_json::Value) -> ToolResult {
    call_raw(tool, env, &args.to_string()).await
}

/// Calls `tool` with raw argument text.
pub(crate) async fn call_raw(tool: &dyn Tool, env: &Environment, args: &str) -> ToolResult {
    let call = ToolCall::new("c1", tool.spec().name(), args);
    let result = tool.execute(&CancellationToken::new(), &call, env).await.unwrap();
    assert_eq!(result.call_id().as_str(), "c1");
    result
}

/// Asserts a successful result and returns its text.
#[track_caller]
pub(crate) fn ok(result: &ToolResult) -> &str {
    assert!(
        !result.is_error(),
        "expected success, got error: {}",
        result.content()
    );
    result.content()
}

/// Asserts an error result and returns its text.
#[track_caller]
pub(crate) fn err(result: &ToolResult) -> &str {
    assert!(result.is_error(), "expected an error, got: {}", result.content());
    result.content()
}

/// Asserts the text refuses `given` as outside the workspace.
#[track_caller]
pub(crate) fn assert_outside(result: &ToolResult, given: &str) {
    let text = err(result);
    assert!(text.contains(&format!("{given:?}")), "names {given:?}: {text}");
    assert!(text.contains("outside the workspace"), "{text}");
}

/// Whether the process `pid` is gone: no such process, or a zombie (dead, waiting to
/// be reaped by an init that may never do it).
pub(crate) fn process_gone(pid: i32) -> bool {
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    if kill(Pid::from_raw(pid), None).is_err() {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits (bounded, 5 s) for a condition signals make true asynchronously.
pub(crate) async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pid written to `path` by a test command, once it is there (bounded, 5 s).
pub(crate) async fn pid_in(path: &Path) -> i32 {
    let mut pid = None;
    let found = eventually(|| {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok());
        pid.is_some()
    })
    .await;
    assert!(found, "no pid written to {}", path.display());
    pid.unwrap()
}
