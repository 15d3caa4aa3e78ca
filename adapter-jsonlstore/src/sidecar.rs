//! The append path of the JSONL sidecars: open or create, cut a torn tail,
//! write whole records, verify the length. The caller holds the session's exclusive
//! lock and applies the sync policy. One record per call for an unleased append; a
//! leased session's appender writes batches through the same steps.

use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::path::Path;

use crate::fsio;

/// Bytes read per step when scanning backwards for the last newline.
const SCAN_CHUNK: u64 = 64 * 1024;

/// A record that reached the file.
#[derive(Debug)]
pub(crate) struct Appended {
    /// The sidecar handle (for the sync policy).
    pub(crate) file: File,
    /// `fstat` after the write.
    pub(crate) meta: Metadata,
    /// Whether this append created the file.
    pub(crate) created: bool,
    /// Bytes of a torn fragment cut before writing (0 when none).
    pub(crate) cut: u64,
}

/// An append step that failed; the file holds no new fragment.
#[derive(Debug)]
pub(crate) struct AppendError {
    /// What was being done.
    pub(crate) op: &'static str,
    /// Why it failed.
    pub(crate) source: io::Error,
}

fn step(op: &'static str) -> impl FnOnce(io::Error) -> AppendError {
    move |source| AppendError { op, source }
}

/// Appends `buf` (one record ending in `\n`) to the sidecar at `path`.
///
/// A non-empty file whose last byte is not `\n` ends in a torn write; it is cut back
/// to its committed length first. If the write fails or the file does not grow by
/// exactly `buf.len()` bytes, the file is truncated back to its length before the
/// write and an error is returned.
pub(crate) fn append_record(path: &Path, buf: &[u8]) -> Result<Appended, AppendError> {
    let (file, meta, created) = fsio::open_append(path).map_err(step("open"))?;
    let (len, cut) = repair_tail(&file, meta.len())?;
    let meta = write_checked(&file, path, buf, len)?;
    Ok(Appended {
        file,
        meta,
        created,
        cut,
    })
}

/// Cuts a torn tail: a non-empty file of `len` bytes whose last byte is not `\n` is
/// truncated to its committed length. Returns that length and the bytes cut.
pub(crate) fn repair_tail(file: &File, len: u64) -> Result<(u64, u64), AppendError> {
    if len == 0 || last_byte(file, len).map_err(step("read the tail of"))? == b'\n' {
        return Ok((len, 0));
    }
    let committed = committed_len(file, len, None).map_err(step("find the committed length of"))?;
    file.set_len(committed).map_err(step("cut the torn tail of"))?;
    Ok((committed, len - committed))
}

/// Writes `buf` (whole records) at the end of a file of `len` committed bytes opened
/// for appending and checks that it grew by exactly `buf.len()`; on any failure the
/// file is truncated back to `len`. Returns the `fstat` after the write.
pub(crate) fn write_checked(file: &File, path: &Path, buf: &[u8], len: u64) -> Result<Metadata, AppendError> {
    let written = write_record(file, path, buf);
    let expected = len + buf.len() as u64;
    let outcome = written.and_then(|()| {
        let meta = file.metadata()?;
        if meta.len() == expected {
            Ok(meta)
        } else {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "short write: the file is {} bytes, expected {expected}",
                    meta.len()
                ),
            ))
        }
    });
    outcome.map_err(|error| {
        // Leave no new fragment behind, whatever reached the file.
        let source = match file.set_len(len) {
            Ok(()) => error,
            Err(undo) => io::Error::new(
                error.kind(),
                format!("{error}; truncating back to {len} bytes also failed: {undo}"),
            ),
        };
        AppendError { op: "append", source }
    })
}

fn last_byte(file: &File, len: u64) -> io::Result<u8> {
    let mut byte = [0u8; 1];
    read_exact_at(file, &mut byte, len - 1)?;
    Ok(byte[0])
}

/// A positioned read (`pread` on Unix) that leaves the file offset alone.
#[cfg(unix)]
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)?;
    file.seek(SeekFrom::Start(0)).map(drop)
}

