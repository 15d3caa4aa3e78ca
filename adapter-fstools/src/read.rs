//! `Read`: a window of a text file's lines, each prefixed with its number and a tab.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;

use engine_core::Environment;
use engine_ports::{CancellationToken, ToolSpec};
use serde::Deserialize;

use crate::confinement::Workspace;
use crate::file_tool::FileTool;
use crate::local_disk;
use crate::reply::Reply;

/// Lines returned when the call gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u64 = 2_000;
/// The head of a file searched for a NUL byte (the binary test).
pub(crate) const BINARY_PROBE_BYTES: usize = 8 * 1024;
/// Read buffer size (at most; a smaller file gets a buffer of its size).
const CHUNK_BYTES: usize = 64 * 1024;
/// The smallest read buffer.
const MIN_CHUNK_BYTES: usize = 4 * 1024;
/// The largest file read on the executor (when its workspace is on a local disk):
/// reading and rendering it takes tens of microseconds, less than the hop to the
/// blocking pool and back.
pub(crate) const INLINE_MAX_BYTES: u64 = 64 * 1024;

/// The `Read` tool (read-only).
#[derive(Clone, Copy, Debug, Default)]
pub struct Read;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

impl FileTool for Read {
    const READ_ONLY: bool = true;
    type Args = Args;
    /// The path, the first line, the line count and the output cap.
    type Checked = (String, u64, u64, usize);

    fn spec() -> ToolSpec {
        ToolSpec::new(
            "Read",
            "Reads a text file from the workspace. `path` is relative to the workspace root \
             (an absolute path must lie inside it). Returns the lines prefixed with their \
             1-based number and a tab. `offset` is the first line to show (1-based, default \
             1) and `limit` the number of lines (default 2000); a note says how to read \
             further when lines remain. Binary files (a NUL byte in the first 8 KiB, or \
             invalid UTF-8) are refused with their size; for a directory use ListDir. Output \
             is capped; text beyond the cap is cut with a truncation marker.",
        )
        .with_schema(serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, relative to the workspace root."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines. Default 2000."}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
    }

    fn check(args: Args, env: &Environment) -> Result<Self::Checked, String> {
        let offset = args.offset.unwrap_or(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        if offset == 0 {
            return Err("offset is 1-based: use 1 for the first line".to_owned());
        }
        if limit == 0 {
            return Err("limit must be at least 1".to_owned());
        }
        Ok((args.path, offset, limit, env.output_cap().max_bytes()))
    }

    fn run(
        workspace: &Workspace,
        (path, offset, limit, cap): Self::Checked,
        cancel: &CancellationToken,
    ) -> Reply {
        read_window(workspace, &path, offset, limit, cap, cancel)
    }

    /// A regular file of at most [`INLINE_MAX_BYTES`] in a workspace on a local disk
    /// alone is read here; anything else (including every error, explained by
    /// [`FileTool::run`]) goes to the blocking pool.
    fn run_inline(
        workspace: &Workspace,
        checked: Self::Checked,
        cancel: &CancellationToken,
    ) -> Result<Reply, Self::Checked> {
        if !local_disk::is_local(workspace.canonical_root()) {
            return Err(checked);
        }
        let Ok(confined) = workspace.confine(&checked.0) else {
            return Err(checked);
        };
        let Ok(file) = open_for_reading(&confined.resolved) else {
            return Err(checked);
        };
        match file.metadata() {
            Ok(meta) if meta.is_file() && meta.len() <= INLINE_MAX_BYTES => {
                let (path, offset, limit, cap) = checked;
                Ok(read_open(
                    file,
                    &meta,
                    &path,
                    Window::new(offset, limit, cap),
                    cancel,
                ))
            }
            _ => Err(checked),
        }
    }
}

/// Reads lines `offset..offset + limit` of the file at `given`.
fn read_window(
    workspace: &Workspace,
    given: &str,
    offset: u64,
    limit: u64,
    cap: usize,
    cancel: &CancellationToken,
) -> Reply {
    let confined = workspace.confine_or_explain(given)?;
    let file = match open_for_reading(&confined.resolved) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("file not found: {given:?}"));
        }
        Err(error) => return Err(format!("cannot read {given:?}: {error}")),
    };
    let meta = file
        .metadata()
        .map_err(|error| format!("cannot read {given:?}: {error}"))?;
    if meta.is_dir() {
        return Err(format!(
            "{given:?} is a directory, not a file; use ListDir to list its entries"
        ));
    }
    if !meta.is_file() {
        return Err(format!("cannot read {given:?}: it is not a regular file"));
    }
    read_open(file, &meta, given, Window::new(offset, limit, cap), cancel)
}

/// Reads the window of an open regular file.
fn read_open(
    file: File,
    meta: &std::fs::Metadata,
    given: &str,
    window: Window,
    cancel: &CancellationToken,
) -> Reply {
    // A buffer the size of a small file (one byte more, to see its end in one read);
    // at least a page, for files whose size says nothing (`/proc`).
    let buffer = usize::try_from(meta.len().saturating_add(1))
        .map_or(CHUNK_BYTES, |len| len.clamp(MIN_CHUNK_BYTES, CHUNK_BYTES));
    let scanned =
        scan(file, window, buffer, cancel).map_err(|error| format!("cannot read {given:?}: {error}"))?;
    let Scanned::Text(window) = scanned else {
        return Err(format!(
            "{given:?} is a binary file ({} bytes); Read shows text files only",
            meta.len()
        ));
    };
    window.render(given)
}

