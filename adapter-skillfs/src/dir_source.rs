//! [`DirSource`]: the skills of one directory, `<dir>/<name>/SKILL.md`.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine_ports::{SkillMeta, SkillOrigin};

use crate::confined::{MAX_DEFINITION_FILE_BYTES, read_definition_file};
use crate::discovery::{
    Discover, DiscoveredSkill, Discovery, DiscoveryError, DiscoveryFailure, SkipDiagnostic,
};
use crate::skill_md::{DEFAULT_OUTPUT_CAP, ParsedSkill, SkillFileError, parse_skill_md};

/// The skills of one directory: exactly one level deep, `<dir>/<name>/SKILL.md`.
///
/// - The path is trimmed; an empty or missing directory gives no skills and no error.
///   Any other read error is fatal and names the directory.
/// - Entries are visited in byte order; stray files and subdirectories without
///   `SKILL.md` are ignored silently. Symlinked skill directories are not followed
///   (WARN diagnostic).
/// - `SKILL.md` is read without following a symlink at its name, without blocking on
///   a FIFO, only when it is a regular file of at most
///   [`MAX_DEFINITION_FILE_BYTES`](crate::MAX_DEFINITION_FILE_BYTES); otherwise the
///   skill is skipped with a diagnostic saying why.
/// - A skill whose frontmatter `name` differs from its directory name is skipped.
#[derive(Clone, Debug)]
pub struct DirSource {
    dir: PathBuf,
    tier: SkillOrigin,
    output_cap: usize,
}

impl DirSource {
    /// The skills of `dir`, with tier `explicit`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            tier: SkillOrigin::Explicit,
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }

    /// The same source with another tier (the `origin` of its skills).
    #[must_use]
    pub fn with_tier(mut self, tier: SkillOrigin) -> Self {
        self.tier = tier;
        self
    }

    /// The same source with another output cap C (bodies over it get a note).
    #[must_use]
    pub fn with_output_cap(mut self, output_cap: usize) -> Self {
        self.output_cap = output_cap;
        self
    }

    /// The configured directory, trimmed.
    pub fn dir(&self) -> PathBuf {
        trimmed(&self.dir)
    }

    fn visit(&self, skill_dir: &Path, name: &OsString, out: &mut Discovery) {
        let manifest = skill_dir.join("SKILL.md");
        match std::fs::symlink_metadata(&manifest) {
            Err(error) if error.kind() == ErrorKind::NotFound => return,
            _ => {}
        }
        let Some(dir_name) = name.to_str() else {
            out.diagnostics.push(SkipDiagnostic::new(
                skill_dir,
                "skill skipped: its directory name is not valid UTF-8",
            ));
            return;
        };
        let parsed = read_definition_file(&manifest, MAX_DEFINITION_FILE_BYTES)
            .map_err(SkillFileError::from)
            .and_then(|bytes| parse_skill_md(&bytes, Some(dir_name), self.output_cap));
        match parsed {
            Err(error) => out
                .diagnostics
                .push(SkipDiagnostic::new(&manifest, format!("skill skipped: {error}"))),
            Ok(parsed) => {
                for note in &parsed.notes {
                    out.diagnostics
                        .push(SkipDiagnostic::new(&manifest, note.to_string()));
                }
                out.skills.push(self.discovered(parsed, skill_dir.to_path_buf()));
            }
        }
    }

    fn discovered(&self, parsed: ParsedSkill, dir: PathBuf) -> DiscoveredSkill {
        DiscoveredSkill {
            meta: SkillMeta {
                name: parsed.name,
                description: parsed.description,
                origin: self.tier,
                has_assets: false,
                license: parsed.license,
                compatibility: parsed.compatibility,
                metadata: parsed.metadata,
                allowed_tools: parsed.allowed_tools,
            },
            body: Arc::from(parsed.body),
            dir,
        }
    }
}

impl Discover for DirSource {
    fn discover(&self) -> Result<Discovery, DiscoveryFailure> {
        let dir = self.dir();
        if dir.as_os_str().is_empty() {
            return Ok(Discovery::default());
        }
        let fatal = |kind| {
            DiscoveryFailure::from(DiscoveryError::UnreadableDir {
                dir: dir.clone(),
                kind,
            })
        };
        let reader = match std::fs::read_dir(&dir) {
            Ok(reader) => reader,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Discovery::default()),
            Err(error) => return Err(fatal(error.kind())),
        };
        let mut entries = Vec::new();
        for entry in reader {
            let entry = entry.map_err(|e| fatal(e.kind()))?;
            let file_type = entry.file_type().map_err(|e| fatal(e.kind()))?;
            entries.push((entry.file_name(), file_type));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));

        let mut out = Discovery::default();
        for (name, file_type) in entries {
            let path = dir.join(&name);
            if file_type.is_symlink() {
                if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                    out.diagnostics.push(SkipDiagnostic::new(
                        &path,
                        "ignored: symlinked skill directories are not followed",
                    ));
                }
            } else if file_type.is_dir() {
                self.visit(&path, &name, &mut out);
            }
        }
        out.skills.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        Ok(out)
    }
}

/// `dir` with surrounding whitespace removed (when it is UTF-8).
fn trimmed(dir: &Path) -> PathBuf {
    match dir.to_str() {
        Some(text) => PathBuf::from(text.trim()),
        None => dir.to_path_buf(),
    }
}
