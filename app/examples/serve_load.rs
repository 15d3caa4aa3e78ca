//! Load on a real `mecated serve` process: `--sessions N` sessions created over the
//! run by `--concurrency C` clients prompting at once (each client creates a session,
//! prompts it and reads its stream to `result`, then takes the next), every prompt a
//! `Read` of the README and an answer from the mock model. The server keeps
//! `--max-live-sessions` live (so sessions past it are unloaded to the store) on a
//! JSONL store, or with `--postgres` on a throwaway PostgreSQL (test-peers). Then
//! SIGTERM: the drain and the exit code are part of the figure.
//!
//! Prints one JSON line: `{store, sessions, concurrency, max_live, errors, first_error,
//! p50_ms, p99_ms, max_ms, seconds, prompts_per_sec, rss_kib, peak_rss_kib, exit_code,
//! exit_ms}`. Run by `scripts/bench/run.py` (the `serve_load` step) with the `mecated`
//! binary built beside this example.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    missing_docs
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::Mutex;

/// What one run measures.
struct Settings {
    sessions: usize,
    concurrency: usize,
    max_live: usize,
    postgres: bool,
}

fn settings() -> Settings {
    let mut settings = Settings {
        sessions: 1000,
        concurrency: 200,
        max_live: 256,
        postgres: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse().ok());
        match args[i].as_str() {
            "--sessions" => settings.sessions = value().expect("--sessions N"),
            "--concurrency" => settings.concurrency = value().expect("--concurrency N"),
            "--max-live-sessions" => settings.max_live = value().expect("--max-live-sessions N"),
            "--postgres" => {
                settings.postgres = true;
                i += 1;
                continue;
            }
            other => panic!("unknown argument {other:?}"),
        }
        i += 2;
    }
    settings
}

/// The `mecated` binary beside this example (`target/<profile>/examples/..`).
fn mecated() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let binary = exe.parent().unwrap().parent().unwrap().join("mecated");
    assert!(
        binary.exists(),
        "build the mecated binary first: {}",
        binary.display()
    );
    binary
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[at]
}

