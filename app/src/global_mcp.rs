//! [`GlobalMcp`]: the server-global MCP servers as catalogs and hosts see them —
//! tools, resources and prompts, but no `close`.

use std::sync::{Arc, Mutex, PoisonError};

use std::collections::BTreeMap;

use adapter_mcp::{
    McpError, McpManager, McpPrompt, McpPromptExpander, McpResource, McpServerInfo, MountOptions,
    PromptReply, ResourceChunk, ResourceTools, prompt_expander, resource_tools,
};
use engine_core::{OutputCap, Tool};
use engine_ports::CancellationToken;
use engine_ports::Diagnostics;

/// A handle on the server-global MCP manager without the power to close it.
///
/// [`build`](crate::build) creates the manager and [`Built`](crate::Built) holds the
/// one value that closes it, at shutdown; catalogs, tools and hosts get this cloneable
/// newtype instead. Tool lists are reused, never reconnected: catalog assembly reads
/// [`GlobalMcp::pinned_tools`], a snapshot taken at build and replaced only by
/// [`GlobalMcp::refresh`] (outside assembly).
#[derive(Clone)]
pub struct GlobalMcp {
    inner: Arc<Inner>,
}

struct Inner {
    manager: McpManager,
    mount: MountOptions,
    pinned: Mutex<Arc<PinnedTools>>,
}

/// The global MCP tools at one snapshot generation, ready to register.
pub struct PinnedTools {
    generation: u64,
    tools: Vec<Arc<dyn Tool>>,
}

impl PinnedTools {
    fn of(manager: &McpManager, mount: MountOptions) -> Self {
        let snapshot = manager.tool_snapshot(mount);
        Self {
            generation: snapshot.generation(),
            tools: snapshot.catalog_tools(),
        }
    }

    /// The manager's tools generation this snapshot was taken at.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The tools, in server order then listing order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }
}

impl GlobalMcp {
    /// Wraps the global manager; only the composition root does this.
    pub(crate) fn new(manager: McpManager, mount: MountOptions) -> Self {
        let pinned = Arc::new(PinnedTools::of(&manager, mount));
        Self {
            inner: Arc::new(Inner {
                manager,
                mount,
                pinned: Mutex::new(pinned),
            }),
        }
    }

    /// Whether no global server is connected.
    pub fn is_empty(&self) -> bool {
        self.inner.manager.is_empty()
    }

    /// The tool snapshot assembly pins: cheap (one `Arc` clone), no I/O.
    pub fn pinned_tools(&self) -> Arc<PinnedTools> {
        Arc::clone(&self.inner.pinned.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Re-lists the tool, resource and prompt lists a server marked dirty
    /// (`list_changed`) and, when a tool set changed, replaces the pinned snapshot.
    /// Catalogs built earlier never change; later assemblies see the new tools. Returns
    /// whether the pinned snapshot changed.
    pub async fn refresh(&self) -> bool {
        self.inner.manager.refresh().await;
        let generation = self.inner.manager.tools_generation();
        let mut pinned = self.inner.pinned.lock().unwrap_or_else(PoisonError::into_inner);
        if pinned.generation == generation {
            return false;
        }
        *pinned = Arc::new(PinnedTools::of(&self.inner.manager, self.inner.mount));
        true
    }

    /// Per connected server: name, transport, status and snapshot counts.
    pub fn servers(&self) -> Vec<McpServerInfo> {
        self.inner.manager.servers()
    }

    /// The resources in the servers' snapshots (no I/O).
    pub fn resources(&self) -> Vec<McpResource> {
        self.inner.manager.resource_snapshot()
    }

    /// The prompts in the servers' snapshots (no I/O).
    pub fn prompts(&self) -> Vec<McpPrompt> {
        self.inner.manager.prompt_snapshot()
    }

    /// Reads one resource live (with the MCP adapter's reconnect rules).
    ///
    /// # Errors
    /// [`McpError`]: unknown server, unavailable, or the server's error.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<ResourceChunk>, McpError> {
        self.inner.manager.read_resource(server, uri, cancel).await
    }

    /// Gets one prompt live (with the MCP adapter's reconnect rules).
    ///
    /// # Errors
    /// [`McpError`]: unknown server, unavailable, or the server's error.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<BTreeMap<String, String>>,
        cancel: &CancellationToken,
    ) -> Result<PromptReply, McpError> {
        self.inner
            .manager
            .get_prompt(server, name, arguments, cancel)
            .await
    }

    /// The pid of a stdio server's current child (diagnostics and tests).
    pub fn server_pid(&self, server: &str) -> Option<u32> {
        self.inner.manager.server_pid(server)
    }

    /// `ListMcpResources` and `ReadMcpResource` when enabled and some resource is
    /// listed (one INFO either way).
    pub(crate) fn resource_tools(&self, enabled: bool) -> ResourceTools {
        resource_tools(enabled, Some(&self.inner.manager))
    }

    /// The `/mcp__<server>__<prompt>` expander when enabled and some prompt is listed.
    pub(crate) fn prompt_expander(
        &self,
        enabled: bool,
        cap: OutputCap,
    ) -> (Option<McpPromptExpander>, Diagnostics) {
        prompt_expander(enabled, Some(&self.inner.manager), cap)
    }
}

impl std::fmt::Debug for GlobalMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("GlobalMcp").field(&self.inner.manager).finish()
    }
}
