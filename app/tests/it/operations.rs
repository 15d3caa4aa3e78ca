//! Running `mecated serve` as a service: `/readyz` and its checks, the graceful
//! drain on SIGTERM (a running turn finishes and loses no record, in JSONL and in
//! PostgreSQL; one longer than `--drain-secs` is cancelled cleanly; the process
//! exits 0 either way), and sessions beyond the live cap (unloaded to the store and
//! loaded back; 429 only when every live session is busy).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use app::{HttpOptions, ModelConfig};
use engine_ports::{EventKind, SessionId, SessionStore as _};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Child;

use crate::support::gated_model::{FINAL_ANSWER, GatedModel};
use crate::support::http::{Answer, SseReader, TestServer, answer, client};
use crate::support::serve::spawn_listening;
use crate::support::{Scratch, config, mecated_command};

const LIMIT: Duration = Duration::from_secs(60);

/// A `mecated serve` process on a loopback port, its stderr collected.
struct Serving {
    child: Child,
    base: String,
    log: Arc<Mutex<String>>,
    http: reqwest::Client,
}

impl Serving {
    /// `mecated serve --workspace <ws> --toolhive=false --http-addr 127.0.0.1:0` and
    /// `args`, with `envs`; returns once it listens.
    async fn start(scratch: &Scratch, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut command = mecated_command(scratch.dir.path());
        command
            .args(["serve", "--workspace", &scratch.ws().display().to_string()])
            .args(["--toolhive=false", "--http-addr", "127.0.0.1:0"])
            .args(args)
            .env("MECATED_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in envs {
            command.env(key, value);
        }
        let (child, base, log) = spawn_listening(&mut command).await;
        Self {
            child,
            base,
            log,
            http: client(),
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> reqwest::Response {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send().await.unwrap()
    }

    async fn get(&self, path: &str) -> Answer {
        answer(self.send(reqwest::Method::GET, path, None).await).await
    }

    async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn create(&self) -> String {
        let created = answer(self.post("/v1/sessions", json!({})).await).await;
        assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
        created.body["session_id"].as_str().unwrap().to_owned()
    }

    async fn prompt(&self, id: &str, text: &str) -> SseReader {
        let response = self
            .post(&format!("/v1/sessions/{id}/prompt"), json!({ "text": text }))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        SseReader::new(response)
    }

    fn sigterm(&self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id().unwrap()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    }

    /// Waits for the exit (at most `limit`): the exit code and the log.
    async fn exit(mut self, limit: Duration) -> (Option<i32>, String) {
        let status = tokio::time::timeout(limit, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("mecated serve exits in time: {}", self.log.lock().unwrap()))
            .unwrap();
        (status.code(), self.log.lock().unwrap().clone())
    }

    /// Waits until `/readyz` answers 503 (the signal was handled); that answer.
    async fn until_not_ready(&self) -> Answer {
        let deadline = Instant::now() + LIMIT;
        loop {
            let ready = self.get("/readyz").await;
            if ready.status != StatusCode::OK {
                return ready;
            }
            assert!(Instant::now() < deadline, "never drained: {ready:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The flags of a server on the gated model.
fn gated_flags(model: &GatedModel) -> Vec<String> {
    ["--provider", "openai-chat", "--base-url", model.base_url.as_str()]
        .map(str::to_owned)
        .to_vec()
}

const KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-test");

/// While draining: `/readyz` names the drain, a new session and a new prompt get
/// 503 with `Retry-After`.
async fn assert_draining(server: &Serving, id: &str) {
    let ready = server.until_not_ready().await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE, "{ready:?}");
    assert_eq!(ready.body["failed"], json!(["drain"]), "{ready:?}");
    assert_eq!(ready.body["checks"]["store"]["ok"], true, "{ready:?}");
    let health = server.get("/healthz").await;
    assert_eq!(health.status, StatusCode::OK, "still alive: {health:?}");
    let create = server.post("/v1/sessions", json!({})).await;
    let prompt = server
        .post(&format!("/v1/sessions/{id}/prompt"), json!({"text": "more"}))
        .await;
    for refused in [create, prompt] {
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()["retry-after"], "1");
        let refused = answer(refused).await;
        assert!(refused.error().contains("shutting down"), "{refused:?}");
    }
}

/// Every `tool.call` of `events` has its `tool.result`.
fn calls_are_paired(events: &[Value]) -> bool {
    let ids = |kind: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["call_id"].as_str().unwrap_or_default())
            .collect()
    };
    ids("tool.call") == ids("tool.result")
}

/// The events (unwrapped) and the audit records the JSONL store at `store` holds for `id`.
fn jsonl_events(store: &std::path::Path, id: &str) -> (Vec<Value>, Vec<Value>) {
    let store =
        adapter_jsonlstore::JsonlStore::open(store, adapter_jsonlstore::StoreOptions::default()).unwrap();
    let paths = store.paths(&SessionId::from(id));
    let read = |path: &std::path::Path| {
        crate::support::json_lines(&std::fs::read_to_string(path).unwrap_or_default())
    };
    // Each event line is an envelope: `{"v": <schema>, "ev": <event>}`.
    let events = read(&paths.events)
        .into_iter()
        .map(|line| line["ev"].clone())
        .collect();
    (events, read(&paths.tools))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_turn_lets_it_finish_and_loses_no_record() {
    let scratch = Scratch::new();
    let mut model = GatedModel::start().await;
    let store = scratch.path("store");
    let mut args = gated_flags(&model);
    args.extend(["--store-dir".to_owned(), store.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Serving::start(&scratch, &args, &[KEY]).await;
    let ready = server.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK, "{ready:?}");
    assert_eq!(ready.body["status"], "ready");

    let id = server.create().await;
    let mut stream = server.prompt(&id, "read the README").await;
    model.until_held().await;
    server.sigterm();
    let signalled = Instant::now();
    assert_draining(&server, &id).await;

    model.release();
    let mut streamed = stream.until("tool.result").await;
    streamed.extend(stream.rest().await);
    let result = &streamed.last().unwrap().1;
    assert_eq!(result["type"], "result", "{streamed:?}");
    assert_eq!(result["stop"], "end_turn", "{streamed:?}");
    assert_eq!(result["text"], FINAL_ANSWER);
    let (code, log) = server.exit(LIMIT).await;
    assert_eq!(code, Some(0), "{log}");
    assert!(
        signalled.elapsed() < Duration::from_secs(30),
        "within the drain bound"
    );
    assert!(log.contains("drained: every running turn finished"), "{log}");

    // The log holds exactly what was streamed, and the audit the Read.
    let (events, records) = jsonl_events(&store, &id);
    let logged: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let sent: Vec<u64> = streamed.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(logged, sent);
    assert!(calls_are_paired(&events), "{events:?}");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["tool"], "Read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_longer_than_the_drain_bound_is_cancelled_cleanly_and_the_process_exits_0() {
    let scratch = Scratch::new();
    let mut model = GatedModel::start().await;
    let store = scratch.path("store");
    let mut args = gated_flags(&model);
    args.extend(["--store-dir", store.to_str().unwrap(), "--drain-secs", "1"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Serving::start(&scratch, &args, &[KEY]).await;
    let id = server.create().await;
    let stream = server.prompt(&id, "read the README").await;
    model.until_held().await;
    server.sigterm();
    let signalled = Instant::now();

    // The model never answers: the drain bound ends the turn.
    let streamed = tokio::time::timeout(LIMIT, stream.rest()).await.unwrap();
    let result = &streamed.last().unwrap().1;
    assert_eq!(result["type"], "result", "{streamed:?}");
    assert_eq!(result["stop"], "cancelled", "{streamed:?}");
    let (code, log) = server.exit(LIMIT).await;
    assert_eq!(code, Some(0), "{log}");
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_secs(1),
        "the turn had its second: {took:?}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(log.contains("cancelling them"), "{log}");

    let (events, records) = jsonl_events(&store, &id);
    assert_eq!(events.last().unwrap()["type"], "result", "{events:?}");
    assert_eq!(events.last().unwrap()["stop"], "cancelled");
    assert!(calls_are_paired(&events), "{events:?}");
    assert_eq!(
        records.len(),
        1,
        "the Read before the wait is recorded: {records:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_turn_on_postgres_loses_no_record_and_releases_the_lease() {
    let Some(cluster) = test_peers::PgCluster::shared(
        "sigterm_during_a_turn_on_postgres_loses_no_record_and_releases_the_lease",
    ) else {
        return;
    };
    let db = cluster.fresh_database("drain");
    let scratch = Scratch::new();
    let mut model = GatedModel::start().await;
    let mut args = gated_flags(&model);
    args.extend(["--store-url".to_owned(), cluster.url_without_password(&db)]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Serving::start(&scratch, &args, &[KEY, ("PGPASSWORD", cluster.password())]).await;
    let id = server.create().await;
    let mut stream = server.prompt(&id, "read the README").await;
    model.until_held().await;
    server.sigterm();
    assert_draining(&server, &id).await;
    model.release();
    let mut streamed = stream.until("tool.result").await;
    streamed.extend(stream.rest().await);
    assert_eq!(streamed.last().unwrap().1["stop"], "end_turn", "{streamed:?}");
    let (code, log) = server.exit(LIMIT).await;
    assert_eq!(code, Some(0), "{log}");

    let seqs: Vec<u64> = cluster
        .psql(
            &db,
            &format!("SELECT seq FROM mecated_events WHERE session_id = '{id}' ORDER BY pos"),
        )
        .lines()
        .map(|line| line.parse().unwrap())
        .collect();
    assert_eq!(seqs, streamed.iter().map(|(seq, _)| *seq).collect::<Vec<_>>());
    let records = cluster.psql(
        &db,
        &format!("SELECT record->>'tool' FROM mecated_tool_calls WHERE session_id = '{id}' ORDER BY pos"),
    );
    assert_eq!(records, "Read");
    // The lease went with the run: another holder takes it at once (not after a TTL).
    let url = adapter_pgstore::StoreUrl::parse(&cluster.url(&db), None).unwrap();
    let store = adapter_pgstore::PgStore::open(&url, adapter_pgstore::PgStoreOptions::default())
        .await
        .unwrap();
    let lease = store.acquire_run(&SessionId::from(id.as_str())).await;
    assert!(lease.is_ok(), "{lease:?}");
    store.close();
}

/// A mock model answering each prompt of a session with its turn number.
fn counting_model() -> ModelConfig {
    ModelConfig::MockScript(MockScript::new(
        (1..=4).map(|n| MockTurn::text(format!("answer {n}"))),
    ))
}

fn live_cap(cap: usize) -> HttpOptions {
    HttpOptions {
        max_live_sessions: cap,
        ..HttpOptions::default()
    }
}

#[tokio::test]
async fn more_sessions_than_the_live_cap_are_created_and_the_first_is_prompted_again() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = counting_model();
    let server = TestServer::start_with_options(cfg, "127.0.0.1:0".parse().unwrap(), live_cap(2), None).await;
    let first = server.create(json!({})).await;
    let events = server.prompt(&first, "one").await.rest().await;
    assert_eq!(events.last().unwrap().1["text"], "answer 1", "{events:?}");
    let mut ids = vec![first.clone()];
    for _ in 0..4 {
        ids.push(server.create(json!({})).await);
    }
    // Five sessions, none deleted, two live: every one is listed and shown.
    let listed = server.get("/v1/sessions").await;
    assert_eq!(listed.body["sessions"].as_array().unwrap().len(), 5, "{listed:?}");
    let shown = server.get(&format!("/v1/sessions/{first}")).await;
    assert_eq!(shown.status, StatusCode::OK, "{shown:?}");
    assert_eq!(shown.body["turns"], 1, "{shown:?}");

    // The first, unloaded long ago, is loaded back by its prompt and goes on.
    let events = server.prompt(&first, "two").await.rest().await;
    let result = &events.last().unwrap().1;
    assert_eq!(result["stop"], "end_turn", "{events:?}");
    assert_eq!(result["text"], "answer 2", "it continues its own conversation");
    let log = server.built.store().event_log();
    let logged = log.read(&SessionId::from(first.as_str())).await.unwrap();
    let seqs: Vec<u64> = logged.iter().map(|event| event.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(
        logged
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Result { .. }))
            .count(),
        2
    );
    for id in &ids[1..] {
        let events = server.prompt(id, "hello").await.rest().await;
        assert_eq!(events.last().unwrap().1["text"], "answer 1", "{events:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_live_cap_answers_429_only_when_every_live_session_is_busy() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = ModelConfig::MockScript(MockScript::new([
        MockTurn::text("slow answer").with_delay(Duration::from_secs(20))
    ]));
    let server = TestServer::start_with_options(cfg, "127.0.0.1:0".parse().unwrap(), live_cap(2), None).await;
    let a = server.create(json!({})).await;
    let b = server.create(json!({})).await;
    let mut on_a = server.prompt(&a, "take your time").await;
    let mut on_b = server.prompt(&b, "take yours").await;
    on_a.until("turn.start").await;
    on_b.until("turn.start").await;

    let refused = server.post("/v1/sessions", json!({})).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{refused:?}");
    assert_eq!(refused.headers["retry-after"], "1");
    assert!(
        refused.error().contains("all 2 live sessions are busy"),
        "{refused:?}"
    );

    // Once a's run is over, a is idle and makes room.
    let cancel = server.post(&format!("/v1/sessions/{a}/cancel"), json!({})).await;
    assert_eq!(cancel.status, StatusCode::NO_CONTENT);
    assert_eq!(on_a.rest().await.last().unwrap().1["stop"], "cancelled");
    let c = server.post("/v1/sessions", json!({})).await;
    assert_eq!(c.status, StatusCode::CREATED, "{c:?}");
    let shown = server.get(&format!("/v1/sessions/{a}")).await;
    assert_eq!(
        shown.body["state"], "idle",
        "an unloaded session is idle: {shown:?}"
    );
    server.post(&format!("/v1/sessions/{b}/cancel"), json!({})).await;
    assert_eq!(on_b.rest().await.last().unwrap().1["stop"], "cancelled");
    server.stop().await;
}

#[tokio::test]
async fn readyz_reports_each_check_and_names_the_store_once_it_is_gone() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    let store = scratch.path("store");
    cfg.store = app::StoreConfig::Dir {
        path: store.clone(),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    let server = TestServer::start_with(cfg, "127.0.0.1:0".parse().unwrap(), Some("tok")).await;
    // Open like /healthz: a probe carries no token.
    let anonymous = answer(client().get(server.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(anonymous.status, StatusCode::OK, "{anonymous:?}");
    assert_eq!(
        anonymous.body,
        json!({"status": "ready", "checks": {
            "store": {"ok": true},
            "mcp": {"ok": true, "connected": 0, "given_up": 0, "connecting": 0},
            "drain": {"ok": true},
        }})
    );

    std::fs::rename(&store, scratch.path("store-moved")).unwrap();
    let gone = server.get("/readyz").await;
    assert_eq!(gone.status, StatusCode::SERVICE_UNAVAILABLE, "{gone:?}");
    assert_eq!(gone.body["status"], "not_ready");
    assert_eq!(gone.body["failed"], json!(["store"]));
    assert_eq!(gone.body["error"], "not ready: store");
    assert_eq!(gone.body["checks"]["store"]["ok"], false);
    let reason = gone.body["checks"]["store"]["reason"].as_str().unwrap();
    assert!(
        !reason.contains("store-moved") && !reason.contains(store.to_str().unwrap()),
        "{reason}"
    );
    assert_eq!(
        server.get("/healthz").await.status,
        StatusCode::OK,
        "alive all the same"
    );

    std::fs::rename(scratch.path("store-moved"), &store).unwrap();
    assert_eq!(server.get("/readyz").await.status, StatusCode::OK);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_lets_a_running_prompt_finish_after_stdin_closes() {
    use tokio::io::AsyncWriteExt as _;
    let scratch = Scratch::new();
    let mut model = GatedModel::start().await;
    let store = scratch.path("store");
    let mut child = mecated_command(scratch.dir.path())
        .args([
            "acp",
            "--workspace",
            &scratch.ws().display().to_string(),
            "--toolhive=false",
        ])
        .args(["--store-dir", store.to_str().unwrap()])
        .args(gated_flags(&model))
        .env(KEY.0, KEY.1)
        .env("MECATED_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let ws = std::fs::canonicalize(scratch.ws()).unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}}),
    ];
    let mut session = String::new();
    for request in requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        let line = tokio::time::timeout(LIMIT, async {
            loop {
                let line = stdout.next_line().await.unwrap().expect("the agent answers");
                let frame: Value = serde_json::from_str(&line).unwrap();
                if frame["id"] == request["id"] {
                    return frame;
                }
            }
        })
        .await
        .unwrap();
        if let Some(id) = line["result"]["sessionId"].as_str() {
            session = id.to_owned();
        }
    }
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "read the README"}]}});
    stdin.write_all(format!("{prompt}\n").as_bytes()).await.unwrap();
    model.until_held().await;

    // The editor goes away mid-turn; the turn goes on (within --drain-secs).
    drop(stdin);
    tokio::time::timeout(LIMIT, async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("the connection ended: letting running prompts finish") {
                return;
            }
        }
        panic!("mecated acp ended without draining");
    })
    .await
    .unwrap();
    model.release();
    let drain_stdout = tokio::spawn(async move { while let Ok(Some(_)) = stdout.next_line().await {} });
    let drain_stderr = tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
    let status = tokio::time::timeout(LIMIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status}");
    drain_stdout.await.unwrap();
    drain_stderr.await.unwrap();
    let (events, records) = jsonl_events(&store, &session);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result", "{events:?}");
    assert_eq!(last["stop"], "end_turn", "{events:?}");
    assert_eq!(last["text"], FINAL_ANSWER);
    assert!(calls_are_paired(&events), "{events:?}");
    assert_eq!(records.len(), 1, "{records:?}");
}

#[tokio::test]
async fn healthcheck_exits_0_for_a_serving_process_and_1_naming_the_address_otherwise() {
    let scratch = Scratch::new();
    let server = Serving::start(&scratch, &["--mock"], &[]).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    for extra in [None, Some("--ready")] {
        let mut args = vec!["healthcheck", "--http-addr", addr.as_str()];
        args.extend(extra);
        let output = crate::support::mecated(scratch.dir.path(), &args, &[]).await;
        assert_eq!(output.code, 0, "{extra:?}: {output:?}");
        assert!(output.stdout.contains(": 200"), "{output:?}");
    }
    server.sigterm();
    let (code, log) = server.exit(LIMIT).await;
    assert_eq!(code, Some(0), "{log}");
    let output = crate::support::mecated(
        scratch.dir.path(),
        &["healthcheck", "--http-addr", &addr, "--timeout-secs", "2"],
        &[],
    )
    .await;
    assert_eq!(output.code, 1, "{output:?}");
    assert!(
        output.stderr.contains(&format!("http://{addr}/healthz")),
        "{output:?}"
    );
}
