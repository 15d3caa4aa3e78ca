//! What users see of usage and cost, and a model per session: `mecated run
//! --output text` ends with the run's tokens and cost, `--model-prices` adds or
//! replaces prices (a bad file is refused naming file and path), `mecated run
//! --session X --model M` switches the session's model for good, and the HTTP API
//! creates a session on an offered model and shows its model, usage and cost,
//! across a restart.

use std::process::Command;

use adapter_llm::{MockScript, MockTurn, ModelPrices};
use app::{ModelConfig, StoreConfig};
use engine_ports::Usage;
use reqwest::StatusCode;
use serde_json::json;
use test_peers::PeerProcess;

use crate::support::http::TestServer;
use crate::support::{Scratch, config, mecated, mecated_run};

const WITH_USAGE: &str = r#"{"turns": [
  {"text": "hello", "usage": {"input_tokens": 1200, "output_tokens": 30, "cache_read_tokens": 1000}}
]}"#;

const PRICES: &str = r#"{"taken": "2026-01-01", "models": {
  "mock": {"input": 2.0, "cached_input": 0.5, "output": 10.0},
  "other": {"input": 4.0, "output": 20.0}
}}"#;

fn usage_line(stderr: &str) -> Option<&str> {
    stderr.lines().find(|line| line.starts_with("tokens: "))
}

#[tokio::test]
async fn a_text_run_ends_with_its_tokens_and_the_cost_when_the_price_is_known() {
    let scratch = Scratch::new();
    let output = mecated_run(&scratch, WITH_USAGE, &["hi"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    // The mock's model has no built-in price: no cost, never a guess.
    assert_eq!(
        usage_line(&output.stderr),
        Some("tokens: 1,200 in (1,000 cached) · 30 out"),
        "{}",
        output.stderr
    );

    let prices = scratch.write("prices.json", PRICES).display().to_string();
    let output = mecated_run(&scratch, WITH_USAGE, &["--model-prices", &prices, "hi"]).await;
    assert_eq!(output.code, 0, "{output:?}");
    // 200 plain prompt tokens at $2, 1,000 cached at $0.50, 30 answer tokens at $10.
    assert_eq!(
        usage_line(&output.stderr),
        Some("tokens: 1,200 in (1,000 cached) · 30 out · $0.0012"),
        "{}",
        output.stderr
    );

    // JSONL output carries the same counts in its events, and no text line.
    let output = mecated_run(&scratch, WITH_USAGE, &["--output", "jsonl", "hi"]).await;
    assert!(usage_line(&output.stderr).is_none(), "{}", output.stderr);
    let result = crate::support::json_lines(&output.stdout).pop().unwrap();
    assert_eq!(
        result["usage"],
        json!({"input_tokens": 1200, "output_tokens": 30, "cache_read_tokens": 1000})
    );
}

#[tokio::test]
async fn a_prices_file_that_cannot_be_used_is_refused_naming_the_file_and_the_json_path() {
    let scratch = Scratch::new();
    let bad = scratch
        .write(
            "bad.json",
            r#"{"models": {"mock": {"input": "cheap", "output": 1}}}"#,
        )
        .display()
        .to_string();
    let output = mecated_run(&scratch, WITH_USAGE, &["--model-prices", &bad, "hi"]).await;
    assert_eq!(output.code, 2, "{output:?}");
    assert!(
        output.stderr.contains("--model-prices")
            && output.stderr.contains(&bad)
            && output.stderr.contains("models.mock.input"),
        "{}",
        output.stderr
    );
    let missing = scratch.path("missing.json").display().to_string();
    let output = mecated_run(&scratch, WITH_USAGE, &["--model-prices", &missing, "hi"]).await;
    assert_eq!(output.code, 2, "{output:?}");
    assert!(output.stderr.contains(&missing), "{}", output.stderr);
}

fn fakellm(test: &str) -> Option<PeerProcess> {
    let fakellm = test_peers::venv_bin(test, "fakellm")?;
    let config = test_peers::repo_root().join("tests/peers/fakellm/models.yaml");
    let peer = PeerProcess::start(|port| {
        let mut command = Command::new(&fakellm);
        command
            .args([
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--config",
            ])
            .arg(&config);
        command
    })
    .unwrap_or_else(|error| panic!("fakellm did not start: {error}"));
    Some(peer)
}

#[tokio::test]
async fn run_with_model_switches_the_sessions_model_which_later_runs_keep() {
    let test = "run_with_model_switches_the_sessions_model_which_later_runs_keep";
    let Some(llm) = fakellm(test) else {
        return;
    };
    let scratch = Scratch::new();
    let ws = scratch.ws().display().to_string();
    let store = scratch.path("store").display().to_string();
    let base = format!("{}/v1", llm.base_url());
    let run = |model: Option<&'static str>| {
        let mut args = vec![
            "run".to_owned(),
            "--workspace".to_owned(),
            ws.clone(),
            "--toolhive=false".to_owned(),
            "--store-dir".to_owned(),
            store.clone(),
            "--session".to_owned(),
            "s".to_owned(),
            "--provider".to_owned(),
            "openai-chat".to_owned(),
            "--base-url".to_owned(),
            base.clone(),
        ];
        if let Some(model) = model {
            args.extend(["--model".to_owned(), model.to_owned()]);
        }
        args.push("hello".to_owned());
        let home = scratch.dir.path().to_path_buf();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            mecated(&home, &args, &[("OPENAI_API_KEY", "sk-any")]).await
        }
    };
    let first = run(Some("alpha-1")).await;
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(first.stdout.trim(), "answered by alpha");
    // Without --model the session keeps the model it was switched to, not the
    // process's default.
    let second = run(None).await;
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(second.stdout.trim(), "answered by alpha");
    let third = run(Some("beta-1")).await;
    assert_eq!(third.code, 0, "{third:?}");
    assert_eq!(third.stdout.trim(), "answered by beta");
}

