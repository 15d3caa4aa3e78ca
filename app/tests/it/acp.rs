//! `mecated acp` under a real ACP client: capabilities, session
//! creation and its refusals, client MCP servers (stdio and streamable HTTP) kept to
//! their session, the prompt's update stream, permission round trips, cancel, modes,
//! stdout carrying protocol frames only, and input no client should send (bytes that
//! are not UTF-8, overlong and malformed lines) answered without ending the connection.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, ContentBlock, EnvVariable, ImageContent, ListSessionsRequest, LoadSessionRequest,
    McpServer, McpServerHttp, McpServerSse, McpServerStdio, SetSessionModeRequest, StopReason, TextContent,
};
use serde_json::{Value, json};

use crate::support::acp_client::{AcpClient, PATIENCE, alive, children, cmdline, init_tools, tool_records};
use crate::support::mcp_fixture::{FixtureSpec, FixtureTool, McpFixture};
use crate::support::{Scratch, hook_inputs, hook_names, logging_hooks};

const READ_THEN_DONE: &str = r#"{"turns": [
  {"tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "README.md"}}]},
  {"text": "done"}
]}"#;

const WRITE_THEN_DONE: &str = r#"{"turns": [
  {"text": "writing", "tool_calls": [{"id": "w1", "name": "Write", "args": {"path": "out.txt", "content": "hello"}}]},
  {"text": "done"}
]}"#;

/// A scratch workspace, a store, a script, and the agent's arguments.
struct Setup {
    scratch: Scratch,
    args: Vec<String>,
}

impl Setup {
    fn new(script: &str) -> Self {
        let scratch = Scratch::new();
        let script = scratch.write("script.json", script);
        let args = [
            "--workspace",
            &scratch.ws().display().to_string(),
            "--store-dir",
            &scratch.path("store").display().to_string(),
            "--mock-script",
            &script.display().to_string(),
            "--toolhive=false",
        ]
        .map(str::to_owned)
        .to_vec();
        Self { scratch, args }
    }

    fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_owned());
        self
    }

    async fn start(&self) -> AcpClient {
        self.start_with_env(&[]).await
    }

    async fn start_with_env(&self, env: &[(&str, &str)]) -> AcpClient {
        AcpClient::start(self.scratch.dir.path(), &self.args, env).await
    }

    fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.scratch.ws()).unwrap()
    }

    fn store(&self) -> PathBuf {
        self.scratch.path("store")
    }
}

/// Ends the connection (EOF on the agent's stdin) and checks that the agent exits 0.
async fn exits_cleanly(client: AcpClient) {
    let status = client.finish().await.expect("the agent runs on our pipes");
    assert!(status.success(), "mecated acp exited with {status}");
}

fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

/// The agent's text after the last tool update.
fn answer_text(updates: &[Value]) -> String {
    let last_tool = updates
        .iter()
        .rposition(|u| u["sessionUpdate"] == "tool_call_update" || u["sessionUpdate"] == "tool_call")
        .map_or(0, |i| i + 1);
    updates[last_tool..]
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

fn result_text(update: &Value) -> &str {
    update["content"][0]["content"]["text"].as_str().unwrap()
}

fn http_server(name: &str, url: &str) -> McpServer {
    McpServer::Http(McpServerHttp::new(name, url))
}

#[tokio::test]
async fn the_command_line_needs_a_model_and_an_immediate_eof_exits_0() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let no_model = crate::support::mecated(scratch.dir.path(), &["acp", "--workspace", &ws], &[]).await;
    assert_eq!(no_model.code, 2, "{no_model:?}");
    for needle in ["--mock", "--mock-script", "--provider"] {
        assert!(no_model.stderr.contains(needle), "{no_model:?}");
    }
    let bad_workspace = crate::support::mecated(
        scratch.dir.path(),
        &["acp", "--mock", "--workspace", "/no/such/dir"],
        &[],
    )
    .await;
    assert_eq!(bad_workspace.code, 2, "{bad_workspace:?}");
    assert!(bad_workspace.stderr.contains("--workspace"), "{bad_workspace:?}");
    // stdin is /dev/null: EOF before any message.
    let eof = crate::support::mecated(
        scratch.dir.path(),
        &["acp", "--mock", "--toolhive=false", "--workspace", &ws],
        &[],
    )
    .await;
    assert_eq!(eof.code, 0, "{eof:?}");
    assert_eq!(eof.stdout, "", "{eof:?}");
}