/// Opens `path` for reading with `O_NONBLOCK`, so a FIFO cannot block the open; the
/// caller checks the type on the open file.
pub(crate) fn open_for_reading(path: &std::path::Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// What a scan found.
enum Scanned {
    Text(Window),
    Binary,
}

/// The lines being collected, and what the scan learnt about the whole file.
struct Window {
    offset: u64,
    limit: u64,
    cap: usize,
    out: String,
    /// Bytes of the line being read, when it is inside the window.
    current: Vec<u8>,
    /// The 1-based number of the line being read.
    line_no: u64,
    /// Whether the line being read has any byte yet.
    pending: bool,
    /// Whether `out` passed the cap (later lines are only counted).
    full: bool,
    total_lines: u64,
}

impl Window {
    fn new(offset: u64, limit: u64, cap: usize) -> Self {
        Self {
            offset,
            limit,
            cap,
            out: String::new(),
            current: Vec::new(),
            line_no: 1,
            pending: false,
            full: false,
            total_lines: 0,
        }
    }

    fn in_window(&self) -> bool {
        self.line_no >= self.offset && self.line_no - self.offset < self.limit && !self.full
    }

    /// Feeds a piece of the file.
    fn feed(&mut self, chunk: &[u8]) {
        for segment in chunk.split_inclusive(|byte| *byte == b'\n') {
            let (body, ends_line) = match segment.split_last() {
                Some((b'\n', body)) => (body, true),
                _ => (segment, false),
            };
            if self.in_window() {
                // Never hold more than the cap can show, even for one giant line.
                let room = (self.cap + 4).saturating_sub(self.out.len() + self.current.len());
                self.current.extend_from_slice(&body[..body.len().min(room)]);
            }
            self.pending = self.pending || !body.is_empty() || ends_line;
            if ends_line {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        if self.in_window() {
            self.out.push_str(&self.line_no.to_string());
            self.out.push('\t');
            self.out.push_str(&String::from_utf8_lossy(&self.current));
            self.out.push('\n');
            if self.out.len() > self.cap {
                self.full = true;
            }
        }
        self.current.clear();
        self.total_lines = self.line_no;
        self.line_no += 1;
        self.pending = false;
    }

    fn finish(&mut self) {
        if self.pending {
            self.end_line();
        }
    }

    fn render(mut self, given: &str) -> Reply {
        if self.total_lines == 0 {
            return Ok("(empty file)".to_owned());
        }
        if self.offset > self.total_lines {
            return Err(format!(
                "offset {} is past the end of {given:?}, which has {} lines",
                self.offset, self.total_lines
            ));
        }
        if self.out.ends_with('\n') {
            self.out.pop();
        }
        let last_shown = self.offset.saturating_add(self.limit - 1).min(self.total_lines);
        if last_shown < self.total_lines && !self.full {
            self.out.push_str(&format!(
                "\n[showing lines {}-{last_shown} of {}; use offset={} to read more]",
                self.offset,
                self.total_lines,
                last_shown + 1
            ));
        }
        Ok(self.out)
    }
}

/// Reads the whole file once: the binary test (a NUL in the head, invalid UTF-8
/// anywhere), the line count and the window's lines.
fn scan(
    mut file: File,
    mut window: Window,
    buffer: usize,
    cancel: &CancellationToken,
) -> std::io::Result<Scanned> {
    let mut buf = vec![0_u8; buffer];
    let mut utf8 = Utf8Check::default();
    let mut seen: usize = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let chunk = &buf[..n];
        if seen < BINARY_PROBE_BYTES {
            let probe = &chunk[..n.min(BINARY_PROBE_BYTES - seen)];
            if probe.contains(&0) {
                return Ok(Scanned::Binary);
            }
        }
        seen = seen.saturating_add(n);
        if !utf8.feed(chunk) {
            return Ok(Scanned::Binary);
        }
        window.feed(chunk);
    }
    if !utf8.finish() {
        return Ok(Scanned::Binary);
    }
    window.finish();
    Ok(Scanned::Text(window))
}

/// Streaming UTF-8 validation: an incomplete sequence at a chunk's end is carried over.
#[derive(Default)]
pub(crate) struct Utf8Check {
    carry: Vec<u8>,
}

impl Utf8Check {
    /// Whether everything so far is valid (or a valid prefix).
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> bool {
        let joined;
        let data = if self.carry.is_empty() {
            chunk
        } else {
            let mut bytes = std::mem::take(&mut self.carry);
            bytes.extend_from_slice(chunk);
            joined = bytes;
            &joined[..]
        };
        match std::str::from_utf8(data) {
            Ok(_) => true,
            Err(error) if error.error_len().is_none() => {
                self.carry = data[error.valid_up_to()..].to_vec();
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the input ended on a complete character.
    pub(crate) fn finish(&self) -> bool {
        self.carry.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_check_accepts_a_character_split_across_chunks() {
        let text = "aé€😀".as_bytes();
        for split in 0..=text.len() {
            let mut check = Utf8Check::default();
            assert!(check.feed(&text[..split]));
            assert!(check.feed(&text[split..]));
            assert!(check.finish(), "split at {split}");
        }
    }

    #[test]
    fn utf8_check_rejects_invalid_and_truncated_input() {
        let mut check = Utf8Check::default();
        assert!(!check.feed(b"ok\xffno"));
        let mut check = Utf8Check::default();
        assert!(check.feed(&"é".as_bytes()[..1]));
        assert!(!check.finish());
    }

    #[test]
    fn window_numbers_lines_and_notes_the_rest() {
        let mut window = Window::new(2, 2, 1_000);
        window.feed(b"one\ntwo\nthr");
        window.feed(b"ee\nfour");
        window.finish();
        assert_eq!(
            window.render("f").unwrap(),
            "2\ttwo\n3\tthree\n[showing lines 2-3 of 4; use offset=4 to read more]"
        );
    }
}
