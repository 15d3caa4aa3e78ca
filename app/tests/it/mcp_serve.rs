//! `mecated mcp serve` driven by real MCP clients — the official Python SDK and the
//! TypeScript SDK (`fixtures/mcp_serve/client.py`, `client.mjs`) over stdio and
//! streamable HTTP: the listing and its annotations, a read-only call, a call
//! through to an upstream server, approval by elicitation, refusal without it, plan
//! mode; the audit names the client; the HTTP guard and token; and the official
//! conformance suite's server scenarios that apply to a server whose tools are ours.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::support::mcp_fixture::{FixtureSpec, FixtureTool, McpFixture};
use crate::support::{Scratch, hermetic_mecated, mecated};

/// Which SDK drives the server.
#[derive(Clone, Copy, Debug)]
enum Sdk {
    Python,
    TypeScript,
}

/// How the client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transport {
    Stdio,
    Http,
}

/// A workspace, an upstream MCP server with a read-only `echo` tool (answering
/// `echo:<text>`), and the store whose audit the tests read.
struct Setup {
    scratch: Scratch,
    upstream: McpFixture,
}

impl Setup {
    async fn new() -> Self {
        let upstream = McpFixture::start(FixtureSpec {
            tools: vec![FixtureTool::read_only("echo")],
            prefix: "echo:".to_owned(),
            resources: Vec::new(),
        })
        .await;
        Self {
            scratch: Scratch::new(),
            upstream,
        }
    }

    /// `mcp serve` and its catalog flags, then `extra`.
    fn serve_args(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "mcp",
            "serve",
            "--workspace",
            &self.scratch.ws().display().to_string(),
            "--toolhive=false",
            "--store-dir",
            &self.scratch.path("store").display().to_string(),
            "--mcp-server",
            &format!("up={}", self.upstream.url),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    }

    /// Every audit record written so far.
    fn audit(&self) -> Vec<Value> {
        let mut records = Vec::new();
        for path in walk(&self.scratch.path("store")) {
            if path.to_string_lossy().ends_with(".tools.jsonl") {
                let text = std::fs::read_to_string(&path).unwrap();
                records.extend(
                    text.lines()
                        .map(|line| serde_json::from_str::<Value>(line).unwrap()),
                );
            }
        }
        records
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// A `mecated mcp serve --http-addr 127.0.0.1:0` process and its endpoint.
struct HttpServe {
    url: String,
    _child: tokio::process::Child,
}

impl HttpServe {
    async fn start(home: &Path, args: &[String], envs: &[(&str, &str)]) -> Self {
        let mut command = tokio::process::Command::from(hermetic_mecated(home));
        command
            .args(args)
            .args(["--http-addr", "127.0.0.1:0"])
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(url) = line.strip_prefix("mecated mcp serve: listening on ") {
                    return url.to_owned();
                }
            }
            panic!("mecated mcp serve ended without listening");
        })
        .await
        .expect("mecated mcp serve listened within 60 s");
        // Keep draining its log so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { url, _child: child }
    }
}

