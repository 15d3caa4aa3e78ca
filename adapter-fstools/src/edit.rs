//! `Edit`: replaces an exact string in a file, once or everywhere, atomically.

use async_trait::async_trait;
use engine_core::{Environment, Tool, ToolError};
use engine_ports::{CancellationToken, ToolCall, ToolResult, ToolSpec};
use serde::Deserialize;

use crate::atomic_write::{read_existing, replace};
use crate::blocking::run_blocking;
use crate::confinement::Workspace;
use crate::reply::{self, Reply};

/// The `Edit` tool (mutating).
#[derive(Clone, Copy, Debug, Default)]
pub struct Edit;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "Edit",
            "Replaces exact text in an existing text file of the workspace. `path` is \
             relative to the workspace root. `old_string` must be non-empty, differ from \
             `new_string`, and match the file byte for byte (whitespace and indentation \
             included). Without `replace_all` it must occur exactly once: include enough \
             surrounding lines to make it unique; with `replace_all: true` every occurrence \
             is replaced. The file is replaced atomically, keeping its permission bits. \
             Returns the number of replacements.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "old_string": {"type": "string", "description": "The exact text to replace (non-empty)."},
                "new_string": {"type": "string", "description": "The replacement text (must differ from old_string)."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one. Default false."}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        }))
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
        let args: Args = match call.parse_args() {
            Ok(args) => args,
            Err(error) => return Ok(reply::invalid_args(call, env, error)),
        };
        if args.old_string.is_empty() {
            return Ok(reply::fail(call, env, "old_string must not be empty".to_owned()));
        }
        if args.old_string == args.new_string {
            return Ok(reply::fail(
                call,
                env,
                "old_string and new_string are identical; nothing would change".to_owned(),
            ));
        }
        let workspace = Workspace::of(env)?;
        let reply = run_blocking(cancel, move |_| edit(&workspace, &args)).await?;
        Ok(reply::finish(call, env, reply))
    }
}

fn edit(workspace: &Workspace, args: &Args) -> Reply {
    let given = args.path.as_str();
    let confined = workspace.confine_or_explain(given)?;
    let (bytes, permissions) =
        read_existing(&confined.resolved).map_err(|error| error.message(given, "edit"))?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(format!("cannot edit {given:?}: it is not a UTF-8 text file"));
    };
    if text.as_bytes().contains(&0) {
        return Err(format!("cannot edit {given:?}: it is a binary file"));
    }
    let count = text.matches(args.old_string.as_str()).count();
    if count == 0 {
        return Err(format!(
            "old_string not found in {given:?}; it must match the file exactly, whitespace included (Read the file first)"
        ));
    }
    if count > 1 && !args.replace_all {
        return Err(format!(
            "old_string occurs {count} times in {given:?}; include more surrounding text to make it unique, or set replace_all to true"
        ));
    }
    let updated = if args.replace_all {
        text.replace(args.old_string.as_str(), &args.new_string)
    } else {
        text.replacen(args.old_string.as_str(), &args.new_string, 1)
    };
    replace(&confined.resolved, updated.as_bytes(), Some(permissions))
        .map_err(|error| format!("cannot edit {given:?}: {error}"))?;
    let unit = if count == 1 { "occurrence" } else { "occurrences" };
    Ok(format!("replaced {count} {unit} in {given}"))
}
