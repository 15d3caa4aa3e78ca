//! [`Diagnostics`]: operator-facing notes logged through `tracing` and kept as data
//! (D9), so hosts can also show them (`mecated tools --json`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Severity of a [`Diagnostic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Informational.
    Info,
    /// Something was skipped or degraded.
    Warn,
    /// Something failed.
    Error,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Info => "info",
            Self::Warn => "warn",
            Self::Error => "error",
        })
    }
}

/// One operator-facing note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Severity.
    pub level: Level,
    /// The text.
    pub message: String,
}

/// Collects diagnostics: each method emits the `tracing` event and keeps the record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    entries: Vec<Diagnostic>,
}

impl Diagnostics {
    /// An empty collector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Logs at INFO and keeps the note.
    pub fn info(&mut self, message: impl Into<String>) {
        self.note(Level::Info, message.into());
    }

    /// Logs at WARN and keeps the note.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.note(Level::Warn, message.into());
    }

    /// Logs at ERROR and keeps the note.
    pub fn error(&mut self, message: impl Into<String>) {
        self.note(Level::Error, message.into());
    }

    /// Logs `message` at `level` and keeps it.
    fn note(&mut self, level: Level, message: String) {
        match level {
            Level::Info => tracing::info!("{message}"),
            Level::Warn => tracing::warn!("{message}"),
            Level::Error => tracing::error!("{message}"),
        }
        self.entries.push(Diagnostic { level, message });
    }

    /// Keeps notes that were already logged elsewhere.
    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.entries.extend(other);
    }

    /// Every note, in order.
    pub fn entries(&self) -> &[Diagnostic] {
        &self.entries
    }

    /// Whether nothing was noted.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes the notes out.
    pub fn into_entries(self) -> Vec<Diagnostic> {
        self.entries
    }
}
