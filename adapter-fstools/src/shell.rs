//! `Shell`: runs a command through the environment's [`CommandRunner`] in the
//! workspace root.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use engine_core::{CommandOutput, Environment, Tool, ToolError, floor_char_boundary, truncation_marker};
use engine_ports::{CancellationToken, ToolCall, ToolResult, ToolSpec};
use serde::Deserialize;

use crate::reply;

/// The timeout when the call gives none.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The largest timeout accepted.
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;

/// The `Shell` tool (mutating).
#[derive(Clone, Copy, Debug, Default)]
pub struct Shell;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[async_trait]
impl Tool for Shell {
    fn spec(&self) -> ToolSpec {
        // Built once: the catalog asks for it on every turn.
        static SPEC: LazyLock<ToolSpec> = LazyLock::new(|| {
            ToolSpec::new(
                "Shell",
                "Runs a shell command as `<shell> -c <command>` (the configured shell, /bin/sh by \
                 default) with the workspace root as working directory and stdin empty, so \
                 interactive commands cannot wait for input. Returns stdout and stderr merged in \
                 the order written, then a final `[exit status: N]` line; a non-zero exit status \
                 is an error. `timeout_ms` defaults to 120000 (at most 600000); on timeout the \
                 command's process group gets SIGTERM, then SIGKILL after 2 s, and the output so \
                 far is returned with the timeout stated. Background processes still holding the \
                 output when the command exits are killed. Output is capped; text beyond the cap \
                 is cut with a truncation marker. Prefer Read, Grep, Glob and Edit for files.",
            )
            .with_schema(serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line, run with `-c` by the shell."},
                    "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Timeout in milliseconds. Default 120000."}
                },
                "required": ["command"],
                "additionalProperties": false
            }))
        });
        SPEC.clone()
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: Args = match reply::parse(call, env) {
            Ok(args) => args,
            Err(result) => return Ok(result),
        };
        if args.command.trim().is_empty() {
            return Ok(reply::fail(call, env, "command must not be empty".to_owned()));
        }
        let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
            return Ok(reply::fail(
                call,
                env,
                format!("timeout_ms must be between 1 and {MAX_TIMEOUT_MS}, got {timeout_ms}"),
            ));
        }
        let Some(runner) = env.runner() else {
            return Ok(reply::fail(
                call,
                env,
                "no shell is available in this session (the harness runs without a shell, e.g. --no-shell); use the file tools instead".to_owned(),
            ));
        };
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let ran = runner
            .run(
                &args.command,
                env.workspace_root(),
                Duration::from_millis(timeout_ms),
                cancel.clone(),
            )
            .await;
        let output = match ran {
            Ok(output) => output,
            Err(error) => {
                return Ok(reply::fail(
                    call,
                    env,
                    format!("the command could not start: {error}"),
                ));
            }
        };
        let (text, is_error) = render(&output, timeout_ms, env.output_cap().max_bytes());
        Ok(if is_error {
            reply::fail(call, env, text)
        } else {
            reply::ok(call, env, text)
        })
    }
}

/// The model-facing text for a finished command, at most `cap` bytes, and whether it
/// is an error. The final status line survives truncation: the output is cut before it
/// with the D10 marker.
fn render(output: &CommandOutput, timeout_ms: u64, cap: usize) -> (String, bool) {
    let (status, is_error) = if output.timed_out {
        (
            format!("[timed out after {timeout_ms} ms; the command's process group was killed]"),
            true,
        )
    } else if output.cancelled {
        (
            "[cancelled; the command's process group was killed]".to_owned(),
            true,
        )
    } else {
        match output.exit_code {
            Some(code) => (format!("[exit status: {code}]"), code != 0),
            None => ("[exit status: killed by a signal]".to_owned(), true),
        }
    };
    let body = output.output.as_str();
    let separator = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let whole = format!("{body}{separator}{status}");
    if whole.len() <= cap {
        return (whole, is_error);
    }
    let marker = truncation_marker(cap);
    let room = cap.checked_sub(marker.len() + 1 + status.len());
    let text = match room {
        Some(room) => format!("{}{marker}\n{status}", floor_char_boundary(body, room)),
        // A cap too small for marker and status: plain D10 truncation.
        None => whole,
    };
    (text, is_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(output: &str, exit_code: Option<i32>) -> CommandOutput {
        CommandOutput {
            output: output.to_owned(),
            exit_code,
            ..CommandOutput::default()
        }
    }

    #[test]
    fn status_line_follows_the_output() {
        assert_eq!(
            render(&finished("hi\n", Some(0)), 1, 100),
            ("hi\n[exit status: 0]".to_owned(), false)
        );
        assert_eq!(
            render(&finished("hi", Some(3)), 1, 100),
            ("hi\n[exit status: 3]".to_owned(), true)
        );
        assert_eq!(
            render(&finished("", None), 1, 100),
            ("[exit status: killed by a signal]".to_owned(), true)
        );
    }

    #[test]
    fn a_long_output_is_cut_before_the_status_line_with_the_marker() {
        let (text, _) = render(&finished(&"x".repeat(10_000), Some(0)), 1, 1_000);
        assert_eq!(text.len(), 1_000);
        assert!(text.ends_with(&format!("{}\n[exit status: 0]", truncation_marker(1_000))));
    }
}
