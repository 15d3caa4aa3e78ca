//! Stdio children — mounting, respawn as reconnect, a child dying
//! mid-request, start failures with the stderr tail, a credential-free environment
//! in the workspace, and no orphans.

use std::path::{Path, PathBuf};
use std::time::Duration;

use adapter_mcp::{ConnectOptions, McpFlags, McpManager, parse_mcp_flags};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::support::capture::Capture;
use crate::support::{
    catalog_of, connect_all, process_gone, python, run, stdio_config, stdio_fixture, wait_until,
};

fn kill_pid(pid: u32) {
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), Signal::SIGKILL).unwrap();
}

async fn pid_of(catalog: &engine_core::Catalog, server: &str) -> u32 {
    run(catalog, &format!("mcp__{server}__pid"), "{}")
        .await
        .content()
        .parse()
        .unwrap()
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_stdio_server_from_the_flag() {
    let Some(python) = python("s49") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let command = shell_words::join([
        python.display().to_string(),
        stdio_fixture().display().to_string(),
    ]);
    let flags = McpFlags {
        stdio: vec![format!("echo={command}")],
        workspace: workspace.path().to_owned(),
        ..McpFlags::default()
    };
    let configs = parse_mcp_flags(&flags, |_| None).unwrap();
    let manager = connect_all(configs).await;
    let catalog = catalog_of(&manager).await;
    let result = run(&catalog, "mcp__echo__echo", r#"{"text":"hi"}"#).await;
    assert_eq!(result.content(), "echo:hi");
    assert_eq!(manager.servers()[0].transport.as_str(), "stdio");
    assert!(engine_core::Catalog::lookup(&catalog, "mcp__echo__echo").is_some());
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_killed_child_is_respawned_on_the_next_call() {
    let Some(python) = python("s50") else { return };
    let capture = Capture::start();
    let workspace = tempfile::tempdir().unwrap();
    let manager = connect_all(vec![stdio_config(&python, "fx", &[], workspace.path())]).await;
    let catalog = catalog_of(&manager).await;
    let first = pid_of(&catalog, "fx").await;
    assert_eq!(manager.server_pid("fx"), Some(first));
    kill_pid(first);
    assert!(wait_until(Duration::from_secs(10), || process_gone(first)).await);
    let result = run(&catalog, "mcp__fx__echo", r#"{"text":"again"}"#).await;
    assert_eq!(result.content(), "echo:again", "{result:?}");
    let second = pid_of(&catalog, "fx").await;
    assert_ne!(first, second);
    assert_eq!(capture.reconnects(), (1, 1, 0));
    manager.close().await.unwrap();
}

#[tokio::test]
async fn a_child_dying_mid_request_is_outcome_unknown() {
    let Some(python) = python("s51") else { return };
    let capture = Capture::start();
    let workspace = tempfile::tempdir().unwrap();
    let marker = workspace.path().join("slow-started");
    let marker_arg = marker.display().to_string();
    let manager = connect_all(vec![stdio_config(
        &python,
        "fx",
        &["--mark-slow", &marker_arg],
        workspace.path(),
    )])
    .await;
    let catalog = catalog_of(&manager).await;
    let pid = manager.server_pid("fx").unwrap();
    let slow = run(&catalog, "mcp__fx__slow", "{}");
    let killer = async {
        assert!(wait_until(Duration::from_secs(10), || marker.exists()).await);
        kill_pid(pid);
    };
    let (result, ()) = tokio::join!(slow, killer);
    assert_eq!(
        result.content(),
        "mcp call failed: MCP server \"fx\" unavailable; request outcome is unknown"
    );
    assert_eq!(capture.reconnects(), (0, 0, 0));
    let next = run(&catalog, "mcp__fx__echo", r#"{"text":"next"}"#).await;
    assert_eq!(next.content(), "echo:next");
    assert_eq!(capture.reconnects(), (1, 1, 0));
    assert_ne!(manager.server_pid("fx"), Some(pid));
    manager.close().await.unwrap();
}

#[tokio::test]
async fn start_failures_quote_stderr_and_respawn_once_per_call() {
    let Some(python) = python("s52") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let connected = McpManager::connect(
        vec![stdio_config(&python, "dead", &["--fail-start"], workspace.path())],
        ConnectOptions::default(),
    )
    .await;
    assert!(connected.manager.is_empty());
    let error = &connected.failures[0];
    assert_eq!(error.server, "dead");
    assert!(error.error.contains("cannot open the database"), "{error:?}");
    assert_eq!(error.endpoint, python.display().to_string());

    let capture = Capture::start();
    let count = workspace.path().join("starts");
    let marker = workspace.path().join("exited");
    let (count_arg, marker_arg) = (count.display().to_string(), marker.display().to_string());
    let manager = connect_all(vec![stdio_config(
        &python,
        "once",
        &[
            "--count",
            &count_arg,
            "--refuse-if",
            &marker_arg,
            "--exit-after-first-call",
            &marker_arg,
        ],
        workspace.path(),
    )])
    .await;
    let catalog = catalog_of(&manager).await;
    let first = manager.server_pid("once").unwrap();
    assert_eq!(
        run(&catalog, "mcp__once__echo", r#"{"text":"1"}"#)
            .await
            .content(),
        "echo:1"
    );
    assert_eq!(lines(&count), 1);
    // The child exits after answering; wait for that exit (a request written while it
    // is still exiting may have reached it and would be "outcome unknown").
    assert!(wait_until(Duration::from_secs(10), || process_gone(first)).await);
    for call in 2..=4 {
        let result = run(&catalog, "mcp__once__echo", r#"{"text":"x"}"#).await;
        assert_eq!(
            result.content(),
            "mcp call failed: MCP server \"once\" unavailable after reconnect"
        );
        assert_eq!(lines(&count), call, "one spawn per call");
    }
    assert_eq!(capture.reconnects(), (3, 0, 3));
    let failed = capture
        .events()
        .into_iter()
        .find(|e| e.field("event") == Some("mcp.reconnect.failed"))
        .unwrap();
    assert!(failed.message.contains("refusing to start"), "{failed:?}");
}

/// Runs [`child_env_probe`] in a child test process whose environment holds
/// the harness's credentials, which the stdio child must not inherit.
#[test]
fn the_child_gets_no_credentials_and_the_workspace() {
    if python("s53").is_none() {
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stdio::child_env_probe",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MECATL_S53_PROBE", "1")
        .env("OPENAI_API_KEY", "sk-should-not-leak")
        .env("ANTHROPIC_API_KEY", "ak-should-not-leak")
        .env("MCP_X_TOKEN", "tok-should-not-leak")
        .env("MECATED_AUTH_TOKEN", "auth-should-not-leak")
        .env("PGPASSWORD", "pg-should-not-leak")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 passed"), "the probe did not run: {stdout}");
}

#[tokio::test]
async fn child_env_probe() {
    if std::env::var_os("MECATL_S53_PROBE").is_none() {
        return;
    }
    let python = python("s53").unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let manager = connect_all(vec![stdio_config(&python, "envy", &[], workspace.path())]).await;
    let catalog = catalog_of(&manager).await;
    let report: Value = serde_json::from_str(run(&catalog, "mcp__envy__env", "{}").await.content()).unwrap();
    let names: Vec<&str> = report["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for secret in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MCP_X_TOKEN",
        "MECATED_AUTH_TOKEN",
        "PGPASSWORD",
    ] {
        assert!(!names.contains(&secret), "{secret} leaked: {names:?}");
    }
    assert!(names.contains(&"PATH"));
    assert!(names.contains(&"MECATL_S53_PROBE"), "the rest is inherited");
    let cwd = PathBuf::from(report["cwd"].as_str().unwrap());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        workspace.path().canonicalize().unwrap()
    );
    manager.close().await.unwrap();
}

async fn pids(catalog: &engine_core::Catalog) -> (u32, u32) {
    let pids: Vec<u32> = serde_json::from_str(run(catalog, "mcp__fam__pids", "{}").await.content()).unwrap();
    (pids[0], pids[1])
}

#[tokio::test]
async fn no_child_or_grandchild_outlives_close_or_drop() {
    let Some(python) = python("s54") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let config = stdio_config(&python, "fam", &["--grandchild"], workspace.path());

    let manager = connect_all(vec![config.clone()]).await;
    let catalog = catalog_of(&manager).await;
    let (child, grandchild) = pids(&catalog).await;
    assert!(!process_gone(grandchild));
    manager.close().await.unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || process_gone(child)
            && process_gone(grandchild))
        .await
    );
    // After close nothing respawns.
    let after = run(&catalog, "mcp__fam__pids", "{}").await;
    assert!(after.content().contains("closed"), "{after:?}");

    let manager = connect_all(vec![config]).await;
    let catalog = catalog_of(&manager).await;
    let (child, grandchild) = pids(&catalog).await;
    drop(catalog);
    drop(manager);
    assert!(
        wait_until(Duration::from_secs(10), || process_gone(child)
            && process_gone(grandchild))
        .await
    );
}

#[test]
fn runtime_shutdown_leaves_no_process() {
    let Some(python) = python("s54") else { return };
    let workspace = tempfile::tempdir().unwrap();
    let config = stdio_config(&python, "fam", &["--grandchild"], workspace.path());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (manager, child, grandchild) = runtime.block_on(async {
        let manager = connect_all(vec![config]).await;
        let catalog = catalog_of(&manager).await;
        let (child, grandchild) = pids(&catalog).await;
        (manager, child, grandchild)
    });
    drop(runtime);
    drop(manager);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !(process_gone(child) && process_gone(grandchild)) {
        assert!(
            std::time::Instant::now() < deadline,
            "a process outlived the runtime"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
