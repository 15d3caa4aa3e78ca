//! The lazy asset inventory of one skill directory, with its bounds.

use std::path::Path;

use engine_ports::{SkillAsset, SkillSourceError, valid_skill_asset_name};
use walkdir::WalkDir;

/// Bounds on one skill's inventory; going over any rejects the whole list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InventoryLimits {
    /// Most assets listed (the walk stops at the next one).
    pub max_assets: usize,
    /// Most bytes of asset names, summed.
    pub max_name_bytes: usize,
    /// Most directory entries of any kind visited (guards walks over huge trees of
    /// directories or skipped entries, which hold no assets).
    pub max_visited: usize,
}

impl Default for InventoryLimits {
    fn default() -> Self {
        Self {
            max_assets: 1_024,
            max_name_bytes: 32 * 1_024,
            max_visited: 4 * 1_024,
        }
    }
}

/// Lists the assets under `dir`: every regular file except the top-level `SKILL.md`,
/// by `/`-joined relative name, sorted. Symlinks and other non-regular entries are
/// skipped and symlinked directories never descended. A directory that has vanished
/// or cannot be opened has no assets.
///
/// # Errors
/// [`SkillSourceError::InventoryTooLarge`] for a bound or a name that is not UTF-8 or
/// fails the validator; [`SkillSourceError::Backend`] when a subdirectory cannot be
/// read. Never a partial list, never a path.
pub(crate) fn list_assets(
    dir: &Path,
    skill: &str,
    limits: InventoryLimits,
) -> Result<Vec<SkillAsset>, SkillSourceError> {
    let rejected = |reason: String| SkillSourceError::InventoryTooLarge {
        skill: skill.to_owned(),
        reason,
    };
    let mut assets: Vec<SkillAsset> = Vec::new();
    let mut name_bytes = 0usize;
    let walk = WalkDir::new(dir)
        .follow_links(false)
        .follow_root_links(false)
        .min_depth(1);
    for (visited, entry) in walk.into_iter().enumerate() {
        if visited >= limits.max_visited {
            return Err(rejected(format!(
                "more than {} entries to walk",
                limits.max_visited
            )));
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) if error.depth() == 0 => return Ok(Vec::new()),
            Err(error) => {
                let kind = error
                    .io_error()
                    .map_or(std::io::ErrorKind::Other, std::io::Error::kind);
                return Err(SkillSourceError::Backend {
                    message: format!("listing the assets of skill {skill:?} failed: {kind}"),
                });
            }
        };
        let file_type = entry.file_type();
        if !file_type.is_file() {
            continue;
        }
        if entry.depth() == 1 && entry.file_name() == "SKILL.md" {
            continue;
        }
        if assets.len() == limits.max_assets {
            return Err(rejected(format!("more than {} assets", limits.max_assets)));
        }
        let name = logical_name(dir, entry.path())
            .ok_or_else(|| rejected("an asset name is not valid UTF-8".into()))?;
        if !valid_skill_asset_name(&name) {
            return Err(rejected(format!(
                "asset name {name:?} is not a valid logical name"
            )));
        }
        name_bytes += name.len();
        if name_bytes > limits.max_name_bytes {
            return Err(rejected(format!(
                "asset names total more than {} bytes",
                limits.max_name_bytes
            )));
        }
        let metadata = entry.metadata().map_err(|error| {
            let kind = error
                .io_error()
                .map_or(std::io::ErrorKind::Other, std::io::Error::kind);
            SkillSourceError::Backend {
                message: format!("listing the assets of skill {skill:?} failed: {kind}"),
            }
        })?;
        assets.push(SkillAsset {
            name,
            size: metadata.len(),
            executable: is_executable(&metadata),
        });
    }
    assets.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(assets)
}

/// The `/`-joined path of `path` relative to `dir`, when every component is UTF-8.
fn logical_name(dir: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(dir).ok()?;
    let mut name = String::new();
    for component in relative.components() {
        if !name.is_empty() {
            name.push('/');
        }
        name.push_str(component.as_os_str().to_str()?);
    }
    Some(name)
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    false
}
