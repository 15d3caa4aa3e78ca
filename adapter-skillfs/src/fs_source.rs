//! [`FsSource`]: the filesystem [`SkillSource`], built once from discovery.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    Diagnostic, Diagnostics, SkillAsset, SkillMeta, SkillSource, SkillSourceError, valid_skill_asset_name,
};

use crate::confined::{ReadFailure, read_confined};
use crate::dir_source::DirSource;
use crate::discovery::{Discover, DiscoveryFailure, SkipDiagnostic};
use crate::inventory::{InventoryLimits, list_assets};
use crate::multi_source::MultiSource;
use crate::skill_md::DEFAULT_OUTPUT_CAP;
use crate::tiers::{HostEnv, SkillsOptions, TierDir, resolve_skill_dirs};

/// How an [`FsSource`] bounds what it serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsSourceConfig {
    /// The output cap C (D10): larger assets are `TooLarge`; longer bodies get a note.
    pub output_cap: usize,
    /// Bounds on each skill's asset inventory.
    pub inventory: InventoryLimits,
}

impl Default for FsSourceConfig {
    fn default() -> Self {
        Self {
            output_cap: DEFAULT_OUTPUT_CAP,
            inventory: InventoryLimits::default(),
        }
    }
}

/// The filesystem skill source: a snapshot of metas and bodies taken once, with
/// lazy, confined asset access.
///
/// Built once ([`FsSource::build`] or [`load_skills`]); it never rescans or watches, so
/// edits take effect at the next start. Each skill's canonical directory stays
/// private: no error text, listing or result names a path. Asset inventories are
/// walked again on every call; reads open every component without following
/// symlinks and never return more than the output cap. The lazy operations run their
/// blocking file I/O on Tokio's blocking pool, so they need a Tokio runtime.
#[derive(Debug)]
pub struct FsSource {
    skills: Vec<Skill>,
    metas: Vec<SkillMeta>,
    config: FsSourceConfig,
}

#[derive(Debug)]
struct Skill {
    body: Arc<str>,
    dir: Arc<PathBuf>,
}

/// A built [`FsSource`] and the diagnostics of its construction.
#[derive(Debug)]
pub struct FsBuild {
    /// The source.
    pub source: FsSource,
    /// Skipped skills and notes, in discovery order.
    pub diagnostics: Vec<SkipDiagnostic>,
}

impl FsSource {
    /// Builds the snapshot from `discovery` (usually a [`MultiSource`] of
    /// [`DirSource`]s): every kept skill's directory is canonicalized and its
    /// inventory listed once to set `has_assets`; a skill whose inventory fails is
    /// skipped with a diagnostic and the others survive. Does not log.
    ///
    /// # Errors
    /// The discovery's fatal failure (no source is built).
    pub fn build(discovery: &dyn Discover, config: FsSourceConfig) -> Result<FsBuild, DiscoveryFailure> {
        let found = discovery.discover()?;
        let mut diagnostics = found.diagnostics;
        let mut skills = Vec::with_capacity(found.skills.len());
        let mut metas = Vec::with_capacity(found.skills.len());
        for mut skill in found.skills {
            let dir = match std::fs::canonicalize(&skill.dir) {
                Ok(dir) => dir,
                Err(error) => {
                    diagnostics.push(SkipDiagnostic::new(
                        &skill.dir,
                        format!(
                            "skill {:?} skipped: its directory cannot be resolved: {}",
                            skill.meta.name,
                            error.kind()
                        ),
                    ));
                    continue;
                }
            };
            match list_assets(&dir, &skill.meta.name, config.inventory) {
                Ok(assets) => skill.meta.has_assets = !assets.is_empty(),
                Err(error) => {
                    diagnostics.push(SkipDiagnostic::new(&skill.dir, format!("skill skipped: {error}")));
                    continue;
                }
            }
            metas.push(skill.meta);
            skills.push(Skill {
                body: skill.body,
                dir: Arc::new(dir),
            });
        }
        Ok(FsBuild {
            source: Self {
                skills,
                metas,
                config,
            },
            diagnostics,
        })
    }

    /// The snapshot's metas, sorted by name (what `list_skills` returns).
    pub fn metas(&self) -> &[SkillMeta] {
        &self.metas
    }

    /// Whether no skill was kept.
    pub fn is_empty(&self) -> bool {
        self.metas.is_empty()
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.metas.binary_search_by(|m| m.name.as_str().cmp(name)).ok()
    }
}

#[async_trait]
impl SkillSource for FsSource {
    async fn list_skills(&self) -> Result<Vec<SkillMeta>, SkillSourceError> {
        Ok(self.metas.clone())
    }

