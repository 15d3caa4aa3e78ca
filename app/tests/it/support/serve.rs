//! A `mecated serve` process of the test binary (the real command line, killed with
//! SIGKILL when a test wants a crash or a restart), read through its printed URL.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Child;

use super::http::{Answer, answer, client};
use super::{Scratch, mecated_command};

/// How long the process may take to listen.
const LIMIT: Duration = Duration::from_secs(60);

/// A `mecated serve` process.
pub struct ServeProcess {
    child: Child,
    /// Its `http://host:port` (from the line it prints when it listens).
    pub base: String,
    stderr: Arc<Mutex<String>>,
    http: reqwest::Client,
}

impl ServeProcess {
    /// Starts `mecated serve` on the workspace of `scratch` with the mock `script`,
    /// `--toolhive=false`, a free loopback port, `extra` flags and `envs`; returns
    /// once it listens.
    pub async fn start(scratch: &Scratch, script: &Value, extra: &[&str], envs: &[(&str, &str)]) -> Self {
        let script = scratch.write(&format!("script-{}.json", fastrand::u64(..)), &script.to_string());
        let mut command = mecated_command(scratch.dir.path());
        command
            .args([
                "serve",
                "--workspace",
                &scratch.ws().display().to_string(),
                "--toolhive=false",
            ])
            .args([
                "--mock-script",
                &script.display().to_string(),
                "--http-addr",
                "127.0.0.1:0",
            ])
            .args(extra)
            .envs(envs.iter().copied())
            .env("MECATED_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let (child, base, stderr) = spawn_listening(&mut command).await;
        Self {
            child,
            base,
            stderr,
            http: client(),
        }
    }

    /// `method path` with an optional JSON body.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> reqwest::Response {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        request.send().await.unwrap()
    }

    /// Creates a session; its id.
    pub async fn create(&self) -> String {
        self.create_with(json!({})).await
    }

    /// Creates a session with `body`; its id.
    pub async fn create_with(&self, body: Value) -> String {
        let created = answer(self.call(reqwest::Method::POST, "/v1/sessions", Some(body)).await).await;
        assert_eq!(created.status, StatusCode::CREATED, "{created:?}");
        created.body["session_id"].as_str().unwrap().to_owned()
    }

    /// `GET path`, answered with JSON.
    pub async fn get(&self, path: &str) -> Answer {
        answer(self.call(reqwest::Method::GET, path, None).await).await
    }

    /// Prompts session `id` (the response streams its events).
    pub async fn prompt(&self, id: &str, text: &str) -> reqwest::Response {
        self.call(
            reqwest::Method::POST,
            &format!("/v1/sessions/{id}/prompt"),
            Some(json!({ "text": text })),
        )
        .await
    }

    /// SIGKILL, waited for.
    pub async fn kill(&mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// Spawns `command` (a `mecated serve` with `--http-addr`, stderr piped) and reads its
/// stderr until the line saying where it listens; returns the child, that base URL and
/// the stderr collected so far and from then on.
///
/// # Panics
/// When it exits or does not listen within [`LIMIT`].
pub async fn spawn_listening(command: &mut tokio::process::Command) -> (Child, String, Arc<Mutex<String>>) {
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = Arc::new(Mutex::new(String::new()));
    let base = tokio::time::timeout(LIMIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(url) = line.strip_prefix("mecated serve: listening on ") {
                return url.to_owned();
            }
        }
        panic!("mecated serve exited early: {}", stderr.lock().unwrap());
    })
    .await
    .expect("mecated serve listens");
    let drained = Arc::clone(&stderr);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            drained.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    (child, base, stderr)
}
