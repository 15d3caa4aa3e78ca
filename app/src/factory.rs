//! [`SessionEngineFactory`]: engines for sessions — the shared engine, or a private
//! engine over a catalog with the session's client MCP servers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use adapter_mcp::{
    ClientServerContext, ClientServerSpec, ConnectOptions, RequestLimits, ServerSource,
    connect_client_servers, validate_client_servers,
};
use engine_core::{CatalogUpdates, Engine};
use engine_ports::{PermissionMode, ServerOrigin};

use crate::assembly::{CatalogInputs, CatalogTeardown, FamilyMap, assemble_catalog};
use crate::assets::CatalogAssets;
use crate::children::AppChildren;
use crate::engine_template::EngineTemplate;
use crate::error::{CloseError, FactoryError};
use crate::live_catalog::LiveCatalog;
use crate::report::tool_entries;
use engine_core::host::ToolEntry;

/// What a host asks for when it creates a session. The mode is set on the engine
/// afterwards (`Engine::create_session` / `Engine::set_mode`).
#[derive(Clone, Debug, Default)]
pub struct SessionRequest {
    /// Client-provided MCP servers (ACP `session/new` `mcpServers`, the HTTP create
    /// body); connected all-or-nothing (D7).
    pub client_servers: Vec<ClientServerSpec>,
    /// Whether stdio client servers are accepted: only when the request came over
    /// ACP's stdio transport (D5). The HTTP API leaves it `false`.
    pub allow_stdio: bool,
}

impl SessionRequest {
    /// A request with these client servers (streamable HTTP only).
    pub fn new(client_servers: Vec<ClientServerSpec>) -> Self {
        Self {
            client_servers,
            allow_stdio: false,
        }
    }
}

/// Creates the engine a session runs on.
///
/// `create` without client servers hands out the shared engine; with client servers —
/// and `create_private` always — it connects them, assembles a fresh catalog from the
/// **same** assets with [`assemble_catalog`] and builds an engine whose `Deps` equal
/// the shared engine's except the catalog (the sanctioned deltas: client MCP tools; an
/// undecorated hook chain, identical today). At most `max_sessions` private engines
/// are live at once.
#[derive(Clone)]
pub struct SessionEngineFactory {
    inner: Arc<FactoryInner>,
}

/// What [`SessionEngineFactory::new`] builds a factory from.
pub(crate) struct FactoryParts {
    /// Builds the private engines.
    pub(crate) template: EngineTemplate,
    /// The child engines of the shared engine; private engines get them with their
    /// client servers. Their assets are the ones every catalog is assembled from.
    pub(crate) children: AppChildren,
    /// The engine of sessions without client servers.
    pub(crate) shared: Arc<Engine>,
    /// The tool families of the shared catalog.
    pub(crate) shared_families: Arc<FamilyMap>,
    /// The canonical workspace, for client servers' context.
    pub(crate) workspace: PathBuf,
    /// At most this many private engines are live at once.
    pub(crate) max_sessions: usize,
    /// The request limits of client MCP servers.
    pub(crate) mcp_limits: RequestLimits,
}

struct FactoryInner {
    parts: FactoryParts,
    live: Mutex<Live>,
    closed: AtomicBool,
}

#[derive(Default)]
struct Live {
    next_id: u64,
    reserved: usize,
    engines: HashMap<u64, LiveEngine>,
}

struct LiveEngine {
    engine: Arc<Engine>,
    teardown: CatalogTeardown,
}

impl FactoryInner {
    fn assets(&self) -> &Arc<CatalogAssets> {
        self.parts.children.assets()
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn release_reservation(&self) {
        let mut live = self.live();
        live.reserved = live.reserved.saturating_sub(1);
    }
}

/// Gives a reserved slot back unless the engine was registered.
struct Reservation<'a> {
    factory: &'a FactoryInner,
    armed: bool,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.factory.release_reservation();
        }
    }
}

