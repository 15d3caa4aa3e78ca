//! `Shell` and `ShellRunner`: merged output, exit status, timeouts and cancellation
//! killing the whole process group, credential stripping, the cap.

use std::path::Path;
use std::time::{Duration, Instant};

use adapter_fstools::{Shell, ShellRunner};
use engine_core::{CommandRunner, RunnerError, Tool as _, truncation_marker};
use engine_ports::{CancellationToken, ToolCall};
use serde_json::json;

use crate::support::{Ws, call, err, eventually, ok, pid_in, process_gone};

/// A command that starts a sleeping grandchild in the same group, records its pid in
/// `grandchild.pid` and waits for it.
const SPAWNS_GRANDCHILD: &str = "sleep 30 & echo $! > grandchild.pid; echo started; wait";

#[tokio::test]
async fn stdout_and_stderr_are_merged_in_arrival_order_with_a_final_status_line() {
    let ws = Ws::new().with_shell();
    let result = call(
        &Shell,
        &ws.env,
        json!({"command": "echo out1; echo err1 >&2; echo out2; echo err2 >&2"}),
    )
    .await;
    assert_eq!(ok(&result), "out1\nerr1\nout2\nerr2\n[exit status: 0]");
}

#[tokio::test]
async fn it_runs_in_the_workspace_root_with_stdin_empty() {
    let ws = Ws::new().with_shell();
    ws.file("marker.txt", "here\n");
    let result = call(
        &Shell,
        &ws.env,
        json!({"command": "cat marker.txt; cat; printf tail"}),
    )
    .await;
    assert_eq!(ok(&result), "here\ntail\n[exit status: 0]");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_result_keeping_the_output() {
    let ws = Ws::new().with_shell();
    let result = call(&Shell, &ws.env, json!({"command": "echo failing >&2; exit 3"})).await;
    assert_eq!(err(&result), "failing\n[exit status: 3]");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group_and_keeps_the_output() {
    let ws = Ws::new().with_shell();
    let started = Instant::now();
    let result = call(
        &Shell,
        &ws.env,
        json!({"command": SPAWNS_GRANDCHILD, "timeout_ms": 200}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let text = err(&result);
    assert!(text.starts_with("started\n"), "output so far kept: {text}");
    assert!(text.contains("timed out after 200 ms"), "{text}");
    let grandchild = pid_in(&ws.path("grandchild.pid")).await;
    assert!(
        eventually(|| process_gone(grandchild)).await,
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn a_process_ignoring_sigterm_gets_sigkill_after_the_grace() {
    let ws = Ws::new().with_shell();
    let started = Instant::now();
    let result = call(
        &Shell,
        &ws.env,
        json!({"command": format!("trap '' TERM; {SPAWNS_GRANDCHILD}"), "timeout_ms": 100}),
    )
    .await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1_500),
        "SIGKILL only after the 2 s grace: {took:?}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(err(&result).contains("timed out after 100 ms"));
    let grandchild = pid_in(&ws.path("grandchild.pid")).await;
    assert!(
        eventually(|| process_gone(grandchild)).await,
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let ws = Ws::new().with_shell();
    let cancel = CancellationToken::new();
    let env = ws.env.clone();
    let token = cancel.clone();
    let running = tokio::spawn(async move {
        let call = ToolCall::new("c1", "Shell", json!({"command": SPAWNS_GRANDCHILD}).to_string());
        Shell.execute(&token, &call, &env).await.unwrap()
    });
    let grandchild = pid_in(&ws.path("grandchild.pid")).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let result = running.await.unwrap();
    assert!(cancelled_at.elapsed() < Duration::from_secs(5));
    let text = err(&result);
    assert!(text.contains("started") && text.contains("cancelled"), "{text}");
    assert!(
        eventually(|| process_gone(grandchild)).await,
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn a_background_job_holding_the_output_does_not_hold_the_call() {
    let ws = Ws::new().with_shell();
    let started = Instant::now();
    let result = call(
        &Shell,
        &ws.env,
        json!({"command": "sleep 30 & echo $! > bg.pid; echo launched"}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(ok(&result), "launched\n[exit status: 0]");
    let background = pid_in(&ws.path("bg.pid")).await;
    assert!(
        eventually(|| process_gone(background)).await,
        "background job {background} survived"
    );
}

#[tokio::test]
async fn credentials_are_stripped_from_the_child_environment() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let runner = ShellRunner::default().with_env_source([
        ("PATH", path),
        ("OPENAI_API_KEY", "sk-openai".into()),
        ("ANTHROPIC_API_KEY", "sk-anthropic".into()),
        ("MECATED_AUTH_TOKEN", "auth".into()),
        ("MCP_GITHUB_TOKEN", "gh".into()),
        ("MCP_VMCP_TOKEN", "vmcp".into()),
        ("MCP_SERVER_URL", "http://kept".into()),
        ("KEEP_ME", "kept".into()),
    ]);
    let ws = Ws::new().with_runner(runner);
    let result = call(&Shell, &ws.env, json!({"command": "env | sort"})).await;
    let text = ok(&result);
    assert!(text.contains("KEEP_ME=kept"), "{text}");
    assert!(text.contains("MCP_SERVER_URL=http://kept"), "{text}");
    for secret in ["sk-openai", "sk-anthropic", "auth", "=gh", "vmcp"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MECATED_AUTH_TOKEN",
        "MCP_GITHUB_TOKEN",
        "MCP_VMCP_TOKEN",
    ] {
        assert!(!text.contains(name), "{name} leaked: {text}");
    }
}

#[tokio::test]
async fn a_huge_output_is_capped_with_the_marker_and_keeps_the_status_line() {
    let ws = Ws::new().with_shell().with_cap(2_000);
    let result = call(
        &Shell,
        &ws.env,
        json!({"command": "i=0; while [ $i -lt 5000 ]; do echo line-$i; i=$((i+1)); done"}),
    )
    .await;
    let text = ok(&result);
    assert_eq!(text.len(), 2_000);
    assert!(text.starts_with("line-0\nline-1\n"));
    assert!(
        text.ends_with(&format!("{}\n[exit status: 0]", truncation_marker(2_000))),
        "{text}"
    );
}

#[tokio::test]
async fn the_runner_caps_what_it_captures_with_the_marker() {
    let runner = ShellRunner::default().with_capture_limit(5_000);
    let output = runner
        .run(
            "head -c 100000 /dev/zero | tr '\\0' x",
            Path::new("/"),
            Duration::from_secs(30),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(output.exit_code, Some(0));
    assert_eq!(output.output.len(), 5_000);
    assert!(output.output.ends_with(&truncation_marker(5_000)));
    assert!(!output.timed_out && !output.cancelled);
}

#[tokio::test]
async fn invalid_utf8_output_is_decoded_lossily() {
    let ws = Ws::new().with_shell();
    let result = call(&Shell, &ws.env, json!({"command": "printf 'a\\377b\\n'"})).await;
    assert_eq!(ok(&result), "a\u{fffd}b\n[exit status: 0]");
}

#[tokio::test]
async fn without_a_runner_the_tool_says_no_shell_is_available() {
    let ws = Ws::new();
    let text = err(&call(&Shell, &ws.env, json!({"command": "echo hi"})).await).to_owned();
    assert!(text.contains("no shell is available"), "{text}");
}

#[tokio::test]
async fn bad_arguments_are_errors() {
    let ws = Ws::new().with_shell();
    let text =
        err(&call(&Shell, &ws.env, json!({"command": "true", "timeout_ms": 600_001})).await).to_owned();
    assert!(text.contains("600000"), "{text}");
    err(&call(&Shell, &ws.env, json!({"command": "true", "timeout_ms": 0})).await);
    err(&call(&Shell, &ws.env, json!({"command": "   "})).await);
}

#[tokio::test]
async fn a_shell_that_cannot_start_is_a_runner_error_and_a_tool_error_result() {
    let runner = ShellRunner::new("/nonexistent/shell");
    let outcome = runner
        .run(
            "true",
            Path::new("/"),
            Duration::from_secs(5),
            CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(outcome, Err(RunnerError::Spawn { ref program, .. }) if program == "/nonexistent/shell")
    );
    let ws = Ws::new().with_runner(runner);
    let text = err(&call(&Shell, &ws.env, json!({"command": "true"})).await).to_owned();
    assert!(
        text.contains("could not start") && text.contains("/nonexistent/shell"),
        "{text}"
    );
}

#[test]
fn the_runner_debug_form_shows_no_variable_values() {
    let runner = ShellRunner::new("/bin/bash").with_env_source([("OPENAI_API_KEY", "sk-secret")]);
    let shown = format!("{runner:?}");
    assert!(
        shown.contains("/bin/bash") && shown.contains("1 variables"),
        "{shown}"
    );
    assert!(!shown.contains("sk-secret"), "{shown}");
}
