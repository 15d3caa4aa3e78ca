//! Test doubles: a skill source with injectable faults and lying inventories, a
//! recording drafter, and tool-call helpers.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use engine_core::{Environment, Tool};
use engine_ports::{
    CancellationToken, DraftError, DraftReceipt, SkillAsset, SkillDraftRequest, SkillDrafter, SkillMeta,
    SkillSource, SkillSourceError, ToolCall, ToolResult, valid_skill_asset_name, valid_skill_name,
};

/// The output cap C of these tests.
pub(crate) const C: usize = 25_000;

/// The D10 marker for C.
pub(crate) fn marker() -> String {
    engine_core::truncation_marker(C)
}

/// A meta with a name and a description.
pub(crate) fn meta(name: &str, description: &str) -> SkillMeta {
    SkillMeta {
        name: name.into(),
        description: description.into(),
        ..SkillMeta::default()
    }
}

#[derive(Default)]
struct Skill {
    body: String,
    assets: Vec<(SkillAsset, Vec<u8>)>,
}

/// A skill source whose inventories may lie (advertised sizes, invalid names) and
/// whose methods may fail, counting every call.
#[derive(Default)]
pub(crate) struct FakeSource {
    metas: Vec<SkillMeta>,
    skills: BTreeMap<String, Skill>,
    pub(crate) body_error: Option<SkillSourceError>,
    pub(crate) list_error: Option<SkillSourceError>,
    pub(crate) read_error: Option<SkillSourceError>,
    bodies: AtomicUsize,
    inventories: AtomicUsize,
    reads: AtomicUsize,
}

impl FakeSource {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds a skill.
    pub(crate) fn skill(mut self, meta: SkillMeta, body: &str) -> Self {
        self.skills.insert(
            meta.name.clone(),
            Skill {
                body: body.into(),
                assets: Vec::new(),
            },
        );
        self.metas.push(meta);
        self.metas.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// Adds an asset whose listed size is its length.
    pub(crate) fn asset(self, skill: &str, name: &str, content: impl Into<Vec<u8>>) -> Self {
        let content = content.into();
        let size = content.len() as u64;
        self.asset_sized(skill, name, size, content)
    }

    /// Adds an asset listed with `size`, whatever its content.
    pub(crate) fn asset_sized(
        mut self,
        skill: &str,
        name: &str,
        size: u64,
        content: impl Into<Vec<u8>>,
    ) -> Self {
        let entry = self.skills.get_mut(skill).unwrap();
        entry.assets.push((
            SkillAsset {
                name: name.into(),
                size,
                executable: name.ends_with(".sh"),
            },
            content.into(),
        ));
        entry.assets.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        self
    }

    pub(crate) fn metas(&self) -> Vec<SkillMeta> {
        self.metas.clone()
    }

    pub(crate) fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// Calls of any kind except `list_skills`.
    pub(crate) fn calls(&self) -> usize {
        self.bodies.load(Ordering::SeqCst) + self.inventories.load(Ordering::SeqCst) + self.reads()
    }
}

#[async_trait]
impl SkillSource for FakeSource {
    async fn list_skills(&self) -> Result<Vec<SkillMeta>, SkillSourceError> {
        Ok(self.metas.clone())
    }

    async fn skill_body(&self, name: &str) -> Result<Arc<str>, SkillSourceError> {
        self.bodies.fetch_add(1, Ordering::SeqCst);
        if let Some(error) = &self.body_error {
            return Err(error.clone());
        }
        self.skills
            .get(name)
            .map(|s| Arc::from(s.body.as_str()))
            .ok_or_else(|| SkillSourceError::SkillNotFound { skill: name.into() })
    }

    async fn list_skill_assets(&self, name: &str) -> Result<Vec<SkillAsset>, SkillSourceError> {
        self.inventories.fetch_add(1, Ordering::SeqCst);
        if let Some(error) = &self.list_error {
            return Err(error.clone());
        }
        self.skills
            .get(name)
            .map(|s| s.assets.iter().map(|(a, _)| a.clone()).collect())
            .ok_or_else(|| SkillSourceError::SkillNotFound { skill: name.into() })
    }

    async fn read_skill_asset(&self, skill: &str, asset: &str) -> Result<Vec<u8>, SkillSourceError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if !valid_skill_asset_name(asset) {
            return Err(SkillSourceError::InvalidAssetName { asset: asset.into() });
        }
        if let Some(error) = &self.read_error {
            return Err(error.clone());
        }
        self.skills
            .get(skill)
            .and_then(|s| s.assets.iter().find(|(a, _)| a.name == asset))
            .map(|(_, content)| content.clone())
            .ok_or_else(|| SkillSourceError::AssetNotFound {
                skill: skill.into(),
                asset: asset.into(),
            })
    }
}

/// A drafter that validates the name like the quarantine drafter, records what it
/// "writes" and answers with fixed warnings.
#[derive(Default)]
pub(crate) struct RecordingDrafter {
    pub(crate) written: Mutex<Vec<SkillDraftRequest>>,
    pub(crate) warnings: Vec<String>,
}

#[async_trait]
impl SkillDrafter for RecordingDrafter {
    async fn draft(&self, request: SkillDraftRequest) -> Result<DraftReceipt, DraftError> {
        let name = request.name.trim().to_owned();
        if !valid_skill_name(&name) {
            return Err(DraftError::Invalid(format!(
                "name {name:?} is invalid, for example \"deploy-to-staging\""
            )));
        }
        self.written.lock().unwrap().push(request);
        Ok(DraftReceipt {
            location: format!("{name}/SKILL.md"),
            warnings: self.warnings.clone(),
        })
    }
}

/// An environment with the default cap.
pub(crate) fn env() -> Environment {
    Environment::new("/workspace").unwrap()
}

/// Executes one call of `tool` with raw argument text.
pub(crate) async fn call(tool: &dyn Tool, args: &str) -> ToolResult {
    let name = tool.spec().name().to_owned();
    tool.execute(
        &CancellationToken::new(),
        &ToolCall::new("c1", name, args),
        &env(),
    )
    .await
    .expect("tools answer with results, never harness errors")
}

/// Executes one call with JSON arguments.
pub(crate) async fn call_json(tool: &dyn Tool, args: serde_json::Value) -> ToolResult {
    call(tool, &args.to_string()).await
}