#[tokio::test]
async fn initialize_advertises_v1_text_prompts_and_http_mcp_only() {
    let setup = Setup::new(READ_THEN_DONE);
    // Launched the way an editor built on the crate launches an agent.
    let client = AcpClient::start_acp_agent(setup.scratch.dir.path(), &setup.args).await;
    let init = serde_json::to_value(&client.init).unwrap();
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentInfo"]["name"], "mecated");
    assert_eq!(init["agentInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(init["authMethods"], json!([]));
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(
        caps["sessionCapabilities"],
        json!({"list": {}, "resume": {}, "close": {}, "additionalDirectories": {}})
    );
    assert_eq!(
        caps["promptCapabilities"],
        json!({"image": false, "audio": false, "embeddedContext": true})
    );
    assert_eq!(caps["mcpCapabilities"], json!({"http": true, "sse": false}));
    assert_eq!(client.finish().await, None);
}

#[tokio::test]
async fn session_new_answers_an_id_and_modes_then_the_command_palette() {
    let setup = Setup::new(READ_THEN_DONE);
    let commands = setup.scratch.write(
        "commands/hello.md",
        "---\ndescription: Say hello\n---\nSay hello to $ARGUMENTS.\n",
    );
    let commands = commands.parent().unwrap().display().to_string();
    let setup = setup.arg("--commands-dir").arg(&commands);
    let mut client = setup.start().await;
    let response = client.new_session(&setup.ws(), Vec::new()).await.unwrap();
    let response = serde_json::to_value(&response).unwrap();
    let id = response["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    assert_eq!(response["modes"]["currentModeId"], "default");
    let modes: Vec<&str> = response["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["default", "plan", "acceptEdits"]);

    let palette = client.next_update().await;
    assert_eq!(*palette.session_id.0, *id);
    let palette = serde_json::to_value(&palette.update).unwrap();
    assert_eq!(palette["sessionUpdate"], "available_commands_update");
    assert_eq!(
        palette["availableCommands"],
        json!([{"name": "hello", "description": "Say hello"}])
    );
    // Created before its first prompt: the store holds it already.
    let listed = std::fs::read_dir(setup.store().join("sid-v1"))
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().ends_with(".session.json"));
    assert!(listed);
    exits_cleanly(client).await;
}

#[tokio::test]
async fn session_new_refuses_a_cwd_outside_the_workspace_and_an_sse_server_connecting_nothing() {
    let good = McpFixture::start(FixtureSpec::tools("good:", &["echo"])).await;
    let setup = Setup::new(READ_THEN_DONE);
    let client = setup.start().await;

    let outside = setup.scratch.dir.path().to_path_buf();
    let error = client
        .new_session(&outside, vec![http_server("good", &good.url)])
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(
        error.message.contains(&outside.display().to_string()),
        "{error:?}"
    );
    assert!(error.message.contains("outside the workspace"), "{error:?}");

    let relative = client
        .new_session(std::path::Path::new("ws"), Vec::new())
        .await
        .unwrap_err();
    assert_eq!(relative.code, ErrorCode::INVALID_PARAMS);

    let sse = McpServer::Sse(McpServerSse::new("legacy", "http://127.0.0.1:9/sse"));
    let error = client
        .new_session(&setup.ws(), vec![http_server("good", &good.url), sse])
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert!(error.message.contains("\"legacy\""), "{error:?}");
    assert!(error.message.contains("SSE"), "{error:?}");
    assert!(!error.message.contains("\"good\""), "{error:?}");
    assert_eq!(error.data, Some(json!({"servers": ["legacy"]})));

    assert_eq!(good.requests(), 0, "nothing was connected");
    exits_cleanly(client).await;
}

#[tokio::test]
async fn an_unreachable_client_server_fails_the_session_naming_it() {
    let setup = Setup::new(READ_THEN_DONE);
    let client = setup.start().await;
    let port = test_peers::free_port();
    let error = client
        .new_session(
            &setup.ws(),
            vec![http_server("dead", &format!("http://127.0.0.1:{port}/mcp"))],
        )
        .await
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
    assert!(error.message.contains("\"dead\""), "{error:?}");
    exits_cleanly(client).await;
}

const TEST_FS: &str = "a_stdio_filesystem_server_serves_its_session_only_and_exits_with_the_connection";

#[tokio::test]
async fn a_stdio_filesystem_server_serves_its_session_only_and_exits_with_the_connection() {
    let Some(node) = test_peers::node(TEST_FS) else {
        return;
    };
    let Some(server) = test_peers::npm_file(TEST_FS, "@modelcontextprotocol/server-filesystem/dist/index.js")
    else {
        return;
    };
    let setup = Setup::new(
        r#"{"turns": [
          {"tool_calls": [{"id": "d1", "name": "mcp__fs__list_allowed_directories", "args": {}}]},
          {"text": "done"}
        ]}"#,
    );
    let mut client = setup.start().await;
    let ws = setup.ws();
    // No `type`: ACP's baseline stdio transport.
    let stdio = McpServer::Stdio(
        McpServerStdio::new("fs", node).args(vec![server.display().to_string(), ws.display().to_string()]),
    );
    let with_fs = client.session(&ws, vec![stdio]).await;
    let without = client.session(&ws, Vec::new()).await;

    let agent = client.pid();
    let child = children(agent)
        .into_iter()
        .find(|pid| cmdline(*pid).contains("server-filesystem"))
        .expect("the stdio server is a child of mecated");

    let response = client.prompt(&with_fs, "where may you look?").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&with_fs);
    let results = of_kind(&updates, "tool_call_update");
    assert_eq!(results.len(), 1, "{updates:#?}");
    assert_eq!(results[0]["status"], "completed", "{updates:#?}");
    assert!(
        result_text(results[0]).contains(&ws.display().to_string()),
        "{updates:#?}"
    );
    let tools = init_tools(&setup.store(), &with_fs);
    assert!(tools.iter().any(|t| t == "mcp__fs__read_text_file"), "{tools:?}");

    let response = client.prompt(&without, "where may you look?").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&without);
    let results = of_kind(&updates, "tool_call_update");
    assert_eq!(results[0]["status"], "failed", "{updates:#?}");
    assert!(result_text(results[0]).contains("no such tool"), "{updates:#?}");
    let tools = init_tools(&setup.store(), &without);
    assert!(!tools.iter().any(|t| t.starts_with("mcp__fs__")), "{tools:?}");

    assert!(alive(child));
    exits_cleanly(client).await;
    assert!(
        crate::support::wait_until(PATIENCE, || !alive(child)).await,
        "the stdio server outlived the connection"
    );
}

const TEST_ENV: &str = "a_stdio_server_gets_the_entrys_env_and_none_of_the_harness_credentials";

#[tokio::test]
async fn a_stdio_server_gets_the_entrys_env_and_none_of_the_harness_credentials() {
    let Some(node) = test_peers::node(TEST_ENV) else {
        return;
    };
    let Some(server) =
        test_peers::npm_file(TEST_ENV, "@modelcontextprotocol/server-everything/dist/index.js")
    else {
        return;
    };
    let setup = Setup::new(
        r#"{"turns": [
          {"tool_calls": [{"id": "g1", "name": "mcp__ev__get-env", "args": {}}]},
          {"text": "done"}
        ]}"#,
    );
    let mut client = setup
        .start_with_env(&[
            ("OPENAI_API_KEY", "sk-harness-secret"),
            ("MCP_EV_TOKEN", "harness-token"),
        ])
        .await;
    let stdio = McpServer::Stdio(
        McpServerStdio::new("ev", node)
            .args(vec![server.display().to_string(), "stdio".to_owned()])
            .env(vec![EnvVariable::new("FROM_THE_EDITOR", "yes")]),
    );
    let session = client.session(&setup.ws(), vec![stdio]).await;
    let response = client.prompt(&session, "show your env").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&session);
    let result = of_kind(&updates, "tool_call_update")[0];
    assert_eq!(result["status"], "completed", "{result}");
    let env = result_text(result);
    assert!(env.contains("FROM_THE_EDITOR"), "{env}");
    assert!(!env.contains("sk-harness-secret"), "{env}");
    assert!(!env.contains("harness-token"), "{env}");
    exits_cleanly(client).await;
}