    async fn skill_body(&self, name: &str) -> Result<Arc<str>, SkillSourceError> {
        self.find(name)
            .map(|index| Arc::clone(&self.skills[index].body))
            .ok_or_else(|| SkillSourceError::SkillNotFound {
                skill: name.to_owned(),
            })
    }

    async fn list_skill_assets(&self, name: &str) -> Result<Vec<SkillAsset>, SkillSourceError> {
        let Some(index) = self.find(name) else {
            return Err(SkillSourceError::SkillNotFound {
                skill: name.to_owned(),
            });
        };
        let dir = Arc::clone(&self.skills[index].dir);
        let skill = name.to_owned();
        let limits = self.config.inventory;
        blocking(name, None, move || list_assets(&dir, &skill, limits)).await
    }

    async fn read_skill_asset(&self, skill: &str, asset: &str) -> Result<Vec<u8>, SkillSourceError> {
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
        if asset == "SKILL.md" {
            return Err(not_found());
        }
        let dir = Arc::clone(&self.skills[index].dir);
        let limit = self.config.output_cap as u64;
        let (skill_name, asset_name) = (skill.to_owned(), asset.to_owned());
        blocking(skill, Some(asset), move || {
            read_confined(&dir, &asset_name, limit).map_err(|failure| match failure {
                ReadFailure::NotFound => SkillSourceError::AssetNotFound {
                    skill: skill_name,
                    asset: asset_name,
                },
                ReadFailure::TooLarge { size } => SkillSourceError::TooLarge {
                    skill: skill_name,
                    asset: asset_name,
                    size,
                    limit,
                },
                ReadFailure::Io(kind) => SkillSourceError::Backend {
                    message: format!("reading asset {asset_name:?} of skill {skill_name:?} failed: {kind}"),
                },
            })
        })
        .await
    }
}

/// Runs blocking filesystem work off the async workers.
async fn blocking<T: Send + 'static>(
    skill: &str,
    asset: Option<&str>,
    work: impl FnOnce() -> Result<T, SkillSourceError> + Send + 'static,
) -> Result<T, SkillSourceError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(_) => Err(SkillSourceError::Backend {
            message: match asset {
                Some(asset) => format!("reading asset {asset:?} of skill {skill:?} was interrupted"),
                None => format!("listing the assets of skill {skill:?} was interrupted"),
            },
        }),
    }
}

/// What [`load_skills`] produced: the source (absent after a fatal discovery error),
/// the directories it was built from, and every diagnostic, already logged.
#[derive(Debug)]
pub struct SkillsLoad {
    /// The source; `None` when discovery failed (skills are then disabled). It may
    /// hold zero skills: register no `Skill` tool and no skill commands then.
    pub source: Option<Arc<FsSource>>,
    /// The resolved directories, highest precedence first.
    pub dirs: Vec<TierDir>,
    /// Every diagnostic, each already logged at WARN through `tracing` (D9).
    pub diagnostics: Vec<Diagnostic>,
}

/// The composition root's one call: resolves the tiers (trust gate included),
/// discovers, builds the [`FsSource`] once and logs each diagnostic at WARN. A
/// withheld project directory that exists gets a WARN; a fatal discovery error
/// becomes a WARN saying skills (tool and commands) are disabled.
pub fn load_skills(options: &SkillsOptions, env: &HostEnv, config: FsSourceConfig) -> SkillsLoad {
    let resolved = resolve_skill_dirs(options, env);
    let mut diagnostics = Diagnostics::new();
    for dir in resolved.withheld.iter().filter(|dir| dir.exists()) {
        diagnostics.warn(format!(
            "project skill directory {} withheld: the workspace is not trusted (pass --trust-project to use it)",
            dir.display()
        ));
    }
    let sources = MultiSource::new(
        resolved
            .dirs
            .iter()
            .map(|dir| {
                Box::new(
                    DirSource::new(&dir.path)
                        .with_tier(dir.tier)
                        .with_output_cap(config.output_cap),
                ) as Box<dyn Discover>
            })
            .collect(),
    );
    let source = match FsSource::build(&sources, config) {
        Ok(built) => {
            for diagnostic in &built.diagnostics {
                diagnostics.warn(diagnostic.to_string());
            }
            Some(Arc::new(built.source))
        }
        Err(failure) => {
            for diagnostic in &failure.diagnostics {
                diagnostics.warn(diagnostic.to_string());
            }
            diagnostics.warn(format!(
                "skills (tool and commands) are disabled: {}",
                failure.error
            ));
            None
        }
    };
    SkillsLoad {
        source,
        dirs: resolved.dirs,
        diagnostics: diagnostics.into_entries(),
    }
}
