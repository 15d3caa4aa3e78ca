//! Fixture builders: temporary skill trees and `SKILL.md` texts.

use std::path::{Path, PathBuf};

use adapter_skillfs::{DirSource, Discover, Discovery};

/// A `SKILL.md` text with `name`, `description`, extra frontmatter lines and a body.
pub(crate) fn skill_md(name: &str, description: &str, extra: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n")
}

/// Writes `<root>/<dir>/SKILL.md`.
pub(crate) fn write_skill(root: &Path, dir: &str, text: &str) -> PathBuf {
    let skill_dir = root.join(dir);
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(skill_dir.join("SKILL.md"), text).unwrap();
    skill_dir
}

/// Writes a valid skill named like its directory.
pub(crate) fn write_valid(root: &Path, name: &str, body: &str) -> PathBuf {
    write_skill(
        root,
        name,
        &skill_md(name, &format!("The {name} skill."), "", body),
    )
}

/// Writes a file (and its parents).
pub(crate) fn write_file(path: &Path, content: impl AsRef<[u8]>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Discovers one directory.
pub(crate) fn discover(dir: &Path) -> Discovery {
    DirSource::new(dir).discover().unwrap()
}

/// The names of the discovered skills.
pub(crate) fn names(found: &Discovery) -> Vec<String> {
    found.skills.iter().map(|s| s.meta.name.clone()).collect()
}

/// Sets a file's mode (Unix).
pub(crate) fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Creates a FIFO at `path` (nothing ever writes to it, so a blocking open or read
/// of it waits forever).
pub(crate) fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
}

/// Runs `work` on a thread of its own and returns its result, or panics when it does
/// not finish within a generous 10 s (a blocking open of a FIFO would never finish).
pub(crate) fn within_ten_seconds<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the call hung (it did not return within 10 s)")
}

/// Makes `path` a sparse file of `len` bytes.
pub(crate) fn sparse_file(path: &Path, len: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}