/// Runs one SDK client against the server (`client_args`: `--call`, `--args`,
/// `--elicit`), stdio or HTTP; its JSON report, or `None` when the peer is missing
/// and skipping is allowed.
async fn drive(
    test: &str,
    sdk: Sdk,
    transport: Transport,
    setup: &Setup,
    serve: &[&str],
    client: &[&str],
) -> Option<Value> {
    let home = setup.scratch.dir.path();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/mcp_serve");
    let (program, script) = match sdk {
        Sdk::Python => (test_peers::venv_bin(test, "python")?, fixtures.join("client.py")),
        Sdk::TypeScript => (test_peers::node(test)?, fixtures.join("client.mjs")),
    };
    let args = setup.serve_args(serve);
    let mut client_command = tokio::process::Command::new(program);
    client_command
        .arg(script)
        .args(client)
        .env("HOME", home)
        .env("MECATL_MANAGED_SETTINGS", home.join("managed-settings.json"))
        .env("MECATED_TOOLHIVE_URL", "http://127.0.0.1:1")
        .env("MECATED_PEERS_DIR", test_peers::peers_dir())
        .env_remove("MECATED_LOG")
        .env_remove("MECATED_AUTH_TOKEN")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let _server;
    match transport {
        Transport::Stdio => {
            // The client launches `mecated` with the environment set above.
            client_command
                .arg("--")
                .arg(env!("CARGO_BIN_EXE_mecated"))
                .args(&args);
        }
        Transport::Http => {
            let server = HttpServe::start(home, &args, &[]).await;
            client_command.args(["--http", &server.url]);
            _server = server;
        }
    }
    let output = tokio::time::timeout(Duration::from_secs(120), client_command.output())
        .await
        .expect("the client finished within 120 s")
        .unwrap();
    assert!(
        output.status.success(),
        "{sdk:?} client over {transport:?} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    Some(serde_json::from_str(last).unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}")))
}

fn tool<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == name)
}

