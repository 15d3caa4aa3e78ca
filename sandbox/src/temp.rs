//! [`PrivateTemp`]: the 0700 temporary directory a runner's commands get as `TMPDIR`.

use std::path::Path;

/// A directory only this user can enter, removed (with its content) when dropped.
/// A confined command may write there whatever the mode.
#[derive(Debug)]
pub struct PrivateTemp {
    dir: tempfile::TempDir,
}

impl PrivateTemp {
    /// A new directory `mecated-sandbox-*` under the system temporary directory,
    /// created with mode 0700 whatever the umask.
    pub fn create() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("mecated-sandbox-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        Ok(Self { dir })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
