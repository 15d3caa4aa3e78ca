//! `mecated mcp login|logout|list` against a local protected MCP server and its
//! OAuth authorization server, the browser step scripted (`$BROWSER` fetches the
//! authorization URL and follows its redirect to the login's loopback receiver), and
//! later runs using, renewing and losing the stored login.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use serde_json::Value;

use crate::support::mcp_fixture::FixtureSpec;
use crate::support::oauth::OAuthFixture;
use crate::support::{Scratch, json_lines, mecated, mecated_run};

/// A `$BROWSER` that fetches the URL and follows the authorization server's redirect
/// to the loopback receiver, as a browser whose user approves at once would.
fn browser(scratch: &Scratch) -> String {
    let path = scratch.write(
        "browser.sh",
        "#!/bin/sh\nexec curl -fsSL -o /dev/null --max-time 20 \"$1\"\n",
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// `mecated mcp <args> --mcp-server docs=<url> --workspace <ws> --toolhive=false`.
async fn mcp(scratch: &Scratch, fixture: &OAuthFixture, args: &[&str]) -> crate::support::Output {
    let server = format!("docs={}", fixture.url);
    let ws = scratch.ws().display().to_string();
    let browser = browser(scratch);
    let mut all: Vec<&str> = vec!["mcp"];
    all.extend(args);
    all.extend(["--mcp-server", &server, "--workspace", &ws, "--toolhive=false"]);
    mecated(scratch.dir.path(), &all, &[("BROWSER", browser.as_str())]).await
}

fn login_dir(scratch: &Scratch) -> PathBuf {
    scratch.path(".local/state/mecatl/mcp-auth")
}

fn login_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default()
}

const CALL_WHOAMI: &str = r#"{"turns": [
  {"tool_calls": [{"id": "c1", "name": "mcp__docs__whoami", "args": {"text": "me"}}]},
  {"text": "done"}
]}"#;

async fn run_calling_whoami(scratch: &Scratch, fixture: &OAuthFixture) -> crate::support::Output {
    let server = format!("docs={}", fixture.url);
    mecated_run(
        scratch,
        CALL_WHOAMI,
        &[
            "--mcp-server",
            &server,
            "--approve",
            "all",
            "--output",
            "jsonl",
            "who am I?",
        ],
    )
    .await
}

