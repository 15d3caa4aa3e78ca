//! A stdio server opted into the sandbox (`ServerConfig::with_sandbox`) on the real
//! kernel: it writes its workspace, not outside it; a refused one does not start.

use adapter_mcp::{ConnectOptions, McpManager};
use sandbox::{Confinement, SandboxSettings, support};

use crate::support::{python, stdio_config};

#[tokio::test]
async fn a_confined_stdio_server_writes_its_workspace_but_not_outside() {
    let Some(python) = python("a_confined_stdio_server_writes_its_workspace_but_not_outside") else {
        return;
    };
    if !test_peers::kernel_feature(
        "a_confined_stdio_server_writes_its_workspace_but_not_outside",
        "Landlock",
        support().landlock_abi.is_some(),
    ) {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let workspace = base.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let (confinement, _) = SandboxSettings::default().for_mcp_server("inside", &support());
    let inside = workspace.join("count.txt").display().to_string();
    let outside = base.path().join("count.txt");
    let outside_arg = outside.display().to_string();
    let connected = McpManager::connect(
        vec![
            stdio_config(&python, "inside", &["--count", &inside], &workspace)
                .with_sandbox(confinement.clone()),
            stdio_config(&python, "outside", &["--count", &outside_arg], &workspace)
                .with_sandbox(confinement),
        ],
        ConnectOptions::default(),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("count.txt")).unwrap(),
        "start\n"
    );
    assert!(
        !outside.exists(),
        "the confined server wrote outside its workspace"
    );
    let failed: Vec<&str> = connected.failures.iter().map(|f| f.server.as_str()).collect();
    assert_eq!(failed, ["outside"], "{:?}", connected.failures);
    assert!(
        connected.failures[0].error.contains("PermissionError"),
        "{:?}",
        connected.failures
    );
    connected.manager.close().await.unwrap();
}

#[tokio::test]
async fn a_refused_stdio_server_does_not_start_and_says_why() {
    let workspace = tempfile::tempdir().unwrap();
    let config = stdio_config(
        std::path::Path::new("/bin/true"),
        "refused",
        &[],
        workspace.path(),
    )
    .with_sandbox(Confinement::Refused(
        "MCP server \"refused\" is not started: no Landlock".into(),
    ));
    let connected = McpManager::connect(vec![config], ConnectOptions::default()).await;
    assert!(connected.manager.is_empty());
    assert!(
        connected.failures[0]
            .error
            .contains("is not started: no Landlock"),
        "{:?}",
        connected.failures
    );
}
