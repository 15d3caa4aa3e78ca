//! `ShellRunner` under the sandbox, on the real kernel: writes leave neither the
//! workspace nor the private `TMPDIR` by any route, `off` lifts it, the network and
//! denied paths are refused. Without Landlock the tests announce a skip (they fail
//! under `CI=true`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use adapter_fstools::ShellRunner;
use engine_core::{CommandOutput, CommandRunner, RunnerError};
use engine_ports::CancellationToken;
use sandbox::{Confinement, SandboxMode, SandboxSettings, support};

/// A workspace and a directory beside it that commands must not write.
struct Layout {
    _dir: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

impl Layout {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let workspace = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir(&workspace).unwrap();
        std::fs::create_dir(&outside).unwrap();
        Self {
            _dir: dir,
            workspace,
            outside,
        }
    }
}

fn landlock(test: &str) -> bool {
    test_peers::kernel_feature(test, "Landlock", support().landlock_abi.is_some())
}

fn runner(shell: &str, settings: &SandboxSettings) -> ShellRunner {
    let (confinement, _) = settings.for_session(&support());
    ShellRunner::new(shell).with_confinement(confinement).unwrap()
}

fn confined() -> ShellRunner {
    runner(
        "/bin/sh",
        &SandboxSettings::default().with_mode(SandboxMode::WorkspaceWrite),
    )
}

async fn run(runner: &ShellRunner, command: &str, cwd: &Path) -> CommandOutput {
    runner
        .run(command, cwd, Duration::from_secs(20), CancellationToken::new())
        .await
        .unwrap()
}

/// Runs `command` confined and asserts it failed and `target` does not exist.
async fn assert_write_refused(command: &str, layout: &Layout, target: &Path) {
    let output = run(&confined(), command, &layout.workspace).await;
    assert_ne!(output.exit_code, Some(0), "{command}: {}", output.output);
    assert!(!target.exists(), "{command} wrote {}", target.display());
}

#[tokio::test]
async fn a_confined_command_writes_inside_the_workspace_and_its_tmpdir() {
    if !landlock("a_confined_command_writes_inside_the_workspace_and_its_tmpdir") {
        return;
    }
    let layout = Layout::new();
    let runner = confined();
    let output = run(
        &runner,
        "mkdir -p sub && echo in > sub/inside.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" \
         && echo gone > /dev/null && rm sub/inside.txt && echo in > kept.txt",
        &layout.workspace,
    )
    .await;
    assert_eq!(output.exit_code, Some(0), "{}", output.output);
    assert_eq!(output.output, "t\n");
    assert_eq!(
        std::fs::read_to_string(layout.workspace.join("kept.txt")).unwrap(),
        "in\n"
    );
    let temp = runner.temp_dir().unwrap();
    assert!(temp.join("t").exists());
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(temp).unwrap().permissions()) & 0o777,
        0o700
    );
}

#[tokio::test]
async fn a_confined_command_cannot_write_outside_by_an_absolute_path() {
    if !landlock("a_confined_command_cannot_write_outside_by_an_absolute_path") {
        return;
    }
    let layout = Layout::new();
    let target = layout.outside.join("abs.txt");
    assert_write_refused(&format!("echo x > '{}'", target.display()), &layout, &target).await;
}

#[tokio::test]
async fn a_confined_command_cannot_write_through_a_symlink_pointing_out() {
    if !landlock("a_confined_command_cannot_write_through_a_symlink_pointing_out") {
        return;
    }
    let layout = Layout::new();
    std::os::unix::fs::symlink(&layout.outside, layout.workspace.join("link")).unwrap();
    let target = layout.outside.join("via-link.txt");
    assert_write_refused("echo x > link/via-link.txt", &layout, &target).await;
}

#[tokio::test]
async fn a_confined_command_cannot_write_outside_through_dot_dot() {
    if !landlock("a_confined_command_cannot_write_outside_through_dot_dot") {
        return;
    }
    let layout = Layout::new();
    let target = layout.outside.join("dotdot.txt");
    assert_write_refused("echo x > ../outside/dotdot.txt", &layout, &target).await;
}

#[tokio::test]
async fn a_confined_commands_nested_and_background_children_cannot_write_outside() {
    if !landlock("a_confined_commands_nested_and_background_children_cannot_write_outside") {
        return;
    }
    let layout = Layout::new();
    let nested = layout.outside.join("nested.txt");
    assert_write_refused(
        &format!("sh -c \"echo x > '{}'\"", nested.display()),
        &layout,
        &nested,
    )
    .await;
    let background = layout.outside.join("background.txt");
    assert_write_refused(
        &format!("(echo x > '{}') & wait $!", background.display()),
        &layout,
        &background,
    )
    .await;
}

