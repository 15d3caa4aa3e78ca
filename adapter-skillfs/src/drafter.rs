//! [`QuarantineDrafter`]: the [`SkillDrafter`] that writes model-proposed skills into
//! a quarantine directory, never into an active one.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    Clock, DraftError, DraftReceipt, SkillDraftRequest, SkillDrafter, SkillMeta, truncate_with_ellipsis,
    valid_skill_name,
};

use crate::fs_util::{create_private_dir, create_private_dir_all};
use crate::injection;
use crate::similarity::{NEAR_DUPLICATE_THRESHOLD, bigrams, jaccard, normalise};
use crate::skill_md::{DEFAULT_OUTPUT_CAP, DESCRIPTION_CAP, SKILL_NAME_GRAMMAR};

/// Writes drafts to `<quarantine>/<name>/SKILL.md`, atomically, with provenance
/// (`origin: model`, `drafted_at`). A draft is never active in the process that
/// wrote it; an operator promotes it ([`promote`](crate::promote)).
///
/// The steps run in order and a failure at any of them writes nothing: name, then
/// description and body checks; the injection scan; caps (warnings); near-duplicate
/// detection against the active skills (warnings); confinement to the quarantine;
/// the atomic write (temp file in the same directory, fsync, rename; directories
/// 0700, files 0600). Error texts and receipts never show an absolute path; the
/// written path goes to a `tracing` INFO event.
pub struct QuarantineDrafter {
    quarantine: PathBuf,
    active: Vec<ActiveSkill>,
    clock: Arc<dyn Clock>,
    output_cap: usize,
}

struct ActiveSkill {
    name: String,
    bigrams: HashSet<(char, char)>,
}

impl QuarantineDrafter {
    /// A drafter over `quarantine` that compares drafts with the `active` skills.
    pub fn new(quarantine: impl Into<PathBuf>, active: &[SkillMeta], clock: Arc<dyn Clock>) -> Self {
        Self {
            quarantine: quarantine.into(),
            active: active
                .iter()
                .map(|meta| ActiveSkill {
                    name: meta.name.clone(),
                    bigrams: bigrams(&normalise(&meta.description)),
                })
                .collect(),
            clock,
            output_cap: DEFAULT_OUTPUT_CAP,
        }
    }

    /// The same drafter with another output cap C (a longer body gets a warning).
    #[must_use]
    pub fn with_output_cap(mut self, output_cap: usize) -> Self {
        self.output_cap = output_cap;
        self
    }

    fn prepare(
        &self,
        request: &SkillDraftRequest,
    ) -> Result<(String, String, String, Vec<String>), DraftError> {
        let name = request.name.trim();
        if name.is_empty() {
            return Err(DraftError::Invalid(
                "`name` is required, for example \"deploy-to-staging\"".into(),
            ));
        }
        if !valid_skill_name(name) {
            return Err(DraftError::Invalid(format!(
                "name {:?} is invalid: it must match {SKILL_NAME_GRAMMAR}, for example \"deploy-to-staging\"",
                truncate_with_ellipsis(name, 128)
            )));
        }
        let description = request.description.trim();
        if description.is_empty() {
            return Err(DraftError::Invalid("`description` is required".into()));
        }
        let body = request.body.trim();
        if body.is_empty() {
            return Err(DraftError::Invalid("`body` is required".into()));
        }
        if let Some((field, found)) = injection::scan(description, body) {
            return Err(DraftError::Invalid(format!(
                "{field} contains {:?}: a skill must be procedural guidance, not an override of the agent's instructions",
                truncate_with_ellipsis(&found, 200)
            )));
        }
        let mut warnings = Vec::new();
        if description.len() > DESCRIPTION_CAP {
            warnings.push(format!(
                "description is {} bytes, over the {DESCRIPTION_CAP}-byte cap; truncated",
                description.len()
            ));
        }
        let description = truncate_with_ellipsis(description, DESCRIPTION_CAP).into_owned();
        if body.len() > self.output_cap {
            warnings.push(format!(
                "body is {} bytes, which exceeds the {}-byte output cap; it was written in full and activation will truncate it",
                body.len(),
                self.output_cap
            ));
        }
        let draft = bigrams(&normalise(&description));
        let mut near: Vec<&str> = self
            .active
            .iter()
            .filter(|active| jaccard(&draft, &active.bigrams) >= NEAR_DUPLICATE_THRESHOLD)
            .map(|active| active.name.as_str())
            .collect();
        near.sort_unstable();
        if !near.is_empty() {
            warnings.push(format!(
                "near-duplicate of active skills: {} (consider improving one of them instead)",
                near.join(", ")
            ));
        }
        if self.active.iter().any(|active| active.name == name) {
            warnings.push(format!(
                "an active skill is already named {name:?}; promoting this draft needs that one moved aside"
            ));
        }
        Ok((name.to_owned(), description, body.to_owned(), warnings))
    }
}

