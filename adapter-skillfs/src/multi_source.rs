//! [`MultiSource`]: an ordered composition of sources, earlier sources winning.

use std::collections::BTreeMap;

use crate::discovery::{Discover, DiscoveredSkill, Discovery, DiscoveryFailure, SkipDiagnostic};

/// Sources in precedence order, highest first. Skills come back sorted by name with
/// the diagnostics of every source in source order. On a name collision the earlier
/// source wins and the later skill is dropped with a diagnostic at its own path that
/// names where the kept one lives. A fatal error from any source aborts the whole
/// composition: no skills, that error, and the diagnostics gathered so far.
#[derive(Default)]
pub struct MultiSource {
    sources: Vec<Box<dyn Discover>>,
}

impl MultiSource {
    /// A composition of `sources`, highest precedence first.
    pub fn new(sources: Vec<Box<dyn Discover>>) -> Self {
        Self { sources }
    }

    /// Appends a source of lower precedence than every source so far.
    pub fn push(&mut self, source: Box<dyn Discover>) {
        self.sources.push(source);
    }

    /// How many sources it composes.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether it composes no source.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

impl Discover for MultiSource {
    fn discover(&self) -> Result<Discovery, DiscoveryFailure> {
        let mut kept: BTreeMap<String, DiscoveredSkill> = BTreeMap::new();
        let mut diagnostics: Vec<SkipDiagnostic> = Vec::new();
        for source in &self.sources {
            let found = match source.discover() {
                Ok(found) => found,
                Err(mut failure) => {
                    diagnostics.append(&mut failure.diagnostics);
                    return Err(DiscoveryFailure {
                        error: failure.error,
                        diagnostics,
                    });
                }
            };
            diagnostics.extend(found.diagnostics);
            for skill in found.skills {
                match kept.get(&skill.meta.name) {
                    Some(winner) => diagnostics.push(SkipDiagnostic::new(
                        &skill.dir,
                        format!(
                            "skill {:?} skipped: shadowed by a higher-precedence source; the kept skill lives at {}",
                            skill.meta.name,
                            winner.dir.display()
                        ),
                    )),
                    None => {
                        kept.insert(skill.meta.name.clone(), skill);
                    }
                }
            }
        }
        Ok(Discovery {
            skills: kept.into_values().collect(),
            diagnostics,
        })
    }
}
