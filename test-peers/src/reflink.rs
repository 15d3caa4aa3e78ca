//! A throwaway filesystem that clones files by reference, for the tests and the
//! benchmark of workspace copies: a sparse image file formatted as XFS with
//! `reflink=1`, loop-mounted on a temporary directory, unmounted and deleted on drop.
//!
//! It needs `mkfs.xfs` (Debian's `xfsprogs`, which `tests/peers/install.sh` installs)
//! and root with loop devices. Missing either fails the test like any missing peer
//! (skipped only with `MECATED_SKIP_PEERS=1`, never under `CI=true`). Every command it
//! runs is bounded by [`READY_DEADLINE`]; a mount that cannot
//! be unmounted at drop is detached lazily, never left waiting.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{READY_DEADLINE, skipping_allowed};

/// The image size: XFS's smallest filesystem is 300 MiB; the file is sparse, so
/// only what the tests write takes disk space.
const IMAGE_BYTES: u64 = 512 * 1024 * 1024;

/// A mounted reflink-capable filesystem; [`ReflinkFs::path`] is its root.
#[derive(Debug)]
pub struct ReflinkFs {
    /// Holds the image and the mount point; removed (after the unmount) on drop.
    _scratch: tempfile::TempDir,
    mount_point: PathBuf,
    mounted: bool,
}

impl ReflinkFs {
    /// Mounts a fresh XFS filesystem with reflinks; `None` when it cannot and
    /// skipping is allowed (a `PEER-SKIP` line names what is missing).
    ///
    /// # Panics
    /// When it cannot be mounted and skipping is not allowed.
    pub fn mount(test: &str) -> Option<Self> {
        match Self::try_mount() {
            Ok(fs) => Some(fs),
            Err(missing) if skipping_allowed() => {
                let line = format!("PEER-SKIP {test} reflink filesystem: {missing}\n");
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
                None
            }
            Err(missing) => panic!(
                "test {test} needs a reflink-capable filesystem (an XFS image loop-mounted as root): \
                 {missing}; run tests/peers/install.sh for mkfs.xfs (or set MECATED_SKIP_PEERS=1 \
                 locally to skip; never under CI=true)"
            ),
        }
    }

    /// Mounts one, or says why it cannot (for benchmarks, which fall back to the
    /// temporary directory's filesystem and say so).
    ///
    /// # Errors
    /// What is missing or which command failed.
    pub fn try_mount() -> Result<Self, String> {
        if !nix::unistd::Uid::effective().is_root() {
            return Err("loop-mounting an image needs root".to_owned());
        }
        let mkfs = ["/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .ok_or("mkfs.xfs is missing (Debian package xfsprogs)")?;
        let scratch = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let image = scratch.path().join("xfs.img");
        let file = std::fs::File::create(&image).map_err(|e| format!("{}: {e}", image.display()))?;
        file.set_len(IMAGE_BYTES)
            .map_err(|e| format!("{}: {e}", image.display()))?;
        drop(file);
        run_bounded(Command::new(mkfs).args(["-q", "-m", "reflink=1"]).arg(&image))?;
        let mount_point = scratch.path().join("mnt");
        std::fs::create_dir(&mount_point).map_err(|e| format!("{}: {e}", mount_point.display()))?;
        run_bounded(
            Command::new("mount")
                .args(["-o", "loop"])
                .arg(&image)
                .arg(&mount_point),
        )?;
        Ok(Self {
            _scratch: scratch,
            mount_point,
            mounted: true,
        })
    }

    /// The root of the mounted filesystem.
    pub fn path(&self) -> &Path {
        &self.mount_point
    }
}

impl Drop for ReflinkFs {
    fn drop(&mut self) {
        if self.mounted && run_bounded(Command::new("umount").arg(&self.mount_point)).is_err() {
            // Busy: detach it now; the kernel frees it when the last file closes.
            let _ = run_bounded(Command::new("umount").arg("-l").arg(&self.mount_point));
        }
        self.mounted = false;
    }
}

/// Runs `command` to completion within [`READY_DEADLINE`], killing it past that.
fn run_bounded(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let deadline = Instant::now() + READY_DEADLINE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                return Err(format!("{shown} failed ({status}): {}", stderr.trim()));
            }
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{shown} did not finish within {READY_DEADLINE:?}"));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for {shown}: {e}")),
        }
    }
}