const TEST_EDITOR: &str = "an_editor_session_calls_a_core_tool_and_a_client_http_mcp_tool";

#[tokio::test]
async fn an_editor_session_calls_a_core_tool_and_a_client_http_mcp_tool() {
    let Some(everything) = test_peers::everything_http(
        TEST_EDITOR,
        "@modelcontextprotocol/server-everything/dist/index.js",
    ) else {
        return;
    };
    let setup = Setup::new(
        r#"{"turns": [
          {"text": "looking", "tool_calls": [
            {"id": "r1", "name": "Read", "args": {"path": "README.md"}},
            {"id": "e1", "name": "mcp__ev__echo", "args": {"message": "hi from the editor"}}]},
          {"text": "done"}
        ]}"#,
    );
    let mut client = setup.start().await;
    let url = format!("{}/mcp", everything.base_url());
    let session = client.session(&setup.ws(), vec![http_server("ev", &url)]).await;
    let response = client.prompt(&session, "read and echo").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&session);
    let calls = of_kind(&updates, "tool_call");
    let ids: Vec<&str> = calls.iter().map(|c| c["toolCallId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r1", "e1"]);
    assert!(
        calls[1]["kind"].is_null(),
        "`other` is the default kind, left off the wire"
    );
    assert_eq!(calls[1]["title"], "mcp__ev__echo message=hi from the editor");
    let results = of_kind(&updates, "tool_call_update");
    let read = results.iter().find(|u| u["toolCallId"] == "r1").unwrap();
    let echo = results.iter().find(|u| u["toolCallId"] == "e1").unwrap();
    assert_eq!(read["status"], "completed");
    assert!(result_text(read).contains("# test workspace"));
    assert_eq!(echo["status"], "completed", "{updates:#?}");
    assert!(result_text(echo).contains("hi from the editor"), "{updates:#?}");
    assert_eq!(answer_text(&updates), "done");
    exits_cleanly(client).await;
}

#[tokio::test]
async fn a_read_then_text_prompt_streams_the_call_its_result_and_the_answer() {
    let setup = Setup::new(READ_THEN_DONE);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let response = client.prompt(&session, "what is in the README?").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);

    let updates: Vec<Value> = client
        .updates_of(&session)
        .into_iter()
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .collect();
    assert_eq!(
        updates[0],
        json!({
            "sessionUpdate": "tool_call", "toolCallId": "r1", "title": "Read README.md",
            "kind": "read", "rawInput": {"path": "README.md"}
        }),
        "pending is the default status, so it is not on the wire"
    );
    assert_eq!(updates[1]["sessionUpdate"], "tool_call_update");
    assert_eq!(updates[1]["toolCallId"], "r1");
    assert_eq!(updates[1]["status"], "completed");
    assert_eq!(result_text(&updates[1]), "1\t# test workspace");
    assert!(
        updates[2..]
            .iter()
            .all(|u| u["sessionUpdate"] == "agent_message_chunk"),
        "{updates:#?}"
    );
    assert_eq!(answer_text(&updates), "done");
    assert_eq!(tool_records(&setup.store(), &session).len(), 1);
    exits_cleanly(client).await;
}

#[tokio::test]
async fn an_answer_cut_off_by_the_output_limit_stops_with_max_tokens() {
    let setup = Setup::new(r#"{"turns": [{"text": "the first half", "stop": "max_tokens"}]}"#);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let response = client.prompt(&session, "explain").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(answer_text(&client.updates_of(&session)), "the first half");
    exits_cleanly(client).await;
}

#[tokio::test]
async fn prompts_become_text_and_binary_content_is_refused() {
    let setup = Setup::new(r#"{"turns": [{"text": "noted"}]}"#);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let image = client
        .send_prompt_blocks(
            &session,
            vec![
                ContentBlock::Text(TextContent::new("look")),
                ContentBlock::Image(ImageContent::new("AAAA", "image/png")),
            ],
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(image.code, ErrorCode::INVALID_PARAMS);
    assert!(image.message.contains("image"), "{image:?}");

    let unknown = client
        .prompt("0123456789abcdef0123456789abcdef", "hi")
        .await
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::RESOURCE_NOT_FOUND);

    let response = client.prompt(&session, "hello").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(answer_text(&client.updates_of(&session)), "noted");
    exits_cleanly(client).await;
}

#[tokio::test]
async fn a_write_ask_allowed_once_runs_the_write() {
    let setup = Setup::new(WRITE_THEN_DONE);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let pending = client.send_prompt(&session, "write it");
    let ask = client.next_ask().await;
    let request = ask.json();
    assert_eq!(request["sessionId"], session);
    assert_eq!(request["toolCall"]["toolCallId"], "w1");
    assert_eq!(request["toolCall"]["kind"], "edit");
    assert_eq!(
        request["toolCall"]["rawInput"],
        json!({"path": "out.txt", "content": "hello"})
    );
    let options: Vec<(&str, &str)> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        [
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("reject_once", "reject_once")
        ]
    );
    ask.select("allow_once");
    let response = pending.await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);

    let updates = client.updates_of(&session);
    let w1: Vec<&str> = updates
        .iter()
        .filter(|u| u["toolCallId"] == "w1")
        .map(|u| u["status"].as_str().unwrap_or("pending"))
        .collect();
    assert_eq!(w1, ["pending", "in_progress", "completed"], "{updates:#?}");
    assert_eq!(
        std::fs::read_to_string(setup.ws().join("out.txt")).unwrap(),
        "hello"
    );
    let records = tool_records(&setup.store(), &session);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0]["approval"],
        json!({"by": "user", "verdict": "allow_once"})
    );
    exits_cleanly(client).await;
}

