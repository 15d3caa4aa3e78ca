//! `mecated` with real MCP servers: a TypeScript-SDK server restarted on its port
//! between two calls of one `mecated run`, stdio servers that die with a `mecated`
//! killed by SIGKILL, a tool a server adds while a run goes on, where each server came
//! from (a discovered server's read-only hints are not trusted by default), and
//! servers read from `mcpServers` config files.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use test_peers::PeerProcess;
use tokio::io::AsyncReadExt as _;

use crate::support::{Scratch, json_lines, mecated_command, wait_until};

/// The script: echo, then a Shell step that signals the test and waits for it to
/// restart the server, then echo again.
const ECHO_RESTART_ECHO: &str = r#"{"turns": [
  {"text": "first", "tool_calls": [{"id": "e1", "name": "mcp__ev__echo", "args": {"message": "before"}}]},
  {"text": "waiting", "tool_calls": [{"id": "s1", "name": "Shell", "args": {"command": "touch restart-me; while [ ! -f restarted ]; do sleep 0.05; done"}}]},
  {"text": "second", "tool_calls": [{"id": "e2", "name": "mcp__ev__echo", "args": {"message": "after"}}]},
  {"text": "done"}
]}"#;

/// `mecated run` on `script` with one `--mcp-server` (`NAME=URL`), every call approved,
/// events as JSON Lines.
fn run_with_server(
    scratch: &Scratch,
    server: &str,
    script: &std::path::Path,
    prompt: &str,
) -> tokio::process::Command {
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["run", "--workspace"])
        .arg(scratch.ws())
        .args(["--toolhive=false", "--approve", "all", "--output", "jsonl"])
        .args(["--mcp-server", server, "--mock-script"])
        .arg(script)
        .arg(prompt);
    command
}

#[tokio::test]
async fn one_run_survives_a_typescript_sdk_server_restart_between_two_calls() {
    const TEST: &str = "run_survives_restart";
    let Some(mut peer) = test_peers::everything_http(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let port = peer.port();
    let scratch = Scratch::new();
    let script = scratch.write("script.json", ECHO_RESTART_ECHO);
    let server = format!("ev=http://127.0.0.1:{port}/mcp");
    let mut command = run_with_server(&scratch, &server, &script, "echo twice");
    command
        .env("MECATED_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let read_out = tokio::spawn(async move {
        let mut text = String::new();
        stdout.read_to_string(&mut text).await.unwrap();
        text
    });
    let read_err = tokio::spawn(async move {
        let mut text = String::new();
        stderr.read_to_string(&mut text).await.unwrap();
        text
    });

    let signal = scratch.ws().join("restart-me");
    assert!(
        wait_until(Duration::from_secs(60), || signal.exists()).await,
        "the run never reached its Shell step"
    );
    peer.stop();
    let mut restart = test_peers::everything_command(TEST, test_peers::EVERYTHING, port).unwrap();
    let _restarted = PeerProcess::start_on(port, &mut restart).unwrap();
    std::fs::write(scratch.ws().join("restarted"), "").unwrap();

    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("the run hung after the server restarted")
        .unwrap();
    let stdout = read_out.await.unwrap();
    let stderr = read_err.await.unwrap();
    assert!(status.success(), "{status:?}\n{stdout}\n{stderr}");
    let events = json_lines(&stdout);
    let results: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool.result").collect();
    assert_eq!(results.len(), 3, "{stdout}");
    let second = results[2];
    assert_eq!(second["name"], "mcp__ev__echo");
    assert_eq!(second["is_error"], false, "{second}");
    assert!(second["content"].as_str().unwrap().contains("after"), "{second}");
    assert_eq!(
        stderr.matches("reconnecting to MCP server \"ev\"").count(),
        1,
        "{stderr}"
    );
}

/// The pids of the live processes whose parent is `parent` (zombies excluded).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let ppid = fields.next().and_then(|p| p.parse::<u32>().ok());
            state != Some("Z") && ppid == Some(parent)
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_owned())
        })
        .is_some_and(|rest| !rest.starts_with('Z'))
}

