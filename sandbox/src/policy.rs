//! [`SandboxPolicy`]: one Landlock ruleset (and seccomp filter) per command, prepared
//! in the parent.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use engine_ports::SandboxMode;
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr,
};

use crate::exec::Prepared;

/// Device files every confined command may write (and read): the sinks and sources
/// commands commonly open. `/dev/tty` is not among them: a headless command has no
/// business writing the operator's terminal.
pub const DEVICE_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The newest ABI whose rights are requested (best effort beyond ABI 1): `Refer`
/// (2), `Truncate` (3), `IoctlDev` (5). Later write-like rights (ABI 9's Unix-socket
/// resolution) are left unhandled: Unix sockets stay usable.
const BEST_EFFORT_ABI: ABI = ABI::V5;

/// A sandbox that could not be prepared for a command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The Landlock ruleset could not be built (an ABI 1 right the kernel refuses, a
    /// rule it rejects).
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
    /// A path the rules name could not be opened.
    #[error("cannot open {path} for a sandbox rule: {cause}")]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        cause: String,
    },
    /// The seccomp filter could not be compiled.
    #[error("cannot compile the seccomp filter: {0}")]
    Seccomp(String),
}

/// What a confined command may do: write only the writable roots (the workspace it
/// runs in, unless read-only, plus its private temporary directory and
/// [`DEVICE_FILES`]), read everything but `deny_read`, and open IP sockets only with
/// `network`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    network: bool,
    deny_read: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// A policy; `deny_read` should be canonical paths (a symlinked spelling would
    /// deny nothing).
    pub fn new(mode: SandboxMode, network: bool, deny_read: Vec<PathBuf>) -> Self {
        Self {
            mode,
            network,
            deny_read,
        }
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether IP sockets are allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// The paths denied for reading.
    pub fn deny_read(&self) -> &[PathBuf] {
        &self.deny_read
    }

    /// The ruleset and filter for one command running in `workspace` with `temp` as
    /// its temporary directory. `off` prepares nothing (the command runs unconfined).
    pub fn prepare(&self, workspace: &Path, temp: &Path) -> Result<Prepared, SandboxError> {
        if self.mode == SandboxMode::Off {
            return Ok(Prepared::none());
        }
        let mut writable: Vec<&Path> = vec![temp];
        if self.mode == SandboxMode::WorkspaceWrite {
            writable.push(workspace);
        }
        let ruleset = self.ruleset(&writable)?;
        let filter = if self.network {
            None
        } else {
            Some(crate::network::filter()?)
        };
        Ok(Prepared::new(ruleset, filter))
    }

    fn ruleset(&self, writable: &[&Path]) -> Result<OwnedFd, SandboxError> {
        let landlock = |error: landlock::RulesetError| SandboxError::Landlock(error.to_string());
        let all_v1 = AccessFs::from_all(ABI::V1);
        let mut ruleset = Ruleset::default()
            // The ABI 1 rights (every write of a file or directory entry) are required.
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all_v1)
            .map_err(landlock)?
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_write(BEST_EFFORT_ABI))
            .map_err(landlock)?
            .create()
            .map_err(landlock)?;
        let read = AccessFs::from_read(BEST_EFFORT_ABI);
        let read_file = read & AccessFs::from_file(BEST_EFFORT_ABI);
        for (path, is_dir) in read_grants(&self.deny_read) {
            let access = if is_dir { read } else { read_file };
            // A file gone since the walk (or one that cannot be opened) gets no grant:
            // it stays unreadable, which fails closed.
            if let Ok(rule) = rule(&path, access) {
                ruleset = ruleset.add_rule(rule).map_err(landlock)?;
            }
        }
        let all = AccessFs::from_all(BEST_EFFORT_ABI);
        for root in writable {
            ruleset = ruleset.add_rule(rule(root, all)?).map_err(landlock)?;
        }
        let file = AccessFs::from_file(BEST_EFFORT_ABI);
        for device in DEVICE_FILES {
            let device = Path::new(device);
            if device.exists() {
                ruleset = ruleset.add_rule(rule(device, file)?).map_err(landlock)?;
            }
        }
        let fd: Option<OwnedFd> = ruleset.into();
        fd.ok_or_else(|| SandboxError::Landlock("the kernel has no Landlock".to_owned()))
    }
}

fn rule(path: &Path, access: BitFlags<AccessFs>) -> Result<PathBeneath<PathFd>, SandboxError> {
    let fd = PathFd::new(path).map_err(|error| SandboxError::Path {
        path: path.to_path_buf(),
        cause: error.to_string(),
    })?;
    Ok(PathBeneath::new(fd, access))
}

/// The paths to grant read access beneath, with whether each is a directory: `/`
/// when nothing is denied; otherwise, walking from `/` down each denied path's
/// ancestors, every sibling subtree and file that contains no denied path. Symlinks
/// are skipped (Landlock judges the file a link resolves to by that file's own path,
/// and following one could grant a denied path through its other name); entries that
/// cannot be listed are skipped too (nothing is granted there).
pub(crate) fn read_grants(deny: &[PathBuf]) -> Vec<(PathBuf, bool)> {
    let mut out = Vec::new();
    grant(Path::new("/"), deny, &mut out);
    out
}

fn grant(dir: &Path, deny: &[PathBuf], out: &mut Vec<(PathBuf, bool)>) {
    if deny.iter().any(|denied| denied == dir) {
        return;
    }
    if !deny.iter().any(|denied| denied.starts_with(dir)) {
        out.push((dir.to_path_buf(), true));
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_symlink() {
            continue;
        }
        if kind.is_dir() {
            grant(&path, deny, out);
        } else if !deny.iter().any(|denied| denied == &path) {
            out.push((path, false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_denied_grants_the_root() {
        assert_eq!(read_grants(&[]), vec![(PathBuf::from("/"), true)]);
    }

    #[test]
    fn a_denied_path_is_granted_around_and_never_itself() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/secret")).unwrap();
        std::fs::create_dir_all(root.join("a/open")).unwrap();
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::fs::write(root.join("b"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("a/link")).unwrap();
        let denied = root.join("a/secret");
        let grants = read_grants(std::slice::from_ref(&denied));
        let paths: Vec<&PathBuf> = grants.iter().map(|(path, _)| path).collect();
        assert!(grants.contains(&(root.join("a/open"), true)));
        assert!(grants.contains(&(root.join("a/file"), false)));
        assert!(grants.contains(&(root.join("b"), false)));
        for path in &paths {
            assert!(!denied.starts_with(path), "{path:?} would grant the denied path");
            assert!(!path.starts_with(&denied), "{path:?} lies inside the denied path");
        }
        assert!(!paths.contains(&&root.join("a/link")));
    }
}
