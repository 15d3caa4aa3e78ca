//! [`LiveCatalog`]: the engine's source of newer catalogs when an MCP server changes
//! its tool list. It re-lists lazily (only lists a `list_changed` notification marked
//! dirty) and re-assembles through [`assemble_catalog`], the one registration path, so
//! the shared engine and every per-session engine see the same refreshed snapshot.

use std::sync::{Arc, Mutex, PoisonError};

use adapter_mcp::McpManager;
use async_trait::async_trait;
use engine_core::{Catalog, CatalogUpdates};

use crate::assembly::{CatalogInputs, assemble_catalog};
use crate::assets::CatalogAssets;

/// Newer catalogs for one engine: the shared one (no client servers) or a session's
/// private one (its client servers).
pub(crate) struct LiveCatalog {
    assets: Arc<CatalogAssets>,
    client: Option<McpManager>,
    state: Mutex<State>,
}

struct State {
    /// The engine-facing generation (0 = the catalog the engine was built with).
    generation: u64,
    /// The MCP snapshot generations that catalog was assembled from.
    global: u64,
    client: u64,
    catalog: Arc<Catalog>,
}

impl LiveCatalog {
    /// Whether an engine over these inputs can see its tools change at all.
    pub(crate) fn needed(assets: &CatalogAssets, client: Option<&McpManager>) -> bool {
        !assets.global.is_empty() || client.is_some_and(|c| !c.is_empty())
    }

    /// Starts at the catalog the engine is built with (`global` = the pinned global
    /// generation it was assembled from).
    pub(crate) fn new(
        assets: Arc<CatalogAssets>,
        client: Option<McpManager>,
        catalog: Arc<Catalog>,
        global: u64,
    ) -> Self {
        let client_generation = client.as_ref().map_or(0, McpManager::tools_generation);
        Self {
            assets,
            client,
            state: Mutex::new(State {
                generation: 0,
                global,
                client: client_generation,
                catalog,
            }),
        }
    }
}

#[async_trait]
impl CatalogUpdates for LiveCatalog {
    async fn newer_than(&self, generation: u64) -> Option<(u64, Arc<Catalog>)> {
        // Lazy re-lists: no I/O unless a server marked a list dirty.
        self.assets.global.refresh().await;
        if let Some(client) = &self.client {
            client.refresh().await;
        }
        let global = self.assets.global.pinned_tools().generation();
        let client = self.client.as_ref().map_or(0, McpManager::tools_generation);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.global != global || state.client != client {
            let assembled = assemble_catalog(
                &self.assets,
                CatalogInputs {
                    client_mcp: self.client.as_ref(),
                    narrate: false,
                    child: None,
                },
            );
            state.generation += 1;
            state.global = assembled.mcp_generation;
            state.client = client;
            state.catalog = assembled.catalog;
            tracing::info!(
                generation = state.generation,
                tools = state.catalog.len(),
                "an MCP server changed its tool list; new runs and turns use the refreshed catalog"
            );
        }
        (state.generation > generation).then(|| (state.generation, Arc::clone(&state.catalog)))
    }
}