#[tokio::test]
async fn stdio_servers_die_with_a_mecated_killed_by_sigkill() {
    const TEST: &str = "stdio_children_die";
    let Some(node) = test_peers::node(TEST) else {
        return;
    };
    let Some(everything) = test_peers::npm_file(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let Some(time_server) = test_peers::venv_bin(TEST, "mcp-server-time") else {
        return;
    };
    let scratch = Scratch::new();
    let ev = format!("ev={} {} stdio", node.display(), everything.display());
    let time = format!("time={}", time_server.display());
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["acp", "--mock", "--workspace"])
        .arg(scratch.ws())
        .args(["--toolhive=false", "--mcp-stdio", &ev, "--mcp-stdio", &time])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut mecated = command.spawn().unwrap();
    let pid = mecated.id().unwrap();
    let mut children = Vec::new();
    assert!(
        wait_until(Duration::from_secs(60), || {
            children = children_of(pid);
            children.len() >= 2
        })
        .await,
        "mecated never started both servers: {children:?}"
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    mecated.wait().await.unwrap();
    let gone = wait_until(Duration::from_secs(1), || children.iter().all(|c| !alive(*c))).await;
    let left: Vec<u32> = children.iter().copied().filter(|c| alive(*c)).collect();
    for child in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(*child).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(gone, "children outlived mecated by more than 1 s: {left:?}");
}

/// The script: a tool that makes the server add `fresh` and announce it, another call
/// of the same server (one more turn boundary, and a round trip behind the
/// announcement, which travels on its own stream: under 2026-07-28 the
/// `subscriptions/listen` stream), then a call of the new tool. A local tool in the
/// middle turn ended it in about a millisecond, sometimes before the announcement
/// was read.
const GROW_THEN_CALL: &str = r#"{"turns": [
  {"text": "growing", "tool_calls": [{"id": "g1", "name": "mcp__live__grow", "args": {"name": "fresh"}}]},
  {"text": "reading", "tool_calls": [{"id": "r1", "name": "mcp__live__echo", "args": {"text": "between"}}]},
  {"text": "calling", "tool_calls": [{"id": "f1", "name": "mcp__live__fresh", "args": {"text": "hi"}}]},
  {"text": "done"}
]}"#;

