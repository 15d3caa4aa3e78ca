//! Performance targets of the ACP round trip, mock provider, an in-process
//! client (the `agent-client-protocol` crate) over a pipe (tokio duplex): prompt →
//! first `session/update` (≤ 5 ms p50); prompt → response for a one-text-turn script
//! (≤ 10 ms p50, ≤ 25 ms p99 over 200 prompts); with one Read call turn (≤ 20 ms p50).
//! Prints the percentiles of 200 prompts each, then runs criterion.

// A benchmark program: it reports on stdout, and a broken setup is fatal.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::path::Path;
use std::time::{Duration, Instant};

use adapter_llm::MockScript;
use adapter_skillfs::HostEnv;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PromptRequest, SessionNotification, SessionUpdate,
    TextContent,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use app::{AcpServer, AppConfig, Built, ModelConfig, build};
use criterion::Criterion;
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt as _, TokioAsyncWriteCompatExt as _};

/// The allocator `mecated` runs with.
#[global_allocator]
static ALLOCATOR: app::Allocator = app::Allocator;

/// Prompts per percentile measurement.
const PROMPTS: usize = 200;

const ONE_TEXT_TURN: &str = r#"{"turns": [{"text": "done"}]}"#;
const ONE_READ_TURN: &str = r#"{"turns": [
  {"tool_calls": [{"id": "r1", "name": "Read", "args": {"path": "README.md"}}]},
  {"text": "done"}
]}"#;

/// An update as the client saw it: session, whether it is the palette, when.
type Seen = (String, bool, Instant);

/// An agent on a [`Built`] and a client connected to it through a duplex pipe.
struct Pair {
    built: Built,
    cx: ConnectionTo<Agent>,
    updates: mpsc::UnboundedReceiver<Seen>,
    done: oneshot::Sender<()>,
    workspace: std::path::PathBuf,
}

async fn pair(workspace: &Path, script: &str) -> Pair {
    let mut cfg = AppConfig::new(workspace);
    cfg.skills.host = Some(HostEnv {
        cwd: workspace.to_path_buf(),
        home: None,
        xdg_config_home: None,
    });
    cfg.model = ModelConfig::MockScript(MockScript::from_json(script, "bench script").unwrap());
    cfg.engine.interactive = true;
    let built = build(cfg).await.unwrap();
    let server = AcpServer::new(built.host());

    let (agent_io, client_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    tokio::spawn(async move {
        server
            .serve(ByteStreams::new(agent_write.compat_write(), agent_read.compat()))
            .await
            .unwrap();
    });

    let (tx, updates) = mpsc::unbounded_channel();
    let (cx_tx, cx_rx) = oneshot::channel();
    let (done, done_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        Client
            .v1()
            .on_receive_notification(
                async move |notification: SessionNotification, _cx| {
                    let palette = matches!(notification.update, SessionUpdate::AvailableCommandsUpdate(_));
                    let _ = tx.send((notification.session_id.0.to_string(), palette, Instant::now()));
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(
                ByteStreams::new(client_write.compat_write(), client_read.compat()),
                async move |cx: ConnectionTo<Agent>| {
                    let _ = cx_tx.send(cx);
                    let _ = done_rx.await;
                    Ok(())
                },
            )
            .await
            .unwrap();
    });
    let cx = cx_rx.await.unwrap();
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    Pair {
        workspace: std::fs::canonicalize(workspace).unwrap(),
        built,
        cx,
        updates,
        done,
    }
}

impl Pair {
    /// A fresh session, once its palette arrived (so it is not mistaken for the first
    /// update of a prompt).
    async fn session(&mut self) -> String {
        let response = self
            .cx
            .send_request(NewSessionRequest::new(self.workspace.clone()))
            .block_task()
            .await
            .unwrap();
        let id = response.session_id.0.to_string();
        loop {
            let (session, palette, _) = self.updates.recv().await.unwrap();
            if palette && session == id {
                return id;
            }
        }
    }

    /// One prompt: (time to the first update, time to the response).
    async fn prompt(&mut self, session: &str) -> (Duration, Duration) {
        let request = PromptRequest::new(
            session.to_owned(),
            vec![ContentBlock::Text(TextContent::new("go"))],
        );
        let started = Instant::now();
        let sent = self.cx.send_request(request);
        let (_, _, first) = self.updates.recv().await.unwrap();
        let response = sent.block_task().await.unwrap();
        let answered = Instant::now();
        std::hint::black_box(response);
        while self.updates.try_recv().is_ok() {}
        (first - started, answered - started)
    }

    async fn close(self) {
        let _ = self.done.send(());
        self.built.close().await.unwrap();
    }
}

fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    samples.sort_unstable();
    samples[(samples.len() * p / 100).min(samples.len() - 1)]
}

/// `PROMPTS` prompts, each in a fresh session: (first-update, response) samples.
async fn measure(pair: &mut Pair) -> (Vec<Duration>, Vec<Duration>) {
    let mut first = Vec::with_capacity(PROMPTS);
    let mut whole = Vec::with_capacity(PROMPTS);
    for _ in 0..PROMPTS {
        let session = pair.session().await;
        let (f, w) = pair.prompt(&session).await;
        first.push(f);
        whole.push(w);
    }
    (first, whole)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("README.md"),
        "# bench\n\nA workspace for the ACP bench.\n",
    )
    .unwrap();

    let (mut text, mut read) = runtime.block_on(async {
        let mut text = pair(ws.path(), ONE_TEXT_TURN).await;
        let mut read = pair(ws.path(), ONE_READ_TURN).await;
        // Warm up both paths.
        for pair in [&mut text, &mut read] {
            for _ in 0..20 {
                let session = pair.session().await;
                pair.prompt(&session).await;
            }
        }
        (text, read)
    });

    let (mut first, mut whole) = runtime.block_on(measure(&mut text));
    println!(
        "acp one text turn ({PROMPTS} prompts): prompt → first update p50 {:?} (target ≤ 5 ms); prompt → response p50 {:?}, p99 {:?} (targets ≤ 10 ms, ≤ 25 ms)",
        percentile(&mut first, 50),
        percentile(&mut whole, 50),
        percentile(&mut whole, 99),
    );
    let (mut first, mut whole) = runtime.block_on(measure(&mut read));
    println!(
        "acp one Read call turn ({PROMPTS} prompts): prompt → first update p50 {:?}; prompt → response p50 {:?} (target ≤ 20 ms), p99 {:?}",
        percentile(&mut first, 50),
        percentile(&mut whole, 50),
        percentile(&mut whole, 99),
    );

    let mut criterion = Criterion::default().sample_size(20).configure_from_args();
    for (name, pair) in [
        ("acp/prompt-one-text-turn", &mut text),
        ("acp/prompt-one-read-turn", &mut read),
    ] {
        criterion.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        let session = pair.session().await;
                        total += pair.prompt(&session).await.1;
                    }
                    total
                })
            })
        });
    }
    criterion.final_summary();
    runtime.block_on(async {
        text.close().await;
        read.close().await;
    });
}
