//! `Glob`: files whose path, relative to the search directory, matches a glob.

use engine_core::Environment;
use engine_ports::{CancellationToken, ToolSpec};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use crate::confinement::Workspace;
use crate::file_tool::FileTool;
use crate::reply::Reply;
use crate::walk;

/// Paths listed before the count note.
pub(crate) const MAX_FILES: usize = 1_000;

/// The longest glob pattern accepted (4,096 bytes), for Glob's `pattern` and Grep's
/// `glob`, checked before the pattern is compiled.
///
/// globset turns a glob into a regex; a pattern of about 100 KB made it exceed the
/// regex size limit, which `GlobBuilder::compile_matcher` answers with a panic (megabytes
/// of panic text). A path pattern has no use for more than a path's worth of bytes.
pub const MAX_GLOB_PATTERN_BYTES: usize = 4_096;

/// The `Glob` tool (read-only).
#[derive(Clone, Copy, Debug, Default)]
pub struct Glob;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

impl FileTool for Glob {
    const READ_ONLY: bool = true;
    type Args = Args;
    type Checked = Args;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "Glob",
            "Finds files by path pattern. `pattern` uses glob syntax (`*` and `?` stay within \
             one path segment, `**` crosses directories, `{a,b}` alternates, `[ab]` classes) \
             and is matched against `/`-separated paths relative to the search directory: \
             `*.rs` matches only at its top level, `**/*.rs` at any depth. `path` is the \
             search directory, relative to the workspace root (default: the root). Lists files \
             only, one path per line relative to the workspace root, sorted; skips `.git` and \
             whatever .gitignore/.ignore files exclude; symlinks are not followed. At most \
             1000 paths, then a note with the total count. The pattern is at most 4096 bytes.",
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

    fn check(args: Args, _: &Environment) -> Result<Args, String> {
        Ok(args)
    }

    fn run(workspace: &Workspace, args: Args, cancel: &CancellationToken) -> Reply {
        glob(workspace, &args, cancel)
    }
}

/// `pattern` without leading `./` (paths are matched without one).
pub(crate) fn without_dot_slash(mut pattern: &str) -> &str {
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    pattern
}

/// Compiles the glob `pattern` given as the argument `argument`, with `/` matched
/// only literally. The length is checked first; every compilation failure, the
/// regex size limit included, is an error text (a `GlobSet` is built rather than a
/// `GlobMatcher`, whose compilation panics on such a failure).
pub(crate) fn compile_glob(argument: &str, pattern: &str) -> Result<GlobSet, String> {
    if pattern.len() > MAX_GLOB_PATTERN_BYTES {
        return Err(format!(
            "{argument} is {} bytes long, over the limit of {MAX_GLOB_PATTERN_BYTES} bytes for a glob; use a shorter pattern",
            pattern.len()
        ));
    }
    let glob = GlobBuilder::new(without_dot_slash(pattern))
        .literal_separator(true)
        .build()
        .map_err(|error| format!("invalid {argument} {pattern:?}: {}", error.kind()))?;
    GlobSetBuilder::new()
        .add(glob)
        .build()
        .map_err(|error| format!("invalid {argument} {pattern:?}: {}", error.kind()))
}

fn glob(workspace: &Workspace, args: &Args, cancel: &CancellationToken) -> Reply {
    let matcher = compile_glob("glob pattern", &args.pattern)?;
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
