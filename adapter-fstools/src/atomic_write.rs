//! Atomic file replacement: a temp file in the same directory, renamed over the target,
//! with the target's final component never followed as a symlink.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Attempts at finding an unused temp-file name before giving up.
const TEMP_NAME_ATTEMPTS: u32 = 64;

/// Why a target cannot be read or replaced.
#[derive(Debug)]
pub(crate) enum TargetError {
    /// The final component is a symlink (swapped in after confinement resolved it).
    Symlink,
    /// The target is a directory.
    Directory,
    /// The target is neither a regular file nor a directory (FIFO, socket, device).
    NotRegular,
    /// The target does not exist (only when reading).
    Missing,
    /// The target is larger than the reader's limit (`size` is `None` when it grew
    /// past the limit while being read).
    TooLarge {
        /// Its size when opened, in bytes.
        size: Option<u64>,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Any other I/O error.
    Io(io::Error),
}

impl TargetError {
    /// The model-facing message for the path `given`; `verb` says what failed.
    pub(crate) fn message(&self, given: &str, verb: &str) -> String {
        match self {
            Self::Symlink => {
                format!("cannot {verb} {given:?}: it is a symbolic link, and writes never follow one")
            }
            Self::Directory => format!("cannot {verb} {given:?}: it is a directory"),
            Self::NotRegular => format!("cannot {verb} {given:?}: it is not a regular file"),
            Self::Missing => format!("cannot {verb} {given:?}: file not found"),
            Self::TooLarge { size, limit } => {
                let size = size.map_or_else(|| format!("more than {limit}"), |size| size.to_string());
                format!(
                    "cannot {verb} {given:?}: it is {size} bytes, over the limit of {limit} bytes \
                     ({} MiB); nothing was read or written",
                    limit / (1024 * 1024)
                )
            }
            Self::Io(error) => format!("cannot {verb} {given:?}: {error}"),
        }
    }
}

impl From<io::Error> for TargetError {
    fn from(error: io::Error) -> Self {
        Self::Io(error)
    }
}

/// Opens an existing regular file for reading with `fs-guard`'s flags (`O_NOFOLLOW`,
/// and `O_NONBLOCK`, so a FIFO swapped in cannot block the open). `Ok(None)` when it
/// does not exist.
pub(crate) fn open_existing(path: &Path) -> Result<Option<(File, Permissions)>, TargetError> {
    let opened = fs_guard::guard_flags(OpenOptions::new().read(true)).open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => return Err(TargetError::Symlink),
        Err(error) => return Err(TargetError::Io(error)),
    };
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(TargetError::Directory);
    }
    if !meta.is_file() {
        return Err(TargetError::NotRegular);
    }
    Ok(Some((file, meta.permissions())))
}

/// Reads an existing regular file of at most `limit` bytes through
/// [`open_existing`], with its permissions. The size is checked on the opened
/// descriptor before anything is read, and no more than `limit` bytes are ever read
/// (a file growing meanwhile is refused too).
pub(crate) fn read_existing(path: &Path, limit: u64) -> Result<(Vec<u8>, Permissions), TargetError> {
    let (file, permissions) = open_existing(path)?.ok_or(TargetError::Missing)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Err(TargetError::TooLarge {
            size: Some(size),
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(TargetError::TooLarge { size: None, limit });
    }
    Ok((bytes, permissions))
}

/// What [`write_file`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// The file did not exist.
    Created,
    /// An existing file was replaced (its permission bits kept).
    Replaced,
}

/// Writes `contents` to `path` atomically: parent directories are created, an existing
/// regular file is replaced keeping its permission bits, a symlink or directory at
/// `path` is refused.
pub(crate) fn write_file(path: &Path, contents: &[u8]) -> Result<Written, TargetError> {
    let existing = open_existing(path)?.map(|(_, permissions)| permissions);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let written = if existing.is_some() {
        Written::Replaced
    } else {
        Written::Created
    };
    replace(path, contents, existing)?;
    Ok(written)
}

/// Replaces `path` with `contents` through a temp file in the same directory and a
/// rename; `permissions` (the old file's) are set on the temp file first, otherwise it
/// gets the default mode less the umask. The temp file never survives a failure.
pub(crate) fn replace(path: &Path, contents: &[u8], permissions: Option<Permissions>) -> io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("/"));
    let (temp_path, mut file) = create_temp(dir)?;
    let outcome = (|| {
        if let Some(permissions) = permissions {
            file.set_permissions(permissions)?;
        }
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp_path, path)
    })();
    if outcome.is_err() {
        let _ = std::fs::remove_file(&temp_path);
    }
    outcome
}

/// Creates a fresh temp file in `dir` (`O_EXCL`, `O_NOFOLLOW`).
fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last_error = None;
    for _ in 0..TEMP_NAME_ATTEMPTS {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".mecatl-write-{}-{n}.tmp", std::process::id());
        let temp_path = dir.join(name);
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp_path);
        match created {
            Ok(file) => return Ok((temp_path, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last_error = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no free temp-file name")))
}