/// The committed length of a file of `len` bytes: the offset just past its last
/// `\n` (0 when it holds none). Positioned reads only: the file offset stays put.
///
/// With `bound`, at most `bound` bytes are scanned; when no `\n` is found in them the
/// scan stops at the lowest scanned offset `p`, and every byte in `[p, len)` is known
/// not to be a newline. A reader that stops at `p` and ignores an unterminated last
/// piece then reads exactly the committed lines, so the bound costs nothing in
/// correctness.
pub(crate) fn committed_len(file: &File, len: u64, bound: Option<u64>) -> io::Result<u64> {
    let mut pos = len;
    let mut scanned = 0u64;
    let mut chunk = vec![0u8; usize::try_from(SCAN_CHUNK.min(len)).unwrap_or(0)];
    while pos > 0 {
        let mut n = SCAN_CHUNK.min(pos);
        if let Some(bound) = bound {
            if scanned >= bound {
                return Ok(pos);
            }
            n = n.min(bound - scanned);
        }
        let n_usize = usize::try_from(n).map_err(io::Error::other)?;
        let window = &mut chunk[..n_usize];
        read_exact_at(file, window, pos - n)?;
        if let Some(i) = window.iter().rposition(|&b| b == b'\n') {
            return Ok(pos - n + i as u64 + 1);
        }
        pos -= n;
        scanned += n;
    }
    Ok(0)
}

/// `write_all`, with a fault injection point in unit tests.
fn write_record(mut file: &File, path: &Path, buf: &[u8]) -> io::Result<()> {
    #[cfg(test)]
    if let Some(fault) = seam::take(path) {
        let half = buf.len() / 2;
        file.write_all(&buf[..half])?;
        return match fault {
            seam::Fault::FailAfterHalf => Err(io::Error::other("injected write failure")),
            seam::Fault::SilentlyShort => Ok(()),
        };
    }
    let _ = path;
    file.write_all(buf)
}

/// Test-only write faults, keyed by sidecar path.
#[cfg(test)]
pub(crate) mod seam {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    /// What the injected writer does.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Fault {
        /// Writes half the buffer, then fails.
        FailAfterHalf,
        /// Writes half the buffer and reports success.
        SilentlyShort,
    }

    static FAULTS: Mutex<Vec<(PathBuf, Fault)>> = Mutex::new(Vec::new());

    /// The next append to `path` hits `fault`.
    pub(crate) fn inject(path: &Path, fault: Fault) {
        FAULTS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((path.to_owned(), fault));
    }

    pub(super) fn take(path: &Path) -> Option<Fault> {
        let mut faults = FAULTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let index = faults.iter().position(|(p, _)| p == path)?;
        Some(faults.remove(index).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf, File) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, bytes).unwrap();
        let file = File::open(&path).unwrap();
        (dir, path, file)
    }

    #[test]
    fn committed_len_finds_the_last_newline() {
        let (_d, _p, f) = file_with(b"a\nbb\nccc");
        assert_eq!(committed_len(&f, 8, None).unwrap(), 5);
        let (_d, _p, f) = file_with(b"a\nbb\n");
        assert_eq!(committed_len(&f, 5, None).unwrap(), 5);
        let (_d, _p, f) = file_with(b"torn");
        assert_eq!(committed_len(&f, 4, None).unwrap(), 0);
    }

    #[test]
    fn committed_len_beyond_the_bound_stops_at_a_newline_free_offset() {
        let mut bytes = b"line\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 200_000));
        let (_d, _p, f) = file_with(&bytes);
        let len = bytes.len() as u64;
        assert_eq!(committed_len(&f, len, None).unwrap(), 5);
        let bounded = committed_len(&f, len, Some(100)).unwrap();
        assert_eq!(bounded, len - 100);
        assert!(!bytes[usize::try_from(bounded).unwrap()..].contains(&b'\n'));
    }

    #[test]
    fn appending_cuts_a_torn_tail() {
        let (_d, path, _f) = file_with(b"{\"a\":1}\nTORN");
        let appended = append_record(&path, b"{\"b\":2}\n").unwrap();
        assert_eq!(appended.cut, 4);
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
    }

    /// A writer that fails after half the buffer leaves the file as it
    /// was; so does one that silently writes only half.
    #[test]
    fn a_short_write_is_undone() {
        for fault in [seam::Fault::FailAfterHalf, seam::Fault::SilentlyShort] {
            let (_d, path, _f) = file_with(b"{\"a\":1}\n");
            seam::inject(&path, fault);
            let error = append_record(&path, b"{\"bbbbbbbb\":2}\n").unwrap_err();
            assert_eq!(error.op, "append", "{fault:?}");
            assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n", "{fault:?}");
            append_record(&path, b"{\"c\":3}\n").unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n{\"c\":3}\n");
        }
    }
}
