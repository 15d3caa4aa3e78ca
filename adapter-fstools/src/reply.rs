//! Results as the model sees them: every text passes through the environment's D10
//! output cap, errors included.

use engine_core::Environment;
use engine_ports::{ToolCall, ToolResult};
use serde::de::DeserializeOwned;

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
