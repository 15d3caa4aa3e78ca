//! `Edit`: replaces an exact string in a file, once or everywhere, atomically.

use engine_core::Environment;
use engine_ports::{CancellationToken, ToolSpec};
use serde::Deserialize;

use crate::atomic_write::{read_existing, replace};
use crate::confinement::Workspace;
use crate::file_tool::FileTool;
use crate::reply::Reply;

/// The largest file an edit reads (10 MiB), and the largest it may produce when it
/// makes the file grow.
///
/// The size is checked on the opened file before anything is read: a larger file
/// (a 2 GB log, a sparse image) is refused as too large at once, and no more than
/// this many bytes are ever read. `replace_all` multiplies: a short `old_string` occurring often, replaced by a long
/// `new_string`, turns a few kilobytes of arguments into gigabytes of file and memory.
/// The result's size is computed from the match count before anything is built, and
/// an edit that would grow the file past this limit is refused with nothing written.
/// An edit that does not make the file larger is allowed up to the limit.
pub const MAX_EDIT_RESULT_BYTES: u64 = 10 * 1024 * 1024;

/// The `Edit` tool (mutating).
#[derive(Clone, Copy, Debug, Default)]
pub struct Edit;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

impl FileTool for Edit {
    const READ_ONLY: bool = false;
    type Args = Args;
    type Checked = Args;

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "Edit",
            "Replaces exact text in an existing text file of the workspace. `path` is \
             relative to the workspace root. `old_string` must be non-empty, differ from \
             `new_string`, and match the file byte for byte (whitespace and indentation \
             included). Without `replace_all` it must occur exactly once: include enough \
             surrounding lines to make it unique; with `replace_all: true` every occurrence \
             is replaced. The file is replaced atomically, keeping its permission bits. \
             Files over 10 MiB cannot be edited, and an edit may not grow a file past \
             10 MiB. Returns the number of replacements.",
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

    fn check(args: Args, _: &Environment) -> Result<Args, String> {
        if args.old_string.is_empty() {
            return Err("old_string must not be empty".to_owned());
        }
        if args.old_string == args.new_string {
            return Err("old_string and new_string are identical; nothing would change".to_owned());
        }
        Ok(args)
    }

    fn run(workspace: &Workspace, args: Args, _: &CancellationToken) -> Reply {
        edit(workspace, &args)
    }
}

fn edit(workspace: &Workspace, args: &Args) -> Reply {
    let given = args.path.as_str();
    let confined = workspace.confine_or_explain(given)?;
    let (bytes, permissions) = read_existing(&confined.resolved, MAX_EDIT_RESULT_BYTES)
        .map_err(|error| error.message(given, "edit"))?;
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
    let replaced = if args.replace_all { count } else { 1 };
    let original = text.len() as u64;
    let size = result_size(original, replaced, args.old_string.len(), args.new_string.len());
    if size.is_none_or(|size| size > MAX_EDIT_RESULT_BYTES && size > original) {
        let size = size.map_or_else(|| "more than u64::MAX".to_owned(), |size| size.to_string());
        return Err(format!(
            "cannot edit {given:?}: the result would be {size} bytes, over the limit of \
             {MAX_EDIT_RESULT_BYTES} bytes for a file an edit makes larger; nothing was written"
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

/// The length of a text of `original` bytes once `count` occurrences of an `old_len`
/// string are replaced by a `new_len` one; `None` when it does not fit in a `u64`.
fn result_size(original: u64, count: usize, old_len: usize, new_len: usize) -> Option<u64> {
    let count = u64::try_from(count).ok()?;
    let old_len = u64::try_from(old_len).ok()?;
    let new_len = u64::try_from(new_len).ok()?;
    if new_len >= old_len {
        original.checked_add(count.checked_mul(new_len - old_len)?)
    } else {
        original.checked_sub(count.checked_mul(old_len - new_len)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_size_grows_shrinks_and_reports_overflow() {
        assert_eq!(result_size(10, 2, 1, 4), Some(16));
        assert_eq!(result_size(10, 2, 4, 1), Some(4));
        assert_eq!(result_size(10, 0, 1, 4), Some(10));
        assert_eq!(result_size(u64::MAX, 1, 1, 2), None);
        assert_eq!(result_size(1, usize::MAX, 1, usize::MAX), None);
    }
}
