//! The core tools of the catalog: `Read`, `Write`, `Edit`, `Glob`, `Grep`, `ListDir`
//! and `Shell`, plus [`ShellRunner`], the production
//! [`CommandRunner`](engine_core::CommandRunner).
//!
//! Every tool works inside the [`Environment`](engine_core::Environment)'s workspace
//! root: a `path` argument is relative to it (or absolute inside it), is normalized
//! lexically, and its longest existing prefix is canonicalized and checked again, so
//! neither `..` nor a symlink leads out. Writes are atomic (temp file + rename, the
//! final component opened with `O_NOFOLLOW`) and keep permission bits. Every result
//! passes through the environment's D10 [`OutputCap`](engine_core::OutputCap), and
//! anything the model can act on (a missing file, a bad regex, a path outside the
//! workspace) is an error *result* naming the path as the model gave it.
//!
//! `Shell` runs arbitrary commands (minus a few credential variables in their
//! environment): the permission policy gates it, `--no-shell` leaves it out together
//! with the runner, and [`ShellRunner::with_confinement`] confines each command with
//! the `sandbox` crate (writes only in its working directory and a private `TMPDIR`);
//! unconfined it has the harness's privileges. Confinement of the file tools protects
//! them from paths the model invents, not from a hostile local user racing them.
//!
//! Start with [`core_tools`] (what the composition root registers) and
//! [`ShellRunner`] (what it puts into the environment); each tool lives in a file named
//! for it, and `confinement.rs` holds the path rules they share. [`FsForker`] is the
//! filesystem [`WorkspaceForker`](engine_ports::WorkspaceForker): full copies of the
//! workspace for children that work apart from it.

mod atomic_write;
mod blocking;
mod confinement;
mod edit;
mod file_tool;
mod fork;
mod glob;
mod grep;
mod list_dir;
mod local_disk;
mod read;
mod reply;
mod root_cache;
mod shell;
mod shell_runner;
mod walk;
mod write;

use std::sync::Arc;

use engine_core::Tool;

// The public surface, in one place: the tools (so a host can register a subset), the
// constructor the composition root calls, and the production command runner.
pub use edit::{Edit, MAX_EDIT_RESULT_BYTES};
pub use fork::{CopyStats, DEFAULT_FORK_BUDGET_BYTES, DEFAULT_PRESERVED_CAP, ForkLimits, FsForker};
pub use glob::{Glob, MAX_GLOB_PATTERN_BYTES};
pub use grep::{Grep, MAX_GREP_PATTERN_BYTES, REGEX_SIZE_LIMIT};
pub use list_dir::ListDir;
pub use read::Read;
pub use shell::Shell;
pub use shell_runner::{DEFAULT_SHELL, DEFAULT_SHELL_CAPTURE_LIMIT, ShellRunner, is_stripped_variable};
pub use write::Write;

/// What [`core_tools`] builds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoreToolsOptions {
    /// Whether the `Shell` tool is included (`false` for `--no-shell`).
    pub shell: bool,
}

impl CoreToolsOptions {
    /// Every core tool, `Shell` included.
    pub fn new() -> Self {
        Self { shell: true }
    }

    /// The same options with `Shell` included or not.
    #[must_use]
    pub fn with_shell(mut self, shell: bool) -> Self {
        self.shell = shell;
        self
    }
}

impl Default for CoreToolsOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// The core tools, ready to register in a catalog: `Read`, `Write`, `Edit`, `Glob`,
/// `Grep`, `ListDir`, and `Shell` unless `options.shell` is `false`.
///
/// The tools hold no per-session state; one set serves every session. `Shell` runs
/// through the session environment's runner and reports that no shell is available
/// when there is none, so a host that drops the runner should drop `Shell` too.
pub fn core_tools(options: &CoreToolsOptions) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Read),
        Arc::new(Write),
        Arc::new(Edit),
        Arc::new(Glob),
        Arc::new(Grep),
        Arc::new(ListDir),
    ];
    if options.shell {
        tools.push(Arc::new(Shell));
    }
    tools
}