#[tokio::test]
async fn off_lets_commands_write_outside_the_workspace() {
    let layout = Layout::new();
    let off = runner("/bin/sh", &SandboxSettings::default().with_mode(SandboxMode::Off));
    assert!(matches!(off.confinement(), Confinement::Unconfined));
    let target = layout.outside.join("off.txt");
    let output = run(
        &off,
        &format!("echo x > '{}'", target.display()),
        &layout.workspace,
    )
    .await;
    assert_eq!(output.exit_code, Some(0), "{}", output.output);
    assert!(target.exists());
}

#[tokio::test]
async fn read_only_refuses_workspace_writes_but_keeps_the_tmpdir() {
    if !landlock("read_only_refuses_workspace_writes_but_keeps_the_tmpdir") {
        return;
    }
    let layout = Layout::new();
    let read_only = runner(
        "/bin/sh",
        &SandboxSettings::default().with_mode(SandboxMode::ReadOnly),
    );
    let output = run(
        &read_only,
        "echo t > \"$TMPDIR/t\" && echo x > ro.txt",
        &layout.workspace,
    )
    .await;
    assert_ne!(output.exit_code, Some(0), "{}", output.output);
    assert!(read_only.temp_dir().unwrap().join("t").exists());
    assert!(!layout.workspace.join("ro.txt").exists());
}

#[tokio::test]
async fn network_off_refuses_a_tcp_connect_to_a_loopback_listener() {
    if !landlock("network_off_refuses_a_tcp_connect_to_a_loopback_listener") {
        return;
    }
    let layout = Layout::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let open = runner("/bin/bash", &SandboxSettings::default());
    let output = run(&open, &connect, &layout.workspace).await;
    assert_eq!(output.output, "connected\n", "network on must connect");
    let closed = runner("/bin/bash", &SandboxSettings::default().with_network(false));
    let output = run(&closed, &connect, &layout.workspace).await;
    assert_ne!(output.exit_code, Some(0), "{}", output.output);
    assert!(!output.output.contains("connected"), "{}", output.output);
    assert!(output.output.contains("Permission denied"), "{}", output.output);
    // Unix sockets stay usable.
    let unix = run(
        &closed,
        "python3 -c 'import socket; socket.socket(socket.AF_UNIX)' && echo unix",
        &layout.workspace,
    )
    .await;
    assert_eq!(unix.output, "unix\n");
}

#[tokio::test]
async fn a_denied_path_cannot_be_read_and_the_rest_can() {
    if !landlock("a_denied_path_cannot_be_read_and_the_rest_can") {
        return;
    }
    let layout = Layout::new();
    std::fs::write(layout.outside.join("secret.txt"), "secret").unwrap();
    let beside = layout.outside.parent().unwrap().join("beside.txt");
    std::fs::write(&beside, "open").unwrap();
    let settings = SandboxSettings::default().with_deny_read(vec![layout.outside.clone()]);
    let denying = runner("/bin/sh", &settings);
    let secret = layout.outside.join("secret.txt");
    let output = run(
        &denying,
        &format!("cat '{}'", secret.display()),
        &layout.workspace,
    )
    .await;
    assert_ne!(output.exit_code, Some(0), "{}", output.output);
    assert!(!output.output.contains("secret\n") && !output.output.starts_with("secret"));
    let output = run(
        &denying,
        &format!("cat '{}'", beside.display()),
        &layout.workspace,
    )
    .await;
    assert_eq!(output.output, "open");
    let unconfined = run(
        &runner("/bin/sh", &SandboxSettings::default().with_mode(SandboxMode::Off)),
        &format!("cat '{}'", secret.display()),
        &layout.workspace,
    )
    .await;
    assert_eq!(unconfined.output, "secret");
}

#[tokio::test]
async fn a_refusing_runner_fails_every_call_with_its_reason() {
    let layout = Layout::new();
    let refusing = ShellRunner::default()
        .with_confinement(Confinement::Refused("Shell is refused: because".into()))
        .unwrap();
    let outcome = refusing
        .run(
            "true",
            &layout.workspace,
            Duration::from_secs(5),
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(&outcome, Err(RunnerError::Refused { reason }) if reason == "Shell is refused: because"),
        "{outcome:?}"
    );
}