#[tokio::test]
async fn a_write_ask_rejected_or_cancelled_fails_the_call_and_records_the_users_denial() {
    let setup = Setup::new(WRITE_THEN_DONE);
    let mut client = setup.start().await;
    for answer in ["reject_once", "cancelled"] {
        let session = client.session(&setup.ws(), Vec::new()).await;
        let pending = client.send_prompt(&session, "write it");
        let ask = client.next_ask().await;
        if answer == "cancelled" {
            ask.cancel();
        } else {
            ask.select(answer);
        }
        let response = pending.await.unwrap().unwrap();
        assert_eq!(response.stop_reason, StopReason::EndTurn, "{answer}");
        let updates = client.updates_of(&session);
        let w1: Vec<&Value> = updates.iter().filter(|u| u["toolCallId"] == "w1").collect();
        assert_eq!(w1.len(), 2, "{answer}: {updates:#?}");
        assert_eq!(w1[1]["status"], "failed", "{answer}");
        assert!(result_text(w1[1]).contains("denied"), "{answer}: {}", w1[1]);
        assert_eq!(answer_text(&updates), "done", "{answer}");
        let records = tool_records(&setup.store(), &session);
        assert_eq!(records.len(), 1, "{answer}: {records:?}");
        assert_eq!(
            records[0]["approval"],
            json!({"by": "user", "verdict": "deny"}),
            "{answer}"
        );
        assert_eq!(records[0]["is_error"], true, "{answer}");
        assert_eq!(records[0]["took_micros"], 0, "{answer}: a refused call never ran");
    }
    assert!(!setup.ws().join("out.txt").exists());
    exits_cleanly(client).await;
}

#[tokio::test]
async fn session_cancel_during_a_slow_turn_answers_cancelled_at_once() {
    let setup = Setup::new(
        r#"{"turns": [
          {"tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "README.md"}}]},
          {"delay_ms": 5000, "text": "too late"}
        ]}"#,
    );
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let started = Instant::now();
    let pending = client.send_prompt(&session, "take your time");

    // The first turn's result: the slow turn is next.
    loop {
        let update = serde_json::to_value(&client.next_update().await.update).unwrap();
        if update["sessionUpdate"] == "tool_call_update" {
            break;
        }
    }
    // While it runs: a second prompt and a mode change are refused.
    let second = client.prompt(&session, "again").await.unwrap_err();
    assert_eq!(second.code, ErrorCode::INVALID_REQUEST);
    assert!(second.message.contains("in progress"), "{second:?}");
    let mode = client
        .cx
        .send_request(SetSessionModeRequest::new(session.clone(), "plan"))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(mode.code, ErrorCode::INVALID_REQUEST, "{mode:?}");

    let cancelled_at = Instant::now();
    client
        .cx
        .send_notification(agent_client_protocol::v1::schema::CancelNotification::new(
            session.clone(),
        ))
        .unwrap();
    let response = pending.await.unwrap().unwrap();
    let waited = cancelled_at.elapsed();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    // The model would still be waiting for 30 s: any answer well before that is the
    // cancellation's.
    assert!(waited < Duration::from_secs(3), "cancelled after {waited:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(answer_text(&client.updates_of(&session)).is_empty());

    // The session goes on.
    let response = client.prompt(&session, "once more").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    exits_cleanly(client).await;
}

#[tokio::test]
async fn session_cancel_denies_a_pending_ask() {
    let setup = Setup::new(WRITE_THEN_DONE);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let pending = client.send_prompt(&session, "write it");
    let ask = client.next_ask().await;
    client
        .cx
        .send_notification(agent_client_protocol::v1::schema::CancelNotification::new(
            session.clone(),
        ))
        .unwrap();
    let response = pending.await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    // The client's late answer changes nothing.
    ask.select("allow_once");
    let updates = client.updates_of(&session);
    let w1: Vec<&Value> = updates.iter().filter(|u| u["toolCallId"] == "w1").collect();
    assert_eq!(w1.last().unwrap()["status"], "failed", "{updates:#?}");
    // The pending ask was denied by the cancel: the user's decision, recorded.
    let records = tool_records(&setup.store(), &session);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["approval"], json!({"by": "user", "verdict": "deny"}));
    assert!(!setup.ws().join("out.txt").exists());
    exits_cleanly(client).await;
}

#[tokio::test]
async fn plan_mode_refuses_a_scripted_write_without_asking_and_records_the_modes_refusal() {
    let setup = Setup::new(WRITE_THEN_DONE);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;

    let bad = client
        .cx
        .send_request(SetSessionModeRequest::new(session.clone(), "sideways"))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::INVALID_PARAMS);
    assert!(bad.message.contains("sideways"), "{bad:?}");

    client
        .cx
        .send_request(SetSessionModeRequest::new(session.clone(), "plan"))
        .block_task()
        .await
        .unwrap();
    let updates = client.updates_of(&session);
    let n = updates.len();
    assert_eq!(
        updates[n - 2],
        json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})
    );
    // The mode config option follows.
    assert_eq!(updates[n - 1]["sessionUpdate"], "config_option_update");
    let mode = updates[n - 1]["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["id"] == "mode")
        .unwrap();
    assert_eq!(mode["currentValue"], "plan");

    let response = client.prompt(&session, "write it").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(!client.has_ask(), "plan mode never asks");
    let updates = client.updates_of(&session);
    let w1: Vec<&Value> = updates.iter().filter(|u| u["toolCallId"] == "w1").collect();
    assert_eq!(w1.len(), 2, "{updates:#?}");
    assert_eq!(w1[1]["status"], "failed");
    assert!(
        result_text(w1[1]).contains("not available in plan mode"),
        "{}",
        w1[1]
    );
    let records = tool_records(&setup.store(), &session);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["approval"], json!({"by": "mode", "verdict": "deny"}));
    assert!(!setup.ws().join("out.txt").exists());
    exits_cleanly(client).await;
}

#[tokio::test]
async fn a_sessions_client_servers_stay_in_that_session() {
    let cli = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("echo"), FixtureTool::read_only("ping")],
        prefix: "cli:".to_owned(),
        resources: Vec::new(),
    })
    .await;
    let setup = Setup::new(
        r#"{"turns": [
          {"tool_calls": [{"id": "e1", "name": "mcp__cli__echo", "args": {"text": "hi"}}]},
          {"text": "done"}
        ]}"#,
    );
    let mut client = setup.start().await;
    let a = client
        .session(&setup.ws(), vec![http_server("cli", &cli.url)])
        .await;
    let b = client.session(&setup.ws(), Vec::new()).await;

    let response = client.prompt(&b, "echo").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&b);
    let result = of_kind(&updates, "tool_call_update")[0];
    assert_eq!(result["status"], "failed");
    assert!(
        result_text(result).contains("no such tool: \"mcp__cli__echo\""),
        "{result}"
    );
    let b_tools = init_tools(&setup.store(), &b);
    assert!(b_tools.iter().any(|t| t == "Read"), "{b_tools:?}");
    assert!(
        !b_tools.iter().any(|t| t.starts_with("mcp__cli__")),
        "{b_tools:?}"
    );
    assert!(cli.calls().is_empty(), "B never reached the server");

    let response = client.prompt(&a, "echo").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&a);
    let result = of_kind(&updates, "tool_call_update")[0];
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result_text(result), "cli:hi");
    let a_tools = init_tools(&setup.store(), &a);
    assert!(a_tools.iter().any(|t| t == "mcp__cli__echo"), "{a_tools:?}");
    assert!(a_tools.iter().any(|t| t == "mcp__cli__ping"), "{a_tools:?}");

    exits_cleanly(client).await;
    assert!(
        crate::support::wait_until(PATIENCE, || cli.deletes() == 1).await,
        "the connection's end closed A's client server"
    );
}

