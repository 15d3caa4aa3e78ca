//! [`AppChildren`]: the composition root's [`ChildEngines`] — child catalogs come
//! from [`assemble_catalog`] with the child's profile, child engines from the same
//! template as every other engine.

use std::collections::HashSet;
use std::sync::Arc;

use adapter_mcp::McpManager;
use engine_core::{AgentDefinition, ChildEngines, ChildError, ChildSpec, DelegationSettings, Engine};
use engine_ports::WorkspaceForker;

use crate::assembly::{CatalogInputs, assemble_catalog};
use crate::assets::CatalogAssets;
use crate::engine_template::EngineTemplate;

/// Child engines of one parent engine: the shared engine's (no client servers) or a
/// session's private engine's (its client servers, whose tools its children may use
/// as the profile allows).
#[derive(Clone)]
pub(crate) struct AppChildren {
    assets: Arc<CatalogAssets>,
    client: Option<McpManager>,
    template: EngineTemplate,
    agents: Arc<[AgentDefinition]>,
    settings: Arc<DelegationSettings>,
    forker: Arc<dyn WorkspaceForker>,
}

impl AppChildren {
    /// Children over `assets`, built from `template` (whose system prompt is the
    /// parent's).
    pub(crate) fn new(
        assets: Arc<CatalogAssets>,
        template: EngineTemplate,
        agents: Vec<AgentDefinition>,
        settings: DelegationSettings,
        forker: Arc<dyn WorkspaceForker>,
    ) -> Self {
        Self {
            assets,
            client: None,
            template,
            agents: agents.into(),
            settings: Arc::new(settings),
            forker,
        }
    }

    /// The assets child catalogs are assembled from (every catalog's).
    pub(crate) fn assets(&self) -> &Arc<CatalogAssets> {
        &self.assets
    }

    /// The same children for a parent that has these client MCP servers.
    pub(crate) fn with_client(&self, client: Option<McpManager>) -> Self {
        Self {
            client,
            ..self.clone()
        }
    }
}

impl ChildEngines for AppChildren {
    fn engine(&self, spec: &ChildSpec) -> Result<Engine, ChildError> {
        let assembled = assemble_catalog(
            &self.assets,
            CatalogInputs {
                client_mcp: self.client.as_ref(),
                narrate: false,
                child: Some(spec),
            },
        );
        if let Some(conflict) = assembled.conflicts.first() {
            return Err(ChildError::Catalog(format!(
                "two built-in families register {:?}",
                conflict.name
            )));
        }
        let own: HashSet<String> = spec
            .extra_tools
            .iter()
            .map(|tool| tool.spec().name().to_owned())
            .collect();
        if let Some(shadowed) = assembled.skipped.iter().find(|s| own.contains(&s.name)) {
            return Err(ChildError::Catalog(format!(
                "the child's own tool {:?} is shadowed by another tool of that name",
                shadowed.name
            )));
        }
        self.template.child_engine(assembled.catalog, spec)
    }

    fn agents(&self) -> &[AgentDefinition] {
        &self.agents
    }

    fn settings(&self) -> &DelegationSettings {
        &self.settings
    }

    fn forker(&self) -> Option<Arc<dyn WorkspaceForker>> {
        Some(Arc::clone(&self.forker))
    }
}
