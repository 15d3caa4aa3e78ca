//! A fake OpenAI-compatible model whose last answer waits for the test: each prompt
//! first gets a `Read` of `README.md`, then, once the tool result is back, the
//! request is held until [`GatedModel::release`] (the test says when the turn ends,
//! no timer does), and answered with [`FINAL_ANSWER`].

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// The text of the answer a released request gets.
pub const FINAL_ANSWER: &str = "finished after the wait";

/// The fake model's HTTP server.
pub struct GatedModel {
    /// `http://127.0.0.1:PORT/v1`, for `--base-url`.
    pub base_url: String,
    /// One message per request that is now held.
    held: mpsc::UnboundedReceiver<()>,
    release: watch::Sender<bool>,
    task: JoinHandle<()>,
}

#[derive(Clone)]
struct Gate {
    held: mpsc::UnboundedSender<()>,
    release: watch::Receiver<bool>,
}

impl GatedModel {
    pub async fn start() -> Self {
        let (held_tx, held) = mpsc::unbounded_channel();
        let (release, release_rx) = watch::channel(false);
        let gate = Arc::new(Gate {
            held: held_tx,
            release: release_rx,
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .with_state(gate);
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            held,
            release,
            task,
        }
    }

    /// Waits until a request is held (the turn after the `Read` is waiting).
    pub async fn until_held(&mut self) {
        tokio::time::timeout(std::time::Duration::from_secs(60), self.held.recv())
            .await
            .expect("the model is asked for its last answer")
            .expect("the model is running");
    }

    /// Lets every held request (and every later one) be answered.
    pub fn release(&self) {
        self.release.send_replace(true);
    }
}

impl Drop for GatedModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(State(gate): State<Arc<Gate>>, body: String) -> impl IntoResponse {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let after_tool = request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| last["role"] == "tool");
    let chunks = if after_tool {
        let _ = gate.held.send(());
        let mut release = gate.release.clone();
        let _ = release.wait_for(|released| *released).await;
        vec![
            delta(json!({"role": "assistant", "content": FINAL_ANSWER}), None),
            delta(json!({}), Some("stop")),
        ]
    } else {
        let call = json!({"index": 0, "id": "call_read", "type": "function",
            "function": {"name": "Read", "arguments": "{\"path\":\"README.md\"}"}});
        vec![
            delta(json!({"role": "assistant", "content": "reading"}), None),
            delta(json!({"tool_calls": [call]}), None),
            delta(json!({}), Some("tool_calls")),
        ]
    };
    let mut text: String = chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], text)
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "x", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}
