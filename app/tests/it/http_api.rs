//! The HTTP + SSE API (`mecated serve`) through
//! a real HTTP client over loopback: sessions, SSE prompts, approvals, cancellation,
//! auth, limits, client MCP servers, disconnects and shutdown.

use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use app::{AppConfig, HttpOptions, ModelConfig, StoreConfig};
use engine_ports::{EventKind, Message, SessionId, StopReason};
use futures::StreamExt as _;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::http::{TestServer, answer, raw, raw_request};
use crate::support::mcp_fixture::{FixtureSpec, FixtureTool, McpFixture};
use crate::support::{Scratch, config, hook_inputs, hook_names, logging_hooks, one_call_model, wait_until};

const WAIT: Duration = Duration::from_secs(10);

/// A model whose only turn streams after `delay_ms` (long enough to act meanwhile).
fn slow_model(delay_ms: u64) -> ModelConfig {
    ModelConfig::MockScript(MockScript::new([
        MockTurn::text("slow answer").with_delay(Duration::from_millis(delay_ms))
    ]))
}

fn write_model() -> ModelConfig {
    one_call_model("Write", r#"{"path":"out.txt","content":"hello"}"#)
}

fn types(events: &[(u64, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_ids_follow_seq(events: &[(u64, Value)]) {
    for pair in events.windows(2) {
        assert!(pair[0].0 < pair[1].0, "ids must increase: {events:?}");
    }
    for (id, event) in events {
        assert_eq!(Some(*id), event["seq"].as_u64(), "{event}");
    }
}

fn config_with(scratch: &Scratch, model: ModelConfig) -> AppConfig {
    let mut cfg = config(scratch);
    cfg.model = model;
    cfg
}

/// As [`config_with`], over a JSONL store in the scratch directory.
fn stored_config_with(scratch: &Scratch, model: ModelConfig) -> AppConfig {
    let mut cfg = config_with(scratch, model);
    cfg.store = StoreConfig::Dir {
        path: scratch.path("store"),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    cfg
}

/// The `.tools.jsonl` lines of session `id`.
fn tool_records(server: &TestServer, id: &str) -> Vec<Value> {
    let paths = server.built.store().paths(&SessionId::from(id)).unwrap();
    crate::support::json_lines(&std::fs::read_to_string(paths.tools).unwrap_or_default())
}

/// The events the store logged for `id`, once its last one is `result`.
async fn logged_result(server: &TestServer, id: &str) -> EventKind {
    let log = server.built.store().event_log();
    let deadline = Instant::now() + WAIT;
    loop {
        let events = log.read(&SessionId::from(id)).await.unwrap();
        if let Some(last) = events.last()
            && matches!(last.kind, EventKind::Result { .. })
        {
            return last.kind.clone();
        }
        assert!(Instant::now() < deadline, "no result logged: {events:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn create_prompt_list_tools_delete() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;

    let created = server.post("/v1/sessions", json!({})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
    let id = created.body["session_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);
    assert!(
        id.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{id}"
    );
    assert_eq!(created.headers["location"], format!("/v1/sessions/{id}").as_str());

    let events = server.prompt(&id, "hello").await.rest().await;
    assert_ids_follow_seq(&events);
    let kinds = types(&events);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("session.init"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last().map(String::as_str), Some("result"), "{kinds:?}");
    assert!(kinds.contains(&"message.delta".to_owned()), "{kinds:?}");
    let (_, result) = events.last().unwrap();
    assert_eq!(result["stop"], "end_turn");
    assert_eq!(events[0].1["session_id"], id.as_str());

    let listing = server.get("/v1/sessions").await;
    assert_eq!(listing.status, StatusCode::OK);
    let sessions = listing.body["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listing:?}");
    let summary = &sessions[0];
    assert_eq!(summary["session_id"], id.as_str());
    assert_eq!(summary["state"], "idle");
    assert_eq!(summary["mode"], "default");
    assert_eq!(summary["turns"], 1);
    assert_eq!(summary["tool_calls"], 0);
    assert!(
        summary["modified_at"].as_str().unwrap().ends_with('Z'),
        "{summary}"
    );
    let one = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(one.status, StatusCode::OK);
    for (key, value) in summary.as_object().unwrap() {
        assert_eq!(&one.body[key], value, "{key}");
    }

    let tools = server.get(&format!("/v1/sessions/{id}/tools")).await;
    assert_eq!(tools.status, StatusCode::OK);
    let tools = tools.body["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for expected in ["Edit", "Glob", "Grep", "ListDir", "Read", "Shell", "Write"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let read = tools.iter().find(|t| t["name"] == "Read").unwrap();
    let keys: Vec<&str> = read.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "name",
            "family",
            "read_only",
            "plan_only",
            "disclosable",
            "description"
        ]
    );
    assert_eq!(read["family"], "core");
    assert_eq!(read["read_only"], true);
    let plan = server.get(&format!("/v1/sessions/{id}/tools?mode=plan")).await;
    let plan = plan.body["tools"].as_array().unwrap().clone();
    assert!(plan.iter().all(|t| t["read_only"] == true), "{plan:?}");
    assert!(!plan.iter().any(|t| t["name"] == "Write"));

    let deleted = server.call("DELETE", &format!("/v1/sessions/{id}"), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{deleted:?}");
    let gone = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert!(gone.error().contains(&id), "{gone:?}");
    let listing = server.get("/v1/sessions").await;
    assert_eq!(listing.body["sessions"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn with_a_token_only_the_right_bearer_passes_and_healthz_stays_open() {
    let scratch = Scratch::new();
    let server =
        TestServer::start_with(config(&scratch), "127.0.0.1:0".parse().unwrap(), Some("s3cr3t")).await;
    let url = server.url("/v1/sessions");

    let none = answer(server.client.get(&url).send().await.unwrap()).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert!(
        none.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer"),
        "{none:?}"
    );
    assert!(none.error().contains("bearer"), "{none:?}");
    let wrong = answer(
        server
            .client
            .get(&url)
            .bearer_auth("s3cr3T")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.contains_key("www-authenticate"));
    let create = answer(server.client.post(&url).body("{}").send().await.unwrap()).await;
    assert_eq!(create.status, StatusCode::UNAUTHORIZED);
    let unknown_route = answer(server.client.get(server.url("/v1/nothing")).send().await.unwrap()).await;
    assert_eq!(unknown_route.status, StatusCode::UNAUTHORIZED);

    let right = server.get("/v1/sessions").await;
    assert_eq!(right.status, StatusCode::OK, "{right:?}");
    assert_eq!(
        right.body["sessions"],
        json!([]),
        "the unauthorized create made nothing"
    );
    let health = answer(server.client.get(server.url("/healthz")).send().await.unwrap()).await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.body["status"], "ok");
    server.stop().await;
}

#[tokio::test]
async fn an_ask_is_answered_over_http_and_the_tool_runs() {
    let scratch = Scratch::new();
    let server = TestServer::start(stored_config_with(&scratch, write_model())).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "write it").await;
    let before = stream.until("permission.ask").await;
    let (_, ask) = before.last().unwrap().clone();
    assert_eq!(ask["name"], "Write");
    let ask_id = ask["ask_id"].as_str().unwrap().to_owned();

    let waiting = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(waiting.body["state"], "awaiting_approval");
    let approve = format!("/v1/sessions/{id}/approve");
    let unknown = server
        .post(&approve, json!({"ask_id": "nope", "verdict": "allow_once"}))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.error().contains("nope"), "{unknown:?}");
    let bad = server
        .post(&approve, json!({"ask_id": ask_id, "verdict": "maybe"}))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.error().contains("verdict") && bad.error().contains("maybe"),
        "{bad:?}"
    );
    assert!(!scratch.ws().join("out.txt").exists());

    let ok = server
        .post(&approve, json!({"ask_id": ask_id, "verdict": "allow_once"}))
        .await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT, "{ok:?}");
    let after = stream.rest().await;
    let mut all = before.clone();
    all.extend(after.iter().cloned());
    assert_ids_follow_seq(&all);
    let verdict = after
        .iter()
        .find(|(_, e)| e["type"] == "permission.verdict")
        .unwrap();
    assert_eq!(verdict.1["verdict"], "allow_once");
    let result = after.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert_eq!(result.1["name"], "Write");
    assert_eq!(result.1["is_error"], false, "{result:?}");
    assert_eq!(after.last().unwrap().1["stop"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("out.txt")).unwrap(),
        "hello"
    );
    let records = tool_records(&server, &id);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        records[0]["approval"],
        json!({"by": "user", "verdict": "allow_once"})
    );

    let late = server
        .post(&approve, json!({"ask_id": ask_id, "verdict": "allow_once"}))
        .await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{late:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_denied_ask_reaches_the_model_as_an_error_result_and_is_recorded_as_the_users() {
    let scratch = Scratch::new();
    let server = TestServer::start(stored_config_with(&scratch, write_model())).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "write it").await;
    let before = stream.until("permission.ask").await;
    let ask_id = before.last().unwrap().1["ask_id"].as_str().unwrap().to_owned();
    let denied = server
        .post(
            &format!("/v1/sessions/{id}/approve"),
            json!({"ask_id": ask_id, "verdict": "deny"}),
        )
        .await;
    assert_eq!(denied.status, StatusCode::NO_CONTENT);
    let after = stream.rest().await;
    let result = after.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert_eq!(result.1["is_error"], true, "{result:?}");
    assert_eq!(after.last().unwrap().1["stop"], "end_turn");
    assert!(!scratch.ws().join("out.txt").exists());
    let records = tool_records(&server, &id);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["approval"], json!({"by": "user", "verdict": "deny"}));
    assert_eq!(records[0]["result"], result.1["content"]);
    server.stop().await;
}

#[tokio::test]
async fn cancel_ends_a_running_prompt_and_a_second_prompt_meanwhile_is_409() {
    let scratch = Scratch::new();
    let server = TestServer::start(config_with(&scratch, slow_model(5_000))).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "take your time").await;
    stream.until("session.init").await;

    let busy = answer(server.prompt_response(&id, "again").await).await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{busy:?}");
    assert!(busy.error().contains("in progress"), "{busy:?}");
    let running = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(running.body["state"], "running");

    let started = Instant::now();
    let cancel = server.post(&format!("/v1/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(cancel.status, StatusCode::NO_CONTENT, "{cancel:?}");
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().1["type"], "result");
    assert_eq!(rest.last().unwrap().1["stop"], "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    let again = server
        .call("POST", &format!("/v1/sessions/{id}/cancel"), None)
        .await;
    assert_eq!(again.status, StatusCode::NO_CONTENT, "cancel is idempotent");
    let unknown = server.call("POST", "/v1/sessions/nope/cancel", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test]
async fn idle_streams_carry_keep_alive_comments() {
    let scratch = Scratch::new();
    let options = HttpOptions {
        keep_alive: Duration::from_millis(20),
        ..HttpOptions::default()
    };
    let cfg = config_with(&scratch, slow_model(1_000));
    let server = TestServer::start_with_options(cfg, "127.0.0.1:0".parse().unwrap(), options, None).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "take your time").await;
    let mut keep_alives = 0;
    while let Some(frame) = stream.next_raw_frame().await {
        if frame.data.is_empty() {
            assert_eq!(frame.comments, ["keep-alive"], "{frame:?}");
            assert!(frame.id.is_none(), "{frame:?}");
            keep_alives += 1;
        } else if frame.data.contains(r#""type":"result""#) {
            break;
        }
    }
    assert!(keep_alives > 0, "a second of silence carried no keep-alive");
    assert!(
        stream.next_raw_frame().await.is_none(),
        "the stream ends after result"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_client_leaving_the_stream_cancels_the_run() {
    let scratch = Scratch::new();
    let server = TestServer::start(config_with(&scratch, slow_model(5_000))).await;
    let id = server.create(json!({})).await;
    let started = Instant::now();
    let mut stream = server.prompt(&id, "take your time").await;
    stream.until("session.init").await;
    drop(stream);

    let engine = server.built.shared_engine();
    let sid = SessionId::from(id.as_str());
    assert!(wait_until(WAIT, || !engine.is_running(&sid)).await);
    let EventKind::Result { stop, .. } = logged_result(&server, &id).await else {
        unreachable!("logged_result returns a result")
    };
    assert_eq!(stop, StopReason::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    server.stop().await;
}

#[tokio::test]
async fn bad_requests_are_400_naming_the_field_and_value() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let mode = server.post("/v1/sessions", json!({"mode": "sideways"})).await;
    assert_eq!(mode.status, StatusCode::BAD_REQUEST);
    for part in ["mode", "sideways", "default, plan, acceptEdits"] {
        assert!(mode.error().contains(part), "{mode:?}");
    }
    let servers = server.post("/v1/sessions", json!({"mcp_servers": "cli"})).await;
    assert_eq!(servers.status, StatusCode::BAD_REQUEST);
    assert!(servers.error().contains("mcp_servers"), "{servers:?}");
    let url = server
        .post(
            "/v1/sessions",
            json!({"mcp_servers": [{"type": "http", "name": "x", "url": "http://example.test/mcp", "headers": []}]}),
        )
        .await;
    assert_eq!(url.status, StatusCode::BAD_REQUEST, "{url:?}");
    assert!(url.error().contains("\"x\""), "{url:?}");
    let typo = server.post("/v1/sessions", json!({"mcpServers": []})).await;
    assert_eq!(typo.status, StatusCode::BAD_REQUEST);
    assert!(typo.error().contains("mcpServers"), "{typo:?}");
    let not_json = answer(
        server
            .client
            .post(server.url("/v1/sessions"))
            .header("content-type", "application/json")
            .body("{")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert!(not_json.error().contains("JSON"), "{not_json:?}");

    let id = server.create(json!({"mode": "plan"})).await;
    let plan = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(plan.body["mode"], "plan");
    let no_text = server.post(&format!("/v1/sessions/{id}/prompt"), json!({})).await;
    assert_eq!(no_text.status, StatusCode::BAD_REQUEST);
    assert!(no_text.error().contains("text"), "{no_text:?}");
    let number = server
        .post(&format!("/v1/sessions/{id}/prompt"), json!({"text": 5}))
        .await;
    assert_eq!(number.status, StatusCode::BAD_REQUEST);
    let tools = server
        .get(&format!("/v1/sessions/{id}/tools?mode=sideways"))
        .await;
    assert_eq!(tools.status, StatusCode::BAD_REQUEST);
    assert!(tools.error().contains("sideways"), "{tools:?}");
    let approve = server
        .post(&format!("/v1/sessions/{id}/approve"), json!({"ask_id": "a"}))
        .await;
    assert_eq!(approve.status, StatusCode::BAD_REQUEST);
    assert!(approve.error().contains("verdict"), "{approve:?}");
    server.stop().await;
}

#[tokio::test]
async fn unknown_sessions_are_404_naming_the_id_and_unknown_routes_are_json() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let approve = json!({"ask_id": "a", "verdict": "deny"});
    let prompt = json!({"text": "hi"});
    let cases = [
        ("GET", "/v1/sessions/ghost", None),
        ("DELETE", "/v1/sessions/ghost", None),
        ("POST", "/v1/sessions/ghost/prompt", Some(prompt)),
        ("POST", "/v1/sessions/ghost/approve", Some(approve)),
        ("POST", "/v1/sessions/ghost/cancel", None),
        ("GET", "/v1/sessions/ghost/tools", None),
        ("GET", "/v1/sessions/ghost/commands", None),
    ];
    for (method, path, body) in cases {
        let answer = server.call(method, path, body).await;
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "{method} {path}: {answer:?}"
        );
        assert!(
            answer.error().contains("\"ghost\""),
            "{method} {path}: {answer:?}"
        );
    }
    let route = server.get("/v1/nothing").await;
    assert_eq!(route.status, StatusCode::NOT_FOUND);
    assert!(route.error().contains("/v1/nothing"), "{route:?}");
    let method = server.call("PUT", "/v1/sessions", None).await;
    assert_eq!(method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(method.error().contains("PUT"), "{method:?}");
    server.stop().await;
}

#[tokio::test]
async fn bodies_over_one_mib_are_413_from_the_declared_length_or_while_streaming() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let id = server.create(json!({})).await;
    let path = format!("/v1/sessions/{id}/prompt");
    let host = format!("127.0.0.1:{}", server.addr.port());

    // Only the headers are sent: the answer comes without the server waiting for the
    // 2 MiB it was promised.
    let declared = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        2 * 1024 * 1024
    );
    let too_big = raw(server.addr, declared.as_bytes()).await;
    assert_eq!(too_big.status, 413, "{too_big:?}");
    assert!(too_big.error().contains("1 MiB"), "{too_big:?}");

    // A chunked body declares no length: it is cut off once it passes the cap.
    let mut chunked = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    let piece = "x".repeat(64 * 1024);
    chunked.extend_from_slice(format!("{:x}\r\n{{\"text\":\"\r\n", "{\"text\":\"".len()).as_bytes());
    for _ in 0..(app::MAX_BODY_BYTES / piece.len() + 2) {
        chunked.extend_from_slice(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes());
    }
    chunked.extend_from_slice(b"2\r\n\"}\r\n0\r\n\r\n");
    let streamed = raw(server.addr, &chunked).await;
    assert_eq!(streamed.status, 413, "{streamed:?}");
    assert!(streamed.error().contains("1 MiB"), "{streamed:?}");

    let idle = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(idle.body["turns"], 0, "nothing ran");
    server.stop().await;
}

/// The session list as a legitimate client sees it.
async fn session_ids(server: &TestServer) -> Vec<Value> {
    let listing = server.get("/v1/sessions").await;
    assert_eq!(listing.status, StatusCode::OK, "{listing:?}");
    listing.body["sessions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_dns_rebinding_page_is_refused_at_its_first_request_and_creates_nothing() {
    let scratch = Scratch::new();
    let server = TestServer::start(config_with(&scratch, write_model())).await;
    let port = server.addr.port();
    let evil_host = format!("rebind.evil.example:{port}");
    let evil_origin = format!("http://rebind.evil.example:{port}");
    let page = [
        ("Host", evil_host.as_str()),
        ("Origin", evil_origin.as_str()),
        ("Content-Type", "text/plain"),
    ];
    // The replayed attack: create, prompt, approve with allow_always.
    let create = raw(server.addr, &raw_request("POST", "/v1/sessions", &page, "{}")).await;
    assert_eq!(create.status, 403, "{create:?}");
    assert!(create.error().contains("Host"), "{create:?}");
    assert!(create.error().contains("rebind.evil.example"), "{create:?}");
    let prompt = raw(
        server.addr,
        &raw_request(
            "POST",
            &format!("/v1/sessions/{}/prompt", "0".repeat(32)),
            &page,
            r#"{"text":"write the file"}"#,
        ),
    )
    .await;
    assert_eq!(prompt.status, 403, "{prompt:?}");
    let approve = raw(
        server.addr,
        &raw_request(
            "POST",
            &format!("/v1/sessions/{}/approve", "0".repeat(32)),
            &page,
            r#"{"ask_id":"a1","verdict":"allow_always"}"#,
        ),
    )
    .await;
    assert_eq!(approve.status, 403, "{approve:?}");
    // A plain cross-site form post to the real loopback address (no preflight).
    let loopback = format!("127.0.0.1:{port}");
    let cross_site = [
        ("Host", loopback.as_str()),
        ("Origin", "https://evil.example"),
        ("Content-Type", "text/plain"),
    ];
    let csrf = raw(
        server.addr,
        &raw_request("POST", "/v1/sessions", &cross_site, "{}"),
    )
    .await;
    assert_eq!(csrf.status, 403, "{csrf:?}");
    assert!(csrf.error().contains("Origin"), "{csrf:?}");

    assert_eq!(
        session_ids(&server).await,
        Vec::<Value>::new(),
        "no session was created"
    );
    assert!(!scratch.dir.path().join("ws/out.txt").exists());
    server.stop().await;
}

#[tokio::test]
async fn each_request_check_refuses_on_its_own() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let port = server.addr.port();
    let loopback = format!("127.0.0.1:{port}");
    let json_type = ("Content-Type", "application/json");

    let bad_host = format!("rebind.evil.example:{port}");
    let host = raw(
        server.addr,
        &raw_request("POST", "/v1/sessions", &[("Host", &bad_host), json_type], "{}"),
    )
    .await;
    assert_eq!(host.status, 403, "{host:?}");
    for part in ["Host", "rebind.evil.example", "localhost", "--allowed-host"] {
        assert!(host.error().contains(part), "{part}: {host:?}");
    }
    let no_host = raw(server.addr, &raw_request("GET", "/v1/sessions", &[], "")).await;
    assert_eq!(no_host.status, 403, "{no_host:?}");
    assert!(no_host.error().contains("no Host header"), "{no_host:?}");

    let origin = raw(
        server.addr,
        &raw_request(
            "POST",
            "/v1/sessions",
            &[
                ("Host", &loopback),
                ("Origin", "http://localhost:3000"),
                json_type,
            ],
            "{}",
        ),
    )
    .await;
    assert_eq!(origin.status, 403, "{origin:?}");
    for part in ["Origin", "http://localhost:3000", "--allowed-origin"] {
        assert!(origin.error().contains(part), "{part}: {origin:?}");
    }

    let text = raw(
        server.addr,
        &raw_request(
            "POST",
            "/v1/sessions",
            &[("Host", &loopback), ("Content-Type", "text/plain")],
            "{}",
        ),
    )
    .await;
    assert_eq!(text.status, 415, "{text:?}");
    assert!(text.error().contains("application/json"), "{text:?}");
    let untyped = raw(
        server.addr,
        &raw_request("POST", "/v1/sessions", &[("Host", &loopback)], "{}"),
    )
    .await;
    assert_eq!(untyped.status, 415, "{untyped:?}");

    let declared = format!(
        "POST /v1/sessions HTTP/1.1\r\nHost: {loopback}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        2 * 1024 * 1024
    );
    let length = raw(server.addr, declared.as_bytes()).await;
    assert_eq!(length.status, 413, "{length:?}");

    assert_eq!(session_ids(&server).await, Vec::<Value>::new());
    // The same requests pass once they are right: any loopback spelling, a charset,
    // no body at all.
    for host in [
        loopback.clone(),
        format!("LOCALHOST:{port}"),
        format!("[::1]:{port}"),
    ] {
        let created = raw(
            server.addr,
            &raw_request(
                "POST",
                "/v1/sessions",
                &[
                    ("Host", &host),
                    ("Content-Type", "application/json; charset=UTF-8"),
                ],
                "{}",
            ),
        )
        .await;
        assert_eq!(created.status, 201, "{host}: {created:?}");
    }
    let bare = raw(
        server.addr,
        &raw_request("POST", "/v1/sessions", &[("Host", "localhost")], ""),
    )
    .await;
    assert_eq!(bare.status, 201, "{bare:?}");
    assert_eq!(session_ids(&server).await.len(), 4);
    server.stop().await;
}

#[tokio::test]
async fn allowed_hosts_and_origins_admit_exactly_what_they_name() {
    let scratch = Scratch::new();
    let options = HttpOptions {
        allowed_hosts: vec!["mecatl.internal".parse().unwrap()],
        allowed_origins: vec!["http://localhost:3000".parse().unwrap()],
        ..HttpOptions::default()
    };
    let server =
        TestServer::start_with_options(config(&scratch), "127.0.0.1:0".parse().unwrap(), options, None).await;
    let port = server.addr.port();
    let json_type = ("Content-Type", "application/json");
    let internal = format!("Mecatl.Internal:{port}");
    let loopback = format!("localhost:{port}");
    let create = |headers: Vec<(&'static str, String)>| {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        raw_request("POST", "/v1/sessions", &headers, "{}")
    };
    let named = raw(
        server.addr,
        &create(vec![
            ("Host", internal.clone()),
            ("Content-Type", json_type.1.to_owned()),
        ]),
    )
    .await;
    assert_eq!(named.status, 201, "{named:?}");
    let page = raw(
        server.addr,
        &create(vec![
            ("Host", loopback.clone()),
            ("Origin", "http://localhost:3000".to_owned()),
            ("Content-Type", json_type.1.to_owned()),
        ]),
    )
    .await;
    assert_eq!(page.status, 201, "{page:?}");
    let other_host = raw(
        server.addr,
        &create(vec![
            ("Host", format!("mecatl.external:{port}")),
            ("Content-Type", json_type.1.to_owned()),
        ]),
    )
    .await;
    assert_eq!(other_host.status, 403, "{other_host:?}");
    assert!(other_host.error().contains("mecatl.internal"), "{other_host:?}");
    let other_origin = raw(
        server.addr,
        &create(vec![
            ("Host", loopback),
            ("Origin", "http://localhost:3001".to_owned()),
            ("Content-Type", json_type.1.to_owned()),
        ]),
    )
    .await;
    assert_eq!(other_origin.status, 403, "{other_origin:?}");
    assert!(
        other_origin.error().contains("http://localhost:3000"),
        "{other_origin:?}"
    );
    assert_eq!(session_ids(&server).await.len(), 2);
    server.stop().await;
}

#[tokio::test]
async fn with_a_token_a_foreign_host_passes_with_the_right_token_only() {
    let scratch = Scratch::new();
    let server =
        TestServer::start_with(config(&scratch), "127.0.0.1:0".parse().unwrap(), Some("s3cr3t")).await;
    let host = format!("mecatl.example.com:{}", server.addr.port());
    let json_type = ("Content-Type", "application/json");
    let with_token = raw(
        server.addr,
        &raw_request(
            "POST",
            "/v1/sessions",
            &[("Host", &host), ("Authorization", "Bearer s3cr3t"), json_type],
            "{}",
        ),
    )
    .await;
    assert_eq!(with_token.status, 201, "{with_token:?}");
    let without = raw(
        server.addr,
        &raw_request("POST", "/v1/sessions", &[("Host", &host), json_type], "{}"),
    )
    .await;
    assert_eq!(without.status, 401, "{without:?}");
    assert!(
        without
            .head
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{without:?}"
    );
    let from_a_page = raw(
        server.addr,
        &raw_request(
            "POST",
            "/v1/sessions",
            &[
                ("Host", &host),
                ("Origin", "https://evil.example"),
                ("Authorization", "Bearer s3cr3t"),
                json_type,
            ],
            "{}",
        ),
    )
    .await;
    assert_eq!(from_a_page.status, 403, "the origin check stays: {from_a_page:?}");
    assert_eq!(session_ids(&server).await.len(), 1);
    server.stop().await;
}

/// Reads from `tcp` until the server closes it (EOF or a reset); panics after `limit`.
async fn closed_by_server(tcp: &mut tokio::net::TcpStream, limit: Duration) {
    use tokio::io::AsyncReadExt as _;
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match tcp.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the server closes the connection");
}

#[tokio::test]
async fn a_half_sent_request_is_closed_after_the_header_timeout() {
    use tokio::io::AsyncWriteExt as _;
    let scratch = Scratch::new();
    let options = HttpOptions {
        header_read_timeout: Duration::from_millis(200),
        ..HttpOptions::default()
    };
    let server =
        TestServer::start_with_options(config(&scratch), "127.0.0.1:0".parse().unwrap(), options, None).await;
    let mut half = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    half.write_all(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        .await
        .unwrap();
    let mut silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    closed_by_server(&mut half, WAIT).await;
    closed_by_server(&mut silent, WAIT).await;
    assert!(
        wait_until(WAIT, || server.connections.count() == 0).await,
        "{} connections still open",
        server.connections.count()
    );
    let health = server.get("/healthz").await;
    assert_eq!(health.status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn slow_clients_hold_at_most_the_connection_cap_and_are_all_closed() {
    use tokio::io::AsyncWriteExt as _;
    const SLOW: usize = 300;
    let scratch = Scratch::new();
    let options = HttpOptions {
        header_read_timeout: Duration::from_millis(500),
        max_connections: 32,
        ..HttpOptions::default()
    };
    let server =
        TestServer::start_with_options(config(&scratch), "127.0.0.1:0".parse().unwrap(), options, None).await;
    let mut slow = Vec::with_capacity(SLOW);
    let mut most_open = 0;
    for _ in 0..SLOW {
        let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        // Over the cap the server may already have closed it: a failed write is fine.
        let _ = tcp.write_all(b"GET /v1/sessions HTTP/1.1\r\nHo").await;
        slow.push(tcp);
        most_open = most_open.max(server.connections.count());
    }
    assert!(most_open <= 32, "{most_open} connections open at once");
    assert_eq!(server.connections.max(), 32);
    for tcp in &mut slow {
        closed_by_server(tcp, Duration::from_secs(30)).await;
    }
    assert!(
        wait_until(WAIT, || server.connections.count() == 0).await,
        "{} connections still open",
        server.connections.count()
    );
    let created = server.post("/v1/sessions", json!({})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
    server.stop().await;
}

/// Connects and sends a `POST /v1/sessions` that declares a 100-byte body but sends
/// only its first bytes.
async fn stalled_body(server: &TestServer) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let mut tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(
        b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"mode\":",
    )
    .await
    .unwrap();
    tcp
}

/// Everything the server sends on `tcp` until it closes it; panics after `limit`.
async fn read_until_closed(tcp: &mut tokio::net::TcpStream, limit: Duration) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut received = Vec::new();
    let mut buffer = [0u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match tcp.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await
    .expect("the server answers and closes the connection");
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn a_body_that_stalls_is_answered_408_and_its_connection_closed() {
    let scratch = Scratch::new();
    let options = HttpOptions {
        body_read_timeout: Duration::from_millis(200),
        ..HttpOptions::default()
    };
    let server =
        TestServer::start_with_options(config(&scratch), "127.0.0.1:0".parse().unwrap(), options, None).await;
    let mut tcp = stalled_body(&server).await;
    let answer = read_until_closed(&mut tcp, WAIT).await;
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("\r\nconnection: close\r\n"),
        "{answer}"
    );
    assert!(answer.contains("did not arrive within 200 ms"), "{answer}");
    let listed = server.get("/v1/sessions").await;
    assert_eq!(
        listed.body["sessions"],
        json!([]),
        "nothing was created: {listed:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn healthz_and_readyz_answer_while_stalled_bodies_hold_every_connection() {
    const CAP: usize = 4;
    let scratch = Scratch::new();
    let options = HttpOptions {
        max_connections: CAP,
        body_read_timeout: Duration::from_secs(600),
        ..HttpOptions::default()
    };
    let server =
        TestServer::start_with_options(config(&scratch), "127.0.0.1:0".parse().unwrap(), options, None).await;
    let mut stalled = Vec::new();
    for _ in 0..CAP {
        stalled.push(stalled_body(&server).await);
    }
    // Connections are accepted in the order they were made: these come after every
    // stalled one, so each ordinary slot is held when they are served.
    let health = server.get("/healthz").await;
    assert_eq!(health.status, StatusCode::OK, "{health:?}");
    assert_eq!(health.body, json!({"status": "ok"}));
    assert_eq!(server.connections.count(), CAP);
    let ready = server.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK, "{ready:?}");
    assert_eq!(ready.body["status"], "ready");
    let refused = server.post("/v1/sessions", json!({})).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE, "{refused:?}");
    assert!(refused.error().contains("only GET /healthz"), "{refused:?}");
    assert_eq!(server.get("/healthz").await.status, StatusCode::OK);
    drop(stalled);
    server.stop().await;
}

#[tokio::test]
async fn client_servers_off_loopback_are_501() {
    let scratch = Scratch::new();
    let server = TestServer::start_with(config(&scratch), "0.0.0.0:0".parse().unwrap(), Some("tok")).await;
    let refused = server
        .post(
            "/v1/sessions",
            json!({"mcp_servers": [{"type": "http", "name": "cli", "url": "http://127.0.0.1:9/mcp", "headers": []}]}),
        )
        .await;
    assert_eq!(refused.status, StatusCode::NOT_IMPLEMENTED, "{refused:?}");
    assert!(refused.error().contains("loopback"), "{refused:?}");
    server.create(json!({})).await;
    server.stop().await;
}

#[tokio::test]
async fn unreachable_client_servers_are_503_naming_them_and_nothing_is_created() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let good = McpFixture::start(FixtureSpec::tools("ok:", &["echo"])).await;
    let dead = format!("http://127.0.0.1:{}/mcp", test_peers::free_port());
    let answer = server
        .post(
            "/v1/sessions",
            json!({"mcp_servers": [
                {"type": "http", "name": "good", "url": good.url, "headers": []},
                {"type": "http", "name": "dead", "url": dead, "headers": []},
            ]}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE, "{answer:?}");
    assert!(answer.error().contains("\"dead\""), "{answer:?}");
    assert!(!answer.error().contains("\"good\""), "{answer:?}");
    assert_eq!(server.get("/v1/sessions").await.body["sessions"], json!([]));
    assert_eq!(server.built.factory().live_sessions(), 0);
    assert!(
        wait_until(WAIT, || good.deletes() == 1).await,
        "the good server was closed"
    );
    server.stop().await;
}

#[tokio::test]
async fn http_create_with_a_stdio_or_sse_entry_is_400_naming_the_server() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    for entry in [
        json!({"name": "fs", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"], "env": []}),
        json!({"type": "stdio", "name": "fs", "command": "mcp-fs", "args": [], "env": []}),
    ] {
        let answer = server.post("/v1/sessions", json!({"mcp_servers": [entry]})).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{answer:?}");
        assert!(answer.error().contains("\"fs\""), "{answer:?}");
        assert!(
            answer
                .error()
                .contains("HTTP sessions accept streamable HTTP servers only"),
            "{answer:?}"
        );
    }
    let sse = server
        .post(
            "/v1/sessions",
            json!({"mcp_servers": [{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}]}),
        )
        .await;
    assert_eq!(sse.status, StatusCode::BAD_REQUEST, "{sse:?}");
    assert!(
        sse.error().contains("\"old\"") && sse.error().contains("SSE"),
        "{sse:?}"
    );
    assert_eq!(server.get("/v1/sessions").await.body["sessions"], json!([]));
    server.stop().await;
}

#[tokio::test]
async fn a_client_mcp_server_is_mounted_for_its_session_only() {
    let cli = McpFixture::start(FixtureSpec {
        tools: vec![FixtureTool::read_only("peek"), FixtureTool::new("echo")],
        prefix: "client:".to_owned(),
        resources: Vec::new(),
    })
    .await;
    let scratch = Scratch::new();
    let cfg = config_with(&scratch, one_call_model("mcp__cli__peek", r#"{"text":"hi"}"#));
    let server = TestServer::start(cfg).await;
    let with = server
        .create(json!({"mcp_servers": [{
            "type": "http", "name": "cli", "url": cli.url,
            "headers": [{"name": "X-Client", "value": "secret-value"}],
        }]}))
        .await;
    let without = server.create(json!({})).await;

    let tools = server.get(&format!("/v1/sessions/{with}/tools")).await.body["tools"].clone();
    let client_tools: Vec<&Value> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("mcp__cli__"))
        .collect();
    let names: Vec<&str> = client_tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mcp__cli__echo", "mcp__cli__peek"]);
    assert!(client_tools.iter().all(|t| t["family"] == "mcp-client"));
    let other = server.get(&format!("/v1/sessions/{without}/tools")).await.body["tools"].clone();
    assert!(
        !other.to_string().contains("mcp__cli__"),
        "another session must not list them: {other}"
    );

    let events = server.prompt(&with, "peek").await.rest().await;
    let result = events.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert_eq!(result.1["is_error"], false, "{result:?}");
    assert_eq!(result.1["content"], "client:hi");
    let events = server.prompt(&without, "peek").await.rest().await;
    let result = events.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert_eq!(
        result.1["is_error"], true,
        "another session cannot reach them: {result:?}"
    );
    assert_eq!(cli.calls().len(), 1);

    let deleted = server.call("DELETE", &format!("/v1/sessions/{with}"), None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert!(
        wait_until(WAIT, || cli.deletes() == 1).await,
        "its client server was closed"
    );
    assert_eq!(server.built.factory().live_sessions(), 0);
    server.stop().await;
}

#[tokio::test]
async fn server_everything_over_http_is_a_client_server_of_one_session() {
    let Some(peer) = test_peers::everything_http("http_client_everything", test_peers::EVERYTHING) else {
        return;
    };
    let scratch = Scratch::new();
    let cfg = config_with(
        &scratch,
        one_call_model("mcp__everything__echo", r#"{"message":"hi there"}"#),
    );
    let server = TestServer::start(cfg).await;
    let id = server
        .create(json!({"mcp_servers": [{
            "type": "http", "name": "everything", "url": format!("{}/mcp", peer.base_url()), "headers": [],
        }]}))
        .await;
    let tools = server.get(&format!("/v1/sessions/{id}/tools")).await.body["tools"].to_string();
    assert!(tools.contains("\"mcp__everything__echo\""), "{tools}");
    let events = server.prompt(&id, "echo").await.rest().await;
    let result = events.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert_eq!(result.1["is_error"], false, "{result:?}");
    assert!(
        result.1["content"].as_str().unwrap().contains("hi there"),
        "{result:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_palette_and_the_command_chain_apply_to_http_prompts() {
    let scratch = Scratch::new();
    scratch.write(
        "commands/greet.md",
        "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n",
    );
    let mut cfg = config(&scratch);
    cfg.commands_dir = Some(scratch.path("commands"));
    let server = TestServer::start(cfg).await;
    let id = server.create(json!({})).await;
    let palette = server.get(&format!("/v1/sessions/{id}/commands")).await;
    assert_eq!(palette.status, StatusCode::OK);
    assert_eq!(
        palette.body["commands"],
        json!([{"name": "greet", "description": "Greet someone"}])
    );
    let events = server.prompt(&id, "/greet Ada").await.rest().await;
    assert_eq!(events.last().unwrap().1["stop"], "end_turn");
    let snapshot = server
        .built
        .store()
        .session_store()
        .load(&SessionId::from(id.as_str()))
        .await
        .unwrap();
    let Some(Message::User { text }) = snapshot.conversation.first() else {
        panic!("{:?}", snapshot.conversation)
    };
    assert_eq!(text, "Say hello to Ada.\n");
    server.stop().await;
}

#[tokio::test]
async fn listings_are_most_recent_first() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let older = server.create(json!({})).await;
    let newer = server.create(json!({"mode": "acceptEdits"})).await;
    let ids = |listing: &Value| -> Vec<String> {
        listing["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&server.get("/v1/sessions").await.body),
        [newer.clone(), older.clone()]
    );
    server.prompt(&older, "hello").await.rest().await;
    let listing = server.get("/v1/sessions").await.body;
    assert_eq!(ids(&listing), [older.clone(), newer.clone()]);
    assert_eq!(listing["sessions"][0]["turns"], 1);
    assert_eq!(listing["sessions"][1]["mode"], "acceptEdits");
    server.stop().await;
}

#[tokio::test]
async fn shutdown_cancels_running_prompts_and_closes_client_servers() {
    let cli = McpFixture::start(FixtureSpec::tools("client:", &["echo"])).await;
    let scratch = Scratch::new();
    let mut server = TestServer::start(config_with(&scratch, slow_model(5_000))).await;
    let id = server
        .create(json!({"mcp_servers": [{"type": "http", "name": "cli", "url": cli.url, "headers": []}]}))
        .await;
    let mut stream = server.prompt(&id, "take your time").await;
    stream.until("session.init").await;
    let started = Instant::now();
    let serving = server.begin_shutdown();
    let rest = stream.rest().await;
    assert_eq!(rest.last().unwrap().1["stop"], "cancelled", "{rest:?}");
    tokio::time::timeout(WAIT, serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert!(
        wait_until(WAIT, || cli.deletes() == 1).await,
        "the client server was closed"
    );
    assert_eq!(server.built.factory().live_sessions(), 0);
    server.built.close().await.unwrap();
}

#[tokio::test]
async fn sessions_already_in_the_store_are_listed_continued_and_deleted() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.store = StoreConfig::Dir {
        path: scratch.path("store"),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    let earlier = app::build(cfg.clone()).await.unwrap();
    let mut run = earlier
        .shared_engine()
        .run(&SessionId::from("earlier"), "hi")
        .unwrap();
    let mut last_seq = 0;
    while let Some(event) = run.next().await {
        last_seq = event.seq;
    }
    let paths = earlier.store().paths(&SessionId::from("earlier")).unwrap();
    earlier.close().await.unwrap();

    let server = TestServer::start(cfg).await;
    let listing = server.get("/v1/sessions").await;
    assert_eq!(
        listing.body["sessions"][0]["session_id"], "earlier",
        "{listing:?}"
    );
    assert_eq!(listing.body["sessions"][0]["turns"], 1);
    let one = server.get("/v1/sessions/earlier").await;
    // The one session's view is its listing entry plus its model and usage.
    for (key, value) in listing.body["sessions"][0].as_object().unwrap() {
        assert_eq!(&one.body[key], value, "{key}");
    }
    assert_eq!(one.body["model"], "mock");
    let events = server.prompt("earlier", "again").await.rest().await;
    assert_ids_follow_seq(&events);
    assert_eq!(events[0].0, last_seq + 1, "seq goes on from the earlier run");
    assert_eq!(server.get("/v1/sessions/earlier").await.body["turns"], 2);
    let deleted = server.call("DELETE", "/v1/sessions/earlier", None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert!(!paths.snapshot.exists() && !paths.events.exists());
    server.stop().await;
}

/// A config whose model calls the elicit peer's `ask_name` once, over the peer as a
/// global MCP server.
fn asking_config(scratch: &Scratch, peer: &test_peers::PeerProcess) -> AppConfig {
    let mut cfg = stored_config_with(scratch, one_call_model("mcp__py__ask_name", "{}"));
    cfg.mcp.servers = vec![crate::support::http_server(
        "py",
        &format!("{}/mcp", peer.base_url()),
    )];
    cfg
}

/// Approves the session's first ask and returns the events up to its first
/// `elicitation.request`.
async fn approve_then_question(
    server: &TestServer,
    id: &str,
    stream: &mut crate::support::http::SseReader,
) -> Value {
    let ask = stream.until("permission.ask").await;
    let ask_id = ask.last().unwrap().1["ask_id"].as_str().unwrap().to_owned();
    let approved = server
        .post(
            &format!("/v1/sessions/{id}/approve"),
            json!({"ask_id": ask_id, "verdict": "allow_once"}),
        )
        .await;
    assert_eq!(approved.status, StatusCode::NO_CONTENT);
    stream
        .until("elicitation.request")
        .await
        .last()
        .unwrap()
        .1
        .clone()
}

#[tokio::test]
async fn a_servers_question_is_an_sse_event_answered_at_the_elicit_endpoint() {
    const TEST: &str = "a_servers_question_is_an_sse_event_answered_at_the_elicit_endpoint";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let server = TestServer::start(asking_config(&scratch, &peer)).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "who am I?").await;
    let question = approve_then_question(&server, &id, &mut stream).await;
    assert_eq!(question["call_id"], "c1");
    assert_eq!(question["name"], "mcp__py__ask_name");
    assert_eq!(question["message"], "What is your name?");
    assert_eq!(question["requested_schema"]["required"], json!(["name"]));
    let elicitation_id = question["elicitation_id"].as_str().unwrap().to_owned();
    let waiting = server.get(&format!("/v1/sessions/{id}")).await;
    assert_eq!(waiting.body["state"], "awaiting_input");

    let elicit = format!("/v1/sessions/{id}/elicit");
    let unknown = server
        .post(&elicit, json!({"elicitation_id": "nope", "action": "decline"}))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.error().contains("\"nope\""), "{unknown:?}");
    let misfit = server
        .post(
            &elicit,
            json!({"elicitation_id": elicitation_id, "action": "accept", "content": {"name": 7}}),
        )
        .await;
    assert_eq!(misfit.status, StatusCode::BAD_REQUEST);
    assert!(
        misfit.error().contains("content.name: expected a string, got 7"),
        "{misfit:?}"
    );
    let extra = server
        .post(
            &elicit,
            json!({"elicitation_id": elicitation_id, "action": "accept", "content": {"name": "Ada", "nick": "A"}}),
        )
        .await;
    assert_eq!(extra.status, StatusCode::BAD_REQUEST);
    assert!(extra.error().contains("content.nick"), "{extra:?}");

    let accepted = server
        .post(
            &elicit,
            json!({"elicitation_id": elicitation_id, "action": "accept", "content": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(accepted.status, StatusCode::NO_CONTENT, "{accepted:?}");
    let after = stream.rest().await;
    let ended = after
        .iter()
        .find(|(_, e)| e["type"] == "elicitation.result")
        .unwrap();
    assert_eq!(ended.1["action"], "accept");
    assert!(ended.1.get("reason").is_none(), "{ended:?}");
    let result = after.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    assert!(
        result.1["content"].as_str().unwrap().contains("hello Ada"),
        "{result:?}"
    );
    assert_eq!(after.last().unwrap().1["stop"], "end_turn");
    let late = server
        .post(
            &elicit,
            json!({"elicitation_id": elicitation_id, "action": "decline"}),
        )
        .await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{late:?}");
    server.stop().await;
}

#[tokio::test]
async fn an_unanswered_question_is_declined_when_its_time_is_up() {
    const TEST: &str = "an_unanswered_question_is_declined_when_its_time_is_up";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let mut cfg = asking_config(&scratch, &peer);
    cfg.engine.elicitation_timeout = Duration::from_secs(1);
    let server = TestServer::start(cfg).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "who am I?").await;
    approve_then_question(&server, &id, &mut stream).await;
    let after = stream.rest().await;
    let ended = after
        .iter()
        .find(|(_, e)| e["type"] == "elicitation.result")
        .unwrap();
    assert_eq!(ended.1["action"], "decline");
    assert_eq!(ended.1["reason"], "nobody answered within 1 s");
    let result = after.iter().find(|(_, e)| e["type"] == "tool.result").unwrap();
    let text = result.1["content"].as_str().unwrap();
    assert!(text.contains("declined"), "{text}");
    assert!(
        text.ends_with("[the server's question was declined: nobody answered within 1 s]"),
        "{text}"
    );
    server.stop().await;
}

#[tokio::test]
async fn http_sessions_fire_session_prompt_and_stop_hooks_once_and_a_blocked_prompt_ends_with_the_reason() {
    let scratch = Scratch::new();
    let model = ModelConfig::MockScript(MockScript::new([
        MockTurn::text("hello back"),
        MockTurn::text("never"),
    ]));
    let mut cfg = stored_config_with(&scratch, model);
    cfg.policy.files = vec![logging_hooks(&scratch)];
    let server = TestServer::start(cfg).await;
    let id = server.create(json!({})).await;
    let answered = server.prompt(&id, "hello").await.rest().await;
    assert_eq!(answered.last().unwrap().1["stop"], "end_turn");
    let blocked = server.prompt(&id, "print the vault key").await.rest().await;
    let result = &blocked.last().unwrap().1;
    assert_eq!(result["type"], "result");
    assert_eq!(result["stop"], "error");
    let reason = result["error"].as_str().unwrap();
    assert!(
        reason.contains("UserPromptSubmit hook") && reason.contains("prompts may not name the vault"),
        "{result}"
    );
    let reported = blocked
        .iter()
        .find(|(_, e)| e["type"] == "hook.session")
        .map(|(_, e)| e.clone())
        .unwrap();
    assert_eq!(reported["event"], "UserPromptSubmit");
    assert_eq!(reported["action"], "block");
    assert!(
        !types(&blocked).contains(&"turn.start".to_owned()),
        "the model never saw the prompt: {blocked:?}"
    );
    server.stop().await;
    let inputs = hook_inputs(&scratch);
    assert_eq!(
        hook_names(&inputs),
        ["SessionStart", "UserPromptSubmit", "Stop", "UserPromptSubmit"]
    );
    assert!(inputs.iter().all(|input| input["session_id"] == id.as_str()));
    assert_eq!(inputs[0]["source"], "startup");
    assert_eq!(inputs[1]["prompt"], "hello");
}

#[tokio::test]
async fn allow_always_saved_over_http_lets_a_new_trusted_process_run_the_command_without_asking() {
    let scratch = Scratch::new();
    let mut cfg = stored_config_with(&scratch, one_call_model("Shell", r#"{"command":"ls -a"}"#));
    cfg.skills.trust = adapter_skillfs::ProjectTrust::Trusted;
    cfg.policy.persist_approvals = true;
    let server = TestServer::start(cfg).await;
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "list").await;
    let before = stream.until("permission.ask").await;
    let ask = before.last().unwrap().1.clone();
    assert_eq!(ask["suggested_rule"], "Shell(ls:*)", "{ask}");
    let settings = scratch.ws().join(".mecatl/settings.local.json");
    assert!(!settings.exists(), "nothing is saved before the choice");
    let ok = server
        .post(
            &format!("/v1/sessions/{id}/approve"),
            json!({"ask_id": ask["ask_id"], "verdict": "allow_always", "save_rule": true}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT, "{ok:?}");
    let after = stream.rest().await;
    let verdict = after
        .iter()
        .find(|(_, e)| e["type"] == "permission.verdict")
        .unwrap();
    assert_eq!(verdict.1["verdict"], "allow_always");
    assert_eq!(verdict.1["saved_rule"], "Shell(ls:*)");
    server.stop().await;
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(saved["permissions"]["allow"], json!(["Shell(ls:*)"]));
    crate::acp::assert_rule_allows_without_asking(&scratch, crate::acp::LIST_THEN_DONE).await;
}

/// The value of the Prometheus sample `name` whose labels include `labels`.
fn prometheus_sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let lines = text.lines().map(|line| Ok(line.to_owned()));
    let scrape =
        prometheus_parse::Scrape::parse(lines).expect("the page parses as the Prometheus text format");
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            ref other => panic!("unexpected sample {other:?}"),
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_page_is_prometheus_text_behind_the_token() {
    let scratch = Scratch::new();
    scratch.write("ws/README.md", "# hello\n");
    let mut cfg = config_with(&scratch, one_call_model("Read", r#"{"path":"README.md"}"#));
    cfg.telemetry.prometheus = true;
    let server = TestServer::start_with(cfg, "127.0.0.1:0".parse().unwrap(), Some("s3cret")).await;
    let id = server.create(json!({})).await;
    server.prompt(&id, "read it").await.until("result").await;

    let anonymous = crate::support::http::client()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let page = crate::support::http::client()
        .get(server.url("/metrics"))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(
        page.headers()["content-type"],
        app::METRICS_CONTENT_TYPE,
        "the Prometheus text format's type"
    );
    let text = page.text().await.unwrap();
    let calls = prometheus_sample(
        &text,
        "mecatl_tool_calls_total",
        &[("gen_ai_tool_name", "Read"), ("mecatl_tool_outcome", "ok")],
    );
    assert_eq!(calls, Some(1.0), "{text}");
    assert_eq!(
        prometheus_sample(&text, "mecatl_runs_total", &[("mecatl_run_stop", "end_turn")]),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains("# hello"), "no content on the page");
    server.stop().await;
}

#[tokio::test]
async fn without_kept_metrics_the_page_is_not_found() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let answer = server.call("GET", "/metrics", None).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "{answer:?}");
    server.stop().await;
}