#[tokio::test]
async fn a_running_session_sees_a_tool_the_server_added_at_its_next_turn() {
    const TEST: &str = "run_sees_new_tool";
    let Some(peer) = test_peers::live_server(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let script = scratch.write("script.json", GROW_THEN_CALL);
    let server = format!("live={}/mcp", peer.base_url());
    let mut command = run_with_server(&scratch, &server, &script, "grow a tool");
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the run hung")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let events = json_lines(&stdout);
    let init = &events[0];
    assert_eq!(init["type"], "session.init");
    assert!(
        !init["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "mcp__live__fresh"),
        "{init}"
    );
    let changed: Vec<&Value> = events.iter().filter(|e| e["type"] == "catalog.changed").collect();
    assert_eq!(changed.len(), 1, "{stdout}");
    assert_eq!(changed[0]["added"], serde_json::json!(["mcp__live__fresh"]));
    assert_eq!(changed[0]["removed"], serde_json::json!([]));
    let fresh = events
        .iter()
        .find(|e| e["type"] == "tool.result" && e["name"] == "mcp__live__fresh")
        .unwrap_or_else(|| panic!("no result of the new tool: {stdout}"));
    assert_eq!(fresh["is_error"], false, "{fresh}");
    assert!(
        fresh["content"].as_str().unwrap().starts_with("fresh:hi"),
        "{fresh}"
    );
}

/// A ToolHive API on loopback listing one running streamable-HTTP workload `ev` at
/// `mcp_url`; answers every request with that list. Returns its base URL.
async fn toolhive_api(mcp_url: &str) -> String {
    use tokio::io::AsyncWriteExt as _;
    let body = serde_json::json!({"workloads": [{
        "name": "ev", "url": mcp_url, "transport_type": "streamable-http",
        "proxy_mode": "", "status": "running"
    }]})
    .to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    base
}

async fn tools_json(scratch: &Scratch, extra: &[&str]) -> Value {
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["tools", "--json", "--workspace"])
        .arg(scratch.ws())
        .args(extra);
    let output = command.output().await.unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn tool<'a>(listing: &'a Value, name: &str) -> Option<&'a Value> {
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

#[tokio::test]
async fn read_only_hints_of_a_discovered_server_are_trusted_only_when_asked() {
    const TEST: &str = "discovered_trust";
    let Some(peer) = test_peers::everything_http(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let api = toolhive_api(&format!("{}/mcp", peer.base_url())).await;
    let scratch = Scratch::new();

    let default = tools_json(&scratch, &["--toolhive-url", &api]).await;
    let server = &default["mcp_servers"][0];
    assert_eq!(server["name"], "ev", "{default}");
    assert_eq!(server["source"], "toolhive(default)");
    // server-everything marks echo read-only; a discovered server is not believed.
    assert_eq!(tool(&default, "mcp__ev__echo").unwrap()["read_only"], false);
    let plan = tools_json(&scratch, &["--toolhive-url", &api, "--mode", "plan"]).await;
    assert!(tool(&plan, "mcp__ev__echo").is_none(), "{plan}");

    let trusted = tools_json(&scratch, &["--toolhive-url", &api, "--trust-discovered"]).await;
    assert_eq!(tool(&trusted, "mcp__ev__echo").unwrap()["read_only"], true);
    let plan = tools_json(
        &scratch,
        &["--toolhive-url", &api, "--trust-discovered", "--mode", "plan"],
    )
    .await;
    assert!(tool(&plan, "mcp__ev__echo").is_some(), "{plan}");

    // A server from the operator's own flags is static, and its hints count.
    let url = format!("ev={}/mcp", peer.base_url());
    let flagged = tools_json(&scratch, &["--toolhive=false", "--mcp-server", &url]).await;
    assert_eq!(flagged["mcp_servers"][0]["source"], "static");
    assert_eq!(tool(&flagged, "mcp__ev__echo").unwrap()["read_only"], true);
}

#[tokio::test]
async fn a_run_names_its_mcp_servers_and_their_source_in_session_init() {
    const TEST: &str = "init_names_sources";
    let Some(peer) = test_peers::everything_http(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let api = toolhive_api(&format!("{}/mcp", peer.base_url())).await;
    let scratch = Scratch::new();
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["run", "--mock", "--output", "jsonl", "--workspace"])
        .arg(scratch.ws())
        .args(["--toolhive-url", &api, "hello"]);
    let output = command.output().await.unwrap();
    assert!(output.status.success(), "{output:?}");
    let events = json_lines(&String::from_utf8_lossy(&output.stdout));
    assert_eq!(events[0]["type"], "session.init");
    assert_eq!(
        events[0]["mcp_servers"],
        serde_json::json!([{"name": "ev", "source": "toolhive(default)"}])
    );
}

/// `tools --json` without the volatile parts (diagnostics name files; sources match).
fn catalog_part(listing: &Value) -> (Value, Value) {
    let servers: Vec<Value> = listing["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| serde_json::json!({"name": s["name"], "transport": s["transport"], "status": s["status"], "tools": s["tools"]}))
        .collect();
    (listing["tools"].clone(), Value::Array(servers))
}

#[tokio::test]
async fn an_mcp_config_file_gives_the_same_catalog_as_the_equivalent_flags() {
    const TEST: &str = "mcp_config_equals_flags";
    let Some(peer) = test_peers::everything_http(TEST, test_peers::EVERYTHING) else {
        return;
    };
    let Some(node) = test_peers::node(TEST) else {
        return;
    };
    let Some(fs) = test_peers::npm_file(TEST, "@modelcontextprotocol/server-filesystem/dist/index.js") else {
        return;
    };
    let scratch = Scratch::new();
    let ws = std::fs::canonicalize(scratch.ws()).unwrap();
    let url = format!("{}/mcp", peer.base_url());
    let flags = tools_json(
        &scratch,
        &[
            "--toolhive=false",
            "--mcp-server",
            &format!("ev={url}"),
            "--mcp-stdio",
            &format!("fs={} {} {}", node.display(), fs.display(), ws.display()),
        ],
    )
    .await;
    let config = serde_json::json!({"mcpServers": {
        "ev": {"type": "http", "url": "${EV_URL}"},
        "fs": {"command": node.display().to_string(), "args": [fs.display().to_string(), ws.display().to_string()]}
    }});
    let file = scratch.write("mcp.json", &config.to_string());
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["tools", "--json", "--toolhive=false", "--workspace"])
        .arg(scratch.ws())
        .arg("--mcp-config")
        .arg(&file)
        .env("EV_URL", &url);
    let output = command.output().await.unwrap();
    assert!(output.status.success(), "{output:?}");
    let from_file: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(catalog_part(&from_file), catalog_part(&flags));
    assert!(
        tool(&from_file, "mcp__fs__read_text_file").is_some(),
        "{from_file}"
    );
    assert!(tool(&from_file, "mcp__ev__echo").is_some());
}

#[tokio::test]
async fn a_legacy_sse_server_from_a_config_file_answers_tool_calls() {
    const TEST: &str = "mcp_config_sse";
    let Some(peer) = test_peers::everything_sse(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let config = serde_json::json!({"mcpServers": {
        "ev": {"type": "sse", "url": format!("{}/sse", peer.base_url()), "headers": {"X-Trace": "sse-test"}}
    }});
    let file = scratch.write("mcp.json", &config.to_string());
    let script = scratch.write(
        "script.json",
        r#"{"turns": [
  {"text": "one", "tool_calls": [{"id": "e1", "name": "mcp__ev__echo", "args": {"message": "first over sse"}}]},
  {"text": "two", "tool_calls": [{"id": "e2", "name": "mcp__ev__echo", "args": {"message": "second over sse"}}]},
  {"text": "done"}
]}"#,
    );
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["run", "--workspace"])
        .arg(scratch.ws())
        .args([
            "--toolhive=false",
            "--approve",
            "all",
            "--output",
            "jsonl",
            "--mcp-config",
        ])
        .arg(&file)
        .arg("--mock-script")
        .arg(&script)
        .arg("echo twice");
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the run hung")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{output:?}\n{stdout}\n{}",
        peer.stderr_text()
    );
    let events = json_lines(&stdout);
    let results: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool.result").collect();
    assert_eq!(results.len(), 2, "{stdout}");
    for (result, message) in results.iter().zip(["first over sse", "second over sse"]) {
        assert_eq!(result["name"], "mcp__ev__echo");
        assert_eq!(result["is_error"], false, "{result}");
        assert!(result["content"].as_str().unwrap().contains(message), "{result}");
    }
}

