//! `mecated serve` as a process: the startup refusal of a non-loopback address
//! without a token and of malformed `--allowed-host` / `--allowed-origin` values
//! (exit 2), and an end-to-end session over loopback with a token,
//! ended by SIGTERM with `--drain-secs 0` (runs cancelled at once, exit 0).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::support::http::{SseReader, answer, client};
use crate::support::{Scratch, mecated, mecated_command};

const SLOW_SCRIPT: &str = r#"{"turns": [{"text": "hello there"}, {"delay_ms": 5000, "text": "slow"}]}"#;

#[tokio::test]
async fn a_non_loopback_address_without_a_token_is_refused_with_exit_2() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let output = mecated(
        scratch.dir.path(),
        &[
            "serve",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--mock",
            "--http-addr",
            "0.0.0.0:0",
        ],
        &[],
    )
    .await;
    assert_eq!(output.code, 2, "{output:?}");
    for needle in ["--http-addr", "0.0.0.0:0", "MECATED_AUTH_TOKEN", "--auth-token"] {
        assert!(
            output.stderr.contains(needle),
            "missing {needle:?}: {}",
            output.stderr
        );
    }
    let bad = mecated(
        scratch.dir.path(),
        &["serve", "--workspace", &ws, "--mock", "--http-addr", "nowhere"],
        &[],
    )
    .await;
    assert_eq!(bad.code, 2, "{bad:?}");
    for needle in ["--http-addr", "nowhere", "IP:PORT"] {
        assert!(bad.stderr.contains(needle), "missing {needle:?}: {}", bad.stderr);
    }
}

#[tokio::test]
async fn malformed_allowed_hosts_and_origins_are_usage_errors_naming_the_flag() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let cases = [
        (
            "--allowed-origin",
            "https://app.example.com/path",
            "scheme://host[:port]",
        ),
        ("--allowed-origin", "null", "scheme://host[:port]"),
        ("--allowed-host", "http://app.example.com", "host name"),
    ];
    for (flag, value, expected) in cases {
        let output = mecated(
            scratch.dir.path(),
            &["serve", "--workspace", &ws, "--mock", flag, value],
            &[],
        )
        .await;
        assert_eq!(output.code, 2, "{flag} {value}: {output:?}");
        for needle in [flag, value, expected] {
            assert!(
                output.stderr.contains(needle),
                "missing {needle:?}: {}",
                output.stderr
            );
        }
    }
}

#[tokio::test]
async fn serve_answers_over_loopback_and_stops_on_sigterm_with_exit_0() {
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let script = scratch.write("script.json", SLOW_SCRIPT).display().to_string();
    let mut command = mecated_command(scratch.dir.path());
    command
        .args([
            "serve",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--mock-script",
            &script,
        ])
        .args(["--http-addr", "127.0.0.1:0", "--drain-secs", "0"])
        .env("MECATED_AUTH_TOKEN", "tok-123")
        .stderr(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let seen = Arc::new(Mutex::new(String::new()));
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(url) = line.strip_prefix("mecated serve: listening on ") {
                return url.to_owned();
            }
        }
        panic!("mecated serve exited early: {}", seen.lock().unwrap());
    })
    .await
    .expect("mecated serve listens");
    // Keep draining stderr so the child never blocks on a full pipe.
    let drain = {
        let seen = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                seen.lock().unwrap().push_str(&format!("{line}\n"));
            }
        })
    };

    let http = client();
    let health = answer(http.get(format!("{base}/healthz")).send().await.unwrap()).await;
    assert_eq!(health.status, StatusCode::OK);
    let denied = answer(http.get(format!("{base}/v1/sessions")).send().await.unwrap()).await;
    assert_eq!(denied.status, StatusCode::UNAUTHORIZED);
    let created = answer(
        http.post(format!("{base}/v1/sessions"))
            .bearer_auth("tok-123")
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
    let id = created.body["session_id"].as_str().unwrap().to_owned();
    let prompt = |text: &str| {
        http.post(format!("{base}/v1/sessions/{id}/prompt"))
            .bearer_auth("tok-123")
            .header("content-type", "application/json")
            .body(json!({ "text": text }).to_string())
            .send()
    };
    let first = SseReader::new(prompt("hi").await.unwrap()).rest().await;
    let last = &first.last().unwrap().1;
    assert_eq!(last["type"], "result");
    assert_eq!(last["stop"], "end_turn");
    assert_eq!(last["text"], "hello there");

    // The second turn waits 5 s: SIGTERM meanwhile cancels it at once (no drain) and
    // the process exits 0.
    let mut second = SseReader::new(prompt("again").await.unwrap());
    second.until("session.init").await;
    let started = Instant::now();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let rest = second.rest().await;
    assert_eq!(rest.last().unwrap().1["stop"], "cancelled", "{rest:?}");
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("mecated serve exits after SIGTERM")
        .unwrap();
    drain.await.unwrap();
    let log = seen.lock().unwrap().clone();
    assert_eq!(status.code(), Some(0), "{log}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(log.contains("SIGTERM"), "{log}");
    assert!(!log.contains("tok-123"), "the token never shows in logs: {log}");
}
