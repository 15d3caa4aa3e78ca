//! Low-level file helpers: no-follow opens with a regular-file check, explicit modes,
//! temp names and directory fsync. Everything the store opens inside `sid-v1/` goes
//! through here.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of every file the store creates.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of every directory the store creates.
pub(crate) const DIR_MODE: u32 = 0o700;

/// `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` where the platform has them: a symlink is
/// refused by the kernel and a FIFO never blocks the open.
#[cfg(unix)]
fn apply_flags(options: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(FILE_MODE);
}

#[cfg(not(unix))]
fn apply_flags(_options: &mut OpenOptions) {}

/// Opens an existing store file for reading.
pub(crate) fn open_read(path: &Path) -> io::Result<(File, Metadata)> {
    let mut options = OpenOptions::new();
    options.read(true);
    apply_flags(&mut options);
    let file = options.open(path).map_err(explain_open_error)?;
    let meta = regular_file(&file)?;
    Ok((file, meta))
}

/// Opens a sidecar for appending, creating it (mode `0600`) when missing. Returns
/// whether this call created it.
pub(crate) fn open_append(path: &Path) -> io::Result<(File, Metadata, bool)> {
    let mut options = OpenOptions::new();
    options.append(true).read(true);
    apply_flags(&mut options);
    match options.open(path) {
        Ok(file) => {
            let meta = regular_file(&file)?;
            Ok((file, meta, false))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            options.create_new(true);
            match options.open(path) {
                Ok(file) => {
                    let meta = regular_file(&file)?;
                    set_file_mode(&file, &meta)?;
                    Ok((file, meta, true))
                }
                // A writer that ignores the lock created it in between: use it.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    options.create_new(false);
                    let file = options.open(path).map_err(explain_open_error)?;
                    let meta = regular_file(&file)?;
                    Ok((file, meta, false))
                }
                Err(error) => Err(explain_open_error(error)),
            }
        }
        Err(error) => Err(explain_open_error(error)),
    }
}

/// Opens (and with `create`, creates) a lock file. `None` when it does not exist and
/// `create` is false.
pub(crate) fn open_lock(path: &Path, create: bool) -> io::Result<Option<(File, Metadata)>> {
    let mut options = OpenOptions::new();
    options.read(true);
    if create {
        options.write(true).create(true);
    }
    apply_flags(&mut options);
    match options.open(path) {
        Ok(file) => {
            let meta = regular_file(&file)?;
            if create {
                set_file_mode(&file, &meta)?;
            }
            Ok(Some((file, meta)))
        }
        Err(error) if !create && error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(explain_open_error(error)),
    }
}

/// Creates a new file exclusively (`O_CREAT | O_EXCL`), mode `0600` whatever the umask.
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    apply_flags(&mut options);
    let file = options.open(path).map_err(explain_open_error)?;
    let meta = regular_file(&file)?;
    set_file_mode(&file, &meta)?;
    Ok(file)
}

/// `fstat` of an open handle; anything but a regular file is refused.
pub(crate) fn regular_file(file: &File) -> io::Result<Metadata> {
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is a {}, not a regular file", file_kind(&meta)),
        ))
    }
}

/// Sets `0600` on a file the store created (the umask may have changed it).
#[cfg(unix)]
fn set_file_mode(file: &File, meta: &Metadata) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o7777 != FILE_MODE {
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn set_file_mode(_file: &File, _meta: &Metadata) -> io::Result<()> {
    Ok(())
}

/// Creates a directory (parents included), mode `0700` set explicitly on `dir`
/// itself so the umask cannot change it. Returns whether it was created.
pub(crate) fn create_dir(dir: &Path) -> io::Result<bool> {
    if std::fs::metadata(dir).is_ok() {
        return Ok(false);
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder.create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(true)
}

/// The permission bits of a directory when group or other bits are set.
#[cfg(unix)]
pub(crate) fn loose_dir_mode(meta: &Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(not(unix))]
pub(crate) fn loose_dir_mode(_meta: &Metadata) -> Option<u32> {
    None
}

/// `fsync` of a directory, so a created, renamed or removed entry is durable.
#[cfg(unix)]
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// `(device, inode)` of a file, the identity the lock protocol compares.
#[cfg(unix)]
pub(crate) fn identity(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
pub(crate) fn identity(meta: &Metadata) -> (u64, u64) {
    // Best effort: without inode numbers the creation time stands in.
    let created = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    (0, created)
}

/// Sixteen random lowercase hex digits, for temp names.
pub(crate) fn random_hex16() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// What kind of file this is, for messages.
pub(crate) fn file_kind(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "directory";
    }
    if kind.is_symlink() {
        return "symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "FIFO";
        }
        if kind.is_socket() {
            return "socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "device";
        }
    }
    if kind.is_file() {
        "regular file"
    } else {
        "special file"
    }
}

/// Turns the kernel's answers to a no-follow, non-blocking open into readable causes.
fn explain_open_error(error: io::Error) -> io::Error {
    #[cfg(unix)]
    {
        match error.raw_os_error() {
            Some(libc::ELOOP) => {
                return io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a symbolic link; the store never follows links",
                );
            }
            Some(libc::ENXIO) => {
                return io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "is a FIFO or socket, not a regular file",
                );
            }
            Some(libc::EISDIR) => {
                return io::Error::new(io::ErrorKind::InvalidInput, "is a directory, not a regular file");
            }
            _ => {}
        }
    }
    error
}
