//! [`FileTool`]: what a core file tool is made of (its spec, whether it is read-only,
//! its arguments, their check, its blocking work), and the one [`Tool`] implementation
//! over it, which every file tool gets here.
//!
//! [`Tool`]: engine_core::Tool

use engine_core::{Environment, ToolError};
use engine_ports::{CancellationToken, ToolCall, ToolResult, ToolSpec};
use serde::de::DeserializeOwned;

use crate::blocking::run_blocking;
use crate::confinement::Workspace;
use crate::reply::{self, Reply};

/// A core tool whose work is blocking file-system work inside the workspace.
pub(crate) trait FileTool: Send + Sync + 'static {
    /// [`Tool::read_only`](engine_core::Tool::read_only).
    const READ_ONLY: bool;

    /// The call's arguments; arguments that do not parse get the uniform
    /// invalid-arguments result.
    type Args: DeserializeOwned;

    /// What [`FileTool::check`] makes of the arguments for [`FileTool::run`].
    type Checked: Send + 'static;

    /// The tool's spec; [`impl_tool!`] builds it once per process.
    fn spec() -> ToolSpec;

    /// Validates the arguments before any file is touched: `Err(text)` is the error
    /// result.
    fn check(args: Self::Args, env: &Environment) -> Result<Self::Checked, String>;

    /// The work, on the blocking pool; it checks `cancel` between steps.
    fn run(workspace: &Workspace, checked: Self::Checked, cancel: &CancellationToken) -> Reply;

    /// The work done on the executor instead, when it is known to be quick (a small
    /// file on a local disk, see `local_disk`); `Err` hands the arguments back for
    /// [`FileTool::run`] on the blocking pool. By default everything goes there.
    fn run_inline(
        _workspace: &Workspace,
        checked: Self::Checked,
        _cancel: &CancellationToken,
    ) -> Result<Reply, Self::Checked> {
        Err(checked)
    }
}

/// A file tool's `execute`: parses the arguments (invalid → the uniform result), checks
/// them (`Err(text)` → an error result, before any file is touched), confines to the
/// workspace, runs the work inline when the tool knows it is quick, else on the
/// blocking pool (abandoned on cancellation), and caps what it replies.
///
/// # Errors
/// [`ToolError`] when the workspace root is unusable or the call is cancelled.
pub(crate) async fn execute<T: FileTool>(
    cancel: &CancellationToken,
    call: &ToolCall,
    env: &Environment,
) -> Result<ToolResult, ToolError> {
    let args = match reply::parse::<T::Args>(call, env) {
        Ok(args) => args,
        Err(result) => return Ok(result),
    };
    let checked = match T::check(args, env) {
        Ok(checked) => checked,
        Err(text) => return Ok(reply::fail(call, env, text)),
    };
    let workspace = Workspace::of(env)?;
    let reply = match T::run_inline(&workspace, checked, cancel) {
        Ok(reply) => reply,
        Err(checked) => run_blocking(cancel, move |cancel| T::run(&workspace, checked, cancel)).await?,
    };
    Ok(reply::finish(call, env, reply))
}

/// Implements [`Tool`](engine_core::Tool) for each [`FileTool`] named.
///
/// A blanket `impl<T: FileTool> Tool for T` is refused by the orphan rule (`Tool` is
/// engine-core's), so the tools are listed. The macro holds what cannot be generic:
/// the static that caches each spec, which the catalog asks for on every turn.
macro_rules! impl_tool {
    ($($tool:ty),+ $(,)?) => {$(
        #[async_trait::async_trait]
        impl engine_core::Tool for $tool {
            fn spec(&self) -> ToolSpec {
                static SPEC: std::sync::LazyLock<ToolSpec> = std::sync::LazyLock::new(<$tool as FileTool>::spec);
                SPEC.clone()
            }

            fn read_only(&self) -> bool {
                <$tool as FileTool>::READ_ONLY
            }

            async fn execute(
                &self,
                cancel: &CancellationToken,
                call: &ToolCall,
                env: &Environment,
            ) -> Result<ToolResult, ToolError> {
                execute::<$tool>(cancel, call, env).await
            }
        }
    )+};
}

// Every core tool but Shell, whose work is a command, not file-system work.
impl_tool!(
    crate::Read,
    crate::Write,
    crate::Edit,
    crate::Glob,
    crate::Grep,
    crate::ListDir
);
