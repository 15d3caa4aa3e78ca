//! Whether a path is on a local disk, where a small read is quick enough to do on the
//! executor instead of on tokio's blocking pool.
//!
//! A hop to the blocking pool and back costs two thread wake-ups, which on a small
//! virtual machine is more than reading a small file (see `Read`). A read on a network
//! or FUSE file system, though, can take as long as the server likes, and the
//! executor must never wait on one. So a workspace counts as local only when the
//! mount its root is on has a local disk type (ext4, xfs, btrfs, tmpfs, …) and
//! nothing else is mounted anywhere below the root: a FUSE directory inside the
//! workspace (or a symlink into one) sends every read of that workspace to the
//! blocking pool. Everything is read from `/proc/self/mountinfo`, which never waits
//! on a file system; the answer per workspace root is kept for [`REFRESH`], so a
//! mount made later is seen that much later at most.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::root_cache::RootCache;

/// How long the mount table read for a workspace root is used.
const REFRESH: Duration = Duration::from_secs(5);

/// File system types whose reads are served by this machine's own kernel and disks.
const LOCAL_TYPES: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "bcachefs", "tmpfs", "ramfs", "overlay",
];

/// Whether the workspace at `root` (a canonical path) is on a local disk alone,
/// from `mountinfo` (the text of `/proc/self/mountinfo`).
fn local_in(mountinfo: &str, root: &Path) -> bool {
    let mut best: Option<(usize, bool)> = None;
    for line in mountinfo.lines() {
        let Some((point, fstype)) = mount_of(line) else {
            continue;
        };
        if point != root && point.starts_with(root) {
            return false;
        }
        if root.starts_with(&point) {
            let depth = point.components().count();
            // A later line for the same point is a mount on top of the earlier one.
            if best.is_none_or(|(seen, _)| depth >= seen) {
                best = Some((depth, LOCAL_TYPES.contains(&fstype)));
            }
        }
    }
    best.is_some_and(|(_, local)| local)
}

/// The mount point and file system type of one `mountinfo` line.
fn mount_of(line: &str) -> Option<(PathBuf, &str)> {
    let (mount, fs) = line.split_once(" - ")?;
    let point = mount.split(' ').nth(4)?;
    let fstype = fs.split(' ').next()?;
    Some((PathBuf::from(unescape(point)), fstype))
}

/// `mountinfo` writes space, tab, newline and backslash in paths as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(octal) = bytes.get(i + 1..i + 4)
            && let Ok(text) = std::str::from_utf8(octal)
            && let Ok(value) = u8::from_str_radix(text, 8)
        {
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

static CACHE: LazyLock<RootCache<bool>> = LazyLock::new(|| RootCache::new(REFRESH));

/// Whether the workspace at `root` (canonical) is on a local disk alone, from the
/// mount table read at most every [`REFRESH`]. Without a readable mount table
/// nothing is local.
pub(crate) fn is_local(root: &Path) -> bool {
    let Ok(local) = CACHE.get_or_work_out(root, Instant::now(), || {
        Ok::<_, std::convert::Infallible>(
            std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|text| local_in(&text, root)),
        )
    });
    local
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:26 / /tmp rw shared:2 - tmpfs tmpfs rw
31 22 0:40 / /home/ann/work/mnt rw shared:3 - fuse.sshfs host:/x rw
32 22 0:41 / /srv/nfs rw - nfs4 server:/export rw
33 22 8:2 / /home/ann/with\\040space rw - xfs /dev/vdb rw
";

    #[test]
    fn a_root_on_a_local_disk_is_local_unless_something_is_mounted_below_it() {
        assert!(local_in(TABLE, Path::new("/home/ann/project")));
        assert!(!local_in(TABLE, Path::new("/home/ann/work")));
        assert!(local_in(TABLE, Path::new("/home/ann/work/src")));
    }

    #[test]
    fn a_root_on_a_network_or_fuse_file_system_is_not_local() {
        assert!(!local_in(TABLE, Path::new("/srv/nfs/project")));
        assert!(!local_in(TABLE, Path::new("/home/ann/work/mnt/deeper")));
    }

    #[test]
    fn the_deepest_mount_decides_and_escaped_paths_are_read() {
        assert!(local_in(TABLE, Path::new("/tmp/ws")));
        assert!(local_in(TABLE, Path::new("/home/ann/with space/p")));
        assert!(!local_in(TABLE, Path::new("/home/ann")));
    }

    #[test]
    fn a_mount_over_another_at_the_same_point_wins() {
        let table = "1 0 8:1 / / rw - ext4 /dev/vda rw\n2 1 0:5 / /ws rw - ext4 /dev/vdb rw\n3 1 0:6 / /ws rw - fuse.x x rw\n";
        assert!(!local_in(table, Path::new("/ws")));
    }

    #[test]
    fn nothing_is_local_without_a_mount_table() {
        assert!(!local_in("", Path::new("/any")));
        assert!(!local_in("garbage\n", Path::new("/")));
    }
}