fn tool_results(stdout: &str) -> Vec<String> {
    json_lines(stdout)
        .into_iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| {
            e["content"]
                .as_str()
                .map_or_else(|| e["content"].to_string(), str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn a_browser_login_is_stored_privately_used_by_a_run_and_renewed_once_expired() {
    let fixture = OAuthFixture::start(FixtureSpec::tools("hello ", &["whoami"]), 3600).await;
    let scratch = Scratch::new();

    let login = mcp(&scratch, &fixture, &["login", "docs"]).await;
    assert_eq!(login.code, 0, "{login:?}");
    assert!(
        login.stdout.contains("Logged in to MCP server \"docs\""),
        "{login:?}"
    );

    // The authorization request: PKCE S256, our state, the server as the resource,
    // a loopback redirect.
    let authorizations = fixture.seen.authorizations.lock().unwrap().clone();
    assert_eq!(authorizations.len(), 1, "{authorizations:?}");
    let query = &authorizations[0];
    assert_eq!(query["code_challenge_method"], "S256");
    assert!(query["code_challenge"].as_str().is_some_and(|c| c.len() >= 43));
    assert_eq!(query["resource"], fixture.url.as_str());
    assert!(
        query["redirect_uri"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    let token_requests = fixture.seen.token_requests.lock().unwrap().clone();
    assert_eq!(token_requests[0]["resource"], fixture.url.as_str());

    // One private file in a private directory, no temporary file left.
    let dir = login_dir(&scratch);
    let files = login_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(stored["server_url"], fixture.url.as_str());
    assert_eq!(stored["login"]["access_token"], "at-1");

    let list = mcp(&scratch, &fixture, &["list"]).await;
    assert_eq!(list.code, 0, "{list:?}");
    assert!(list.stdout.contains("docs\tstreamable-http"), "{list:?}");
    assert!(list.stdout.contains("logged in"), "{list:?}");

    // The access token's time runs out (its expiry moved to its issue time).
    let mut expired = stored.clone();
    expired["login"]["expires_at"] = expired["login"]["issued_at"].clone();
    std::fs::write(&files[0], serde_json::to_vec(&expired).unwrap()).unwrap();
    fixture.seen.bearers.lock().unwrap().clear();
    let run = run_calling_whoami(&scratch, &fixture).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(tool_results(&run.stdout), ["hello me"], "{run:?}");
    assert_eq!(
        fixture.refreshes(),
        1,
        "the expired token was renewed once, before use"
    );
    assert_eq!(fixture.mcp.calls.lock().unwrap().len(), 1, "the tool ran once");
    let bearers = fixture.seen.bearers.lock().unwrap().clone();
    assert!(
        bearers.iter().all(|b| b == "at-2"),
        "only the renewed token was sent: {bearers:?}"
    );
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(
        stored["login"]["access_token"], "at-2",
        "the renewed login is stored"
    );

    // The authorization server never sees an access token; no token reaches output.
    let headers = fixture.seen.authorization_headers.lock().unwrap().clone();
    assert!(headers.iter().all(|h| !h.contains("at-")), "{headers:?}");
    for text in [&login.stdout, &login.stderr, &run.stderr, &list.stdout] {
        assert!(!text.contains("at-1") && !text.contains("rt-1"), "{text}");
    }
}

#[tokio::test]
async fn a_token_the_server_refuses_is_renewed_once_and_the_request_sent_again() {
    let fixture = OAuthFixture::start(FixtureSpec::tools("hello ", &["whoami"]), 3600).await;
    let scratch = Scratch::new();
    let login = mcp(&scratch, &fixture, &["login", "docs"]).await;
    assert_eq!(login.code, 0, "{login:?}");
    // The server revokes the token before it expires.
    fixture.seen.live.lock().unwrap().clear();
    fixture.seen.bearers.lock().unwrap().clear();

    let run = run_calling_whoami(&scratch, &fixture).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(tool_results(&run.stdout), ["hello me"], "{run:?}");
    assert_eq!(fixture.refreshes(), 1);
    let bearers = fixture.seen.bearers.lock().unwrap().clone();
    assert_eq!(bearers.first().map(String::as_str), Some("at-1"), "{bearers:?}");
    assert!(bearers[1..].iter().all(|b| b == "at-2"), "{bearers:?}");
    assert_eq!(
        fixture.seen.authorizations.lock().unwrap().len(),
        1,
        "no new login"
    );
}

#[tokio::test]
async fn logout_removes_the_login_and_a_run_then_fails_naming_the_login_command() {
    let fixture = OAuthFixture::start(FixtureSpec::tools("hello ", &["whoami"]), 3600).await;
    let scratch = Scratch::new();
    let login = mcp(&scratch, &fixture, &["login", "docs"]).await;
    assert_eq!(login.code, 0, "{login:?}");
    assert_eq!(login_files(&login_dir(&scratch)).len(), 1);

    let logout = mcp(&scratch, &fixture, &["logout", "docs"]).await;
    assert_eq!(logout.code, 0, "{logout:?}");
    assert!(
        logout.stdout.contains("Logged out of MCP server \"docs\""),
        "{logout:?}"
    );
    assert!(login_files(&login_dir(&scratch)).is_empty());
    let again = mcp(&scratch, &fixture, &["logout", "docs"]).await;
    assert!(again.stdout.contains("No login was stored"), "{again:?}");

    let run = run_calling_whoami(&scratch, &fixture).await;
    assert!(
        run.stderr.contains("MCP server \"docs\"")
            && run.stderr.contains("needs a login: run `mecated mcp login docs`"),
        "{run:?}"
    );
    assert_eq!(
        fixture.seen.authorizations.lock().unwrap().len(),
        1,
        "a run never starts a login"
    );

    let list = mcp(&scratch, &fixture, &["list"]).await;
    assert!(
        list.stdout.contains("needs login (mecated mcp login docs)"),
        "{list:?}"
    );
}

#[tokio::test]
async fn a_token_is_never_sent_to_another_origin_the_server_redirects_to() {
    let fixture = OAuthFixture::start(FixtureSpec::tools("hello ", &["whoami"]), 3600).await;
    let scratch = Scratch::new();
    let login = mcp(&scratch, &fixture, &["login", "docs"]).await;
    assert_eq!(login.code, 0, "{login:?}");

    // Another origin recording every Authorization header it receives.
    let received = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let recorder = Arc::clone(&received);
    let elsewhere = Router::new().fallback(move |request: Request| {
        let recorder = Arc::clone(&recorder);
        async move {
            let header = request
                .headers()
                .get("authorization")
                .map(|v| v.to_str().unwrap_or_default().to_owned())
                .unwrap_or_default();
            recorder.lock().unwrap().push(header);
            "{}"
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, elsewhere).await;
    });
    *fixture.seen.redirect.lock().unwrap() = Some(format!("http://127.0.0.1:{port}/mcp"));

    let run = run_calling_whoami(&scratch, &fixture).await;
    assert!(
        run.stderr.contains("MCP server \"docs\""),
        "the connect failed: {run:?}"
    );
    assert!(
        fixture.seen.bearers.lock().unwrap().iter().any(|b| b == "at-1"),
        "the token went to the MCP server itself"
    );
    let received = received.lock().unwrap().clone();
    assert!(received.iter().all(|h| !h.contains("at-1")), "{received:?}");
    server.abort();
}
