//! The endpoints and the guard rules the page of `mecated serve` relies on, through a
//! real HTTP client: the page and its assets, the login cookie, CORS, a session's
//! stored history and audit, mode and model changes, memory facts, MCP and store
//! status.

use app::{AuthToken, HttpOptions, MemorySetting, ModelConfig, StoreConfig};
use engine_ports::MemoryWrite;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::http::{TestServer, answer};
use crate::support::{Scratch, config, one_call_model};

fn write_model() -> ModelConfig {
    one_call_model("Write", r#"{"path":"out.txt","content":"hello"}"#)
}

/// Creates a session and runs one prompt whose `Write` call is answered `verdict`.
async fn run_write(server: &TestServer, verdict: &str) -> String {
    let id = server.create(json!({})).await;
    let mut stream = server.prompt(&id, "write it").await;
    let ask = stream.until("permission.ask").await;
    let ask_id = ask.last().unwrap().1["ask_id"].as_str().unwrap().to_owned();
    let approved = server
        .post(
            &format!("/v1/sessions/{id}/approve"),
            json!({"ask_id": ask_id, "verdict": verdict}),
        )
        .await;
    assert_eq!(approved.status, StatusCode::NO_CONTENT, "{approved:?}");
    stream.rest().await;
    id
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_typed_with_a_strict_policy() {
    let scratch = Scratch::new();
    let server = TestServer::start(config(&scratch)).await;
    let page = server.client.get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["cache-control"], "no-cache");
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<script type=\"module\" src=\"/assets/js/main.js\">"),
        "{html}"
    );
    assert!(!html.contains(" style="), "no inline style attribute");

    for (path, kind) in [
        ("/assets/js/main.js", "text/javascript; charset=utf-8"),
        ("/assets/js/api.js", "text/javascript; charset=utf-8"),
        ("/assets/studio.css", "text/css; charset=utf-8"),
        ("/favicon.ico", "image/svg+xml"),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], kind, "{path}");
        let etag = response.headers()["etag"].clone();
        let again = server
            .client
            .get(server.url(path))
            .header("if-none-match", etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
    }
    let missing = answer(
        server
            .client
            .get(server.url("/assets/../Cargo.toml"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(app::asset_bytes() > 0);
    server.stop().await;
}

#[tokio::test]
async fn a_login_sets_an_http_only_strict_cookie_the_api_accepts_from_the_page_only() {
    let scratch = Scratch::new();
    let server =
        TestServer::start_with(config(&scratch), "127.0.0.1:0".parse().unwrap(), Some("s3cr3t")).await;
    let own = server.base.clone();
    let login = |token: &str| {
        server
            .client
            .post(server.url("/login"))
            .header("content-type", "application/json")
            .header("origin", own.as_str())
            .body(json!({ "token": token }).to_string())
            .send()
    };
    let wrong = answer(login("nope").await.unwrap()).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get("set-cookie").is_none());
    let right = login("s3cr3t").await.unwrap();
    assert_eq!(right.status(), StatusCode::NO_CONTENT);
    let set_cookie = right.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("SameSite=Strict"), "{set_cookie}");
    assert!(set_cookie.contains("Path=/"), "{set_cookie}");
    assert!(!set_cookie.contains("s3cr3t"), "{set_cookie}");
    let cookie = set_cookie.split(';').next().unwrap().to_owned();

    // The page reads with the cookie alone, and changes things naming its origin.
    let list = answer(
        server
            .client
            .get(server.url("/v1/sessions"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list.status, StatusCode::OK, "{list:?}");
    let create = |origin: Option<&str>| {
        let mut request = server
            .client
            .post(server.url("/v1/sessions"))
            .header("cookie", &cookie)
            .header("content-type", "application/json")
            .body("{}");
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let created = answer(create(Some(&own)).await.unwrap()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
    // CSRF: without the page's Origin a cookie changes nothing.
    let bare = answer(create(None).await.unwrap()).await;
    assert_eq!(bare.status, StatusCode::FORBIDDEN, "{bare:?}");
    assert!(bare.error().contains("Origin"), "{bare:?}");
    let foreign = answer(create(Some("http://evil.example")).await.unwrap()).await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{foreign:?}");
    assert!(foreign.error().contains("evil.example"), "{foreign:?}");

    let logout = server.client.post(server.url("/logout")).send().await.unwrap();
    assert!(
        logout.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    server.stop().await;
}

#[tokio::test]
async fn cors_preflights_are_answered_for_allowed_origins_only_and_the_real_request_needs_the_token() {
    let scratch = Scratch::new();
    let options = HttpOptions {
        auth_token: AuthToken::new("s3cr3t"),
        allowed_origins: vec!["http://localhost:3000".parse().unwrap()],
        ..HttpOptions::default()
    };
    let server =
        TestServer::start_with_options(config(&scratch), "127.0.0.1:0".parse().unwrap(), options, None).await;
    let preflight = |origin: &str| {
        server
            .client
            .request(reqwest::Method::OPTIONS, server.url("/v1/sessions"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization, content-type")
            .send()
    };
    let allowed = preflight("http://localhost:3000").await.unwrap();
    assert_eq!(allowed.status(), StatusCode::NO_CONTENT);
    let headers = allowed.headers();
    assert_eq!(headers["access-control-allow-origin"], "http://localhost:3000");
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert!(
        headers["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("authorization")
    );
    let refused = answer(preflight("http://evil.example").await.unwrap()).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.headers.get("access-control-allow-origin").is_none());

    let real = |token: Option<&str>| {
        let mut request = server
            .client
            .post(server.url("/v1/sessions"))
            .header("origin", "http://localhost:3000")
            .header("content-type", "application/json")
            .body("{}");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let unauthorized = answer(real(None).await.unwrap()).await;
    assert_eq!(unauthorized.status, StatusCode::UNAUTHORIZED);
    let created = answer(real(Some("s3cr3t")).await.unwrap()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
    assert_eq!(
        created.headers["access-control-allow-origin"],
        "http://localhost:3000"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_sessions_history_and_audit_rows_with_who_decided_are_read_back() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = write_model();
    let server = TestServer::start(cfg).await;
    let id = run_write(&server, "allow_once").await;

    let history = server.get(&format!("/v1/sessions/{id}/events")).await;
    assert_eq!(history.status, StatusCode::OK, "{history:?}");
    let events = history.body["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"session.init"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"result"), "{kinds:?}");
    for expected in ["permission.ask", "permission.verdict", "tool.call", "tool.result"] {
        assert!(kinds.contains(&expected), "{expected} in {kinds:?}");
    }

    let audit = server.get(&format!("/v1/sessions/{id}/audit")).await;
    assert_eq!(audit.status, StatusCode::OK, "{audit:?}");
    let calls = audit.body["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{audit:?}");
    let row = &calls[0];
    assert_eq!(row["tool"], "Write");
    assert_eq!(row["decision"], "allow_once");
    assert_eq!(row["by"], "user");
    assert_eq!(row["server"], Value::Null);
    assert_eq!(row["is_error"], false);
    assert!(
        row["took_micros"].is_u64() && row["queued_micros"].is_u64(),
        "{row}"
    );
    let latency = audit.body["latency"].as_array().unwrap();
    assert_eq!(latency.len(), 1, "{latency:?}");
    assert_eq!(latency[0]["tool"], "Write");
    assert_eq!(latency[0]["count"], 1);
    assert_eq!(latency[0]["p95_micros"], row["took_micros"]);

    let filtered = server.get(&format!("/v1/sessions/{id}/audit?tool=Read")).await;
    assert_eq!(filtered.body["calls"], json!([]));
    assert_eq!(filtered.body["latency"], json!([]));
    let unknown = server.get("/v1/sessions/0123/audit").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    server.stop().await;
}

#[tokio::test]
async fn a_denied_call_is_audited_as_the_users_refusal_and_left_out_of_latency() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = write_model();
    let server = TestServer::start(cfg).await;
    let id = run_write(&server, "deny").await;
    let audit = server.get(&format!("/v1/sessions/{id}/audit")).await;
    let row = &audit.body["calls"][0];
    assert_eq!(row["decision"], "deny", "{audit:?}");
    assert_eq!(row["by"], "user");
    assert_eq!(audit.body["latency"], json!([]));
    assert!(!scratch.ws().join("out.txt").exists());
    server.stop().await;
}

#[tokio::test]
async fn patch_changes_a_sessions_mode_and_model_and_refuses_models_not_offered() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.models = vec!["other-model".to_owned()];
    let server = TestServer::start(cfg).await;
    let offered = server.get("/v1/models").await;
    assert_eq!(offered.status, StatusCode::OK);
    let default_model = offered.body["model"].as_str().unwrap().to_owned();
    assert_eq!(offered.body["models"], json!([default_model, "other-model"]));

    let id = server.create(json!({})).await;
    let path = format!("/v1/sessions/{id}");
    let changed = server
        .call(
            "PATCH",
            &path,
            Some(json!({"mode": "plan", "model": "other-model"})),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{changed:?}");
    assert_eq!(changed.body["mode"], "plan");
    assert_eq!(changed.body["model"], "other-model");
    let tools = server.get(&format!("{path}/tools")).await;
    let names: Vec<&str> = tools.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"Write"), "plan mode lists no Write: {names:?}");

    let back = server.call("PATCH", &path, Some(json!({"model": null}))).await;
    assert_eq!(back.body["model"], default_model.as_str(), "{back:?}");
    let refused = server.call("PATCH", &path, Some(json!({"model": "gpt-9"}))).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.error().contains("gpt-9"), "{refused:?}");
    let bad_mode = server.call("PATCH", &path, Some(json!({"mode": "yolo"}))).await;
    assert_eq!(bad_mode.status, StatusCode::BAD_REQUEST);
    assert!(bad_mode.error().contains("plan"), "{bad_mode:?}");
    let empty = server.call("PATCH", &path, Some(json!({}))).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    server.stop().await;
}

#[tokio::test]
async fn memory_facts_are_listed_and_forgotten_at_the_version_listed() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.memory.project = MemorySetting::InMemory;
    let server = TestServer::start(cfg).await;
    let scopes = server.built.host().memory_scopes();
    assert_eq!(scopes.len(), 1);
    scopes[0]
        .store
        .put(MemoryWrite {
            key: "build-cmd".to_owned(),
            value: "just ci".to_owned(),
            description: "how to build".to_owned(),
            expected_version: None,
            writer: "test".to_owned(),
        })
        .await
        .unwrap();

    let listed = server.get("/v1/memory").await;
    assert_eq!(listed.status, StatusCode::OK, "{listed:?}");
    let scope = &listed.body["scopes"][0];
    assert_eq!(scope["scope"], "project");
    assert_eq!(scope["total"], 1);
    let fact = &scope["facts"][0];
    assert_eq!(fact["key"], "build-cmd");
    assert_eq!(fact["description"], "how to build");
    assert!(fact.get("value").is_none(), "values are not listed: {fact}");
    let version = fact["version"].as_u64().unwrap();

    let stale = server
        .call(
            "DELETE",
            &format!("/v1/memory/project/build-cmd?version={}", version + 5),
            None,
        )
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT, "{stale:?}");
    let forgotten = server
        .call(
            "DELETE",
            &format!("/v1/memory/project/build-cmd?version={version}"),
            None,
        )
        .await;
    assert_eq!(forgotten.status, StatusCode::OK, "{forgotten:?}");
    let listed = server.get("/v1/memory").await;
    assert_eq!(listed.body["scopes"][0]["facts"], json!([]));
    let unknown = server.call("DELETE", "/v1/memory/user/x?version=1", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.error().contains("project"), "{unknown:?}");
    server.stop().await;
}

#[tokio::test]
async fn mcp_servers_and_the_store_report_their_state() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.store = StoreConfig::Dir {
        path: scratch.path("store"),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    let server = TestServer::start(cfg).await;
    server.create(json!({})).await;
    let mcp = server.get("/v1/mcp").await;
    assert_eq!(mcp.status, StatusCode::OK);
    assert_eq!(mcp.body["servers"], json!([]));
    let store = server.get("/v1/store").await;
    assert_eq!(store.status, StatusCode::OK, "{store:?}");
    assert_eq!(store.body["kind"], "jsonl");
    assert_eq!(store.body["ok"], true);
    assert_eq!(store.body["persistent"], true);
    assert_eq!(store.body["sessions"], 1);
    assert!(
        store.body["place"].as_str().unwrap().ends_with("store"),
        "{store:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn sessions_are_listed_with_their_title_and_model_and_the_history_carries_the_prompts() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = ModelConfig::MockScript(adapter_llm::MockScript::new([
        adapter_llm::MockTurn::text("one"),
        adapter_llm::MockTurn::text("two"),
    ]));
    let server = TestServer::start(cfg).await;
    let blank = server.create(json!({})).await;
    let id = server.create(json!({})).await;
    server
        .prompt(&id, "\n  Fix the build  \nthen run the tests")
        .await
        .rest()
        .await;
    server.prompt(&id, "and the docs").await.rest().await;

    let listed = server.get("/v1/sessions").await;
    let sessions = listed.body["sessions"].as_array().unwrap();
    let of = |wanted: &str| {
        sessions
            .iter()
            .find(|s| s["session_id"] == wanted)
            .unwrap_or_else(|| panic!("{wanted} in {sessions:?}"))
            .clone()
    };
    assert_eq!(of(&id)["title"], "Fix the build");
    assert_eq!(of(&id)["model"], server.built.host().model());
    assert_eq!(of(&blank)["title"], Value::Null, "no prompt yet");

    let history = server.get(&format!("/v1/sessions/{id}/events")).await;
    let inits: Vec<&Value> = history.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "session.init")
        .map(|e| &e["seq"])
        .collect();
    assert_eq!(inits.len(), 2, "{history:?}");
    assert_eq!(
        history.body["prompts"],
        json!([
            {"seq": inits[0], "text": "\n  Fix the build  \nthen run the tests"},
            {"seq": inits[1], "text": "and the docs"},
        ])
    );
    server.stop().await;
}

#[tokio::test]
async fn the_tool_listing_names_the_tools_skipped_and_why() {
    use crate::support::mcp_fixture::{FixtureSpec, McpFixture};
    let first = McpFixture::start(FixtureSpec::tools("s:", &["_echo"])).await;
    let second = McpFixture::start(FixtureSpec::tools("s_:", &["echo"])).await;
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.mcp.servers = vec![
        crate::support::http_server("s", &first.url),
        crate::support::http_server("s_", &second.url),
    ];
    let server = TestServer::start(cfg).await;
    let id = server.create(json!({})).await;
    let listing = server.get(&format!("/v1/sessions/{id}/tools")).await;
    assert_eq!(listing.status, StatusCode::OK, "{listing:?}");
    let skipped = &listing.body["skipped"];
    assert_eq!(skipped.as_array().map(Vec::len), Some(1), "{skipped}");
    assert_eq!(skipped[0]["name"], "mcp__s___echo");
    assert_eq!(skipped[0]["family"], "mcp-global");
    assert!(
        skipped[0]["reason"].as_str().unwrap().contains("mcp-global"),
        "{skipped}"
    );
    assert_eq!(
        skipped,
        &json!(server.built.report().skipped),
        "the build's own list"
    );
    server.stop().await;
}