#[tokio::test]
async fn stdout_carries_protocol_frames_only_and_eof_exits_0() {
    let setup = Setup::new(READ_THEN_DONE);
    let mut client = setup.start_with_env(&[("MECATED_LOG", "debug")]).await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let response = client.prompt(&session, "read").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let _ = client.updates_of(&session);
    let (stdout, stderr) = {
        let lines = client.lines();
        (lines.stdout.clone(), lines.stderr.len())
    };
    exits_cleanly(client).await;
    assert!(stdout.len() >= 5, "{stdout:#?}");
    for line in &stdout {
        let frame: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        assert!(
            frame.get("method").is_some() || frame.get("result").is_some() || frame.get("error").is_some(),
            "{line}"
        );
    }
    assert!(stderr > 0, "debug logs go to stderr");
}

/// `mecated acp` on raw pipes: bytes in, JSON-RPC lines out (for inputs no client
/// library would send).
struct RawAgent {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

impl RawAgent {
    fn start(setup: &Setup) -> Self {
        let mut child = crate::support::mecated_command(setup.scratch.dir.path())
            .arg("acp")
            .args(&setup.args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mecated starts");
        let stdin = child.stdin.take();
        let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    /// Writes `bytes` (a task of its own: a long write and the agent's answers
    /// interleave through the pipes).
    async fn send(&mut self, bytes: Vec<u8>) {
        use tokio::io::AsyncWriteExt as _;
        let mut stdin = self.stdin.take().unwrap();
        let written = tokio::spawn(async move {
            stdin.write_all(&bytes).await.unwrap();
            stdin.flush().await.unwrap();
            stdin
        });
        self.stdin = Some(tokio::time::timeout(PATIENCE, written).await.unwrap().unwrap());
    }

    /// The next line the agent writes, raw.
    async fn line(&mut self) -> String {
        use tokio::io::AsyncBufReadExt as _;
        let mut line = String::new();
        let read = tokio::time::timeout(PATIENCE, self.stdout.read_line(&mut line))
            .await
            .expect("the agent answers")
            .unwrap();
        assert!(read > 0, "the agent closed stdout");
        line
    }

    /// Sends `initialize` with `id` and checks that it is answered.
    async fn initialize(&mut self, id: u64) {
        let request =
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {"protocolVersion": 1}});
        self.send(format!("{request}\n").into_bytes()).await;
        let line = self.line().await;
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{line}");
        assert_eq!(answer["result"]["agentInfo"]["name"], "mecated", "{line}");
    }

    /// The agent's peak resident memory in KiB (`VmHWM`).
    fn peak_rss_kib(&self) -> u64 {
        let pid = self.child.id().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Closes stdin and checks that the agent exits 0.
    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "mecated acp exited with {status}");
    }
}

/// Checks that `line` is a parse-error answer: `id` null, code -32700.
fn assert_parse_error(line: &str) {
    let answer: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    assert_eq!(answer["jsonrpc"], "2.0", "{line}");
    assert_eq!(answer["id"], Value::Null, "{line}");
    assert_eq!(answer["error"]["code"], -32700, "{line}");
}

#[tokio::test]
async fn a_line_with_invalid_utf8_is_a_parse_error_and_the_connection_goes_on() {
    let setup = Setup::new(READ_THEN_DONE);
    let mut agent = RawAgent::start(&setup);
    agent
        .send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initia\xFFlize\",\"params\":{}}\n".to_vec())
        .await;
    let line = agent.line().await;
    assert_parse_error(&line);
    assert!(line.contains("UTF-8"), "{line}");
    agent.initialize(2).await;
    agent.finish().await;
}

#[tokio::test]
async fn an_overlong_line_is_refused_without_being_buffered_and_the_next_request_is_answered() {
    let setup = Setup::new(READ_THEN_DONE);
    let mut agent = RawAgent::start(&setup);
    agent.initialize(1).await;

    let mut nine_mib = vec![b'a'; 9 * 1024 * 1024];
    nine_mib.push(b'\n');
    agent.send(nine_mib).await;
    let line = agent.line().await;
    assert_parse_error(&line);
    assert!(line.contains("limit"), "{line}");
    assert!(line.len() < 1024, "{} bytes", line.len());
    agent.initialize(2).await;

    // Far past the cap, the agent's memory grows by at most about the cap: the line
    // is discarded as it is read, never held whole.
    let before = agent.peak_rss_kib();
    let mut huge = b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":\"".to_vec();
    huge.resize(huge.len() + 64 * 1024 * 1024, b'b');
    huge.extend_from_slice(b"\"}\n");
    agent.send(huge).await;
    assert_parse_error(&agent.line().await);
    agent.initialize(4).await;
    let grown_mib = agent.peak_rss_kib().saturating_sub(before) / 1024;
    assert!(
        grown_mib < 32,
        "peak memory grew by {grown_mib} MiB for a 64 MiB line"
    );
    agent.finish().await;
}

#[tokio::test]
async fn a_malformed_megabyte_line_gets_a_short_parse_error() {
    let setup = Setup::new(READ_THEN_DONE);
    let mut agent = RawAgent::start(&setup);
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":".to_vec();
    line.resize(line.len() + 1024 * 1024, b'x');
    line.push(b'\n');
    agent.send(line).await;
    let answer = agent.line().await;
    assert_parse_error(&answer);
    assert!(answer.len() < 1024, "{} bytes", answer.len());
    assert!(answer.contains("not valid JSON"), "{answer}");
    // A short malformed line is still quoted back whole, as before.
    agent.send(b"{oops\n".to_vec()).await;
    let short = agent.line().await;
    assert_parse_error(&short);
    assert!(short.contains("{oops"), "{short}");
    agent.initialize(2).await;
    agent.finish().await;
}

