//! Bounded reads of files a skill tree or a commands directory holds.
//!
//! Asset reads open every component, the skill directory included, without following
//! symlinks (`O_NOFOLLOW` per component via `openat`), so neither a symlink nor `..`
//! can lead outside the skill. `SKILL.md` and command files are opened the same way
//! at their final component. Every open is non-blocking (a FIFO cannot hang it), the
//! type is checked on the opened descriptor (regular files only), and at most the
//! limit plus one byte is ever read.

use std::fmt;
use std::fs::File;
use std::io::{ErrorKind, Read as _};
use std::path::Path;

/// The largest `SKILL.md` or command file read (1 MiB); a larger one is skipped with
/// a diagnostic.
///
/// Both are read whole at discovery or listing time, and a hostile one (a sparse
/// file, a symlink to `/dev/zero`) must not grow memory without bound. What reaches
/// the model is far smaller anyway: a skill body is cut to the output cap at
/// activation and a command expansion is capped the same way, so 1 MiB (forty times
/// the default output cap) leaves room for any real skill or template.
pub const MAX_DEFINITION_FILE_BYTES: u64 = 1024 * 1024;

/// Why a confined read produced no content.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// A symlink on the path, a missing or non-regular file.
    NotFound,
    /// The file is over the limit (`size` is what was seen: the stat size, or the
    /// bytes read when the file grew).
    TooLarge {
        /// Bytes seen.
        size: u64,
    },
    /// Any other I/O failure.
    Io(std::io::ErrorKind),
}

/// Reads `asset` (a validated logical name) under `dir`, at most `limit` bytes.
pub(crate) fn read_confined(dir: &Path, asset: &str, limit: u64) -> Result<Vec<u8>, ReadFailure> {
    let file = open_confined(dir, asset)?;
    read_opened(file, limit).map_err(|refusal| match refusal {
        Refusal::Missing | Refusal::Symlink | Refusal::NotRegular => ReadFailure::NotFound,
        Refusal::TooLarge { size, .. } => ReadFailure::TooLarge { size },
        Refusal::Io(kind) => ReadFailure::Io(kind),
    })
}

/// Why a `SKILL.md` or command file was not read. Its `Display` is the reason an
/// operator diagnostic gives, without the path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Nothing at the path.
    Missing,
    /// The final component is a symbolic link.
    Symlink,
    /// A directory, FIFO, socket or device.
    NotRegular,
    /// Over the limit (`size` is the stat size, or the bytes read when it grew).
    TooLarge {
        /// Bytes seen.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Any other I/O failure.
    Io(ErrorKind),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => write!(f, "it does not exist"),
            Self::Symlink => write!(
                f,
                "it is a symbolic link, and such files are never read through one"
            ),
            Self::NotRegular => write!(f, "it is not a regular file"),
            Self::TooLarge { size, limit } => {
                write!(f, "it is over {limit} bytes ({size} bytes seen)")
            }
            Self::Io(kind) => write!(f, "it could not be read: {kind}"),
        }
    }
}

/// Reads the file at `path` whole, at most `limit` bytes: its final component is never
/// followed as a symlink, the open never blocks, and only a regular file is read.
pub(crate) fn read_definition_file(path: &Path, limit: u64) -> Result<Vec<u8>, Refusal> {
    read_opened(open_final_nofollow(path)?, limit)
}

/// Reads an opened file: a regular file of at most `limit` bytes, checked on the
/// descriptor, and never more than `limit + 1` bytes read (a file may grow).
fn read_opened(file: File, limit: u64) -> Result<Vec<u8>, Refusal> {
    let metadata = file.metadata().map_err(|e| Refusal::Io(e.kind()))?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular);
    }
    if metadata.len() > limit {
        return Err(Refusal::TooLarge {
            size: metadata.len(),
            limit,
        });
    }
    let capacity = usize::try_from(metadata.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::Io(e.kind()))?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

#[cfg(unix)]
fn open_final_nofollow(path: &Path) -> Result<File, Refusal> {
    use rustix::fs::{Mode, OFlags, open};
    use rustix::io::Errno;

    // NONBLOCK: opening a FIFO must not wait for a writer (it is then refused as
    // non-regular by `read_opened`).
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    match open(path, flags, Mode::empty()) {
        Ok(fd) => Ok(File::from(fd)),
        Err(Errno::NOENT) => Err(Refusal::Missing),
        // ELOOP is what O_NOFOLLOW gives for a symlink; a loop earlier on the path is
        // told apart by looking at the final component itself.
        Err(Errno::LOOP) if is_symlink(path) => Err(Refusal::Symlink),
        // A socket cannot be opened at all.
        Err(Errno::NXIO) => Err(Refusal::NotRegular),
        Err(other) => Err(Refusal::Io(std::io::Error::from(other).kind())),
    }
}

#[cfg(not(unix))]
fn open_final_nofollow(path: &Path) -> Result<File, Refusal> {
    // Best effort without `O_NOFOLLOW`: refuse a symlink, then open.
    if is_symlink(path) {
        return Err(Refusal::Symlink);
    }
    File::open(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => Refusal::Missing,
        kind => Refusal::Io(kind),
    })
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(unix)]
fn open_confined(dir: &Path, asset: &str) -> Result<std::fs::File, ReadFailure> {
    use rustix::fs::{Mode, OFlags, open, openat};
    use rustix::io::Errno;

    let failure = |errno: Errno| match errno {
        Errno::NOENT | Errno::LOOP | Errno::NOTDIR | Errno::NXIO | Errno::ISDIR => ReadFailure::NotFound,
        other => ReadFailure::Io(std::io::Error::from(other).kind()),
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current = open(dir, dir_flags, Mode::empty()).map_err(failure)?;
    let mut components = asset.split('/').peekable();
    while let Some(component) = components.next() {
        if components.peek().is_some() {
            current = openat(&current, component, dir_flags, Mode::empty()).map_err(failure)?;
        } else {
            // NONBLOCK: opening a FIFO must not wait for a writer (it is then
            // rejected as non-regular).
            let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
            let fd = openat(&current, component, file_flags, Mode::empty()).map_err(failure)?;
            return Ok(std::fs::File::from(fd));
        }
    }
    Err(ReadFailure::NotFound)
}

#[cfg(not(unix))]
fn open_confined(dir: &Path, asset: &str) -> Result<std::fs::File, ReadFailure> {
    // Best effort without `openat`: refuse any symlink on the path, then open.
    let mut path = dir.to_path_buf();
    let check = |path: &Path| match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(ReadFailure::NotFound),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ReadFailure::NotFound),
        Err(e) => Err(ReadFailure::Io(e.kind())),
    };
    check(&path)?;
    for component in asset.split('/') {
        path.push(component);
        check(&path)?;
    }
    std::fs::File::open(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadFailure::NotFound,
        kind => ReadFailure::Io(kind),
    })
}

/// Reads a file of the repository that is read whole as text (a project instructions
/// file such as `AGENTS.md`) the way `SKILL.md` is read: the final component is never
/// followed as a symlink, the open never blocks (a FIFO cannot hang it), only a regular
/// file of at most [`MAX_DEFINITION_FILE_BYTES`] is read. `Ok(None)` when nothing is
/// at `path`; `Err` says why the file was refused (without the path).
///
/// # Errors
/// A symlink, a non-regular file, a file over the limit, or an I/O failure.
pub fn read_repository_file(path: &Path) -> Result<Option<Vec<u8>>, String> {
    match read_definition_file(path, MAX_DEFINITION_FILE_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Refusal::Missing) => Ok(None),
        Err(refusal) => Err(refusal.to_string()),
    }
}
