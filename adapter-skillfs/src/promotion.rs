//! Promotion: an operator moves a reviewed draft from the quarantine into an active
//! skill directory (`mecated skills promote`). The skill becomes active at the next
//! start; nothing running changes.

use std::io;
use std::path::{Path, PathBuf};

use engine_ports::{truncate_with_ellipsis, valid_skill_name};

use crate::confined::{MAX_DEFINITION_FILE_BYTES, Refusal, read_definition_file};
use crate::fs_util::{copy_tree, create_private_dir_all, sync_dir};
use crate::injection;
use crate::skill_md::{
    DEFAULT_OUTPUT_CAP, SKILL_NAME_GRAMMAR, SkillFileError, frontmatter_scalar, parse_skill_md,
};

/// What to promote, and where.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromoteRequest {
    /// The quarantine (`--skills-draft-dir`).
    pub quarantine: PathBuf,
    /// The active skill directory receiving it (the one `--skills-dir`).
    pub active_dir: PathBuf,
    /// The skill name.
    pub name: String,
}

/// What the confirmation shows the operator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraftSummary {
    /// The skill name.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// A completed promotion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Promoted {
    /// The skill name.
    pub name: String,
    /// Its new directory.
    pub destination: PathBuf,
}

/// Why a promotion was refused (operator-facing: paths are named).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromoteError {
    /// The name breaks the grammar.
    #[error("skill name {name:?} is invalid: it must match {SKILL_NAME_GRAMMAR}")]
    InvalidName {
        /// The name.
        name: String,
    },
    /// No draft directory with a `SKILL.md`.
    #[error("no draft at {}", path.display())]
    DraftMissing {
        /// The expected `SKILL.md`.
        path: PathBuf,
    },
    /// The draft's `SKILL.md` cannot be read safely: a symlink, not a regular file, over
    /// [`MAX_DEFINITION_FILE_BYTES`](crate::MAX_DEFINITION_FILE_BYTES), or unreadable.
    #[error("draft {} cannot be read: {error}", path.display())]
    Unreadable {
        /// The `SKILL.md`.
        path: PathBuf,
        /// Why.
        error: SkillFileError,
    },
    /// The file lacks `origin: model` in its frontmatter.
    #[error("{} is not a model draft: its frontmatter lacks `origin: model`", path.display())]
    NotADraft {
        /// The `SKILL.md`.
        path: PathBuf,
    },
    /// The draft does not parse as a skill (or its name differs from its directory).
    #[error("draft {} does not parse: {error}", path.display())]
    Unparsable {
        /// The `SKILL.md`.
        path: PathBuf,
        /// Why.
        error: SkillFileError,
    },
    /// The injection scan found a marker.
    #[error("draft {} failed the injection scan: its {field} contains {found:?}", path.display())]
    InjectionFound {
        /// The `SKILL.md`.
        path: PathBuf,
        /// `description` or `body`.
        field: &'static str,
        /// The match.
        found: String,
    },
    /// The destination exists already.
    #[error("{} already exists; move it aside first", path.display())]
    AlreadyExists {
        /// The destination.
        path: PathBuf,
    },
    /// The operator did not confirm (or there was no terminal to ask on).
    #[error("promotion of {name:?} was not confirmed")]
    NotConfirmed {
        /// The skill name.
        name: String,
    },
    /// The move failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Promotes `request.name` from the quarantine into the active directory.
///
/// Checks, in order: the name grammar; `Q/NAME/SKILL.md` exists with `origin: model`
/// in its frontmatter; it re-parses under the `SKILL.md` rules (name equal to its
/// directory) and passes the injection scan; `A/NAME` does not exist. Then `confirm`
/// is asked with the name and description (the CLI passes `|_| true` for `--yes`, a
/// terminal prompt otherwise, and `|_| false` without a terminal). Finally the
/// directory moves: a rename that never replaces an existing destination, or across
/// filesystems a copy into a temporary directory inside `A`, a rename, and removal
/// of the original. The provenance fields stay in the file.
///
/// # Errors
/// The first refusal; nothing has moved then.
pub fn promote(
    request: &PromoteRequest,
    confirm: impl FnOnce(&DraftSummary) -> bool,
) -> Result<Promoted, PromoteError> {
    promote_with(request, confirm, rename_no_replace)
}

