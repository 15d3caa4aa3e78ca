//! `Glob`: files whose path, relative to the search directory, matches a glob.

use async_trait::async_trait;
use engine_core::{Environment, Tool, ToolError};
use engine_ports::{CancellationToken, ToolCall, ToolResult, ToolSpec};
use globset::GlobBuilder;
use serde::Deserialize;

use crate::blocking::run_blocking;
use crate::confinement::Workspace;
use crate::reply::{self, Reply};
use crate::walk;

/// Paths listed before the count note.
pub(crate) const MAX_FILES: usize = 1_000;

/// The `Glob` tool (read-only).
#[derive(Clone, Copy, Debug, Default)]
pub struct Glob;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[async_trait]
impl Tool for Glob {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "Glob",
            "Finds files by path pattern. `pattern` uses glob syntax (`*` and `?` stay within \
             one path segment, `**` crosses directories, `{a,b}` alternates, `[ab]` classes) \
             and is matched against `/`-separated paths relative to the search directory: \
             `*.rs` matches only at its top level, `**/*.rs` at any depth. `path` is the \
             search directory, relative to the workspace root (default: the root). Lists files \
             only, one path per line relative to the workspace root, sorted; skips `.git` and \
             whatever .gitignore/.ignore files exclude; symlinks are not followed. At most \
             1000 paths, then a note with the total count.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. `**/*.rs` or `src/*.toml`."},
                "path": {"type": "string", "description": "Directory to search, relative to the workspace root. Default: the root."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }))
    }

    fn read_only(&self) -> bool {
        true
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
        let workspace = Workspace::of(env)?;
        let reply = run_blocking(cancel, move |cancel| glob(&workspace, &args, cancel)).await?;
        Ok(reply::finish(call, env, reply))
    }
}

/// `pattern` without leading `./` (paths are matched without one).
pub(crate) fn without_dot_slash(mut pattern: &str) -> &str {
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    pattern
}

fn glob(workspace: &Workspace, args: &Args, cancel: &CancellationToken) -> Reply {
    let matcher = GlobBuilder::new(without_dot_slash(&args.pattern))
        .literal_separator(true)
        .build()
        .map_err(|error| format!("invalid glob pattern {:?}: {}", args.pattern, error.kind()))?
        .compile_matcher();
    let given = args.path.as_deref().unwrap_or(".");
    let dir = workspace.confine_or_explain(given)?;
    match std::fs::metadata(&dir.resolved) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(format!("{given:?} is not a directory; Glob searches directories")),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("directory not found: {given:?}"));
        }
        Err(error) => return Err(format!("cannot search {given:?}: {error}")),
    }
    let Ok(entries) = walk::files(&dir.resolved, cancel) else {
        return Err("cancelled".to_owned());
    };
    let matched: Vec<String> = entries
        .iter()
        .filter(|entry| matcher.is_match(&entry.relative))
        .map(|entry| walk::display(&dir.relative, &entry.relative))
        .collect();
    if matched.is_empty() {
        return Ok(format!("no files match {:?} in {given:?}", args.pattern));
    }
    let total = matched.len();
    let mut out = matched.into_iter().take(MAX_FILES).collect::<Vec<_>>().join("\n");
    if total > MAX_FILES {
        out.push_str(&format!(
            "\n[{MAX_FILES} of {total} matching files shown; narrow the pattern or the path]"
        ));
    }
    Ok(out)
}