const READ_WRITE_DONE_THEN_MORE: &str = r#"{"turns": [
  {"text": "looking", "tool_calls": [
    {"id": "r1", "name": "Read", "args": {"path": "README.md"}},
    {"id": "w1", "name": "Write", "args": {"path": "out.txt", "content": "hello"}}
  ]},
  {"text": "done"},
  {"text": "continued"}
]}"#;

#[tokio::test]
async fn session_load_replays_the_stored_conversation_and_the_next_prompt_continues_it() {
    let setup = Setup::new(READ_WRITE_DONE_THEN_MORE);
    std::fs::write(setup.ws().join("README.md"), "hello readme\n").unwrap();
    let mut first = setup.start().await;
    let session = first.session(&setup.ws(), Vec::new()).await;
    let pending = first.send_prompt(&session, "read the readme\nand write");
    first.next_ask().await.select("reject_once");
    assert_eq!(pending.await.unwrap().unwrap().stop_reason, StopReason::EndTurn);
    exits_cleanly(first).await;

    // Another editor process, same store: the session is listed, then loaded.
    let mut second = setup.start().await;
    let listed = second
        .cx
        .send_request(ListSessionsRequest::new().cwd(setup.ws()))
        .block_task()
        .await
        .unwrap();
    let listed = serde_json::to_value(&listed).unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], session);
    assert_eq!(listed["sessions"][0]["title"], "read the readme");
    assert_eq!(listed["sessions"][0]["cwd"], setup.ws().display().to_string());
    assert!(listed.get("nextCursor").is_none(), "{listed}");

    let loaded = second
        .cx
        .send_request(LoadSessionRequest::new(session.clone(), setup.ws()))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&loaded).unwrap()["modes"]["currentModeId"],
        "default"
    );
    // Updates are delivered before the answer they belong to.
    let replayed: Vec<Value> = second
        .updates_of(&session)
        .into_iter()
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .collect();
    let shape: Vec<(String, String)> = replayed
        .iter()
        .map(|u| {
            let kind = u["sessionUpdate"].as_str().unwrap();
            // A tool call's status defaults to `pending` (omitted on the wire).
            let status = match u["status"].as_str() {
                Some(status) => status,
                None if kind == "tool_call" => "pending",
                None => "",
            };
            (kind.to_owned(), status.to_owned())
        })
        .collect();
    let expected = [
        ("user_message_chunk", ""),
        ("agent_message_chunk", ""),
        ("tool_call", "pending"),
        ("tool_call", "pending"),
        ("tool_call_update", "completed"),
        ("tool_call_update", "failed"),
        ("agent_message_chunk", ""),
    ];
    assert_eq!(
        shape,
        expected.map(|(a, b)| (a.to_owned(), b.to_owned())),
        "{replayed:#?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "read the readme\nand write");
    assert_eq!(replayed[1]["content"]["text"], "looking");
    assert_eq!(replayed[2]["toolCallId"], "r1");
    assert_eq!(replayed[2]["rawInput"], json!({"path": "README.md"}));
    assert!(result_text(&replayed[4]).contains("hello readme"));
    assert_eq!(replayed[5]["toolCallId"], "w1");
    assert!(result_text(&replayed[5]).contains("denied"));
    assert_eq!(replayed[6]["content"]["text"], "done");

    // The next prompt continues the conversation: the model sees the earlier turns
    // (the scripted model answers by how many assistant turns it was sent).
    let response = second.prompt(&session, "go on").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(answer_text(&second.updates_of(&session)), "continued");

    // Loading it again on this connection is refused while it is open.
    let again = second
        .cx
        .send_request(LoadSessionRequest::new(session.clone(), setup.ws()))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::INVALID_REQUEST);
    assert!(again.message.contains("already open"), "{again:?}");
    exits_cleanly(second).await;
}

#[tokio::test]
async fn session_load_refuses_an_unknown_session_and_a_cwd_outside_the_workspace() {
    let setup = Setup::new(READ_THEN_DONE);
    let client = setup.start().await;
    let unknown = client
        .cx
        .send_request(LoadSessionRequest::new("0123abcd", setup.ws()))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::RESOURCE_NOT_FOUND);
    assert!(unknown.message.contains("\"0123abcd\""), "{unknown:?}");
    assert!(unknown.message.contains("session/list"), "{unknown:?}");
    let session = client.session(&setup.ws(), Vec::new()).await;
    client
        .cx
        .send_request(CloseSessionRequest::new(session.clone()))
        .block_task()
        .await
        .unwrap();
    let outside = client
        .cx
        .send_request(LoadSessionRequest::new(session, setup.scratch.dir.path()))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(outside.code, ErrorCode::INVALID_PARAMS);
    assert!(outside.message.contains("outside the workspace"), "{outside:?}");
    exits_cleanly(client).await;
}

/// Stores, straight into the JSONL store of `setup`, a session with one user message,
/// recorded for `cwd` (`None`: no directory, as older `mecated run` and HTTP sessions
/// were stored).
async fn store_foreign_session(setup: &Setup, id: &str, cwd: Option<PathBuf>) {
    use engine_ports::{Message, PermissionMode, SessionId, SessionSnapshot, SessionStore as _};
    let store =
        adapter_jsonlstore::JsonlStore::open(setup.store(), adapter_jsonlstore::StoreOptions::default())
            .unwrap();
    let mut snapshot = SessionSnapshot::new(SessionId::from(id), PermissionMode::Default);
    snapshot.cwd = cwd;
    snapshot.conversation.push(Message::User {
        text: format!("the task of {id}"),
    });
    store.create(&snapshot).await.unwrap();
    store.close().unwrap();
}

