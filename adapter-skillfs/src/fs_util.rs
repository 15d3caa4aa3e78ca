//! Small filesystem helpers: private (0700/0600) creation and directory fsync (the
//! modes are `fs-guard`'s), tree copy.

use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents, new ones with mode 0700.
pub(crate) fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    fs_guard::private_dir_builder(true).create(dir)
}

/// Creates `dir` (its parent must exist) with mode 0700; an existing directory is fine.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    match fs_guard::private_dir_builder(false).create(dir) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        other => other,
    }
}

/// Sets mode 0600 on an open file.
pub(crate) fn make_private_file(file: &std::fs::File) -> io::Result<()> {
    fs_guard::make_private(file, &file.metadata()?)
}

/// Flushes a directory entry change (a rename) to disk; best effort.
pub(crate) fn sync_dir(dir: &Path) {
    let _ = fs_guard::sync_dir(dir);
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
