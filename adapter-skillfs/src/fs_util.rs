//! Small filesystem helpers: private (0700/0600) creation, directory fsync, tree copy.

use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents, new ones with mode 0700.
pub(crate) fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    builder(true).create(dir)
}

/// Creates `dir` (its parent must exist) with mode 0700; an existing directory is fine.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    match builder(false).create(dir) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

fn builder(recursive: bool) -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(recursive);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
}

/// Sets mode 0600 on an open file.
pub(crate) fn make_private_file(file: &std::fs::File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Flushes a directory entry change (a rename) to disk; best effort.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Copies the regular files and directories under `from` into the existing `to`
/// (symlinks and other entries are not copied).
pub(crate) fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let file_type = entry.file_type()?;
        let target = to.join(entry.file_name());
        if file_type.is_dir() {
            create_private_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if file_type.is_file() {
            std::fs::copy(entry.path(), &target)?;
            std::fs::File::open(&target)?.sync_all()?;
        }
    }
    Ok(())
}