#[tokio::test]
async fn sessions_of_another_workspace_or_without_a_directory_are_neither_listed_nor_loaded() {
    let setup = Setup::new(READ_THEN_DONE);
    let other = setup.scratch.path("other-project");
    std::fs::create_dir_all(&other).unwrap();
    let other = std::fs::canonicalize(other).unwrap();
    store_foreign_session(&setup, "foreign-1", Some(other.clone())).await;
    store_foreign_session(&setup, "no-dir-1", None).await;
    // A directory whose name only starts like the workspace's is another one.
    let sibling = PathBuf::from(format!("{}-old", setup.ws().display()));
    store_foreign_session(&setup, "sibling-1", Some(sibling)).await;

    let client = setup.start().await;
    let own = client.session(&setup.ws(), Vec::new()).await;
    for request in [
        ListSessionsRequest::new(),
        ListSessionsRequest::new().cwd(setup.ws()),
    ] {
        let listed = client.cx.send_request(request).block_task().await.unwrap();
        let ids: Vec<String> = listed
            .sessions
            .iter()
            .map(|s| s.session_id.0.to_string())
            .collect();
        assert_eq!(
            ids,
            std::slice::from_ref(&own),
            "only the workspace's own session is listed"
        );
    }
    let unknown = client
        .cx
        .send_request(LoadSessionRequest::new("never-stored", setup.ws()))
        .block_task()
        .await
        .unwrap_err();
    for id in ["foreign-1", "no-dir-1", "sibling-1"] {
        let refused = client
            .cx
            .send_request(LoadSessionRequest::new(id, setup.ws()))
            .block_task()
            .await
            .unwrap_err();
        // The same answer as for a session that was never stored: nothing says it
        // exists, nor where.
        assert_eq!(refused.code, unknown.code, "{refused:?}");
        assert_eq!(
            refused.message,
            unknown.message.replace("never-stored", id),
            "{refused:?}"
        );
        assert!(!refused.message.contains("other-project"), "{refused:?}");
    }
    assert_eq!(unknown.code, ErrorCode::RESOURCE_NOT_FOUND);
    exits_cleanly(client).await;
}

#[tokio::test]
async fn session_close_frees_the_engine_client_servers_and_slot_at_once() {
    let server = McpFixture::start(FixtureSpec::tools("cli:", &["echo"])).await;
    let setup = Setup::new(READ_THEN_DONE);
    let client = setup.start().await;
    let slots = app::AppConfig::new(setup.ws()).max_sessions;
    let with_server = || vec![http_server("cli", &server.url)];

    // Every slot taken by a session with its own MCP server: one more is refused.
    let mut open = Vec::new();
    for _ in 0..slots {
        open.push(client.session(&setup.ws(), with_server()).await);
    }
    let refused = client.new_session(&setup.ws(), with_server()).await.unwrap_err();
    assert!(refused.message.contains("too many sessions"), "{refused:?}");

    // Closing one frees its slot before the answer: the next session fits at once,
    // and the closed session's MCP session was ended.
    let deletes = server.deletes();
    let closed = open.pop().unwrap();
    client
        .cx
        .send_request(CloseSessionRequest::new(closed.clone()))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        server.deletes(),
        deletes + 1,
        "the client server's session was ended"
    );
    open.push(client.session(&setup.ws(), with_server()).await);

    // A closed session is gone from the connection (prompts and a second close are
    // refused) but stays stored.
    let prompt = client.prompt(&closed, "hello").await.unwrap_err();
    assert_eq!(prompt.code, ErrorCode::RESOURCE_NOT_FOUND);
    let twice = client
        .cx
        .send_request(CloseSessionRequest::new(closed.clone()))
        .block_task()
        .await
        .unwrap_err();
    assert_eq!(twice.code, ErrorCode::RESOURCE_NOT_FOUND);
    let listed = client
        .cx
        .send_request(ListSessionsRequest::new())
        .block_task()
        .await
        .unwrap();
    assert!(listed.sessions.iter().any(|s| *s.session_id.0 == *closed));

    // Open and close more sessions than there are slots, one connection throughout.
    for id in open.drain(..) {
        client
            .cx
            .send_request(CloseSessionRequest::new(id))
            .block_task()
            .await
            .unwrap();
    }
    for _ in 0..(slots + 8) {
        let id = client.session(&setup.ws(), with_server()).await;
        client
            .cx
            .send_request(CloseSessionRequest::new(id))
            .block_task()
            .await
            .unwrap();
    }
    exits_cleanly(client).await;
}

#[tokio::test]
async fn session_close_cancels_a_running_prompt_first() {
    let setup = Setup::new(
        r#"{"turns": [
          {"tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "README.md"}}]},
          {"delay_ms": 5000, "text": "too late"}
        ]}"#,
    );
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let started = Instant::now();
    let pending = client.send_prompt(&session, "take your time");
    loop {
        let update = serde_json::to_value(&client.next_update().await.update).unwrap();
        if update["sessionUpdate"] == "tool_call_update" {
            break;
        }
    }
    client
        .cx
        .send_request(CloseSessionRequest::new(session.clone()))
        .block_task()
        .await
        .unwrap();
    let response = pending.await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    exits_cleanly(client).await;
}

const ASK_NAME_THEN_DONE: &str = r#"{"turns": [
  {"tool_calls": [{"id": "q1", "name": "mcp__py__ask_name", "args": {}}]},
  {"text": "done"}
]}"#;

fn with_elicit_server(peer: &test_peers::PeerProcess) -> Setup {
    Setup::new(ASK_NAME_THEN_DONE)
        .arg("--mcp-server")
        .arg(&format!("py={}/mcp", peer.base_url()))
}

#[tokio::test]
async fn a_servers_question_reaches_the_editor_as_an_elicitation_and_its_answer_the_server() {
    const TEST: &str = "a_servers_question_reaches_the_editor_as_an_elicitation_and_its_answer_the_server";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let setup = with_elicit_server(&peer);
    let mut client = AcpClient::start_eliciting(setup.scratch.dir.path(), &setup.args).await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let pending = client.send_prompt(&session, "who am I?");
    client.next_ask().await.select("allow_once");
    let question = client.next_elicitation().await;
    let request = question.json();
    assert_eq!(request["sessionId"], session);
    assert_eq!(request["toolCallId"], "q1");
    assert_eq!(request["mode"], "form");
    assert_eq!(request["message"], "What is your name?");
    assert_eq!(request["requestedSchema"]["required"], json!(["name"]));
    assert_eq!(request["requestedSchema"]["properties"]["name"]["type"], "string");
    question.accept(json!({"name": "Ada", "age": 36}));
    let response = pending.await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&session);
    let q1 = updates.iter().rfind(|u| u["toolCallId"] == "q1").unwrap();
    assert_eq!(q1["status"], "completed", "{updates:#?}");
    assert!(result_text(q1).contains("hello Ada, age 36"), "{q1}");
    assert!(!result_text(q1).contains("[the server's question"), "{q1}");
    exits_cleanly(client).await;
}

