//! Confined asset reads: every component, the skill directory included, is opened
//! without following symlinks (`O_NOFOLLOW` per component via `openat`), so neither a
//! symlink nor `..` can lead outside the skill.

use std::io::Read as _;
use std::path::Path;

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
    let metadata = file.metadata().map_err(|e| ReadFailure::Io(e.kind()))?;
    if !metadata.is_file() {
        return Err(ReadFailure::NotFound);
    }
    if metadata.len() > limit {
        return Err(ReadFailure::TooLarge { size: metadata.len() });
    }
    let capacity = usize::try_from(metadata.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| ReadFailure::Io(e.kind()))?;
    if bytes.len() as u64 > limit {
        return Err(ReadFailure::TooLarge {
            size: bytes.len() as u64,
        });
    }
    Ok(bytes)
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
