//! Applying a copy's changes to its source, all or nothing.
//!
//! After the conflict check (every changed path must be in the source as it was when
//! copied, and lead nowhere outside it), the apply runs in two phases:
//! 1. staging: every new file and symlink is written under a temp name beside its
//!    target (missing directories created and remembered);
//! 2. swapping, path by path: what is at the target is kept aside under a temp name
//!    (a hard link, so the target never disappears; a rename where links are not
//!    possible, and for deletions), then the staged entry is renamed over it.
//!
//! A failure at any point undoes every step in reverse (kept entries renamed back,
//! new ones removed, staged temps and created directories removed), so the source is
//! left exactly as it was; the error names the path and the cause, and whether the
//! rollback was complete. After the last swap the kept entries are removed. Temp
//! names are `.mecatl-<16 hex>.new` / `.old`, 26 bytes whatever the target's name, so
//! they never exceed `NAME_MAX`.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use engine_ports::{FileChange, ForkError};

use super::copy_file;
use super::manifest::{Entry, Manifest, changed_paths, io_error};

/// What applying did, step by step, for the rollback.
#[derive(Debug)]
enum Step {
    /// A directory that did not exist was created.
    CreatedDir(PathBuf),
    /// A new entry was written under a temp name.
    Staged(PathBuf),
    /// What was at `target` is kept at `kept`.
    Kept { target: PathBuf, kept: PathBuf },
    /// The new entry is at `target` (its staged temp consumed).
    Placed(PathBuf),
}

pub(super) fn apply(
    root: &Path,
    source: &Path,
    manifest: &Manifest,
    source_manifest: &Manifest,
) -> Result<Vec<FileChange>, ForkError> {
    let changed = changed_paths(root, manifest)?;
    let canonical_source = fs::canonicalize(source).map_err(|error| io_error("resolving", source, &error))?;
    let mut conflicts = Vec::new();
    for (path, _, _) in &changed {
        let target = source.join(path);
        let then = source_manifest.get(path);
        let now = Entry::at(&target).map_err(|error| io_error("reading", &target, &error))?;
        let unchanged = match (&now, then) {
            (None, None) => true,
            (Some(now), Some(then)) => now
                .same_as(then, &target)
                .map_err(|error| io_error("reading", &target, &error))?,
            _ => false,
        };
        if !unchanged || !inside(&canonical_source, &target) {
            conflicts.push(path.to_string_lossy().into_owned());
        }
    }
    if !conflicts.is_empty() {
        return Err(ForkError::Conflict {
            copy: root.to_path_buf(),
            paths: conflicts,
        });
    }

    let mut steps: Vec<Step> = Vec::new();
    let mut staged: Vec<Option<PathBuf>> = Vec::with_capacity(changed.len());
    let fail = |steps: Vec<Step>, path: &Path, error: &io::Error| {
        let outcome = rollback(steps);
        ForkError::ApplyFailed {
            copy: root.to_path_buf(),
            path: path.to_path_buf(),
            reason: error.to_string(),
            outcome,
        }
    };
    // 1. Staging.
    for (path, _, entry) in &changed {
        let target = source.join(path);
        let temp = match entry {
            None => None,
            Some(entry) => match stage(&root.join(path), &target, entry, &mut steps) {
                Ok(temp) => Some(temp),
                Err(error) => return Err(fail(steps, &target, &error)),
            },
        };
        staged.push(temp);
    }
    // 2. Swapping.
    for ((path, _, _), temp) in changed.iter().zip(staged) {
        let target = source.join(path);
        if let Err(error) = swap(&target, temp, &mut steps) {
            return Err(fail(steps, &target, &error));
        }
    }
    // Done: what was replaced or deleted goes.
    for step in &steps {
        if let Step::Kept { kept, .. } = step
            && let Err(error) = fs::remove_file(kept)
        {
            tracing::warn!(path = %kept.display(), %error, "a replaced file kept during an apply could not be removed");
        }
    }
    Ok(changed
        .into_iter()
        .map(|(path, kind, _)| FileChange {
            path: path.to_string_lossy().into_owned(),
            kind,
        })
        .collect())
}

/// Writes `entry` (read from `from` in the copy) under a temp name beside `target`,
/// creating missing directories first; the temp path.
fn stage(from: &Path, target: &Path, entry: &Entry, steps: &mut Vec<Step>) -> io::Result<PathBuf> {
    let parent = target
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "it has no parent directory"))?;
    create_dirs(parent, steps)?;
    for _ in 0..16 {
        let temp = temp_name(parent, "new");
        let written = match entry {
            Entry::Link(link) => std::os::unix::fs::symlink(link, &temp),
            Entry::File(meta) => copy_file(from, &temp, meta.mode, true).map(|_| ()),
        };
        match written {
            Ok(()) => {
                steps.push(Step::Staged(temp.clone()));
                return Ok(temp);
            }
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                let _ = fs::remove_file(&temp);
                return Err(error);
            }
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temp name"))
}

