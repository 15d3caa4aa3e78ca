//! File helpers: no-follow opens with a regular-file check, explicit modes, the
//! directory `fsync`, and the identity that tells whether `memory.json` changed.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of every file the store creates.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of a directory the store creates.
pub(crate) const DIR_MODE: u32 = 0o700;

/// What names one version of `memory.json`: every write renames a new inode over it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_nanos: i128,
}

pub(crate) fn identity(meta: &Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    FileId {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime_nanos: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
    }
}

fn options_with_flags(options: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(FILE_MODE);
}

/// Opens an existing file for reading, never through a symlink, regular files only.
/// `None` when it does not exist.
pub(crate) fn open_read(path: &Path) -> io::Result<Option<(File, Metadata)>> {
    let mut options = OpenOptions::new();
    options.read(true);
    options_with_flags(&mut options);
    match options.open(path) {
        Ok(file) => {
            let meta = regular_file(&file)?;
            Ok(Some((file, meta)))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(explain(error)),
    }
}

/// Opens (creating it `0600`) the lock file.
pub(crate) fn open_lock(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true);
    options_with_flags(&mut options);
    let file = options.open(path).map_err(explain)?;
    let meta = regular_file(&file)?;
    set_file_mode(&file, &meta)?;
    Ok(file)
}

/// Creates a new file exclusively, mode `0600` whatever the umask.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    options_with_flags(&mut options);
    let file = options.open(path).map_err(explain)?;
    let meta = regular_file(&file)?;
    set_file_mode(&file, &meta)?;
    Ok(file)
}

fn regular_file(file: &File) -> io::Result<Metadata> {
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ))
    }
}

fn set_file_mode(file: &File, meta: &Metadata) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o7777 != FILE_MODE {
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

/// Creates `dir` (and its parents) when missing; `dir` itself gets `0700`.
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a directory",
            ));
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
}

/// `fsync` of a directory, so a rename in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A symlink refused by `O_NOFOLLOW` says so instead of "too many levels".
fn explain(error: io::Error) -> io::Error {
    if error.raw_os_error() == Some(libc::ELOOP) {
        io::Error::new(io::ErrorKind::InvalidInput, "it is a symbolic link")
    } else {
        error
    }
}
