//! `Write`: creates or replaces a file atomically, keeping existing permission bits.

use engine_core::Environment;
use engine_ports::{CancellationToken, ToolSpec};
use serde::Deserialize;

use crate::atomic_write::{Written, write_file};
use crate::confinement::Workspace;
use crate::file_tool::FileTool;
use crate::reply::Reply;

/// The `Write` tool (mutating).
#[derive(Clone, Copy, Debug, Default)]
pub struct Write;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    content: String,
}

impl FileTool for Write {
    const READ_ONLY: bool = false;
    type Args = Args;
    type Checked = Args;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "Write",
            "Writes a file in the workspace, replacing it whole if it exists. `path` is \
             relative to the workspace root (an absolute path must lie inside it); missing \
             parent directories are created. The replacement is atomic (a temp file renamed \
             over the target) and keeps an existing file's permission bits; a symlink is \
             followed only while it stays inside the workspace. Returns the number of bytes \
             written. To change part of a file, prefer Edit.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }))
    }

    fn check(args: Args, _: &Environment) -> Result<Args, String> {
        Ok(args)
    }

    fn run(workspace: &Workspace, args: Args, _: &CancellationToken) -> Reply {
        write(workspace, &args.path, &args.content)
    }
}

fn write(workspace: &Workspace, given: &str, content: &str) -> Reply {
    let confined = workspace.confine_or_explain(given)?;
    let written =
        write_file(&confined.resolved, content.as_bytes()).map_err(|error| error.message(given, "write"))?;
    let bytes = content.len();
    let unit = if bytes == 1 { "byte" } else { "bytes" };
    Ok(match written {
        Written::Created => format!("wrote {bytes} {unit} to {given} (new file)"),
        Written::Replaced => format!("wrote {bytes} {unit} to {given} (replaced)"),
    })
}
