//! A real ACP client — the `agent-client-protocol` crate's `Client` — driving the
//! `mecated acp` binary over its stdio: it collects `session/update`s, hands
//! `session/request_permission` requests to the test, records every line the agent
//! writes, and reports how the agent exited.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, CreateElicitationRequest, CreateElicitationResponse,
    ElicitationAcceptAction, ElicitationAction, ElicitationCapabilities, ElicitationFormCapabilities,
    InitializeRequest, InitializeResponse, McpServer, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client, ConnectTo, Error, LineDirection};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Longest wait for anything the agent should do promptly.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// One `session/request_permission` waiting for the test's answer.
pub struct Ask {
    pub request: RequestPermissionRequest,
    responder: Responder<RequestPermissionResponse>,
}

impl Ask {
    /// Selects the option `option_id`.
    pub fn select(self, option_id: &str) {
        let outcome =
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option_id.to_owned()));
        self.responder
            .respond(RequestPermissionResponse::new(outcome))
            .unwrap();
    }

    /// Answers with the `cancelled` outcome.
    pub fn cancel(self) {
        self.responder
            .respond(RequestPermissionResponse::new(
                RequestPermissionOutcome::Cancelled,
            ))
            .unwrap();
    }

    /// The request as JSON.
    pub fn json(&self) -> Value {
        serde_json::to_value(&self.request).unwrap()
    }
}

/// One `elicitation/create` waiting for the test's answer.
pub struct Elicitation {
    pub request: CreateElicitationRequest,
    responder: Responder<CreateElicitationResponse>,
}

impl Elicitation {
    /// Accepts with `content` (a JSON object of the form's fields).
    pub fn accept(self, content: Value) {
        let content = serde_json::from_value(content).unwrap();
        let action = ElicitationAction::Accept(ElicitationAcceptAction::new().content(Some(content)));
        self.responder
            .respond(CreateElicitationResponse::new(action))
            .unwrap();
    }

    /// The request as JSON.
    pub fn json(&self) -> Value {
        serde_json::to_value(&self.request).unwrap()
    }
}

/// The lines the agent wrote, by stream.
#[derive(Default)]
pub struct Lines {
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

/// `mecated acp` under a real ACP client.
pub struct AcpClient {
    pub cx: ConnectionTo<Agent>,
    pub init: InitializeResponse,
    updates: mpsc::UnboundedReceiver<SessionNotification>,
    asks: mpsc::UnboundedReceiver<Ask>,
    elicitations: mpsc::UnboundedReceiver<Elicitation>,
    lines: Arc<Mutex<Lines>>,
    done: Option<oneshot::Sender<()>>,
    driver: JoinHandle<Result<(), Error>>,
    child: Option<tokio::process::Child>,
}

impl AcpClient {
    /// Spawns `mecated acp ARGS` on pipes of our own (a hermetic environment: no
    /// provider keys, `HOME` = `home`, ToolHive on a closed port, plus `env`),
    /// connects the client over them and sends `initialize`.
    pub async fn start(home: &Path, args: &[String], env: &[(&str, &str)]) -> Self {
        Self::start_as(home, args, env, ClientCapabilities::new()).await
    }

    /// As [`AcpClient::start`], for a client that can show form elicitations.
    pub async fn start_eliciting(home: &Path, args: &[String]) -> Self {
        let capabilities = ClientCapabilities::new()
            .elicitation(ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()));
        Self::start_as(home, args, &[], capabilities).await
    }