#[tokio::test]
async fn an_http_session_runs_on_its_offered_model_and_shows_usage_and_cost_across_a_restart() {
    let scratch = Scratch::new();
    let mut cfg = config(&scratch);
    cfg.model = ModelConfig::MockScript(MockScript::new([MockTurn {
        usage: Some(Usage::new(1200, 30).with_cache(1000, 0)),
        ..MockTurn::text("hello")
    }]));
    cfg.models = vec!["other".to_owned()];
    cfg.prices = ModelPrices::builtin().overridden_by(ModelPrices::from_json(PRICES, "prices.json").unwrap());
    cfg.store = StoreConfig::Dir {
        path: scratch.path("store"),
        sync: adapter_jsonlstore::SyncPolicy::default(),
    };
    let server = TestServer::start(cfg.clone()).await;

    let refused = server.post("/v1/sessions", json!({"model": "gpt-9"})).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{refused:?}");
    assert!(refused.error().contains("mock, other"), "{refused:?}");

    let created = server.post("/v1/sessions", json!({"model": "other"})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
    let id = created.body["session_id"].as_str().unwrap().to_owned();
    let fresh = server.get(&format!("/v1/sessions/{id}")).await.body;
    assert_eq!(fresh["model"], "other");
    assert_eq!(fresh["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
    assert!(fresh.get("cost_usd").is_none(), "{fresh}");

    let events = server.prompt(&id, "hi").await.rest().await;
    let (_, init) = events.iter().find(|(_, e)| e["type"] == "session.init").unwrap();
    assert_eq!(init["model"], "other", "the run uses the session's model");
    let view = server.get(&format!("/v1/sessions/{id}")).await.body;
    assert_eq!(
        view["usage"],
        json!({"input_tokens": 1200, "output_tokens": 30, "cache_read_tokens": 1000})
    );
    // "other" has no cached price: every prompt token at $4, the answer at $20.
    let cost = (1200.0 * 4.0 + 30.0 * 20.0) / 1_000_000.0;
    assert!(
        (view["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{view}"
    );

    let plain = server.post("/v1/sessions", json!({})).await;
    let plain = plain.body["session_id"].as_str().unwrap().to_owned();
    assert_eq!(
        server.get(&format!("/v1/sessions/{plain}")).await.body["model"],
        "mock"
    );
    server.stop().await;

    // Stored with the session: a new process shows the same.
    let server = TestServer::start(cfg).await;
    assert_eq!(server.get(&format!("/v1/sessions/{id}")).await.body, view);
    server.stop().await;
}
