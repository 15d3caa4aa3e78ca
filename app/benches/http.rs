//! Performance target of the HTTP API: create a session, prompt it and read
//! the full SSE stream of a one-text-turn script over loopback, ≤ 15 ms p50.
//! Prints p50/p99 of 200 round trips (each session deleted afterwards, untimed),
//! then runs criterion.

// A benchmark program: it reports on stdout, and a broken setup is fatal.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapter_llm::{MockScript, MockTurn};
use adapter_skillfs::HostEnv;
use app::{AppConfig, HttpOptions, HttpServer, ModelConfig, build};
use criterion::Criterion;

/// The allocator `mecated` runs with.
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

/// Creates a session, prompts it, reads the SSE stream to its end; returns the id
/// and the time taken.
async fn round_trip(client: &reqwest::Client, base: &str) -> (String, Duration) {
    let started = Instant::now();
    let created = client
        .post(format!("{base}/v1/sessions"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let body: serde_json::Value = serde_json::from_slice(&created.bytes().await.unwrap()).unwrap();
    let id = body["session_id"].as_str().unwrap().to_owned();
    let mut stream = client
        .post(format!("{base}/v1/sessions/{id}/prompt"))
        .header("content-type", "application/json")
        .body(r#"{"text":"hello"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut text = Vec::new();
    while let Some(chunk) = stream.chunk().await.unwrap() {
        text.extend_from_slice(&chunk);
    }
    let elapsed = started.elapsed();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains(r#""type":"result""#), "{text}");
    (id, elapsed)
}

async fn delete(client: &reqwest::Client, base: &str, id: &str) {
    let deleted = client
        .delete(format!("{base}/v1/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let (built, base, stop) = runtime.block_on(async {
        let mut cfg = AppConfig::new(ws.path());
        cfg.skills.host = Some(HostEnv {
            cwd: ws.path().to_path_buf(),
            home: None,
            xdg_config_home: None,
        });
        cfg.model = ModelConfig::MockScript(MockScript::new([MockTurn::text("done")]));
        cfg.engine.interactive = true;
        let built = Arc::new(build(cfg).await.unwrap());
        let server = HttpServer::bind(
            built.host(),
            "127.0.0.1:0".parse().unwrap(),
            HttpOptions::default(),
        )
        .await
        .unwrap();
        let base = format!("http://{}", server.local_addr());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(async move {
            let _ = rx.await;
        }));
        (built, base, (tx, serving))
    });
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let mut samples = runtime.block_on(async {
        // Warm up the connection pool and the allocator.
        for _ in 0..20 {
            let (id, _) = round_trip(&client, &base).await;
            delete(&client, &base, &id).await;
        }
        let mut samples = Vec::with_capacity(200);
        for _ in 0..200 {
            let (id, elapsed) = round_trip(&client, &base).await;
            samples.push(elapsed);
            delete(&client, &base, &id).await;
        }
        samples
    });
    samples.sort_unstable();
    println!(
        "HTTP create + prompt + full SSE stream (one text turn): p50 {:?}, p99 {:?} over {} (target p50 ≤ 15 ms)",
        samples[samples.len() / 2],
        samples[samples.len() * 99 / 100],
        samples.len()
    );

    let mut criterion = Criterion::default().sample_size(30).configure_from_args();
    criterion.bench_function("http/create+prompt+sse", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let client = client.clone();
            let base = base.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (id, elapsed) = round_trip(&client, &base).await;
                    total += elapsed;
                    delete(&client, &base, &id).await;
                }
                total
            }
        })
    });
    criterion.final_summary();
    runtime.block_on(async {
        let (tx, serving) = stop;
        let _ = tx.send(());
        serving.await.unwrap().unwrap();
        built.close().await.unwrap();
    });
}