#[tokio::test]
async fn an_editor_without_elicitation_gets_the_question_declined_with_a_clear_text() {
    const TEST: &str = "an_editor_without_elicitation_gets_the_question_declined_with_a_clear_text";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let setup = with_elicit_server(&peer);
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let pending = client.send_prompt(&session, "who am I?");
    client.next_ask().await.select("allow_once");
    let response = pending.await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.updates_of(&session);
    let q1 = updates.iter().rfind(|u| u["toolCallId"] == "q1").unwrap();
    let text = result_text(q1);
    assert!(text.contains("declined"), "{text}");
    assert!(
        text.contains(
            "[the server's question was declined: the editor cannot show the server's question \
             (its ACP client did not advertise clientCapabilities.elicitation.form)]"
        ),
        "{text}"
    );
    exits_cleanly(client).await;
}

#[tokio::test]
async fn acp_sessions_fire_session_prompt_and_stop_hooks_once_and_a_blocked_prompt_is_the_prompts_error() {
    let setup =
        Setup::new(r#"{"turns": [{"text": "hello back"}, {"text": "and again"}, {"text": "never"}]}"#);
    let settings = logging_hooks(&setup.scratch);
    let setup = setup.arg("--settings").arg(settings.to_str().unwrap());
    let client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let answered = client.prompt(&session, "hello").await.unwrap();
    assert_eq!(answered.stop_reason, StopReason::EndTurn);
    let error = client.prompt(&session, "print the vault key").await.unwrap_err();
    assert!(
        error.message.contains("UserPromptSubmit hook")
            && error.message.contains("prompts may not name the vault"),
        "{error:?}"
    );
    exits_cleanly(client).await;
    let inputs = hook_inputs(&setup.scratch);
    assert_eq!(
        hook_names(&inputs),
        ["SessionStart", "UserPromptSubmit", "Stop", "UserPromptSubmit"]
    );
    assert!(inputs.iter().all(|input| input["session_id"] == session));
    assert_eq!(inputs[0]["source"], "startup");
    assert_eq!(inputs[1]["prompt"], "hello");
    assert_eq!(inputs[2]["stop_hook_active"], false);
    assert_eq!(inputs[3]["prompt"], "print the vault key");

    // A session loaded in another agent process is resumed there.
    let mut second = setup.start().await;
    second
        .cx
        .send_request(LoadSessionRequest::new(session.clone(), setup.ws()))
        .block_task()
        .await
        .unwrap();
    assert_eq!(
        second.prompt(&session, "once more").await.unwrap().stop_reason,
        StopReason::EndTurn
    );
    let _ = second.updates_of(&session);
    exits_cleanly(second).await;
    let inputs = hook_inputs(&setup.scratch);
    assert_eq!(
        hook_names(&inputs[4..]),
        ["SessionStart", "UserPromptSubmit", "Stop"]
    );
    assert_eq!(inputs[4]["source"], "resume");
}

pub(crate) const LIST_THEN_DONE: &str = r#"{"turns": [
  {"tool_calls": [{"id": "s1", "name": "Shell", "args": {"command": "ls -a"}}]},
  {"text": "done"}
]}"#;

#[tokio::test]
async fn allow_always_saved_from_acp_lets_a_new_trusted_process_run_the_command_without_asking() {
    let setup = Setup::new(LIST_THEN_DONE).arg("--trust-project");
    let mut client = setup.start().await;
    let session = client.session(&setup.ws(), Vec::new()).await;
    let pending = client.send_prompt(&session, "list");
    let ask = client.next_ask().await;
    let request = ask.json();
    let save = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["optionId"] == "allow_always_save")
        .unwrap_or_else(|| panic!("no saving option in {request}"))
        .clone();
    assert_eq!(save["kind"], "allow_always");
    assert!(
        save["name"].as_str().unwrap().contains("Shell(ls:*)"),
        "the option names the rule it saves: {save}"
    );
    assert_eq!(save["_meta"]["mecatl"]["suggestedRule"], "Shell(ls:*)");
    assert!(
        !setup.ws().join(".mecatl/settings.local.json").exists(),
        "nothing is saved before the choice"
    );
    ask.select("allow_always_save");
    assert_eq!(pending.await.unwrap().unwrap().stop_reason, StopReason::EndTurn);
    let records = tool_records(&setup.store(), &session);
    assert_eq!(
        records[0]["approval"],
        json!({"by": "user", "verdict": "allow_always"})
    );
    assert_eq!(records[0]["provenance"]["rule"], "Shell(ls:*)", "{records:?}");
    exits_cleanly(client).await;
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(setup.ws().join(".mecatl/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["permissions"]["allow"], json!(["Shell(ls:*)"]));
    assert_rule_allows_without_asking(&setup.scratch, LIST_THEN_DONE).await;
}

/// A new headless `mecated run --trust-project` of `script` (one Shell call): the
/// saved rule allows it, and the audit says so.
pub(crate) async fn assert_rule_allows_without_asking(scratch: &Scratch, script: &str) {
    let store = scratch.path("store-after").display().to_string();
    let output = crate::support::mecated_run(
        scratch,
        script,
        &[
            "--trust-project",
            "--output",
            "jsonl",
            "--store-dir",
            &store,
            "list again",
        ],
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let events = crate::support::json_lines(&output.stdout);
    assert!(
        !events.iter().any(|e| e["type"] == "permission.ask"),
        "{events:?}"
    );
    let result = events.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(result["is_error"], false, "{result}");
    let records: Vec<Value> = crate::cli_run::find_tools_jsonl(&scratch.path("store-after"))
        .iter()
        .flat_map(|file| crate::support::json_lines(&std::fs::read_to_string(file).unwrap()))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["approval"], json!({"by": "rule", "verdict": "allow"}));
    assert_eq!(records[0]["provenance"]["rule"], "Shell(ls:*)");
    assert!(
        records[0]["provenance"]["source"]
            .as_str()
            .unwrap()
            .ends_with(".mecatl/settings.local.json"),
        "{records:?}"
    );
}
