//! [`SkillCommandSource`]: every admitted skill as `/<skill-name>`.

use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    CommandBody, CommandError, CommandInfo, CommandSource, SkillMeta, SkillSource, SkillSourceError,
    truncate_with_ellipsis, valid_command_name, valid_skill_asset_name,
};

use crate::skill_inventory::{one_line, write_inventory};

/// Skills as commands. Lists the admitted skills whose names are valid command
/// names, de-duplicated (first wins) and sorted, each with its skill's description.
///
/// A command's body is the skill body and its `post` the bounded inventory block
/// (no compatibility or advisory line, no path; asset contents are never read, and
/// placeholders inside asset names stay literal because `post` is not substituted).
/// An unadmitted name is not found without consulting the source; a not-found from
/// the source and a blank body are not found too (the raw `/name` passes on); any
/// other source error is an error.
pub struct SkillCommandSource {
    source: Arc<dyn SkillSource>,
    commands: Vec<CommandInfo>,
}

impl SkillCommandSource {
    /// Skill commands for the skills in `metas`, served by `source`.
    pub fn new(source: Arc<dyn SkillSource>, metas: &[SkillMeta]) -> Self {
        let mut commands: Vec<CommandInfo> = Vec::with_capacity(metas.len());
        for meta in metas {
            if valid_command_name(&meta.name) && !commands.iter().any(|c| c.name == meta.name) {
                commands.push(CommandInfo {
                    name: meta.name.clone(),
                    description: one_line(meta.description.trim()),
                });
            }
        }
        commands.sort_by(|a, b| a.name.cmp(&b.name));
        Self { source, commands }
    }

    /// Skill commands for the skills `source` lists now.
    ///
    /// # Errors
    /// The listing's error.
    pub async fn from_source(source: Arc<dyn SkillSource>) -> Result<Self, SkillSourceError> {
        let metas = source.list_skills().await?;
        Ok(Self::new(source, &metas))
    }

    fn admitted(&self, name: &str) -> bool {
        self.commands
            .binary_search_by(|c| c.name.as_str().cmp(name))
            .is_ok()
    }
}

fn failed(name: &str, what: &str, error: &SkillSourceError) -> CommandError {
    CommandError::Expand {
        command: name.to_owned(),
        reason: truncate_with_ellipsis(&format!("{what}: {error}"), 1_000).into_owned(),
    }
}

#[async_trait]
impl CommandSource for SkillCommandSource {
    async fn list_commands(&self) -> Result<Vec<CommandInfo>, CommandError> {
        Ok(self.commands.clone())
    }

    async fn command_body(&self, name: &str) -> Result<Option<CommandBody>, CommandError> {
        if !self.admitted(name) {
            return Ok(None);
        }
        let body = match self.source.skill_body(name).await {
            Ok(body) => body,
            Err(error) if error.is_skill_not_found() => return Ok(None),
            Err(error) => return Err(failed(name, "loading the skill failed", &error)),
        };
        if body.trim().is_empty() {
            return Ok(None);
        }
        let assets = match self.source.list_skill_assets(name).await {
            Ok(assets) => assets,
            Err(error) if error.is_skill_not_found() => return Ok(None),
            Err(error) => return Err(failed(name, "listing the skill's assets failed", &error)),
        };
        if assets.iter().any(|a| !valid_skill_asset_name(&a.name)) {
            return Err(CommandError::Expand {
                command: name.to_owned(),
                reason: "the skill source returned an invalid logical asset name".into(),
            });
        }
        let mut post = String::new();
        if !assets.is_empty() {
            write_inventory(&mut post, &assets);
        }
        Ok(Some(CommandBody {
            body: body.to_string(),
            post,
        }))
    }
}
