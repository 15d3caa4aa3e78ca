//! `Grep`: lines matching a regex, as `path:line:text`, sorted by path then line.

use std::io::{self, BufRead as _, BufReader, Read as _};
use std::path::Path;

use engine_core::Environment;
use engine_ports::{CancellationToken, ToolSpec};
use globset::GlobSet;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use crate::confinement::Workspace;
use crate::file_tool::FileTool;
use crate::glob::{compile_glob, without_dot_slash};
use crate::read::{BINARY_PROBE_BYTES, open_for_reading};
use crate::reply::Reply;
use crate::walk;

/// Matches returned when the call gives no `max_results`.
pub(crate) const DEFAULT_MAX_RESULTS: u64 = 500;
/// The largest `max_results` accepted.
pub(crate) const MAX_MAX_RESULTS: u64 = 5_000;

/// The longest regex accepted as `pattern` (4,096 bytes), checked before it is parsed.
///
/// Parsing alone costs memory in proportion to the pattern (a 10 MB pattern took
/// 1.1 GB before compilation even started); a search pattern has no use for more.
pub const MAX_GREP_PATTERN_BYTES: usize = 4_096;

/// The compiled-size limit of the regex and the cache limit of its lazy DFA (10 MiB
/// each), so a short pattern that expands enormously (`(\w{1000}){1000}`) fails with
/// an error instead of eating memory.
pub const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;

/// The `Grep` tool (read-only).
#[derive(Clone, Copy, Debug, Default)]
pub struct Grep;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    max_results: Option<u64>,
}

impl FileTool for Grep {
    const READ_ONLY: bool = true;
    type Args = Args;
    /// The arguments and `max_results` as a count.
    type Checked = (Args, usize);

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "Grep",
            "Searches file contents with a regular expression (Rust `regex` syntax: no \
             look-around or backreferences). `path` is a file or directory relative to the \
             workspace root (default: the root); directories are searched recursively, \
             skipping `.git`, files excluded by .gitignore/.ignore, symlinks and binary files. \
             `glob` keeps only matching files (a pattern without `/`, like `*.rs`, matches file \
             names at any depth; one with `/` matches the path relative to `path`). \
             `case_insensitive` defaults to false. Returns `path:line:text` lines sorted by \
             path then line number, at most `max_results` (default 500, at most 5000) \
             followed by a note when the search stopped early. `pattern` and `glob` are at \
             most 4096 bytes each.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                "path": {"type": "string", "description": "File or directory to search, relative to the workspace root. Default: the root."},
                "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`."},
                "case_insensitive": {"type": "boolean", "description": "Match case-insensitively. Default false."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 5000, "description": "Maximum matching lines. Default 500."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }))
    }

    fn check(args: Args, _: &Environment) -> Result<Self::Checked, String> {
        let max_results = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        if !(1..=MAX_MAX_RESULTS).contains(&max_results) {
            return Err(format!(
                "max_results must be between 1 and {MAX_MAX_RESULTS}, got {max_results}"
            ));
        }
        Ok((args, usize::try_from(max_results).unwrap_or(usize::MAX)))
    }

    fn run(workspace: &Workspace, (args, limit): Self::Checked, cancel: &CancellationToken) -> Reply {
        grep(workspace, &args, limit, cancel)
    }
}

/// Which files the `glob` argument keeps.
enum FileFilter {
    All,
    /// Matched against the file name (the pattern has no `/`).
    Name(GlobSet),
    /// Matched against the path relative to the search directory.
    Path(GlobSet),
}

impl FileFilter {
    fn new(glob: Option<&str>) -> Result<Self, String> {
        let Some(glob) = glob else {
            return Ok(Self::All);
        };
        let matcher = compile_glob("glob", glob)?;
        Ok(if without_dot_slash(glob).contains('/') {
            Self::Path(matcher)
        } else {
            Self::Name(matcher)
        })
    }

    fn keeps(&self, relative: &Path) -> bool {
        match self {
            Self::All => true,
            Self::Name(matcher) => relative.file_name().is_some_and(|name| matcher.is_match(name)),
            Self::Path(matcher) => matcher.is_match(relative),
        }
    }
}