impl SessionEngineFactory {
    /// The factory over the assets `parts.children` assemble from.
    pub(crate) fn new(parts: FactoryParts) -> Self {
        Self {
            inner: Arc::new(FactoryInner {
                parts,
                live: Mutex::new(Live::default()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// The engine for a new session: the shared engine when `req` names no client
    /// server (its `close` is a no-op), else a private one ([`Self::create_private`]).
    ///
    /// # Errors
    /// As [`Self::create_private`]; without client servers only
    /// [`FactoryError::Closed`].
    pub async fn create(&self, req: SessionRequest) -> Result<SessionEngine, FactoryError> {
        if !req.client_servers.is_empty() {
            return self.create_private(req).await;
        }
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(FactoryError::Closed);
        }
        Ok(SessionEngine {
            engine: Arc::clone(&self.inner.parts.shared),
            families: Arc::clone(&self.inner.parts.shared_families),
            client_tool_names: Vec::new(),
            private: None,
        })
    }

    /// A private engine over a freshly assembled catalog: the session's client
    /// servers are validated and connected all-or-nothing (D7), then mounted after the
    /// global tools (global names win).
    ///
    /// # Errors
    /// [`FactoryError::TooManySessions`] over the cap,
    /// [`FactoryError::ClientServersRejected`] for specs that fail validation,
    /// [`FactoryError::ClientServersUnreachable`] naming every server that did not
    /// connect (nothing stays connected),
    /// [`FactoryError::Closed`] after [`Built::close`](crate::Built::close).
    pub async fn create_private(&self, req: SessionRequest) -> Result<SessionEngine, FactoryError> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(FactoryError::Closed);
        }
        {
            let mut live = inner.live();
            if live.engines.len() + live.reserved >= inner.parts.max_sessions {
                return Err(FactoryError::TooManySessions {
                    limit: inner.parts.max_sessions,
                });
            }
            live.reserved += 1;
        }
        let mut reservation = Reservation {
            factory: inner,
            armed: true,
        };

        let context = ClientServerContext {
            stdio_allowed: req.allow_stdio,
            workspace: inner.parts.workspace.clone(),
        };
        // Validation first (pure), so a bad request and an unreachable server differ.
        validate_client_servers(&req.client_servers, &context)
            .map_err(FactoryError::ClientServersRejected)?;
        let options = ConnectOptions {
            limits: self.inner.parts.mcp_limits,
            ..ConnectOptions::default()
        };
        let client = connect_client_servers(&req.client_servers, &context, options)
            .await
            .map_err(FactoryError::ClientServersUnreachable)?;
        let assembled = assemble_catalog(
            inner.assets(),
            CatalogInputs {
                client_mcp: client.as_ref(),
                narrate: false,
                child: None,
            },
        );
        let teardown = assembled.teardown.clone();
        if let Some(conflict) = assembled.conflicts.first() {
            let error = FactoryError::DuplicateTool {
                name: conflict.name.clone(),
            };
            return abandon(&teardown, error).await;
        }
        if let Some(client) = &client {
            let servers = client.server_names().len();
            let tools = assembled.client_tool_names.len();
            tracing::info!(
                servers,
                tools,
                "mounted {tools} tool(s) of {servers} client-provided MCP server(s)"
            );
        }
        let updates = LiveCatalog::needed(inner.assets(), client.as_ref()).then(|| {
            Arc::new(LiveCatalog::new(
                Arc::clone(inner.assets()),
                client.clone(),
                Arc::clone(&assembled.catalog),
                assembled.mcp_generation,
            )) as Arc<dyn CatalogUpdates>
        });
        let origins: Vec<ServerOrigin> = client
            .as_ref()
            .map(|client| {
                client
                    .server_names()
                    .into_iter()
                    .map(|name| ServerOrigin {
                        name,
                        source: ServerSource::Client.to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let engine = match inner.parts.template.engine(
            Arc::clone(&assembled.catalog),
            updates,
            &origins,
            Some(Arc::new(inner.parts.children.with_client(client.clone()))),
        ) {
            Ok(engine) => Arc::new(engine),
            Err(error) => return abandon(&teardown, error.into()).await,
        };
        let id = {
            let mut live = inner.live();
            if inner.closed.load(Ordering::SeqCst) {
                None
            } else {
                live.reserved = live.reserved.saturating_sub(1);
                reservation.armed = false;
                let id = live.next_id;
                live.next_id += 1;
                live.engines.insert(
                    id,
                    LiveEngine {
                        engine: Arc::clone(&engine),
                        teardown: teardown.clone(),
                    },
                );
                Some(id)
            }
        };
        let Some(id) = id else {
            engine.close();
            return abandon(&teardown, FactoryError::Closed).await;
        };
        Ok(SessionEngine {
            engine,
            families: assembled.families,
            client_tool_names: assembled.client_tool_names,
            private: Some(Private {
                id,
                factory: Arc::clone(inner),
                teardown,
            }),
        })
    }

    /// How many private engines are live.
    pub fn live_sessions(&self) -> usize {
        self.inner.live().engines.len()
    }

    /// The cap on live private engines.
    pub fn max_sessions(&self) -> usize {
        self.inner.parts.max_sessions
    }

    /// Refuses new sessions, then closes every live private engine (cancels its runs,
    /// closes its client servers — never the global ones). Keeps going after a
    /// failure and returns the first.
    pub(crate) async fn close_all(&self) -> Result<(), CloseError> {
        self.inner.closed.store(true, Ordering::SeqCst);
        let engines: Vec<LiveEngine> = self.inner.live().engines.drain().map(|(_, e)| e).collect();
        for live in &engines {
            live.engine.close();
        }
        let closes = engines.iter().map(|live| live.teardown.close());
        let mut first = None;
        for outcome in futures::future::join_all(closes).await {
            if let Err(error) = outcome {
                tracing::warn!(%error, "closing a session's client MCP servers failed");
                first.get_or_insert(CloseError::Mcp(error));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// Closes what a failed creation connected, then returns its error.
async fn abandon(teardown: &CatalogTeardown, error: FactoryError) -> Result<SessionEngine, FactoryError> {
    if let Err(close) = teardown.close().await {
        tracing::warn!(error = %close, "closing the client MCP servers of a failed session failed");
    }
    Err(error)
}

impl std::fmt::Debug for SessionEngineFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEngineFactory")
            .field("live_sessions", &self.live_sessions())
            .field("max_sessions", &self.inner.parts.max_sessions)
            .finish()
    }
}

/// The engine of one session.
pub struct SessionEngine {
    engine: Arc<Engine>,
    families: Arc<FamilyMap>,
    client_tool_names: Vec<String>,
    private: Option<Private>,
}

struct Private {
    id: u64,
    factory: Arc<FactoryInner>,
    teardown: CatalogTeardown,
}

impl SessionEngine {
    /// The engine: `run`, `cancel`, `approve`, `set_mode`, `create_session`,
    /// `commands` (the palette).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Whether this is a private engine (its own catalog), not the shared one.
    pub fn is_private(&self) -> bool {
        self.private.is_some()
    }

    /// The client MCP tools mounted for this session.
    pub fn client_tool_names(&self) -> &[String] {
        &self.client_tool_names
    }

    /// The tools available in `mode`, sorted by name, with their families
    /// (`ToolSearch` included with progressive tools).
    pub fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        let catalog = self.engine.current_catalog();
        let disclosure = self.engine.disclosure_for(&catalog);
        tool_entries(&catalog, &self.families, mode, disclosure)
    }

    /// Ends the session's engine: a private engine cancels its runs and closes its
    /// client MCP servers (never the global ones); the shared engine is left alone.
    ///
    /// # Errors
    /// Closing the client servers failed (it was still attempted in full).
    pub async fn close(self) -> Result<(), CloseError> {
        let Some(private) = self.private else {
            return Ok(());
        };
        private.factory.live().engines.remove(&private.id);
        self.engine.close();
        private.teardown.close().await.map_err(CloseError::Mcp)
    }
}

impl std::fmt::Debug for SessionEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionEngine")
            .field("private", &self.private.is_some())
            .field("client_tool_names", &self.client_tool_names)
            .finish_non_exhaustive()
    }
}