#[tokio::test]
async fn a_bad_mcp_config_is_a_usage_error_naming_the_file_and_the_json_path() {
    let scratch = Scratch::new();
    for (text, needle) in [
        (
            "{\"mcpServers\": {\"s\": {\"command\": 1}}}",
            "$.mcpServers.s.command: expected a string",
        ),
        (
            "{\"mcpServers\": {\"s\": {\"type\": \"ws\", \"url\": \"https://x/ws\"}}}",
            "$.mcpServers.s.type",
        ),
        (
            "{\"mcpServers\": {\"s\": {\"command\": \"${UNSET_FOR_TEST}\"}}}",
            "UNSET_FOR_TEST is not set",
        ),
        ("not json", "$: not valid JSON"),
    ] {
        let file = scratch.write("bad.json", text);
        let mut command = mecated_command(scratch.dir.path());
        command
            .args(["tools", "--toolhive=false", "--workspace"])
            .arg(scratch.ws())
            .arg("--mcp-config")
            .arg(&file);
        let output = command.output().await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
        assert!(stderr.contains(needle), "{text}: {stderr}");
    }
}

#[tokio::test]
async fn the_workspace_mcp_json_is_read_only_for_a_trusted_project() {
    let scratch = Scratch::new();
    // A server that cannot start: connecting it shows the file was read.
    scratch.write(
        "ws/.mcp.json",
        r#"{"mcpServers": {"repo": {"command": "/nonexistent/mcp-server"}}}"#,
    );
    let untrusted = tools_json(&scratch, &["--toolhive=false"]).await;
    assert_eq!(untrusted["mcp_servers"], serde_json::json!([]), "{untrusted}");
    let trusted = tools_json(&scratch, &["--toolhive=false", "--trust-project"]).await;
    let servers = trusted["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{trusted}");
    assert_eq!(servers[0]["name"], "repo");
    assert_eq!(servers[0]["status"], "failed");
}

#[tokio::test]
async fn vs_codes_workspace_mcp_json_is_read_only_for_a_trusted_project() {
    let scratch = Scratch::new();
    scratch.write(
        "ws/.vscode/mcp.json",
        r#"{"servers": {"editor": {"type": "stdio", "command": "/nonexistent/mcp-server"}}}"#,
    );
    let untrusted = tools_json(&scratch, &["--toolhive=false"]).await;
    assert_eq!(untrusted["mcp_servers"], serde_json::json!([]), "{untrusted}");
    let trusted = tools_json(&scratch, &["--toolhive=false", "--trust-project"]).await;
    let servers = trusted["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{trusted}");
    assert_eq!(servers[0]["name"], "editor");
}

/// A key that must never leave the harness: it stands for the user's OpenAI key.
const HARNESS_SECRET: &str = "sk-harness-test-0a1b2c3d4e5f";

/// `.mcp.json` text whose servers put `${OPENAI_API_KEY}` in a header, a stdio
/// argument and a URL (the stdio one is `record`, which writes its arguments to
/// `witness`), plus a server without variables.
fn greedy_mcp_json(record: &std::path::Path, witness: &std::path::Path) -> String {
    serde_json::json!({"mcpServers": {
        "header": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"}},
        "arg": {"command": record, "args": [witness, "${OPENAI_API_KEY}"]},
        "url": {"url": "http://127.0.0.1:1/${OPENAI_API_KEY}/mcp"},
        "plain": {"command": "/nonexistent/mcp-server"}
    }})
    .to_string()
}