/// Compiles the `pattern` argument: length first, then the regex under
/// [`REGEX_SIZE_LIMIT`].
fn compile_regex(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    if pattern.len() > MAX_GREP_PATTERN_BYTES {
        return Err(format!(
            "pattern is {} bytes long, over the limit of {MAX_GREP_PATTERN_BYTES} bytes for a regex; use a shorter pattern",
            pattern.len()
        ));
    }
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|error| match error {
            regex::Error::CompiledTooBig(limit) => format!(
                "regex {pattern:?} is too complex: compiled, it would exceed the size limit of {limit} bytes; use fewer or smaller repetitions"
            ),
            error => format!("invalid regex {pattern:?}: {error}"),
        })
}

fn grep(workspace: &Workspace, args: &Args, limit: usize, cancel: &CancellationToken) -> Reply {
    let regex = compile_regex(&args.pattern, args.case_insensitive)?;
    let filter = FileFilter::new(args.glob.as_deref())?;
    let given = args.path.as_deref().unwrap_or(".");
    let target = workspace.confine_or_explain(given)?;
    let meta = match std::fs::metadata(&target.resolved) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(format!("path not found: {given:?}"));
        }
        Err(error) => return Err(format!("cannot search {given:?}: {error}")),
    };
    let mut hits = Vec::new();
    let mut stopped = false;
    if meta.is_file() {
        let display = target.relative.to_string_lossy().into_owned();
        stopped = search_file(&target.resolved, &display, &regex, limit, &mut hits, cancel)
            .map_err(|error| format!("cannot search {given:?}: {error}"))?;
    } else if meta.is_dir() {
        let Ok(entries) = walk::files(&target.resolved, cancel) else {
            return Err("cancelled".to_owned());
        };
        for entry in entries
            .iter()
            .filter(|entry| entry.regular && filter.keeps(&entry.relative))
        {
            let display = walk::display(&target.relative, &entry.relative);
            match search_file(&entry.path, &display, &regex, limit, &mut hits, cancel) {
                Ok(true) => {
                    stopped = true;
                    break;
                }
                Ok(false) => {}
                // A file that vanished or cannot be read is skipped, like a binary one.
                Err(error) => tracing::debug!(path = %entry.path.display(), %error, "grep skipped a file"),
            }
        }
    } else {
        return Err(format!(
            "cannot search {given:?}: it is not a regular file or directory"
        ));
    }
    if cancel.is_cancelled() {
        return Err("cancelled".to_owned());
    }
    if hits.is_empty() {
        return Ok(format!("no matches for {:?} in {given:?}", args.pattern));
    }
    let mut out = hits.join("\n");
    if stopped {
        out.push_str(&format!(
            "\n[stopped after {limit} matches; narrow the pattern, path or glob, or raise max_results (at most {MAX_MAX_RESULTS})]"
        ));
    }
    Ok(out)
}

/// Appends the matching lines of one file to `hits` as `display:line:text`; a binary
/// file (NUL in its head, or invalid UTF-8 anywhere) adds nothing. Returns whether
/// `hits` reached `limit` with more matches left in this file.
fn search_file(
    path: &Path,
    display: &str,
    regex: &Regex,
    limit: usize,
    hits: &mut Vec<String>,
    cancel: &CancellationToken,
) -> io::Result<bool> {
    let mut file = open_for_reading(path)?;
    if !file.metadata()?.is_file() {
        return Ok(false);
    }
    let mut head = Vec::with_capacity(BINARY_PROBE_BYTES);
    (&mut file)
        .take(BINARY_PROBE_BYTES as u64)
        .read_to_end(&mut head)?;
    if head.contains(&0) {
        return Ok(false);
    }
    let mut reader = BufReader::new(io::Cursor::new(head).chain(file));
    let mut found = Vec::new();
    let mut more_than_limit = false;
    let mut line = Vec::new();
    let mut line_no: u64 = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        line_no += 1;
        if line_no.is_multiple_of(4096) && cancel.is_cancelled() {
            return Ok(false);
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            return Ok(false);
        };
        let text = text.strip_suffix('\n').unwrap_or(text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if more_than_limit || !regex.is_match(text) {
            continue;
        }
        if hits.len() + found.len() == limit {
            // Keep scanning only to be sure the file is text before its hits count.
            more_than_limit = true;
            continue;
        }
        found.push(format!("{display}:{line_no}:{text}"));
    }
    hits.append(&mut found);
    Ok(more_than_limit)
}
