//! [`Built`]: what one [`build`](crate::build) composed — it owns the server-global
//! MCP manager, the store, the shared engine and the factory, and closes them in order.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use adapter_fstools::FsForker;
use adapter_llm::ModelPrices;
use adapter_mcp::McpManager;
use engine_core::{Catalog, Engine};
use engine_ports::{CommandExpander, PermissionMode};

use crate::assembly::FamilyMap;
use crate::assets::CatalogAssets;
use crate::error::CloseError;
use crate::factory::SessionEngineFactory;
use crate::global_mcp::GlobalMcp;
use crate::host::AppHost;
use crate::report::{BuildReport, tool_entries};
use crate::store::AppStore;
use engine_core::host::SessionHost;
use engine_core::host::ToolEntry;

/// Everything one [`build`](crate::build) composed. It owns the server-global MCP
/// manager (the only handle that closes it), the store, the shared engine and the
/// session factory; [`Built::close`] ends them in order.
pub struct Built {
    pub(crate) workspace: PathBuf,
    pub(crate) model: String,
    /// The models a session may choose, `model` first.
    pub(crate) models: Vec<String>,
    pub(crate) prices: Arc<ModelPrices>,
    pub(crate) assets: Arc<CatalogAssets>,
    pub(crate) shared_catalog: Arc<Catalog>,
    pub(crate) shared_families: Arc<FamilyMap>,
    pub(crate) shared_engine: Arc<Engine>,
    pub(crate) factory: SessionEngineFactory,
    pub(crate) commands: Arc<dyn CommandExpander>,
    pub(crate) report: BuildReport,
    pub(crate) store: AppStore,
    pub(crate) global: GlobalMcp,
    pub(crate) global_manager: McpManager,
    /// Makes the workspace copies of delegation (its unpreserved copies go at close).
    pub(crate) forker: FsForker,
    pub(crate) closed: AtomicBool,
    pub(crate) policy: Arc<adapter_policy::Policy>,
    /// Spans and metrics, when the configuration asks for them.
    pub(crate) telemetry: Option<adapter_telemetry::Telemetry>,
}

/// How long closing waits for the last spans and metrics to be exported.
pub const TELEMETRY_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

impl Built {
    /// The shared catalog (every session without client servers uses it).
    pub fn shared_catalog(&self) -> &Arc<Catalog> {
        &self.shared_catalog
    }

    /// The operator's policy: the rules and hooks of the settings files read.
    pub fn policy(&self) -> &Arc<adapter_policy::Policy> {
        &self.policy
    }

    /// The shared engine.
    pub fn shared_engine(&self) -> &Arc<Engine> {
        &self.shared_engine
    }

    /// The per-session engine factory.
    pub fn factory(&self) -> &SessionEngineFactory {
        &self.factory
    }

    /// What the build did (tools, skipped, MCP servers, skills, diagnostics).
    pub fn report(&self) -> &BuildReport {
        &self.report
    }

    /// The store every engine writes to.
    pub fn store(&self) -> &AppStore {
        &self.store
    }

    /// The assets every catalog of this process is assembled from.
    pub fn assets(&self) -> &Arc<CatalogAssets> {
        &self.assets
    }

    /// The server-global MCP servers, without the power to close them.
    pub fn global_mcp(&self) -> &GlobalMcp {
        &self.global
    }

    /// The slash-command chain (its `list` is the command palette).
    pub fn commands(&self) -> &Arc<dyn CommandExpander> {
        &self.commands
    }

    /// The canonical workspace root.
    pub fn workspace_root(&self) -> &Path {
        &self.workspace
    }

    /// The model name the engines send for a session that chose none.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The models a session may choose: [`model`](Self::model), then `--models`.
    pub fn models(&self) -> &[String] {
        &self.models
    }

    /// What models cost (the cost estimates of runs and sessions).
    pub fn prices(&self) -> &Arc<ModelPrices> {
        &self.prices
    }

