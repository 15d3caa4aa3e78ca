//! `ListDir`: the entries of one directory, sorted, directories marked with `/`.

use std::ffi::OsString;

use engine_core::Environment;
use engine_ports::{CancellationToken, ToolSpec};
use serde::Deserialize;

use crate::confinement::Workspace;
use crate::file_tool::FileTool;
use crate::reply::Reply;

/// Entries listed before the count note.
pub(crate) const MAX_ENTRIES: usize = 1_000;

/// The `ListDir` tool (read-only).
#[derive(Clone, Copy, Debug, Default)]
pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    #[serde(default)]
    path: Option<String>,
}

impl FileTool for ListDir {
    const READ_ONLY: bool = true;
    type Args = Args;
    /// The directory as given (the root by default).
    type Checked = String;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "ListDir",
            "Lists one directory of the workspace (not recursive). `path` is relative to the \
             workspace root (default: the root). One entry per line, sorted by name; \
             directories end in `/`; a symlink is shown as `name -> target` and not followed. \
             Hidden entries are included. At most 1000 entries, then a note with the total \
             count. Use Glob to find files recursively.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list, relative to the workspace root. Default: the root."}
            },
            "additionalProperties": false
        }))
    }

    fn check(args: Args, _: &Environment) -> Result<String, String> {
        Ok(args.path.unwrap_or_else(|| ".".to_owned()))
    }

    fn run(workspace: &Workspace, given: String, cancel: &CancellationToken) -> Reply {
        list(workspace, &given, cancel)
    }
}

fn list(workspace: &Workspace, given: &str, cancel: &CancellationToken) -> Reply {
    let dir = workspace.confine_or_explain(given)?;
    let read_dir = match std::fs::read_dir(&dir.resolved) {
        Ok(read_dir) => read_dir,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("directory not found: {given:?}"));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(format!("{given:?} is not a directory; use Read to read a file"));
        }
        Err(error) => return Err(format!("cannot list {given:?}: {error}")),
    };
    let mut entries: Vec<(OsString, String)> = Vec::new();
    for entry in read_dir {
        if cancel.is_cancelled() {
            return Err("cancelled".to_owned());
        }
        let entry = entry.map_err(|error| format!("cannot list {given:?}: {error}"))?;
        let name = entry.file_name();
        let shown = name.to_string_lossy().into_owned();
        // `file_type` does not follow symlinks.
        let line = match entry.file_type() {
            Ok(kind) if kind.is_dir() => format!("{shown}/"),
            Ok(kind) if kind.is_symlink() => match std::fs::read_link(entry.path()) {
                Ok(target) => format!("{shown} -> {}", target.to_string_lossy()),
                Err(_) => format!("{shown} -> ?"),
            },
            _ => shown,
        };
        entries.push((name, line));
    }
    if entries.is_empty() {
        return Ok("(empty directory)".to_owned());
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let total = entries.len();
    let mut out = entries
        .into_iter()
        .take(MAX_ENTRIES)
        .map(|(_, line)| line)
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_ENTRIES {
        out.push_str(&format!("\n[{MAX_ENTRIES} of {total} entries shown]"));
    }
    Ok(out)
}