#[async_trait]
impl SkillDrafter for QuarantineDrafter {
    async fn draft(&self, request: SkillDraftRequest) -> Result<DraftReceipt, DraftError> {
        let (name, description, body, warnings) = self.prepare(&request)?;
        let text = draft_file(&name, &description, &body, self.clock.now());
        let quarantine = self.quarantine.clone();
        let target = name.clone();
        let written = tokio::task::spawn_blocking(move || write_draft(&quarantine, &target, &text))
            .await
            .map_err(|_| DraftError::Storage("writing the draft was interrupted".into()))??;
        tracing::info!(skill = %name, path = %written.display(), "skill draft written to the quarantine");
        Ok(DraftReceipt {
            location: format!("{name}/SKILL.md"),
            warnings,
        })
    }
}

/// The draft file: frontmatter with `name` and `description` as YAML double-quoted
/// strings, `origin: model` and `drafted_at` (UTC, whole seconds), then an empty line
/// and the body plus one `\n`.
pub fn draft_file(name: &str, description: &str, body: &str, drafted_at: std::time::SystemTime) -> String {
    let mut out = String::with_capacity(body.len() + description.len() + 128);
    out.push_str("---\nname: ");
    push_double_quoted(&mut out, name);
    out.push_str("\ndescription: ");
    push_double_quoted(&mut out, description);
    out.push_str("\norigin: model\ndrafted_at: ");
    out.push_str(&humantime::format_rfc3339_seconds(drafted_at).to_string());
    out.push_str("\n---\n\n");
    out.push_str(body);
    out.push('\n');
    out
}

/// Appends `text` as a YAML double-quoted scalar, escaping `\`, `"` and every control
/// character.
fn push_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Steps 6 and 7: confinement, then the atomic write. Returns the written path.
fn write_draft(quarantine: &Path, name: &str, text: &str) -> Result<PathBuf, DraftError> {
    let storage =
        |what: &str, error: std::io::Error| DraftError::Storage(format!("{what}: {}", error.kind()));
    create_private_dir_all(quarantine).map_err(|e| storage("the quarantine cannot be created", e))?;
    let root =
        std::fs::canonicalize(quarantine).map_err(|e| storage("the quarantine cannot be resolved", e))?;
    let dir = root.join(name);
    match std::fs::symlink_metadata(&dir) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => {
            return Err(DraftError::Storage(format!(
                "{name:?} in the quarantine is not a plain directory"
            )));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            create_private_dir(&dir).map_err(|e| storage("the draft directory cannot be created", e))?;
        }
        Err(error) => return Err(storage("the draft directory cannot be inspected", error)),
    }
    let resolved =
        std::fs::canonicalize(&dir).map_err(|e| storage("the draft directory cannot be resolved", e))?;
    if resolved.parent() != Some(root.as_path()) {
        return Err(DraftError::Storage(
            "the draft location resolves outside the quarantine".into(),
        ));
    }
    let mut temp = tempfile::Builder::new()
        .prefix(".SKILL.md.")
        .suffix(".tmp")
        .tempfile_in(&resolved)
        .map_err(|e| storage("the draft cannot be written", e))?;
    temp.write_all(text.as_bytes())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| storage("the draft cannot be written", e))?;
    crate::fs_util::make_private_file(temp.as_file())
        .map_err(|e| storage("the draft cannot be written", e))?;
    let target = resolved.join("SKILL.md");
    temp.persist(&target)
        .map_err(|e| storage("the draft cannot be written", e.error))?;
    crate::fs_util::sync_dir(&resolved);
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_quotes_and_backslashes_are_escaped() {
        let mut out = String::new();
        push_double_quoted(&mut out, "a\"b\\c\nd\u{85}e");
        assert_eq!(out, "\"a\\\"b\\\\c\\u000Ad\\u0085e\"");
    }
}