/// Creates `dir` and its missing ancestors, recording each one created.
fn create_dirs(dir: &Path, steps: &mut Vec<Step>) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at {
        match fs::symlink_metadata(path) {
            Ok(_) => break,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                missing.push(path.to_path_buf());
                at = path.parent();
            }
            Err(error) => return Err(error),
        }
    }
    for path in missing.into_iter().rev() {
        fs::create_dir(&path)?;
        steps.push(Step::CreatedDir(path));
    }
    Ok(())
}

/// Puts the staged entry `temp` at `target` (or, without one, deletes `target`),
/// keeping what was there aside.
fn swap(target: &Path, temp: Option<PathBuf>, steps: &mut Vec<Step>) -> io::Result<()> {
    let parent = target.parent().unwrap_or(target);
    let present = Entry::at(target)?.is_some();
    if present {
        let kept = keep_aside(target, parent, temp.is_some())?;
        steps.push(Step::Kept {
            target: target.to_path_buf(),
            kept,
        });
    }
    if let Some(temp) = temp {
        fs::rename(&temp, target)?;
        steps.push(Step::Placed(target.to_path_buf()));
    }
    Ok(())
}

/// Keeps the file or symlink at `target` under a temp name in `parent`: a hard link
/// when it stays in place (`link`) and the filesystem allows one, else a rename.
fn keep_aside(target: &Path, parent: &Path, link: bool) -> io::Result<PathBuf> {
    for _ in 0..16 {
        let kept = temp_name(parent, "old");
        if kept.exists() {
            continue;
        }
        if link && fs::hard_link(target, &kept).is_ok() {
            return Ok(kept);
        }
        fs::rename(target, &kept)?;
        return Ok(kept);
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temp name"))
}

/// Undoes `steps` in reverse; says what became of the source.
fn rollback(steps: Vec<Step>) -> String {
    let mut failures: Vec<String> = Vec::new();
    let kept_targets: Vec<PathBuf> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Kept { target, .. } => Some(target.clone()),
            _ => None,
        })
        .collect();
    let mut note = |what: &str, path: &Path, error: io::Error| {
        failures.push(format!("{what} {}: {error}", path.display()));
    };
    for step in steps.into_iter().rev() {
        match step {
            // The kept entry's rename back replaces it.
            Step::Placed(target) if kept_targets.contains(&target) => {}
            Step::Placed(target) => {
                if let Err(error) = fs::remove_file(&target) {
                    note("removing", &target, error);
                }
            }
            Step::Kept { target, kept } => match fs::rename(&kept, &target) {
                // A hard link renamed over its own file is left in place.
                Ok(()) if fs::symlink_metadata(&kept).is_ok() => {
                    if let Err(error) = fs::remove_file(&kept) {
                        note("removing", &kept, error);
                    }
                }
                Ok(()) => {}
                Err(error) => note(
                    &format!("restoring (it is kept at {})", kept.display()),
                    &target,
                    error,
                ),
            },
            Step::Staged(temp) => match fs::remove_file(&temp) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => note("removing", &temp, error),
            },
            Step::CreatedDir(dir) => {
                if let Err(error) = fs::remove_dir(&dir) {
                    note("removing the directory", &dir, error);
                }
            }
        }
    }
    if failures.is_empty() {
        "every change made was rolled back: the workspace is as it was before the apply".to_owned()
    } else {
        format!(
            "rolling back was incomplete ({}); the rest was rolled back",
            failures.join("; ")
        )
    }
}

/// Whether `target`'s parent directories stay inside `root` (its nearest existing
/// ancestor resolves there, and no `..` is left).
fn inside(root: &Path, target: &Path) -> bool {
    if target.components().any(|c| matches!(c, Component::ParentDir)) {
        return false;
    }
    let mut ancestor = target.parent();
    while let Some(dir) = ancestor {
        if let Ok(resolved) = fs::canonicalize(dir) {
            return resolved.starts_with(root);
        }
        ancestor = dir.parent();
    }
    false
}

/// A hidden temp name in `dir`: `.mecatl-<16 hex>.<suffix>` (26 bytes, whatever the
/// target's name).
fn temp_name(dir: &Path, suffix: &str) -> PathBuf {
    dir.join(format!(".mecatl-{:016x}.{suffix}", fastrand::u64(..)))
}
