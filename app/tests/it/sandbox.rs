//! The sandbox through the `mecated` command line on the real kernel: the mode in
//! force in `mecated tools --json` and `session.init`, and `--sandbox off` lifting
//! the confinement of `Shell`.

use serde_json::{Value, json};

use crate::support::{Scratch, json_lines, mecated};

fn landlock(test: &str) -> bool {
    test_peers::kernel_feature(test, "Landlock", sandbox::support().landlock_abi.is_some())
}

async fn tools_sandbox(scratch: &Scratch, extra: &[&str]) -> Value {
    let ws = scratch.ws().display().to_string();
    let mut args = vec!["tools", "--json", "--workspace", ws.as_str(), "--toolhive=false"];
    args.extend(extra);
    let output = mecated(scratch.dir.path(), &args, &[]).await;
    assert_eq!(output.code, 0, "{output:?}");
    let listing: Value = serde_json::from_str(&output.stdout).unwrap();
    listing["sandbox"].clone()
}

/// `mecated run --output jsonl` of `script` with `--approve all` and `extra`.
async fn run(scratch: &Scratch, script: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["--approve", "all", "--output", "jsonl"];
    args.extend(extra);
    args.push("go");
    let output = crate::support::mecated_run(scratch, script, &args).await;
    assert_eq!(output.code, 0, "{output:?}");
    json_lines(&output.stdout)
}

#[tokio::test]
async fn tools_json_and_session_init_state_the_sandbox_in_force() {
    if !landlock("tools_json_and_session_init_state_the_sandbox_in_force") {
        return;
    }
    let scratch = Scratch::new();
    assert_eq!(
        tools_sandbox(&scratch, &[]).await,
        json!({"mode": "workspace-write", "network": true})
    );
    assert_eq!(
        tools_sandbox(&scratch, &["--sandbox", "read-only", "--sandbox-network=false"]).await,
        json!({"mode": "read-only", "network": false})
    );
    assert_eq!(
        tools_sandbox(&scratch, &["--sandbox", "off"]).await,
        json!({"mode": "off", "network": true})
    );
    let events = run(
        &scratch,
        r#"{"turns": [{"text": "hi"}]}"#,
        &["--sandbox-network=false"],
    )
    .await;
    assert_eq!(events[0]["type"], "session.init");
    assert_eq!(
        events[0]["sandbox"],
        json!({"mode": "workspace-write", "network": false})
    );
}

#[tokio::test]
async fn shell_cannot_write_outside_the_workspace_unless_the_sandbox_is_off() {
    if !landlock("shell_cannot_write_outside_the_workspace_unless_the_sandbox_is_off") {
        return;
    }
    let scratch = Scratch::new();
    let outside = scratch.path("outside.txt");
    let script = json!({"turns": [
        {"text": "", "tool_calls": [{"id": "s1", "name": "Shell", "args": {
            "command": format!("echo inside > inside.txt; echo out > '{}'", outside.display())
        }}]},
        {"text": "done"}
    ]})
    .to_string();
    let events = run(&scratch, &script, &[]).await;
    let result = events.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        !outside.exists(),
        "the confined Shell wrote outside the workspace"
    );
    assert!(scratch.ws().join("inside.txt").exists());

    run(&scratch, &script, &["--sandbox", "off"]).await;
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "out\n");
}