    /// The shared catalog's tools available in `mode`, sorted, with their families
    /// (`ToolSearch` included with progressive tools).
    pub fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        tool_entries(
            &self.shared_catalog,
            &self.shared_families,
            mode,
            self.shared_engine.disclosure_for(&self.shared_catalog),
        )
    }

    /// The telemetry of this build, when the configuration asks for any.
    pub fn telemetry(&self) -> Option<&adapter_telemetry::Telemetry> {
        self.telemetry.as_ref()
    }

    /// Renders the metrics in the Prometheus text format (`serve`'s `/metrics`);
    /// `None` when the build keeps none (`TelemetryConfig::prometheus` off, or
    /// `OTEL_SDK_DISABLED`).
    pub fn metrics_text(&self) -> Option<impl Fn() -> String + Send + Sync + 'static> {
        let telemetry = self.telemetry.clone().filter(|t| t.keeps_prometheus())?;
        Some(move || telemetry.prometheus_text().unwrap_or_default())
    }

    /// The host port over this build, for the faces (ACP, HTTP): the factory, the
    /// store, the workspace, the palette and the shared catalog's listing.
    pub fn host(&self) -> Arc<dyn SessionHost> {
        Arc::new(AppHost {
            factory: self.factory.clone(),
            store: self.store.session_store(),
            workspace: self.workspace.clone(),
            commands: Arc::clone(&self.commands),
            shared_engine: Arc::clone(&self.shared_engine),
            shared_catalog: Arc::clone(&self.shared_catalog),
            shared_families: Arc::clone(&self.shared_families),
            model: self.model.clone(),
            models: self.models.clone(),
            prices: Arc::clone(&self.prices),
            app_store: self.store.clone(),
            memory_scopes: self.assets.memory.scopes.clone(),
            global: self.global.clone(),
            mcp_report: self.report.mcp_servers.clone(),
            skipped: self.report.skipped.clone(),
            given_up: self
                .report
                .mcp_servers
                .iter()
                .filter(|server| server.status == "failed")
                .count(),
        })
    }

    /// Ends everything, in order: (1) every live per-session engine (runs cancelled,
    /// client MCP servers closed), (2) the shared engine, (3) the server-global MCP
    /// manager (HTTP sessions ended, stdio children stopped), (4) the store (flushed),
    /// (5) every workspace copy not preserved for the user (a copy may hold the
    /// workspace's secrets), (6) the telemetry (open spans ended, the last spans
    /// and metrics exported within [`TELEMETRY_FLUSH_TIMEOUT`]). Listeners are their
    /// owner's to stop first.
    ///
    /// Idempotent (a second call does nothing), never panics, goes on after a failing
    /// step (WARN) and returns the first error.
    ///
    /// # Errors
    /// The first step that failed.
    pub async fn close(&self) -> Result<(), CloseError> {
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let mut first: Option<CloseError> = None;
        if let Err(error) = self.factory.close_all().await {
            tracing::warn!(%error, "closing the per-session engines failed");
            first.get_or_insert(error);
        }
        self.shared_engine.close();
        if let Err(error) = self.global_manager.close().await {
            tracing::warn!(%error, "closing the server-global MCP servers failed");
            first.get_or_insert(CloseError::Mcp(error));
        }
        if let Err(error) = close_store(&self.store).await {
            tracing::warn!(%error, "closing the store failed");
            first.get_or_insert(CloseError::Store(Box::new(error)));
        }
        let forker = self.forker.clone();
        match tokio::task::spawn_blocking(move || forker.remove_unpreserved()).await {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "removed the workspace copies still in use"),
            Err(error) => tracing::warn!(%error, "removing the workspace copies failed"),
        }
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown(TELEMETRY_FLUSH_TIMEOUT).await;
        }
        first.map_or(Ok(()), Err)
    }
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Built")
            .field("workspace", &self.workspace)
            .field("model", &self.model)
            .field("shared_catalog", &self.shared_catalog)
            .field("store", &self.store)
            .field("global", &self.global)
            .finish_non_exhaustive()
    }
}

/// Flushes and closes the store off the async workers (the flusher join blocks).
pub(crate) async fn close_store(store: &AppStore) -> Result<(), engine_ports::StoreError> {
    let store = store.clone();
    match tokio::task::spawn_blocking(move || store.close()).await {
        Ok(outcome) => outcome,
        Err(_) => Err(engine_ports::StoreError::StoreDir {
            path: PathBuf::new(),
            reason: "closing the store was interrupted".to_owned(),
            source: None,
        }),
    }
}
