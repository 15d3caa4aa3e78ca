//! The one rule for files an adapter creates or opens on its own: opens never follow a
//! symlink at the final component, never block on a FIFO and never leak into a child
//! (`O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`); only a regular file is accepted, checked on
//! the opened descriptor; created files get mode `0600` and directories `0700` whatever
//! the umask; a directory is `fsync`ed so a created, renamed or removed entry is
//! durable; and the kernel's refusals of such an open are told as readable causes.
//!
//! The wording of a refusal belongs to the caller: a [`Guard`] value carries it, so
//! each store keeps the error texts it has always shown. Where the platform is not
//! unix the flags and modes are not applied and [`sync_dir`] does nothing; the
//! regular-file check still runs.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// Mode of every file created through this crate.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory created through this crate.
pub const DIR_MODE: u32 = 0o700;

/// Sets `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` and the create mode `0600` on `options`
/// where the platform has them: a symlink is refused by the kernel, a FIFO never
/// blocks the open, and the descriptor is not inherited by a child process.
pub fn guard_flags(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .mode(FILE_MODE);
    }
    options
}

/// Guarded opens, with the caller's words for what they refuse. Every refusal is an
/// [`io::ErrorKind::InvalidInput`] error whose text is one of these.
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    /// A symbolic link at the final component (`ELOOP` under `O_NOFOLLOW`).
    pub symlink: &'static str,
    /// A FIFO without a reader or a socket (`ENXIO`); `None` keeps the kernel's error.
    pub fifo_or_socket: Option<&'static str>,
    /// A directory opened for writing (`EISDIR`); `None` keeps the kernel's error.
    pub directory: Option<&'static str>,
    /// An opened descriptor that is not a regular file, given what it is (as
    /// [`file_kind`] names it).
    pub not_regular: fn(kind: &'static str) -> String,
}

impl Guard {
    /// Opens `path` with `options` plus [`guard_flags`] and checks that it is a regular
    /// file. A missing file is the kernel's `NotFound` error, unchanged.
    pub fn open(&self, options: &mut OpenOptions, path: &Path) -> io::Result<(File, Metadata)> {
        let file = guard_flags(options)
            .open(path)
            .map_err(|error| self.explain(error))?;
        let meta = self.regular_file(&file)?;
        Ok((file, meta))
    }

    /// Opens an existing file for reading; `None` when it does not exist.
    pub fn open_existing(&self, path: &Path) -> io::Result<Option<(File, Metadata)>> {
        match self.open(OpenOptions::new().read(true), path) {
            Ok(opened) => Ok(Some(opened)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Opens a file for reading and writing, creating it when missing; either way it
    /// ends with mode `0600` (a lock file, whose mode a past umask may have changed).
    pub fn open_or_create(&self, path: &Path) -> io::Result<(File, Metadata)> {
        let (file, meta) = self.open(OpenOptions::new().read(true).write(true).create(true), path)?;
        make_private(&file, &meta)?;
        Ok((file, meta))
    }

    /// Creates a new file exclusively (`O_CREAT | O_EXCL`), mode `0600` whatever the
    /// umask.
    pub fn create_new(&self, path: &Path) -> io::Result<File> {
        let (file, meta) = self.open(OpenOptions::new().write(true).create_new(true), path)?;
        make_private(&file, &meta)?;
        Ok(file)
    }

    /// `fstat` of an open handle; anything but a regular file is refused.
    pub fn regular_file(&self, file: &File) -> io::Result<Metadata> {
        let meta = file.metadata()?;
        if meta.is_file() {
            Ok(meta)
        } else {
            Err(refused((self.not_regular)(file_kind(&meta))))
        }
    }

    /// Turns the kernel's answers to a guarded open into the caller's words; any other
    /// error is returned unchanged.
    pub fn explain(&self, error: io::Error) -> io::Error {
        #[cfg(unix)]
        {
            let text = match error.raw_os_error() {
                Some(libc::ELOOP) => Some(self.symlink),
                Some(libc::ENXIO) => self.fifo_or_socket,
                Some(libc::EISDIR) => self.directory,
                _ => None,
            };
            if let Some(text) = text {
                return refused(text);
            }
        }
        error
    }
}

fn refused(text: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, text.into())
}

/// Sets `0600` on a file the caller created (the umask may have changed it); `meta` is
/// the file's own, so nothing is done when the mode is already right.
pub fn make_private(file: &File, meta: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o7777 != FILE_MODE {
            file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (file, meta);
    Ok(())
}

/// A directory builder whose new directories get mode `0700` (less the umask, which
/// [`create_private_dir`] then overrides on the last one).
pub fn private_dir_builder(recursive: bool) -> DirBuilder {
    let mut builder = DirBuilder::new();
    builder.recursive(recursive);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder
}

/// Creates the missing directory `dir` (parents included), with mode `0700` set
/// explicitly on `dir` itself so the umask cannot change it.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    private_dir_builder(true).create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// The permission bits of a directory when group or other bits are set.
pub fn loose_dir_mode(meta: &Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// `fsync` of a directory, so a created, renamed or removed entry is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// What kind of file this is, for messages.
pub fn file_kind(meta: &Metadata) -> &'static str {
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn not_regular(kind: &'static str) -> String {
        format!("is a {kind}, not a regular file")
    }

    const GUARD: Guard = Guard {
        symlink: "is a symbolic link",
        fifo_or_socket: Some("is a FIFO or socket"),
        directory: None,
        not_regular,
    };

    fn mode(path: &Path) -> io::Result<u32> {
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o7777)
    }

    #[test]
    fn created_files_and_directories_are_private_whatever_the_umask() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("a/b");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir).unwrap(), DIR_MODE);
        let file = dir.join("f");
        GUARD.create_new(&file).unwrap();
        assert_eq!(mode(&file).unwrap(), FILE_MODE);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        GUARD.open_or_create(&file).unwrap();
        assert_eq!(mode(&file).unwrap(), FILE_MODE);
        sync_dir(&dir).unwrap();
    }

    #[test]
    fn a_symlink_is_refused_in_the_callers_words() {
        let scratch = tempfile::tempdir().unwrap();
        let target = scratch.path().join("target");
        std::fs::write(&target, "x").unwrap();
        let link = scratch.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = GUARD.open_existing(&link).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(error.to_string(), "is a symbolic link");
    }

    #[test]
    fn a_directory_is_named_on_the_descriptor_and_a_write_open_keeps_the_kernels_error() {
        let scratch = tempfile::tempdir().unwrap();
        let error = GUARD.open_existing(scratch.path()).unwrap_err();
        assert_eq!(error.to_string(), "is a directory, not a regular file");
        let error = GUARD.open_or_create(scratch.path()).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EISDIR));
    }

    #[test]
    fn a_missing_file_is_none_or_the_kernels_not_found() {
        let scratch = tempfile::tempdir().unwrap();
        let missing = scratch.path().join("missing");
        assert!(GUARD.open_existing(&missing).unwrap().is_none());
        let error = GUARD.open(OpenOptions::new().read(true), &missing).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn loose_directory_modes_are_reported() {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o750)).unwrap();
        let meta = std::fs::metadata(scratch.path()).unwrap();
        assert_eq!(loose_dir_mode(&meta), Some(0o750));
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let meta = std::fs::metadata(scratch.path()).unwrap();
        assert_eq!(loose_dir_mode(&meta), None);
    }
}
