//! The skills port: [`SkillSource`], its metadata types and the one logical
//! asset-name validator; the [`SkillDrafter`] port for model-proposed skills.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A source of skills, dealing only in logical bundles: it has no path, directory or
/// root concept (filesystem locations stay private to the adapter).
///
/// # Contract
/// - `list_skills` is a snapshot: sorted by name (byte order), unique, identical on
///   every call.
/// - `skill_body` and `list_skill_assets` report an unknown skill as
///   [`SkillSourceError::SkillNotFound`]. An asset-less skill lists as empty; asset
///   lists are sorted and every name passes [`valid_skill_asset_name`].
/// - `read_skill_asset` validates the name first ([`SkillSourceError::InvalidAssetName`]);
///   an unknown skill or asset is [`SkillSourceError::AssetNotFound`]; it never returns
///   a partial asset.
/// - Error texts never contain a filesystem path or OS error text.
#[async_trait]
pub trait SkillSource: Send + Sync {
    /// Every skill, sorted by name.
    async fn list_skills(&self) -> Result<Vec<SkillMeta>, SkillSourceError>;
    /// The instructions of one skill.
    async fn skill_body(&self, name: &str) -> Result<Arc<str>, SkillSourceError>;
    /// The assets of one skill, sorted by name.
    async fn list_skill_assets(&self, name: &str) -> Result<Vec<SkillAsset>, SkillSourceError>;
    /// The bytes of one asset.
    async fn read_skill_asset(&self, skill: &str, asset: &str) -> Result<Vec<u8>, SkillSourceError>;
}

/// What a listing says about one skill.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillMeta {
    /// The skill name (see [`valid_skill_name`]).
    pub name: String,
    /// One-paragraph description.
    pub description: String,
    /// Which tier it came from (observability only).
    pub origin: SkillOrigin,
    /// Whether it bundles assets.
    pub has_assets: bool,
    /// Licence text.
    pub license: Option<String>,
    /// Compatibility note.
    pub compatibility: Option<String>,
    /// Free-form metadata (empty = none).
    pub metadata: BTreeMap<String, String>,
    /// Tools the skill expects to use: advisory only, never a grant.
    pub allowed_tools: Vec<String>,
}

/// One asset in a skill's inventory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillAsset {
    /// Logical, `/`-joined name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether any execute bit is set (informational; assets are never executed).
    pub executable: bool,
}

/// The tier a skill came from: a closed label set, never a location.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillOrigin {
    /// Given explicitly (`--skills-dir`), or by a tier-less source.
    #[default]
    Explicit,
    /// The workspace's conventional directories (trusted workspaces only).
    Project,
    /// The user's conventional directories.
    User,
    /// Supplied by an embedding driver.
    Driver,
}

impl SkillOrigin {
    /// `explicit`, `project`, `user` or `driver`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Explicit => "explicit",
            Self::Project => "project",
            Self::User => "user",
            Self::Driver => "driver",
        }
    }

    /// Maps a label back; unknown labels are [`SkillOrigin::Driver`].
    pub fn from_label(label: &str) -> Self {
        match label {
            "explicit" => Self::Explicit,
            "project" => Self::Project,
            "user" => Self::User,
            _ => Self::Driver,
        }
    }
}

impl fmt::Display for SkillOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A skill-source failure. `Display` names the skill and asset Debug-quoted and never
/// contains a filesystem path or OS error text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillSourceError {
    /// No such skill.
    #[error("skill {skill:?} not found")]
    SkillNotFound {
        /// The skill.
        skill: String,
    },
    /// No such asset (or the path is not a plain file inside the skill).
    #[error("asset {asset:?} of skill {skill:?} not found")]
    AssetNotFound {
        /// The skill.
        skill: String,
        /// The asset.
        asset: String,
    },
    /// The asset name fails [`valid_skill_asset_name`].
    #[error("invalid logical asset name {asset:?}")]
    InvalidAssetName {
        /// The name.
        asset: String,
    },
    /// The asset is larger than the limit.
    #[error("asset {asset:?} of skill {skill:?} is too large: {size} bytes, limit {limit}")]
    TooLarge {
        /// The skill.
        skill: String,
        /// The asset.
        asset: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The inventory exceeds a bound or holds an invalid name.
    #[error("asset inventory of skill {skill:?} rejected: {reason}")]
    InventoryTooLarge {
        /// The skill.
        skill: String,
        /// Which bound, or which name.
        reason: String,
    },
    /// The backend failed.
    #[error("skill source failed: {message}")]
    Backend {
        /// What failed (no path).
        message: String,
    },
}

impl SkillSourceError {
    /// Whether this is [`SkillSourceError::SkillNotFound`].
    pub fn is_skill_not_found(&self) -> bool {
        matches!(self, Self::SkillNotFound { .. })
    }

    /// Whether this is [`SkillSourceError::AssetNotFound`].
    pub fn is_asset_not_found(&self) -> bool {
        matches!(self, Self::AssetNotFound { .. })
    }
}

/// The single logical asset-name validator.
///
/// Valid iff non-empty; no `\`, NUL, control character (`char::is_control`), U+2028
/// or U+2029; and splitting on `/` gives no empty, `.` or `..` segment. Inner dots and
/// leading-dot names are fine; depth is unbounded.
pub fn valid_skill_asset_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c == '\\' || c.is_control() || c == '\u{2028}' || c == '\u{2029}')
        && name
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

/// The skill-name grammar `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn valid_skill_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.split_first() {
        Some((first, rest)) => {
            (first.is_ascii_lowercase() || first.is_ascii_digit())
                && rest.len() <= 63
                && rest
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
        }
        None => false,
    }
}

/// Proposes new skills into a quarantine; a draft is never active in the process that
/// wrote it.
///
/// # Contract
/// A failure at any step writes nothing; a success leaves a complete file whose
/// location is quarantine-relative (`<name>/SKILL.md`).
#[async_trait]
pub trait SkillDrafter: Send + Sync {
    /// Validates and writes one draft.
    async fn draft(&self, request: SkillDraftRequest) -> Result<DraftReceipt, DraftError>;
}

/// A proposed skill.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillDraftRequest {
    /// Proposed name.
    pub name: String,
    /// Proposed description.
    pub description: String,
    /// Proposed instructions.
    pub body: String,
}

/// A written draft.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftReceipt {
    /// Quarantine-relative location (`<name>/SKILL.md`).
    pub location: String,
    /// Non-fatal notes (truncation, near-duplicates).
    pub warnings: Vec<String>,
}

/// A draft that was not written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DraftError {
    /// The draft breaks a rule; the message says which and how to fix it.
    #[error("invalid skill draft: {0}")]
    Invalid(String),
    /// Writing failed.
    #[error("skill draft could not be stored: {0}")]
    Storage(String),
}