/// One client's job: create a session, prompt it, read to `result`; the prompt's
/// time in ms, or what went wrong.
async fn one_prompt(http: &reqwest::Client, base: &str) -> Result<f64, String> {
    let created = http
        .post(format!("{base}/v1/sessions"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .map_err(|e| format!("create: {e}"))?;
    if created.status() != reqwest::StatusCode::CREATED {
        let status = created.status();
        return Err(format!(
            "create: {status} {}",
            created.text().await.unwrap_or_default()
        ));
    }
    let id = created
        .json::<Value>()
        .await
        .map_err(|e| format!("create: {e}"))?["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let started = Instant::now();
    let response = http
        .post(format!("{base}/v1/sessions/{id}/prompt"))
        .header("content-type", "application/json")
        .body(json!({"text": "read the README"}).to_string())
        .send()
        .await
        .map_err(|e| format!("prompt: {e}"))?;
    if response.status() != reqwest::StatusCode::OK {
        let status = response.status();
        return Err(format!(
            "prompt: {status} {}",
            response.text().await.unwrap_or_default()
        ));
    }
    let body = response.text().await.map_err(|e| format!("stream: {e}"))?;
    let elapsed = started.elapsed().as_secs_f64() * 1000.0;
    let last = body
        .lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .next()
        .unwrap_or(Value::Null);
    if last["type"] != "result" || last["stop"] != "end_turn" {
        return Err(format!("the run ended with {last}"));
    }
    Ok(elapsed)
}

async fn serve(dir: &Path, store: &[String], settings: &Settings, pg_password: Option<&str>) -> Value {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "# load\n").unwrap();
    let script = dir.join("script.json");
    let read = json!({"id": "r1", "name": "Read", "args": {"path": "README.md"}});
    let script_text = json!({"turns": [{"tool_calls": [read]}, {"text": "done"}]});
    std::fs::write(&script, script_text.to_string()).unwrap();
    let mut command = tokio::process::Command::new(mecated());
    command
        .args(["serve", "--workspace", ws.to_str().unwrap(), "--toolhive=false"])
        .args([
            "--mock-script",
            script.to_str().unwrap(),
            "--http-addr",
            "127.0.0.1:0",
        ])
        .args([
            "--max-live-sessions",
            &settings.max_live.to_string(),
            "--drain-secs",
            "10",
        ])
        .args(store)
        .env("HOME", dir)
        .env("MECATED_LOG", "warn")
        .env("MECATED_TOOLHIVE_URL", "http://127.0.0.1:1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(password) = pg_password {
        command.env("PGPASSWORD", password);
    }
    let mut child = command.spawn().unwrap();
    let pid = child.id().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("mecated serve: listening on ") {
                return url.to_owned();
            }
            eprintln!("{line}");
        }
        panic!("mecated serve exited before listening");
    })
    .await
    .expect("mecated serve listens");
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });

    // One HTTP client per load client, keeping at most one idle connection, as
    // separate users would. A pool shared by every load client grows by each new
    // connection opened while the previous one was not yet back in the pool (more
    // often the more loaded the host), past the server's connection cap.
    let client = || {
        reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(1)
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap()
    };
    let next = Arc::new(AtomicUsize::new(0));
    let times = Arc::new(Mutex::new(Vec::with_capacity(settings.sessions)));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let clients: Vec<_> = (0..settings.concurrency)
        .map(|_| {
            let (http, base, next, times, errors) = (
                client(),
                base.clone(),
                Arc::clone(&next),
                Arc::clone(&times),
                Arc::clone(&errors),
            );
            let total = settings.sessions;
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::SeqCst) < total {
                    match one_prompt(&http, &base).await {
                        Ok(ms) => times.lock().await.push(ms),
                        Err(error) => errors.lock().await.push(error),
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    let rss = rss_kib(pid, "VmRSS:");
    let peak = rss_kib(pid, "VmHWM:");
    let signalled = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("mecated serve exits after SIGTERM")
        .unwrap();
    let exit_ms = signalled.elapsed().as_secs_f64() * 1000.0;
    let mut times = times.lock().await.clone();
    times.sort_by(f64::total_cmp);
    let errors = errors.lock().await.clone();
    let round = |x: f64| (x * 100.0).round() / 100.0;
    json!({
        "sessions": settings.sessions,
        "concurrency": settings.concurrency,
        "max_live": settings.max_live,
        "errors": errors.len(),
        "first_error": errors.first(),
        "p50_ms": round(quantile(&times, 0.5)),
        "p99_ms": round(quantile(&times, 0.99)),
        "max_ms": round(times.last().copied().unwrap_or_default()),
        "seconds": round(seconds),
        "prompts_per_sec": round(times.len() as f64 / seconds),
        "rss_kib": rss,
        "peak_rss_kib": peak,
        "exit_code": status.code(),
        "exit_ms": round(exit_ms),
    })
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let settings = settings();
    let dir = tempfile::tempdir().unwrap();
    let mut result = if settings.postgres {
        let cluster =
            test_peers::PgCluster::start("serve_load").expect("PostgreSQL (tests/peers/install.sh)");
        let database = cluster.fresh_database("load");
        let store = vec!["--store-url".to_owned(), cluster.url_without_password(&database)];
        let mut result = serve(dir.path(), &store, &settings, Some(cluster.password())).await;
        result["store"] = json!("postgres");
        result
    } else {
        let store = vec![
            "--store-dir".to_owned(),
            dir.path().join("store").display().to_string(),
        ];
        let mut result = serve(dir.path(), &store, &settings, None).await;
        result["store"] = json!("jsonl");
        result
    };
    result["started_sessions"] = json!(settings.sessions);
    println!("{result}");
}
