//! What discovery yields: [`Discover`], [`Discovery`], [`DiscoveredSkill`], the
//! operator-facing [`SkipDiagnostic`] and the fatal [`DiscoveryError`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use engine_ports::{Diagnostic, Level, SkillMeta};

/// Something that finds skills: one directory ([`DirSource`](crate::DirSource)) or an
/// ordered composition ([`MultiSource`](crate::MultiSource)).
///
/// # Contract
/// Skills come back sorted by name and unique; a failure that makes the whole source
/// unusable is a [`DiscoveryFailure`] carrying the diagnostics gathered so far.
pub trait Discover: Send + Sync {
    /// Finds the skills.
    ///
    /// # Errors
    /// A fatal failure of the source.
    fn discover(&self) -> Result<Discovery, DiscoveryFailure>;
}

/// The skills a discovery kept, and what it noted about the rest.
#[derive(Clone, Debug, Default)]
pub struct Discovery {
    /// Kept skills, sorted by name.
    pub skills: Vec<DiscoveredSkill>,
    /// Skipped skills and notes on kept ones, in discovery order.
    pub diagnostics: Vec<SkipDiagnostic>,
}

/// One skill found on disk.
#[derive(Clone, Debug)]
pub struct DiscoveredSkill {
    /// Its listing entry (`origin` is the source's tier; `has_assets` is set later,
    /// by [`FsSource`](crate::FsSource)).
    pub meta: SkillMeta,
    /// The trimmed body.
    pub body: Arc<str>,
    /// The skill directory (operator-facing only; never shown to the model).
    pub dir: PathBuf,
}

/// An operator diagnostic about one location: a skipped skill, a note on a kept one,
/// an ignored entry. Logged at WARN by whoever surfaces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipDiagnostic {
    /// The location (a skill directory or its `SKILL.md`).
    pub path: PathBuf,
    /// What happened and why.
    pub reason: String,
}

impl SkipDiagnostic {
    /// A diagnostic at `path`.
    pub fn new(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The WARN-level [`Diagnostic`] shown by `mecated tools --json` and
    /// `mecated skills list`.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic {
            level: Level::Warn,
            message: self.to_string(),
        }
    }
}

impl fmt::Display for SkipDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// A failure that makes a whole source unusable. It names the configured location
/// (an operator-facing startup error, never shown to the model).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The skills directory exists but cannot be listed (permission denied, not a
    /// directory, …).
    #[error("skills directory {} cannot be read: {kind}", dir.display())]
    UnreadableDir {
        /// The configured directory.
        dir: PathBuf,
        /// The I/O error kind.
        kind: std::io::ErrorKind,
    },
    /// Any other failure of a custom source.
    #[error("skill discovery failed: {0}")]
    Other(String),
}

/// A fatal discovery error together with the diagnostics gathered before it.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct DiscoveryFailure {
    /// What failed.
    pub error: DiscoveryError,
    /// Diagnostics of the sources consulted before the failure.
    pub diagnostics: Vec<SkipDiagnostic>,
}

impl From<DiscoveryError> for DiscoveryFailure {
    fn from(error: DiscoveryError) -> Self {
        Self {
            error,
            diagnostics: Vec::new(),
        }
    }
}