async fn lists_the_catalog_with_annotations(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let Some(report) = drive(test, sdk, transport, &setup, &[], &[]).await else {
        return;
    };
    let read = tool(&report, "Read").expect("Read is offered");
    assert_eq!(read["read_only"], true);
    let write = tool(&report, "Write").expect("Write is offered");
    assert_eq!(
        (&write["read_only"], &write["destructive"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    let echo = tool(&report, "mcp__up__echo").expect("the upstream tool is offered under its catalog name");
    assert_eq!(echo["read_only"], true);
}

async fn a_read_only_call_answers_and_is_audited_with_the_client(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let client = ["--call", "Read", "--args", r#"{"path":"README.md"}"#];
    let Some(report) = drive(test, sdk, transport, &setup, &[], &client).await else {
        return;
    };
    assert_eq!(report["call"]["is_error"], false, "{report}");
    assert!(
        report["call"]["text"]
            .as_str()
            .unwrap()
            .contains("# test workspace"),
        "{report}"
    );
    let audit = setup.audit();
    let record = audit
        .iter()
        .find(|r| r["tool"] == "Read")
        .expect("the call is audited");
    let expected_client = match sdk {
        Sdk::Python => "py-sdk-test/2.3",
        Sdk::TypeScript => "ts-sdk-test/1.32",
    };
    assert_eq!(record["caller"]["client"], expected_client, "{record}");
    let surface = match transport {
        Transport::Stdio => "mcp-stdio",
        Transport::Http => "mcp-http",
    };
    assert_eq!(record["caller"]["surface"], surface);
    assert_eq!(record["approval"]["by"], "policy");
}

async fn an_upstream_call_goes_through_to_the_server(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let client = ["--call", "mcp__up__echo", "--args", r#"{"text":"hi"}"#];
    let Some(report) = drive(test, sdk, transport, &setup, &[], &client).await else {
        return;
    };
    assert_eq!(report["call"]["is_error"], false, "{report}");
    assert_eq!(report["call"]["text"], "echo:hi");
    assert_eq!(
        setup.upstream.calls().len(),
        1,
        "the upstream server saw the call"
    );
}

async fn approval_by_elicitation_runs_a_mutating_call(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let client = [
        "--call",
        "Write",
        "--args",
        r#"{"path":"out.txt","content":"written"}"#,
        "--elicit",
        "accept",
    ];
    let Some(report) = drive(test, sdk, transport, &setup, &[], &client).await else {
        return;
    };
    assert_eq!(report["call"]["is_error"], false, "{report}");
    let asked = report["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert!(asked[0].as_str().unwrap().starts_with("Allow Write("), "{report}");
    assert_eq!(
        std::fs::read_to_string(setup.scratch.ws().join("out.txt")).unwrap(),
        "written"
    );
    let audit = setup.audit();
    let record = audit.iter().find(|r| r["tool"] == "Write").unwrap();
    assert_eq!(record["approval"]["by"], "user", "{record}");
}

async fn a_declined_elicitation_refuses_the_call(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let client = [
        "--call",
        "Write",
        "--args",
        r#"{"path":"out.txt","content":"written"}"#,
        "--elicit",
        "decline",
    ];
    let Some(report) = drive(test, sdk, transport, &setup, &[], &client).await else {
        return;
    };
    assert_eq!(report["call"]["is_error"], true, "{report}");
    assert_eq!(
        report["call"]["text"],
        "permission denied for Write: the operator denied it"
    );
    assert!(!setup.scratch.ws().join("out.txt").exists());
}

async fn a_client_without_elicitation_is_refused_saying_why(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let client = [
        "--call",
        "Write",
        "--args",
        r#"{"path":"out.txt","content":"written"}"#,
    ];
    let Some(report) = drive(test, sdk, transport, &setup, &[], &client).await else {
        return;
    };
    assert_eq!(report["call"]["is_error"], true, "{report}");
    let text = report["call"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("permission denied for Write: approval needs a person, and the MCP client (")
            && text.contains("cannot be asked: it did not declare the elicitation capability"),
        "{text}"
    );
    assert!(!setup.scratch.ws().join("out.txt").exists());
    let audit = setup.audit();
    let record = audit.iter().find(|r| r["tool"] == "Write").unwrap();
    assert_eq!(record["approval"]["verdict"], "deny");
}

async fn plan_mode_offers_and_runs_no_mutating_tool(test: &str, sdk: Sdk, transport: Transport) {
    let setup = Setup::new().await;
    let client = [
        "--call",
        "Write",
        "--args",
        r#"{"path":"out.txt","content":"written"}"#,
        "--elicit",
        "accept",
    ];
    let serve = ["--mode", "plan", "--approve", "all"];
    let Some(report) = drive(test, sdk, transport, &setup, &serve, &client).await else {
        return;
    };
    assert!(tool(&report, "Write").is_none(), "plan mode offers no Write");
    assert!(tool(&report, "Read").is_some());
    assert_eq!(report["call"]["is_error"], true, "{report}");
    assert_eq!(
        report["call"]["text"],
        "tool Write is not available in plan mode: only read-only tools run while planning"
    );
    assert_eq!(
        report["elicitations"],
        Value::Array(Vec::new()),
        "nobody is asked"
    );
    assert!(!setup.scratch.ws().join("out.txt").exists());
}

/// One test per behaviour, SDK and transport, named `<behaviour>_<sdk>_<transport>`.
macro_rules! per_client {
    ($($behaviour:ident),* $(,)?) => {
        mod python_stdio { $(#[tokio::test] async fn $behaviour() { super::$behaviour(concat!(stringify!($behaviour), "_python_stdio"), super::Sdk::Python, super::Transport::Stdio).await; })* }
        mod python_http { $(#[tokio::test] async fn $behaviour() { super::$behaviour(concat!(stringify!($behaviour), "_python_http"), super::Sdk::Python, super::Transport::Http).await; })* }
        mod typescript_stdio { $(#[tokio::test] async fn $behaviour() { super::$behaviour(concat!(stringify!($behaviour), "_typescript_stdio"), super::Sdk::TypeScript, super::Transport::Stdio).await; })* }
        mod typescript_http { $(#[tokio::test] async fn $behaviour() { super::$behaviour(concat!(stringify!($behaviour), "_typescript_http"), super::Sdk::TypeScript, super::Transport::Http).await; })* }
    };
}

per_client!(
    lists_the_catalog_with_annotations,
    a_read_only_call_answers_and_is_audited_with_the_client,
    an_upstream_call_goes_through_to_the_server,
    approval_by_elicitation_runs_a_mutating_call,
    a_declined_elicitation_refuses_the_call,
    a_client_without_elicitation_is_refused_saying_why,
    plan_mode_offers_and_runs_no_mutating_tool,
);

#[tokio::test]
async fn another_mecated_mounts_the_gateway_and_calls_through_it() {
    let setup = Setup::new().await;
    let gateway = HttpServe::start(
        setup.scratch.dir.path(),
        &setup.serve_args(&["--approve", "all"]),
        &[],
    )
    .await;
    let client = Scratch::new();
    let server = format!("gw={}", gateway.url);
    let script = r#"{"turns": [
      {"tool_calls": [{"id": "c1", "name": "mcp__gw__mcp__up__echo", "args": {"text": "through"}}]},
      {"text": "done"}
    ]}"#;
    let out = crate::support::mecated_run(
        &client,
        script,
        &[
            "--mcp-server",
            &server,
            "--approve",
            "all",
            "--output",
            "jsonl",
            "go",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out:?}");
    let results: Vec<Value> = crate::support::json_lines(&out.stdout)
        .into_iter()
        .filter(|e| e["type"] == "tool.result")
        .collect();
    assert_eq!(results.len(), 1, "{out:?}");
    assert_eq!(results[0]["is_error"], false, "{out:?}");
    assert!(
        results[0]["content"].to_string().contains("echo:through"),
        "{out:?}"
    );
    // The gateway audited the call it served.
    assert!(
        setup.audit().iter().any(|r| r["tool"] == "mcp__up__echo"),
        "{:?}",
        setup.audit()
    );
}

#[tokio::test]
async fn http_with_a_token_refuses_requests_without_it_and_audits_its_fingerprint() {
    let test = "http_with_a_token_refuses_requests_without_it_and_audits_its_fingerprint";
    let setup = Setup::new().await;
    let Some(node) = test_peers::node(test) else {
        return;
    };
    let home = setup.scratch.dir.path();
    let server = HttpServe::start(
        home,
        &setup.serve_args(&[]),
        &[("MECATED_AUTH_TOKEN", "s3cr3t-token")],
    )
    .await;
    let refused = reqwest::Client::new()
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["www-authenticate"], "Bearer");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/mcp_serve");
    let output = tokio::process::Command::new(node)
        .arg(fixtures.join("client.mjs"))
        .args(["--http", &server.url, "--token", "s3cr3t-token", "--call", "Read"])
        .args(["--args", r#"{"path":"README.md"}"#])
        .env("MECATED_PEERS_DIR", test_peers::peers_dir())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let record = setup.audit().into_iter().find(|r| r["tool"] == "Read").unwrap();
    let subject = record["caller"]["subject"].as_str().unwrap();
    assert!(
        subject.starts_with("token:sha256:") && subject.len() == 29,
        "{subject}"
    );
    let audit_text = walk(&setup.scratch.path("store"))
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap_or_default())
        .collect::<String>();
    assert!(
        !audit_text.contains("s3cr3t-token"),
        "the token never reaches the store"
    );
}

#[tokio::test]
async fn http_refuses_a_rebinding_host_and_a_foreign_origin_before_mcp() {
    let setup = Setup::new().await;
    let server = HttpServe::start(setup.scratch.dir.path(), &setup.serve_args(&[]), &[]).await;
    let post = |host: Option<&str>, origin: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            );
        if let Some(host) = host {
            request = request.header("host", host);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let rebinding = post(Some("evil.example:80"), None).await.unwrap();
    assert_eq!(rebinding.status(), 403);
    let text = rebinding.text().await.unwrap();
    assert!(
        text.contains("Host \\\"evil.example:80\\\" is not allowed"),
        "{text}"
    );
    let foreign = post(None, Some("http://evil.example")).await.unwrap();
    assert_eq!(foreign.status(), 403);
    let authority = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let same_origin = post(None, Some(&format!("http://{authority}"))).await.unwrap();
    assert_eq!(same_origin.status(), 200, "a same-origin request passes");
}

#[tokio::test]
async fn http_answers_an_allowed_origins_preflight_and_refuses_a_body_that_is_not_json() {
    let setup = Setup::new().await;
    let args = setup.serve_args(&["--allowed-origin", "http://localhost:3000"]);
    let server = HttpServe::start(setup.scratch.dir.path(), &args, &[]).await;
    let client = reqwest::Client::new();
    let preflight = client
        .request(reqwest::Method::OPTIONS, &server.url)
        .header("origin", "http://localhost:3000")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    let headers = preflight.headers();
    assert_eq!(headers["access-control-allow-origin"], "http://localhost:3000");
    let allowed = headers["access-control-allow-headers"].to_str().unwrap();
    assert!(allowed.contains("mcp-session-id"), "{allowed}");
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let answer = client
        .post(&server.url)
        .header("origin", "http://localhost:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["access-control-allow-origin"],
        "http://localhost:3000"
    );
    assert_eq!(
        answer.headers()["access-control-expose-headers"],
        "mcp-session-id"
    );
    let other = client
        .request(reqwest::Method::OPTIONS, &server.url)
        .header("origin", "http://localhost:3001")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 403, "another origin's preflight is refused");
    let simple = client
        .post(&server.url)
        .header("content-type", "text/plain")
        .header("accept", "application/json, text/event-stream")
        .body(initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(simple.status(), 415);
    let text = simple.text().await.unwrap();
    assert!(text.contains("application/json"), "{text}");
}

#[tokio::test]
async fn http_off_loopback_without_a_token_is_a_usage_error() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let out = mecated(
        scratch.dir.path(),
        &[
            "mcp",
            "serve",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--http-addr",
            "0.0.0.0:0",
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--http-addr"), "{}", out.stderr);
    assert!(out.stderr.contains("MECATED_AUTH_TOKEN"), "{}", out.stderr);
}

/// Runs the conformance suite's server `scenario` against `mecated mcp serve` on
/// HTTP; a failure shows the suite's checks.
async fn conformance_passes(test: &str, scenario: &str) {
    let Some(node) = test_peers::node(test) else {
        return;
    };
    let Some(suite) = test_peers::npm_file(test, "@modelcontextprotocol/conformance/dist/index.js") else {
        return;
    };
    let setup = Setup::new().await;
    let server = HttpServe::start(setup.scratch.dir.path(), &setup.serve_args(&[]), &[]).await;
    let out = tempfile::tempdir().unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(node)
            .arg(suite)
            .args(["server", "--url", &server.url, "--scenario", scenario, "-o"])
            .arg(out.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the suite finished within 120 s")
    .unwrap();
    if !output.status.success() {
        let checks: Vec<String> = walk(out.path())
            .into_iter()
            .filter(|path| path.ends_with("checks.json"))
            .filter_map(|path| std::fs::read_to_string(path).ok())
            .collect();
        panic!(
            "conformance server scenario {scenario} failed ({}):\nstdout:\n{}\nstderr:\n{}\nchecks.json:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            checks.join("\n")
        );
    }
}

#[tokio::test]
async fn conformance_server_initializes() {
    conformance_passes("conformance_server_initializes", "server-initialize").await;
}

#[tokio::test]
async fn conformance_server_answers_ping() {
    conformance_passes("conformance_server_answers_ping", "ping").await;
}

#[tokio::test]
async fn conformance_server_lists_tools() {
    conformance_passes("conformance_server_lists_tools", "tools-list").await;
}

#[tokio::test]
async fn conformance_server_accepts_a_logging_level() {
    conformance_passes("conformance_server_accepts_a_logging_level", "logging-set-level").await;
}

#[tokio::test]
async fn conformance_server_refuses_dns_rebinding() {
    conformance_passes(
        "conformance_server_refuses_dns_rebinding",
        "dns-rebinding-protection",
    )
    .await;
}

#[tokio::test]
async fn conformance_server_serves_several_sse_streams_at_once() {
    conformance_passes(
        "conformance_server_serves_several_sse_streams_at_once",
        "server-sse-multiple-streams",
    )
    .await;
}
