//! [`MemorySkillSource`]: an in-memory [`SkillSource`] that counts its calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use crate::skills::{SkillAsset, SkillMeta, SkillSource, SkillSourceError, valid_skill_asset_name};
use crate::testkit::skill_source::FixtureSkill;

/// One skill held by a [`MemorySkillSource`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemorySkill {
    /// Its listing entry (`has_assets` is recomputed from `assets`).
    pub meta: SkillMeta,
    /// Its instructions.
    pub body: String,
    /// Its assets (sorted by the source).
    pub assets: Vec<MemoryAsset>,
}

/// One asset held by a [`MemorySkillSource`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryAsset {
    /// Logical name, listed as given (give valid names for a conforming source).
    pub name: String,
    /// The bytes; the listed size is their length.
    pub content: Vec<u8>,
    /// Listed execute bit.
    pub executable: bool,
}

impl MemorySkill {
    /// A skill with a name, a description and a body, without assets.
    pub fn new(name: &str, description: &str, body: &str) -> Self {
        Self {
            meta: SkillMeta {
                name: name.to_owned(),
                description: description.to_owned(),
                ..SkillMeta::default()
            },
            body: body.to_owned(),
            assets: Vec::new(),
        }
    }

    /// The same skill with one more asset.
    #[must_use]
    pub fn with_asset(mut self, name: &str, content: impl Into<Vec<u8>>) -> Self {
        self.assets.push(MemoryAsset {
            name: name.to_owned(),
            content: content.into(),
            executable: false,
        });
        self
    }
}

/// How often each method of a [`MemorySkillSource`] was called.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceCalls {
    /// `list_skills`.
    pub lists: usize,
    /// `skill_body`.
    pub bodies: usize,
    /// `list_skill_assets`.
    pub inventories: usize,
    /// `read_skill_asset`.
    pub reads: usize,
}

/// An in-memory skill source. It keeps the first skill of each name, sorts skills
/// and assets by name, and follows the [`SkillSource`] contract (it passes
/// [`skill_source::run`](crate::testkit::skill_source::run)) as long as the asset
/// names it is given are valid. Every call is counted ([`MemorySkillSource::calls`]),
/// so tests can assert that something was, or was not, read.
#[derive(Debug, Default)]
pub struct MemorySkillSource {
    skills: Vec<MemorySkill>,
    bodies: Vec<Arc<str>>,
    lists: AtomicUsize,
    body_calls: AtomicUsize,
    inventories: AtomicUsize,
    reads: AtomicUsize,
}

impl MemorySkillSource {
    /// A source holding `skills`.
    pub fn new(skills: impl IntoIterator<Item = MemorySkill>) -> Self {
        let mut kept: Vec<MemorySkill> = Vec::new();
        for mut skill in skills {
            if kept.iter().any(|k| k.meta.name == skill.meta.name) {
                continue;
            }
            skill.assets.sort_by(|a, b| a.name.cmp(&b.name));
            skill.meta.has_assets = !skill.assets.is_empty();
            kept.push(skill);
        }
        kept.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
        let bodies = kept.iter().map(|s| Arc::from(s.body.as_str())).collect();
        Self {
            skills: kept,
            bodies,
            ..Self::default()
        }
    }

    /// A source holding the conformance [`fixture`](crate::testkit::skill_source::fixture)
    /// (or any list of fixture skills).
    pub fn from_fixture(fixture: &[FixtureSkill]) -> Self {
        Self::new(fixture.iter().map(|skill| {
            MemorySkill {
                meta: skill.meta(crate::SkillOrigin::Explicit),
                body: skill.body.clone(),
                assets: skill
                    .assets
                    .iter()
                    .map(|a| MemoryAsset {
                        name: a.name.clone(),
                        content: a.content.clone(),
                        executable: a.executable,
                    })
                    .collect(),
            }
        }))
    }

    /// The call counts so far.
    pub fn calls(&self) -> SourceCalls {
        SourceCalls {
            lists: self.lists.load(Ordering::SeqCst),
            bodies: self.body_calls.load(Ordering::SeqCst),
            inventories: self.inventories.load(Ordering::SeqCst),
            reads: self.reads.load(Ordering::SeqCst),
        }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.skills
            .binary_search_by(|s| s.meta.name.as_str().cmp(name))
            .ok()
    }
}

#[async_trait]
impl SkillSource for MemorySkillSource {
    async fn list_skills(&self) -> Result<Vec<SkillMeta>, SkillSourceError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(self.skills.iter().map(|s| s.meta.clone()).collect())
    }

    async fn skill_body(&self, name: &str) -> Result<Arc<str>, SkillSourceError> {
        self.body_calls.fetch_add(1, Ordering::SeqCst);
        match self.find(name) {
            Some(index) => Ok(Arc::clone(&self.bodies[index])),
            None => Err(SkillSourceError::SkillNotFound {
                skill: name.to_owned(),
            }),
        }
    }

    async fn list_skill_assets(&self, name: &str) -> Result<Vec<SkillAsset>, SkillSourceError> {
        self.inventories.fetch_add(1, Ordering::SeqCst);
        let Some(index) = self.find(name) else {
            return Err(SkillSourceError::SkillNotFound {
                skill: name.to_owned(),
            });
        };
        Ok(self.skills[index]
            .assets
            .iter()
            .map(|a| SkillAsset {
                name: a.name.clone(),
                size: a.content.len() as u64,
                executable: a.executable,
            })
            .collect())
    }

    async fn read_skill_asset(&self, skill: &str, asset: &str) -> Result<Vec<u8>, SkillSourceError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if !valid_skill_asset_name(asset) {
            return Err(SkillSourceError::InvalidAssetName {
                asset: asset.to_owned(),
            });
        }
        let not_found = || SkillSourceError::AssetNotFound {
            skill: skill.to_owned(),
            asset: asset.to_owned(),
        };
        let index = self.find(skill).ok_or_else(not_found)?;
        self.skills[index]
            .assets
            .iter()
            .find(|a| a.name == asset)
            .map(|a| a.content.clone())
            .ok_or_else(not_found)
    }
}
