//! Results as the model sees them: every text passes through the environment's D10
//! output cap, errors included; and [`execute_blocking`], the one shape of a file
//! tool's `execute`.

use engine_core::{Environment, ToolError};
use engine_ports::{CancellationToken, ToolCall, ToolResult};
use serde::de::DeserializeOwned;

use crate::blocking::run_blocking;
use crate::confinement::Workspace;

/// A successful result for `call`, capped.
pub(crate) fn ok(call: &ToolCall, env: &Environment, text: String) -> ToolResult {
    ToolResult::text(call.id().clone(), env.output_cap().truncate_owned(text))
}

/// An error result for `call`, capped.
pub(crate) fn fail(call: &ToolCall, env: &Environment, text: String) -> ToolResult {
    ToolResult::error(call.id().clone(), env.output_cap().truncate_owned(text))
}

/// What a tool's blocking part concluded: `Ok` text for a success, `Err` text for an
/// error result.
pub(crate) type Reply = Result<String, String>;

/// The capped result for a [`Reply`].
pub(crate) fn finish(call: &ToolCall, env: &Environment, reply: Reply) -> ToolResult {
    match reply {
        Ok(text) => ok(call, env, text),
        Err(text) => fail(call, env, text),
    }
}

/// The uniform invalid-arguments result, capped.
pub(crate) fn invalid_args(call: &ToolCall, env: &Environment, error: engine_ports::ArgsError) -> ToolResult {
    let result = error.into_result(call);
    let capped = env.output_cap().truncate_owned(result.content().to_owned());
    result.with_content(capped)
}

/// The call's arguments as `A`, or the uniform invalid-arguments result.
pub(crate) fn parse<A: DeserializeOwned>(call: &ToolCall, env: &Environment) -> Result<A, ToolResult> {
    call.parse_args().map_err(|error| invalid_args(call, env, error))
}

/// A file tool's `execute`: parses the arguments as `A` (invalid → the uniform
/// result), lets `check` validate them into what the work needs (`Err(text)` → an error
/// result, before any file is touched), confines to the workspace, runs `work` on the
/// blocking pool (abandoned on cancellation) and caps what it replies.
///
/// # Errors
/// [`ToolError`] when the workspace root is unusable or the call is cancelled.
pub(crate) async fn execute_blocking<A, P>(
    cancel: &CancellationToken,
    call: &ToolCall,
    env: &Environment,
    check: impl FnOnce(A, &Environment) -> Result<P, String>,
    work: impl FnOnce(&Workspace, P, &CancellationToken) -> Reply + Send + 'static,
) -> Result<ToolResult, ToolError>
where
    A: DeserializeOwned,
    P: Send + 'static,
{
    let args = match parse::<A>(call, env) {
        Ok(args) => args,
        Err(result) => return Ok(result),
    };
    let prepared = match check(args, env) {
        Ok(prepared) => prepared,
        Err(text) => return Ok(fail(call, env, text)),
    };
    let workspace = Workspace::of(env)?;
    let reply = run_blocking(cancel, move |cancel| work(&workspace, prepared, cancel)).await?;
    Ok(finish(call, env, reply))
}
