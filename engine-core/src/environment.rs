//! [`Environment`]: the per-session execution context tools receive, and the
//! [`CommandRunner`] port the shell tool runs through.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::delegation::DelegationScope;
use crate::elicitation::Elicitor;
use crate::output_cap::OutputCap;

/// The per-session execution context: immutable and cheap to clone.
#[derive(Clone)]
pub struct Environment {
    inner: Arc<Inner>,
    /// Per call (the dispatcher gives every call its own), so kept beside the shared
    /// part: giving a call its elicitor copies nothing else.
    elicitor: Option<Arc<dyn Elicitor>>,
}

struct Inner {
    workspace_root: PathBuf,
    runner: Option<Arc<dyn CommandRunner>>,
    output_cap: OutputCap,
    /// What delegation tools need of the run that calls them (set per turn by an
    /// engine that can start child engines).
    delegation: Option<Arc<DelegationScope>>,
}

/// An environment that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvironmentError {
    /// The workspace root is relative.
    #[error("workspace root {0:?} must be an absolute path")]
    RelativeRoot(PathBuf),
}

impl Environment {
    /// An environment rooted at `workspace_root`, with no command runner and the
    /// default output cap.
    ///
    /// # Errors
    /// [`EnvironmentError::RelativeRoot`] for a relative path.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Result<Self, EnvironmentError> {
        let workspace_root = workspace_root.into();
        if !workspace_root.is_absolute() {
            return Err(EnvironmentError::RelativeRoot(workspace_root));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                workspace_root,
                runner: None,
                output_cap: OutputCap::default(),
                delegation: None,
            }),
            elicitor: None,
        })
    }

    /// The same environment with a command runner.
    #[must_use]
    pub fn with_runner(&self, runner: Arc<dyn CommandRunner>) -> Self {
        self.rebuild(|inner| inner.runner = Some(runner))
    }

    /// The same environment with another output cap.
    #[must_use]
    pub fn with_output_cap(&self, cap: OutputCap) -> Self {
        self.rebuild(|inner| inner.output_cap = cap)
    }

    /// The same environment for one call, whose tool may ask the user through
    /// `elicitor` (the dispatcher gives every call its own).
    #[must_use]
    pub fn with_elicitor(&self, elicitor: Arc<dyn Elicitor>) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            elicitor: Some(elicitor),
        }
    }

    /// The same environment (runner, output cap) rooted elsewhere: a child's copy of
    /// the workspace.
    ///
    /// # Errors
    /// [`EnvironmentError::RelativeRoot`] for a relative path.
    pub fn with_workspace_root(&self, workspace_root: impl Into<PathBuf>) -> Result<Self, EnvironmentError> {
        let workspace_root = workspace_root.into();
        if !workspace_root.is_absolute() {
            return Err(EnvironmentError::RelativeRoot(workspace_root));
        }
        Ok(self.rebuild(|inner| inner.workspace_root = workspace_root))
    }

    /// The same environment carrying what delegation tools need of the calling run.
    pub(crate) fn with_delegation(&self, scope: Arc<DelegationScope>) -> Self {
        self.rebuild(|inner| inner.delegation = Some(scope))
    }

    /// What delegation tools need of the calling run; `None` in an engine that cannot
    /// start child engines (a child's, or one built without them).
    pub(crate) fn delegation(&self) -> Option<&Arc<DelegationScope>> {
        self.inner.delegation.as_ref()
    }

    fn rebuild(&self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            workspace_root: self.inner.workspace_root.clone(),
            runner: self.inner.runner.clone(),
            output_cap: self.inner.output_cap,
            delegation: self.inner.delegation.clone(),
        };
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
            elicitor: self.elicitor.clone(),
        }
    }

    /// The workspace root (absolute).
    pub fn workspace_root(&self) -> &Path {
        &self.inner.workspace_root
    }

    /// The command runner; `None` means no shell is available.
    pub fn runner(&self) -> Option<&Arc<dyn CommandRunner>> {
        self.inner.runner.as_ref()
    }

    /// The output cap (D10).
    pub fn output_cap(&self) -> OutputCap {
        self.inner.output_cap
    }

    /// Where the current call's tool may ask the user (`None` outside a dispatched
    /// call).
    pub fn elicitor(&self) -> Option<&Arc<dyn Elicitor>> {
        self.elicitor.as_ref()
    }
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("workspace_root", &self.inner.workspace_root)
            .field("runner", &self.inner.runner.is_some())
            .field("output_cap", &self.inner.output_cap)
            .field("elicitor", &self.elicitor.is_some())
            .finish()
    }
}

/// What a finished command produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandOutput {
    /// Stdout and stderr merged in arrival order, lossy UTF-8, capped.
    pub output: String,
    /// The exit code (`None` when killed by a signal or not finished).
    pub exit_code: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Whether cancellation killed it.
    pub cancelled: bool,
}

/// A command that could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunnerError {
    /// The process could not be spawned.
    #[error("could not start {program}: {source}")]
    Spawn {
        /// The shell or program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The runner refuses to start commands, or could not confine this one (a
    /// sandbox that cannot be set up); the text says why and what to change.
    #[error("{reason}")]
    Refused {
        /// Why, in the operator's terms (flags to change).
        reason: String,
    },
}

/// Runs shell commands for the shell tool.
///
/// # Contract
/// `run` returns `Err` only when the process could not start; a timeout or a
/// cancellation kills the whole process group and returns the output so far with the
/// matching flag set.
#[async_trait]
pub trait CommandRunner: Send + Sync {
    /// Runs `command` in `cwd`.
    async fn run(
        &self,
        command: &str,
        cwd: &Path,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<CommandOutput, RunnerError>;
}