fn promote_with(
    request: &PromoteRequest,
    confirm: impl FnOnce(&DraftSummary) -> bool,
    rename: impl Fn(&Path, &Path) -> io::Result<()>,
) -> Result<Promoted, PromoteError> {
    let name = request.name.trim();
    if !valid_skill_name(name) {
        return Err(PromoteError::InvalidName {
            name: truncate_with_ellipsis(name, 128).into_owned(),
        });
    }
    let draft_dir = request.quarantine.join(name);
    let manifest = draft_dir.join("SKILL.md");
    let is_plain_dir = std::fs::symlink_metadata(&draft_dir).is_ok_and(|m| m.is_dir());
    if !is_plain_dir {
        return Err(PromoteError::DraftMissing { path: manifest });
    }
    let bytes = match read_definition_file(&manifest, MAX_DEFINITION_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(Refusal::Missing) => return Err(PromoteError::DraftMissing { path: manifest }),
        Err(refusal) => {
            return Err(PromoteError::Unreadable {
                path: manifest,
                error: refusal.into(),
            });
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    if frontmatter_scalar(&text, "origin").as_deref() != Some("model") {
        return Err(PromoteError::NotADraft { path: manifest });
    }
    let parsed =
        parse_skill_md(&bytes, Some(name), DEFAULT_OUTPUT_CAP).map_err(|error| PromoteError::Unparsable {
            path: manifest.clone(),
            error,
        })?;
    if let Some((field, found)) = injection::scan(&parsed.description, &parsed.body) {
        return Err(PromoteError::InjectionFound {
            path: manifest,
            field,
            found,
        });
    }
    let destination = request.active_dir.join(name);
    if std::fs::symlink_metadata(&destination).is_ok() {
        return Err(PromoteError::AlreadyExists { path: destination });
    }
    let summary = DraftSummary {
        name: parsed.name.clone(),
        description: parsed.description,
    };
    if !confirm(&summary) {
        return Err(PromoteError::NotConfirmed { name: parsed.name });
    }
    create_private_dir_all(&request.active_dir).map_err(|source| PromoteError::Io {
        what: "cannot create the skill directory",
        path: request.active_dir.clone(),
        source,
    })?;
    move_dir(&draft_dir, &destination, rename).map_err(|source| match source.kind() {
        io::ErrorKind::AlreadyExists | io::ErrorKind::DirectoryNotEmpty => PromoteError::AlreadyExists {
            path: destination.clone(),
        },
        _ => PromoteError::Io {
            what: "cannot move the draft to",
            path: destination.clone(),
            source,
        },
    })?;
    tracing::info!(skill = %parsed.name, destination = %destination.display(), "skill draft promoted");
    Ok(Promoted {
        name: parsed.name,
        destination,
    })
}

/// Moves `from` to `to` with `rename`; across filesystems, copies into a temporary
/// directory next to `to`, renames it into place and removes `from`.
fn move_dir(from: &Path, to: &Path, rename: impl Fn(&Path, &Path) -> io::Result<()>) -> io::Result<()> {
    match rename(from, to) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::CrossesDevices => {
            let parent = to.parent().unwrap_or(Path::new("."));
            let staging = tempfile::Builder::new().prefix(".promote-").tempdir_in(parent)?;
            copy_tree(from, staging.path())?;
            rename(staging.path(), to)?;
            // The staging directory now is `to`; keep it from being cleaned up.
            let _ = staging.keep();
            std::fs::remove_dir_all(from)?;
        }
        Err(error) => return Err(error),
    }
    if let Some(parent) = to.parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// A rename that refuses to replace an existing destination where the platform can
/// say so atomically (`RENAME_NOREPLACE`), and a plain rename elsewhere.
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(errno) => return Err(io::Error::from(errno)),
        }
    }
    std::fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_move_across_filesystems_copies_renames_and_removes_the_original() {
        let root = tempfile::tempdir().unwrap();
        let from = root.path().join("q/skill");
        std::fs::create_dir_all(from.join("sub")).unwrap();
        std::fs::write(from.join("SKILL.md"), "x").unwrap();
        std::fs::write(from.join("sub/a.md"), "a").unwrap();
        std::fs::create_dir(root.path().join("active")).unwrap();
        let to = root.path().join("active/skill");
        let cross = |a: &Path, b: &Path| {
            if a.ends_with("q/skill") {
                Err(io::Error::from(io::ErrorKind::CrossesDevices))
            } else {
                std::fs::rename(a, b)
            }
        };
        move_dir(&from, &to, cross).unwrap();
        assert!(!from.exists());
        assert_eq!(std::fs::read_to_string(to.join("SKILL.md")).unwrap(), "x");
        assert_eq!(std::fs::read_to_string(to.join("sub/a.md")).unwrap(), "a");
        let leftovers: Vec<_> = std::fs::read_dir(root.path().join("active"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, ["skill"]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_plain_rename_never_replaces_an_existing_destination() {
        let root = tempfile::tempdir().unwrap();
        let (from, to) = (root.path().join("a"), root.path().join("b"));
        std::fs::create_dir(&from).unwrap();
        std::fs::create_dir(&to).unwrap();
        assert!(rename_no_replace(&from, &to).is_err());
        assert!(from.exists());
    }
}