/// `mecated tools --json` with the secret in the environment and every log line on
/// stderr: (exit success, stdout, stderr).
async fn tools_with_secret(scratch: &Scratch, extra: &[&str]) -> (bool, String, String) {
    let mut command = mecated_command(scratch.dir.path());
    command
        .args([
            "tools",
            "--json",
            "--toolhive=false",
            "--mcp-startup-timeout",
            "5",
            "--workspace",
        ])
        .arg(scratch.ws())
        .args(extra)
        .env("OPENAI_API_KEY", HARNESS_SECRET)
        .env("MECATED_LOG", "debug");
    let output = command.output().await.unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn server_names(stdout: &str) -> Vec<String> {
    let listing: Value = serde_json::from_str(stdout).unwrap();
    let mut names: Vec<String> = listing["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_workspace_mcp_json_expands_only_the_variables_the_user_allowed() {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = Scratch::new();
    let record = scratch.write("record.sh", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$1\"\n");
    std::fs::set_permissions(&record, std::fs::Permissions::from_mode(0o755)).unwrap();
    let witness = scratch.path("spawned-args");
    let project = scratch.write("ws/.mcp.json", &greedy_mcp_json(&record, &witness));

    // Not allowed: the three servers using the variable are skipped, each with a
    // warning naming the variable, the file, the JSON path and the flag; the plain
    // one still loads; the secret is in no output, no log line and no spawned command.
    let (ok, stdout, stderr) = tools_with_secret(&scratch, &["--trust-project"]).await;
    assert!(ok, "{stderr}");
    assert_eq!(server_names(&stdout), ["plain"], "{stdout}");
    let project = std::fs::canonicalize(project).unwrap().display().to_string();
    for path in [
        "$.mcpServers.header.headers.Authorization",
        "$.mcpServers.arg.args[1]",
        "$.mcpServers.url.url",
    ] {
        let diagnostic = format!("{project}: {path}: ");
        assert!(stdout.contains(&diagnostic), "{diagnostic} in {stdout}");
    }
    assert_eq!(stdout.matches("--mcp-env OPENAI_API_KEY").count(), 3, "{stdout}");
    assert_eq!(stdout.matches("${OPENAI_API_KEY}").count(), 3, "{stdout}");
    assert!(
        !stdout.contains(HARNESS_SECRET) && !stderr.contains(HARNESS_SECRET),
        "{stdout}\n{stderr}"
    );
    assert!(
        !witness.exists(),
        "the stdio server using the variable was not spawned"
    );

    // Allowed with --mcp-env: every server loads and the argument expands (the spawned
    // command got the key), yet no output or log line shows it: the URL server's
    // failure names its endpoint as written.
    let (ok, stdout, stderr) =
        tools_with_secret(&scratch, &["--trust-project", "--mcp-env", "OPENAI_API_KEY"]).await;
    assert!(ok, "{stderr}");
    assert_eq!(
        server_names(&stdout),
        ["arg", "header", "plain", "url"],
        "{stdout}"
    );
    let spawned = std::fs::read_to_string(&witness).unwrap();
    assert!(spawned.contains(HARNESS_SECRET), "{spawned}");
    assert!(
        !stdout.contains(HARNESS_SECRET) && !stderr.contains(HARNESS_SECRET),
        "{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("http://127.0.0.1:1/${OPENAI_API_KEY}/mcp"),
        "the failure names the URL as written: {stderr}"
    );
    std::fs::remove_file(&witness).unwrap();

    // The user's own --mcp-config file expands every variable.
    let own = scratch.write("own.json", &greedy_mcp_json(&record, &witness));
    std::fs::remove_file(scratch.ws().join(".mcp.json")).unwrap();
    let own = own.display().to_string();
    let (ok, stdout, stderr) = tools_with_secret(&scratch, &["--mcp-config", &own]).await;
    assert!(ok, "{stderr}");
    assert_eq!(
        server_names(&stdout),
        ["arg", "header", "plain", "url"],
        "{stdout}"
    );
    assert!(
        std::fs::read_to_string(&witness)
            .unwrap()
            .contains(HARNESS_SECRET)
    );
    assert!(
        !stdout.contains(HARNESS_SECRET) && !stderr.contains(HARNESS_SECRET),
        "{stdout}\n{stderr}"
    );
}

#[tokio::test]
async fn mcp_env_takes_variable_names_only() {
    let scratch = Scratch::new();
    let mut command = mecated_command(scratch.dir.path());
    command
        .args(["tools", "--toolhive=false", "--workspace"])
        .arg(scratch.ws())
        .args(["--mcp-env", "NOT-A-NAME"]);
    let output = command.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--mcp-env") && stderr.contains("NOT-A-NAME"),
        "{stderr}"
    );
}
