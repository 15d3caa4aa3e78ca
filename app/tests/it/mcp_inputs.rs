//! VS Code's `${input:ID}` in an MCP config file, through the real `mecated`: with no
//! terminal attached, `MCP_INPUT_<ID>` supplies the value; a server whose input has
//! none is skipped with an error naming the file, the input and the variable, and
//! the file's other servers still load.

use serde_json::{Value, json};

use crate::support::{Scratch, json_lines, mecated_command};

const TEST: &str = "an_input_of_an_mcp_config_reaches_the_server_from_its_variable";

/// The value the test supplies: it must reach the server, and no output but the
/// server's own tool result.
const TOKEN: &str = "input-token-7f3a9c";

#[tokio::test]
async fn an_input_of_an_mcp_config_reaches_the_server_from_its_variable() {
    let Some(node) = test_peers::node(TEST) else {
        return;
    };
    let Some(server) = test_peers::npm_file(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let scratch = Scratch::new();
    let stdio = |var: &str| json!({"type": "stdio", "command": node, "args": [server, "stdio"], "env": {"FROM_INPUT": var}});
    let config = scratch.write(
        "mcp.json",
        &json!({
            "inputs": [
                {"type": "promptString", "id": "token", "description": "The server's token", "password": true},
                {"type": "promptString", "id": "absent", "description": "Never given"}
            ],
            "servers": {"ev": stdio("${input:token}"), "locked": stdio("${input:absent}")}
        })
        .to_string(),
    );
    let script = scratch.write(
        "script.json",
        r#"{"turns": [
          {"tool_calls": [{"id": "g1", "name": "mcp__ev__get-env", "args": {}}]},
          {"text": "done"}
        ]}"#,
    );
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["run", "--workspace"])
        .arg(scratch.ws())
        .args(["--toolhive=false", "--approve", "all", "--output", "jsonl"])
        .arg("--mcp-config")
        .arg(&config)
        .arg("--mock-script")
        .arg(&script)
        .arg("show your env")
        .env("MCP_INPUT_TOKEN", TOKEN)
        .env("MECATED_LOG", "debug");
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), command.output())
        .await
        .expect("the run hung")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let events = json_lines(&stdout);
    let init = &events[0];
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"mcp__ev__get-env"), "{init}");
    assert!(!tools.iter().any(|t| t.starts_with("mcp__locked__")), "{init}");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool.result" && e["name"] == "mcp__ev__get-env")
        .unwrap_or_else(|| panic!("no get-env result: {stdout}"));
    assert_eq!(result["is_error"], false, "{result}");
    let env = result["content"].as_str().unwrap();
    assert!(
        env.contains(&format!("\"FROM_INPUT\": \"{TOKEN}\""))
            || env.contains(&format!("\"FROM_INPUT\":\"{TOKEN}\"")),
        "{env}"
    );
    // The skipped server's error names the file, the JSON path, the input and the variable.
    let skipped = format!(
        "{}: $.servers.locked.env.FROM_INPUT: MCP server \"locked\" is skipped: input \"absent\" has no value",
        config.display()
    );
    assert!(stderr.contains(&skipped), "{skipped} in {stderr}");
    assert!(stderr.contains("set MCP_INPUT_ABSENT"), "{stderr}");
    // The value reaches no log line.
    assert!(!stderr.contains(TOKEN), "{stderr}");
}

#[test]
fn on_a_terminal_inputs_are_asked_a_password_without_echo_and_a_pick_by_number() {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = Scratch::new();
    let record = scratch.write("record.sh", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$1\"\n");
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o755)).unwrap();
    let witness = scratch.path("spawned-args");
    let config = scratch.write(
        "mcp.json",
        &json!({
            "inputs": [
                {"type": "promptString", "id": "key", "description": "Key of the record", "password": true},
                {"type": "pickString", "id": "region", "description": "Region", "options": ["eu", "us"], "default": "eu"}
            ],
            "servers": {"rec": {"command": record, "args": [witness, "${input:key}", "${input:region}"]}}
        })
        .to_string(),
    );
    let ws = scratch.ws().display().to_string();
    let config = config.display().to_string();
    let mut pty = crate::support::pty::Pty::spawn(
        scratch.dir.path(),
        &[
            "tools",
            "--json",
            "--toolhive=false",
            "--workspace",
            &ws,
            "--mcp-config",
            &config,
        ],
    );
    pty.wait_for("Key of the record:");
    assert!(pty.screen().contains("MCP_INPUT_KEY"), "{}", pty.screen());
    pty.send("typed-secret-9\r");
    pty.wait_for("1) eu");
    pty.wait_for("Region, 1-2 [default: eu]:");
    pty.send("2\r");
    let status = pty.wait_exit();
    let screen = pty.screen();
    assert!(status.success(), "{status:?}\n{screen}");
    assert!(
        !screen.contains("typed-secret-9"),
        "the password was echoed:\n{screen}"
    );
    assert!(pty.is_cooked(), "raw mode was left on");
    let spawned = std::fs::read_to_string(&witness).unwrap();
    assert!(spawned.contains("typed-secret-9\nus\n"), "{spawned}");
}