    async fn start_as(
        home: &Path,
        args: &[String],
        env: &[(&str, &str)],
        capabilities: ClientCapabilities,
    ) -> Self {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mecated"));
        command
            .arg("acp")
            .args(args)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env("HOME", home)
            .env("MECATED_LOG", "warn")
            .env("MECATED_TOOLHIVE_URL", "http://127.0.0.1:1")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("mecated starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();

        let lines = Arc::new(Mutex::new(Lines::default()));
        let recorded = Arc::clone(&lines);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                recorded.lock().unwrap().stderr.push(line);
            }
        });
        let recorded = Arc::clone(&lines);
        let incoming = futures::stream::unfold(BufReader::new(stdout).lines(), move |mut reader| {
            let recorded = Arc::clone(&recorded);
            async move {
                match reader.next_line().await {
                    Ok(Some(line)) => {
                        recorded.lock().unwrap().stdout.push(line.clone());
                        Some((Ok(line), reader))
                    }
                    Ok(None) => None,
                    Err(error) => Some((Err(error), reader)),
                }
            }
        });
        let outgoing = futures::sink::unfold(stdin, async |mut stdin, line: String| {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>(stdin)
        });
        let transport = agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming));
        Self::connect(transport, lines, Some(child), capabilities).await
    }

    /// Spawns `mecated acp ARGS` through the crate's own process support
    /// (`AcpAgent`, as an editor built on the crate would), connects and initializes.
    pub async fn start_acp_agent(home: &Path, args: &[String]) -> Self {
        let config = AcpAgentConfig::new(env!("CARGO_BIN_EXE_mecated"))
            .arg("acp")
            .args(args.iter().cloned())
            .env("HOME", home.display().to_string())
            .env("MECATED_LOG", "warn")
            .env("MECATED_TOOLHIVE_URL", "http://127.0.0.1:1");
        let lines = Arc::new(Mutex::new(Lines::default()));
        let recorded = Arc::clone(&lines);
        let agent = AcpAgent::new(config).with_debug(move |line, direction| {
            let mut lines = recorded.lock().unwrap();
            match direction {
                LineDirection::Stdout => lines.stdout.push(line.to_owned()),
                LineDirection::Stderr => lines.stderr.push(line.to_owned()),
                LineDirection::Stdin => {}
            }
        });
        Self::connect(agent, lines, None, ClientCapabilities::new()).await
    }

    async fn connect(
        transport: impl ConnectTo<Client> + 'static,
        lines: Arc<Mutex<Lines>>,
        child: Option<tokio::process::Child>,
        capabilities: ClientCapabilities,
    ) -> Self {
        let (updates_tx, updates) = mpsc::unbounded_channel();
        let (asks_tx, asks) = mpsc::unbounded_channel();
        let (elicitations_tx, elicitations) = mpsc::unbounded_channel();
        let (cx_tx, cx_rx) = oneshot::channel();
        let (done, done_rx) = oneshot::channel::<()>();
        let driver = tokio::spawn(async move {
            Client
                .v1()
                .name("mecated-tests")
                .on_receive_notification(
                    async move |notification: SessionNotification, _cx| {
                        let _ = updates_tx.send(notification);
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |request: RequestPermissionRequest, responder, _cx| {
                        let _ = asks_tx.send(Ask { request, responder });
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    async move |request: CreateElicitationRequest, responder, _cx| {
                        let _ = elicitations_tx.send(Elicitation { request, responder });
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
                    let _ = cx_tx.send(cx);
                    let _ = done_rx.await;
                    Ok(())
                })
                .await
        });
        let cx = tokio::time::timeout(PATIENCE, cx_rx)
            .await
            .expect("the client connected")
            .expect("the client connected");
        let init = tokio::time::timeout(
            PATIENCE,
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities))
                .block_task(),
        )
        .await
        .expect("initialize answered in time")
        .expect("initialize succeeded");
        Self {
            cx,
            init,
            updates,
            asks,
            elicitations,
            lines,
            done: Some(done),
            driver,
            child,
        }
    }

    /// `session/new` with `cwd` and `servers`.
    pub async fn new_session(
        &self,
        cwd: &Path,
        servers: Vec<McpServer>,
    ) -> Result<NewSessionResponse, Error> {
        let request = NewSessionRequest::new(cwd.to_path_buf()).mcp_servers(servers);
        tokio::time::timeout(PATIENCE, self.cx.send_request(request).block_task())
            .await
            .expect("session/new answered in time")
    }

    /// `session/new` that must succeed; returns the session id.
    pub async fn session(&self, cwd: &Path, servers: Vec<McpServer>) -> String {
        let response = self
            .new_session(cwd, servers)
            .await
            .expect("session/new succeeded");
        response.session_id.0.to_string()
    }

    /// Sends a text prompt and returns the pending response.
    pub fn send_prompt(&self, session: &str, text: &str) -> JoinHandle<Result<PromptResponse, Error>> {
        self.send_prompt_blocks(session, vec![ContentBlock::Text(TextContent::new(text))])
    }

    /// Sends a prompt of `blocks` and returns the pending response.
    pub fn send_prompt_blocks(
        &self,
        session: &str,
        blocks: Vec<ContentBlock>,
    ) -> JoinHandle<Result<PromptResponse, Error>> {
        let sent = self
            .cx
            .send_request(PromptRequest::new(session.to_owned(), blocks));
        tokio::spawn(async move {
            tokio::time::timeout(PATIENCE, sent.block_task())
                .await
                .expect("session/prompt answered in time")
        })
    }

    /// Sends a text prompt and waits for its response.
    pub async fn prompt(&self, session: &str, text: &str) -> Result<PromptResponse, Error> {
        self.send_prompt(session, text).await.unwrap()
    }

    /// The next `session/update` (of any session).
    pub async fn next_update(&mut self) -> SessionNotification {
        tokio::time::timeout(PATIENCE, self.updates.recv())
            .await
            .expect("a session/update arrived in time")
            .expect("the connection is open")
    }

    /// Every `session/update` received so far, as JSON `update` objects of `session`.
    /// Updates are delivered before the response they belong to, so after a prompt's
    /// response this holds all of them.
    pub fn updates_of(&mut self, session: &str) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(notification) = self.updates.try_recv() {
            if *notification.session_id.0 == *session {
                out.push(serde_json::to_value(&notification.update).unwrap());
            }
        }
        out
    }

    /// The next `session/request_permission`.
    pub async fn next_ask(&mut self) -> Ask {
        tokio::time::timeout(PATIENCE, self.asks.recv())
            .await
            .expect("a permission request arrived in time")
            .expect("the connection is open")
    }

    /// The next `elicitation/create`.
    pub async fn next_elicitation(&mut self) -> Elicitation {
        tokio::time::timeout(PATIENCE, self.elicitations.recv())
            .await
            .expect("an elicitation arrived in time")
            .expect("the connection is open")
    }

    /// Whether a permission request is waiting.
    pub fn has_ask(&mut self) -> bool {
        self.asks.try_recv().is_ok()
    }

    /// The agent's process id (started by [`AcpClient::start`]).
    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .and_then(tokio::process::Child::id)
            .expect("the agent runs on our own pipes")
    }

    /// Lines the agent wrote so far.
    pub fn lines(&self) -> std::sync::MutexGuard<'_, Lines> {
        self.lines.lock().unwrap()
    }

    /// Ends the connection — the agent's stdin reaches EOF — and waits until the agent
    /// exits; its exit status when it runs on our own pipes.
    pub async fn finish(mut self) -> Option<ExitStatus> {
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
        tokio::time::timeout(PATIENCE, &mut self.driver)
            .await
            .expect("the connection ended in time")
            .unwrap()
            .expect("the connection ended cleanly");
        let mut child = self.child.take()?;
        let status = tokio::time::timeout(PATIENCE, child.wait())
            .await
            .expect("the agent exited in time")
            .unwrap();
        Some(status)
    }
}

/// The children of `pid` (every thread's list).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.filter_map(Result::ok) {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// The command line of `pid`, arguments joined by spaces (empty once it is gone).
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default()
}

/// Whether `pid` is a live process (gone, or a zombie nobody reaped yet, is not).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The `.tools.jsonl` records of `session` in the store at `store`.
pub fn tool_records(store: &Path, session: &str) -> Vec<Value> {
    store_lines(store, ".tools.jsonl")
        .into_iter()
        .filter(|record| record["session_id"] == session)
        .collect()
}

/// The tools `session.init` advertised for `session`'s first run (from the event log).
pub fn init_tools(store: &Path, session: &str) -> Vec<String> {
    store_lines(store, ".events.jsonl")
        .into_iter()
        .map(|line| line["ev"].clone())
        .find(|event| event["type"] == "session.init" && event["session_id"] == session)
        .map(|event| {
            event["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn store_lines(store: &Path, suffix: &str) -> Vec<Value> {
    let Ok(entries) = std::fs::read_dir(store.join("sid-v1")) else {
        return Vec::new();
    };
    let files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files
        .iter()
        .flat_map(|file| super::json_lines(&std::fs::read_to_string(file).unwrap()))
        .collect()
}
