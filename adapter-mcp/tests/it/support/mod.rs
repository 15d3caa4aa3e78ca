//! Shared test support: event capture, fixture servers, environments, helpers.

pub mod capture;
pub mod fake;
pub mod http;

use std::path::{Path, PathBuf};
use std::time::Duration;

use adapter_mcp::{ConnectOptions, McpManager, ServerConfig};
use engine_core::{Catalog, Environment};
use engine_ports::{CancellationToken, ToolCall, ToolResult};

/// An environment rooted at a fresh temp dir (kept alive by the returned guard).
pub fn environment() -> (Environment, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Environment::new(dir.path()).unwrap(), dir)
}

/// An operator HTTP config with a short connect timeout (tests never wait 30 s).
pub fn http_config(name: &str, url: &str) -> ServerConfig {
    ServerConfig::http(name, url, None).with_connect_timeout(Duration::from_secs(10))
}

/// Connects and asserts that nothing failed.
pub async fn connect_all(configs: Vec<ServerConfig>) -> McpManager {
    let connected = McpManager::connect(configs, ConnectOptions::default()).await;
    assert!(connected.failures.is_empty(), "{:?}", connected.failures);
    connected.manager
}

/// A catalog holding the manager's tools (global tier).
pub async fn catalog_of(manager: &McpManager) -> Catalog {
    catalog_with(
        manager
            .tool_snapshot(adapter_mcp::MountOptions::default())
            .catalog_tools(),
    )
}

/// A catalog holding `tools`, each of which must register (the assembly's first-wins
/// rule lives in `app`; these tests never collide).
pub fn catalog_with(tools: impl IntoIterator<Item = std::sync::Arc<dyn engine_core::Tool>>) -> Catalog {
    let mut catalog = Catalog::new();
    for tool in tools {
        catalog.must_register(tool);
    }
    catalog
}

/// Runs one call of `name` through the catalog.
pub async fn run(catalog: &Catalog, name: &str, args: &str) -> ToolResult {
    run_with(catalog, name, args, &CancellationToken::new()).await
}

pub async fn run_with(catalog: &Catalog, name: &str, args: &str, cancel: &CancellationToken) -> ToolResult {
    let (env, _dir) = environment();
    let tool = catalog
        .lookup(name)
        .unwrap_or_else(|| panic!("{name} is not in the catalog"));
    let call = ToolCall::new("call-1", name, args);
    tool.execute(cancel, &call, &env).await.unwrap()
}

/// The stdio fixture script.
pub fn stdio_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/stdio_server.py")
}

/// The peers' Python (fails loudly when missing, unless skipping is allowed).
pub fn python(test: &str) -> Option<PathBuf> {
    test_peers::venv_bin(test, "python3")
}

/// A stdio config running the fixture with `args`, in `workspace`.
pub fn stdio_config(python: &Path, name: &str, args: &[&str], workspace: &std::path::Path) -> ServerConfig {
    let mut all = vec![stdio_fixture().display().to_string()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    ServerConfig::stdio(name, python.display().to_string(), all, workspace)
        .with_connect_timeout(Duration::from_secs(10))
}

/// Waits until `condition` holds, at most `limit` (a bounded wait on an observable
/// condition, not a sleep standing in for synchronisation).
pub async fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `/proc/<pid>` is gone or a zombie.
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}
