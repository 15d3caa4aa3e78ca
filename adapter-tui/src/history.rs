//! The prompt history of a workspace: one file, one JSON string per line (a prompt
//! may hold newlines), mode `0600` in a `0700` directory, opened by `fs-guard`'s rule
//! (never through a symlink, never blocking on a FIFO). Each prompt is appended as it
//! is sent; a torn last line is skipped when read; past [`MAX_ENTRIES`] the file is
//! rewritten with the newest entries, through a new file renamed over the old one.

use std::fs::OpenOptions;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use fs_guard::Guard;

/// Most entries kept.
pub(crate) const MAX_ENTRIES: usize = 1000;

/// Largest history file read (a bigger one is read from its end).
const MAX_READ_BYTES: u64 = 4 << 20;

const GUARD: Guard = Guard {
    symlink: "the history file is a symbolic link, which is never followed",
    fifo_or_socket: Some("the history file is a FIFO or socket, not a regular file"),
    directory: Some("the history file is a directory"),
    not_regular,
};

fn not_regular(kind: &'static str) -> String {
    format!("the history file is a {kind}, not a regular file")
}

/// The history in memory and where it is kept.
#[derive(Debug, Default)]
pub(crate) struct History {
    entries: Vec<String>,
    file: Option<PathBuf>,
}

impl History {
    /// The history of `file` (none without a file: nothing is kept).
    ///
    /// # Errors
    /// The file exists but cannot be read or is not a regular file.
    pub(crate) fn load(file: Option<&Path>) -> io::Result<Self> {
        let Some(path) = file else {
            return Ok(Self::default());
        };
        let mut entries = Vec::new();
        if let Some((mut handle, meta)) = GUARD.open_existing(path).map_err(|e| named(path, e))? {
            if meta.len() > MAX_READ_BYTES {
                io::Seek::seek(&mut handle, io::SeekFrom::Start(meta.len() - MAX_READ_BYTES))?;
            }
            let mut bytes = Vec::new();
            handle
                .take(MAX_READ_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|e| named(path, e))?;
            // A read from the middle may cut a character: that line is skipped.
            entries = String::from_utf8_lossy(&bytes)
                .lines()
                .filter_map(|line| serde_json::from_str::<String>(line).ok())
                .collect();
        }
        let mut history = Self {
            entries,
            file: Some(path.to_path_buf()),
        };
        if history.entries.len() > MAX_ENTRIES {
            let extra = history.entries.len() - MAX_ENTRIES;
            history.entries.drain(..extra);
            history.rewrite()?;
        }
        Ok(history)
    }

    /// The entries, oldest first.
    pub(crate) fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Adds a sent prompt (not a repeat of the last one) and appends it to the file.
    ///
    /// # Errors
    /// The file cannot be written (the entry stays in memory).
    pub(crate) fn add(&mut self, entry: &str) -> io::Result<()> {
        if entry.trim().is_empty() || self.entries.last().is_some_and(|last| last == entry) {
            return Ok(());
        }
        self.entries.push(entry.to_owned());
        let Some(path) = &self.file else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            fs_guard::create_private_dir(dir).map_err(|e| named(dir, e))?;
        }
        let (mut file, meta) = GUARD
            .open(OpenOptions::new().append(true).create(true), path)
            .map_err(|e| named(path, e))?;
        fs_guard::make_private(&file, &meta)?;
        let line = format!("{}\n", serde_json::Value::String(entry.to_owned()));
        file.write_all(line.as_bytes()).map_err(|e| named(path, e))
    }

    /// Writes the entries to a new file and renames it over the old one.
    fn rewrite(&self) -> io::Result<()> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let temp = path.with_extension(format!("tmp-{:016x}", temp_suffix()));
        let mut file = GUARD.create_new(&temp).map_err(|e| named(&temp, e))?;
        let mut text = String::new();
        for entry in &self.entries {
            text.push_str(&serde_json::Value::String(entry.clone()).to_string());
            text.push('\n');
        }
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .and_then(|()| std::fs::rename(&temp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(|e| named(path, e))
    }
}

/// A random suffix for the temporary file (the process id and the time suffice: one
/// process rewrites at a time, and `create_new` refuses a name already taken).
fn temp_suffix() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (u64::from(std::process::id()) << 32) | u64::from(nanos)
}

fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn entries_survive_a_restart_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state/history");
        let mut history = History::load(Some(&file)).unwrap();
        history.add("first").unwrap();
        history.add("two\nlines").unwrap();
        history.add("two\nlines").unwrap();
        history.add("  ").unwrap();
        let again = History::load(Some(&file)).unwrap();
        assert_eq!(again.entries(), ["first", "two\nlines"]);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(file.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
    }

    #[test]
    fn a_torn_line_is_skipped_and_old_entries_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("history");
        let mut text: String = (0..MAX_ENTRIES + 5).map(|i| format!("\"p{i}\"\n")).collect();
        text.push_str("\"torn");
        std::fs::write(&file, text).unwrap();
        let history = History::load(Some(&file)).unwrap();
        assert_eq!(history.entries().len(), MAX_ENTRIES);
        assert_eq!(history.entries()[0], "p5");
        let reread = History::load(Some(&file)).unwrap();
        assert_eq!(reread.entries(), history.entries());
    }

    #[test]
    fn a_symlinked_history_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "\"secret\"\n").unwrap();
        let link = dir.path().join("history");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = History::load(Some(&link)).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");
    }
}
