//! What each ACP method does: `initialize`, `session/new`, `session/load`,
//! `session/resume`, `session/list`, `session/close`, `session/prompt` (and the run
//! that streams its events), `session/set_mode`, `session/set_config_option`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandsUpdate, CloseSessionRequest, CloseSessionResponse,
    ConfigOptionUpdate, CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities,
    McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionAdditionalDirectoriesCapabilities,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionListCapabilities,
    SessionNotification, SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
    StopReason as AcpStopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use engine_core::{EngineError, Run};
use engine_ports::{
    EventKind, Keyword, PermissionMode, SessionId, SessionSnapshot, StopReason, Usage, Verdict,
};
use futures::StreamExt as _;
use serde_json::json;

use super::elicitation::{Question, forward as forward_question};
use super::history::replay;
use super::listing::{cwd_inside, list_sessions};
use super::options::{MODE_OPTION, MODEL_OPTION, config_options, mode_state, usage_update};
use super::permission::{permission_request, verdict};
use super::prompt_text::prompt_text;
use super::session::{Session, Sessions};
use super::updates::session_update;
use engine_core::host::{HostError, HostedSession, OpenSession, SessionHost, new_session_id};

/// `initialize`: protocol v1, `agentInfo` `mecated` and this crate's version, no
/// auth methods, `session/load`, `session/list`, `session/resume`, `session/close`
/// and `additionalDirectories` (inside the workspace), prompts of text
/// and embedded context only, MCP servers over streamable HTTP (stdio is every
/// agent's baseline), never SSE. Remembers whether the client can answer form
/// elicitations.
pub(crate) fn initialize(sessions: &Sessions, request: &InitializeRequest) -> InitializeResponse {
    let form = request
        .client_capabilities
        .elicitation
        .as_ref()
        .is_some_and(|elicitation| elicitation.form.is_some());
    sessions.set_client_elicitation(form);
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .additional_directories(SessionAdditionalDirectoriesCapabilities::new()),
                ),
        )
        .auth_methods(Vec::new())
        .agent_info(Implementation::new(
            super::ACP_AGENT_NAME,
            env!("CARGO_PKG_VERSION"),
        ))
}

/// `session/new`: checks `cwd` and the additional roots, connects the client's MCP
/// servers (all or nothing), creates the session before its first prompt, answers
/// with its id, modes and config options, then sends the command palette as
/// `available_commands_update`.
pub(crate) async fn new_session(
    sessions: &Sessions,
    request: NewSessionRequest,
    responder: Responder<NewSessionResponse>,
    cx: &ConnectionTo<Client>,
) {
    let session = match create_session(sessions, &request).await {
        Ok(session) => session,
        Err(error) => {
            let _ = responder.respond_with_error(error);
            return;
        }
    };
    let id = session.id.as_str().to_owned();
    let host = sessions.host.as_ref();
    let response = NewSessionResponse::new(id.clone())
        .modes(mode_state(PermissionMode::Default))
        .config_options(config_options(host, PermissionMode::Default, host.model()));
    if responder.respond(response).is_err() {
        return;
    }
    send_palette(&session, cx).await;
}

/// Sends the command palette as `available_commands_update`.
async fn send_palette(session: &Session, cx: &ConnectionTo<Client>) {
    let id = session.id.as_str();
    let palette = match session.engine.commands() {
        Some(commands) => commands.list().await.unwrap_or_else(|error| {
            tracing::warn!(session_id = %id, %error, "listing the command palette failed");
            Vec::new()
        }),
        None => Vec::new(),
    };
    let commands = palette
        .into_iter()
        .map(|command| AvailableCommand::new(command.name, command.description))
        .collect();
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
}

async fn create_session(sessions: &Sessions, request: &NewSessionRequest) -> Result<Arc<Session>, Error> {
    let cwd = check_cwd(&request.cwd, sessions.workspace())?;
    check_roots(&request.additional_directories, sessions.workspace())?;
    let engine = session_engine(sessions, &request.mcp_servers).await?;
    let id = new_session_id();
    if let Err(error) = engine
        .engine()
        .create_session_in(&id.as_str().into(), PermissionMode::Default, &cwd)
        .await
    {
        if let Err(close) = engine.close().await {
            tracing::warn!(error = %close, "closing the engine of a session that could not be created failed");
        }
        return Err(Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the session cannot be created: {error}"),
        ));
    }
    tracing::info!(
        session_id = %id,
        client_servers = request.mcp_servers.len(),
        client_tools = engine.client_tool_names().len(),
        "ACP session created"
    );
    registered(sessions, &id, engine).await
}

/// The engine a session runs on: the shared one, or a private one with the client's
/// MCP servers, connected all or nothing.
async fn session_engine(sessions: &Sessions, servers: &[McpServer]) -> Result<Box<dyn HostedSession>, Error> {
    // ACP's typed entries are the wire form itself: they go through the one parser.
    let client_servers = serde_json::to_value(servers)
        .map_err(|error| invalid_params(format!("invalid mcpServers: {error}")))?;
    sessions
        .host
        .open(OpenSession {
            client_servers: (!servers.is_empty()).then_some(client_servers),
            allow_stdio: true,
        })
        .await
        .map_err(host_error)
}

/// Registers the session `id` on `engine`; refused (and the engine closed) when the
/// session became open meanwhile.
async fn registered(
    sessions: &Sessions,
    id: &str,
    engine: Box<dyn HostedSession>,
) -> Result<Arc<Session>, Error> {
    match sessions.insert(id, engine) {
        Ok(session) => Ok(session),
        Err(engine) => {
            if let Err(error) = engine.close().await {
                tracing::warn!(session_id = %id, %error, "closing the engine of a session opened twice failed");
            }
            Err(already_open(id))
        }
    }
}

/// What `session/load` and `session/resume` reopen.
struct Reopen<'a> {
    id: &'a str,
    cwd: &'a Path,
    additional_directories: &'a [PathBuf],
    mcp_servers: &'a [McpServer],
}

/// `session/load`: checks `cwd` and the additional roots, reads the stored session,
/// connects the client's MCP servers (all or nothing), replays the conversation as
/// `session/update`s and sends its usage, answers with the session's modes and config
/// options, then sends the command palette. The next `session/prompt` continues the
/// conversation. A `$/cancel_request` stops it at its next step: nothing stays open,
/// and the answer is the cancellation error.
pub(crate) async fn load_session(
    sessions: &Sessions,
    request: LoadSessionRequest,
    responder: Responder<LoadSessionResponse>,
    cx: &ConnectionTo<Client>,
) {
    let reopen = Reopen {
        id: request.session_id.0.as_ref(),
        cwd: &request.cwd,
        additional_directories: &request.additional_directories,
        mcp_servers: &request.mcp_servers,
    };
    let cancellation = responder.cancellation();
    let (session, snapshot) = match cancellation
        .run_until_cancelled(open_stored(sessions, &reopen))
        .await
    {
        Ok(loaded) => loaded,
        Err(error) => {
            let _ = responder.respond_with_error(error);
            return;
        }
    };
    let id = session.id.as_str().to_owned();
    let updates = replay(&snapshot.conversation.to_vec());
    let replayed = updates.len();
    for update in updates {
        if cancellation.is_cancelled() {
            sessions.close(&id).await;
            tracing::info!(session_id = %id, "ACP session load cancelled");
            let _ = responder.respond_with_error(Error::request_cancelled());
            return;
        }
        if cx
            .send_notification(SessionNotification::new(id.clone(), update))
            .is_err()
        {
            return;
        }
    }
    tracing::info!(session_id = %id, replayed, "ACP session loaded");
    send_stored_usage(sessions, &session, &snapshot, cx);
    let response = LoadSessionResponse::new()
        .modes(mode_state(snapshot.mode))
        .config_options(stored_options(sessions, &snapshot));
    if responder.respond(response).is_err() {
        return;
    }
    send_palette(&session, cx).await;
}

/// `session/resume`: as `session/load` without replaying the conversation (the
/// editor still shows it): the session is reattached, its usage sent, the request
/// answered with its modes and config options, then the command palette follows.
pub(crate) async fn resume_session(
    sessions: &Sessions,
    request: ResumeSessionRequest,
    responder: Responder<ResumeSessionResponse>,
    cx: &ConnectionTo<Client>,
) {
    let reopen = Reopen {
        id: request.session_id.0.as_ref(),
        cwd: &request.cwd,
        additional_directories: &request.additional_directories,
        mcp_servers: &request.mcp_servers,
    };
    let cancellation = responder.cancellation();
    let (session, snapshot) = match cancellation
        .run_until_cancelled(open_stored(sessions, &reopen))
        .await
    {
        Ok(loaded) => loaded,
        Err(error) => {
            let _ = responder.respond_with_error(error);
            return;
        }
    };
    tracing::info!(session_id = %session.id, "ACP session resumed");
    send_stored_usage(sessions, &session, &snapshot, cx);
    let response = ResumeSessionResponse::new()
        .modes(mode_state(snapshot.mode))
        .config_options(stored_options(sessions, &snapshot));
    if responder.respond(response).is_err() {
        return;
    }
    send_palette(&session, cx).await;
}

/// The config options of a stored session: its mode and model.
fn stored_options(sessions: &Sessions, snapshot: &SessionSnapshot) -> Vec<SessionConfigOption> {
    let host = sessions.host.as_ref();
    let model = snapshot.model.as_deref().unwrap_or_else(|| host.model());
    config_options(host, snapshot.mode, model)
}

/// Sends a reopened session's usage (the context its last answer filled and its
/// cost so far) when it has any, and remembers its tokens per model.
fn send_stored_usage(
    sessions: &Sessions,
    session: &Session,
    snapshot: &SessionSnapshot,
    cx: &ConnectionTo<Client>,
) {
    session.set_spent(snapshot.model_usage.clone());
    let Some(context) = snapshot.context else {
        return;
    };
    let host = sessions.host.as_ref();
    let model = snapshot.model.as_deref().unwrap_or_else(|| host.model());
    let update = usage_update(
        host,
        &session.engine,
        model,
        context.tokens,
        &snapshot.model_usage,
    );
    let _ = cx.send_notification(SessionNotification::new(session.id.as_str().to_owned(), update));
}

async fn open_stored(
    sessions: &Sessions,
    reopen: &Reopen<'_>,
) -> Result<(Arc<Session>, SessionSnapshot), Error> {
    check_cwd(reopen.cwd, sessions.workspace())?;
    check_roots(reopen.additional_directories, sessions.workspace())?;
    let id = reopen.id;
    if sessions.is_open(id) {
        return Err(already_open(id));
    }
    let snapshot = match sessions.store.load(&SessionId::from(id)).await {
        Ok(snapshot) => snapshot,
        Err(error) if error.is_not_found() => return Err(unknown_stored_session(id)),
        Err(error) => {
            return Err(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("session {id:?} cannot be loaded: {error}"),
            ));
        }
    };
    // A session of another workspace, or one stored without a directory, answers
    // exactly as an unknown one: its existence and its directory stay unsaid.
    if cwd_inside(&snapshot, sessions.workspace()).is_none() {
        return Err(unknown_stored_session(id));
    }
    let engine = session_engine(sessions, reopen.mcp_servers).await?;
    let session = registered(sessions, id, engine).await?;
    Ok((session, snapshot))
}

/// `session/list`: the stored sessions this agent can load (see [`list_sessions`]).
pub(crate) async fn list(
    sessions: &Sessions,
    request: ListSessionsRequest,
    responder: Responder<ListSessionsResponse>,
) {
    let answer = list_sessions(sessions.store.as_ref(), sessions.workspace(), &request).await;
    let _ = responder.respond_with_result(answer);
}

/// `session/close`: cancels the session's work and frees its engine, its client MCP
/// servers and its slot before answering; the stored session stays (loadable).
pub(crate) async fn close(
    sessions: &Sessions,
    request: CloseSessionRequest,
    responder: Responder<CloseSessionResponse>,
) {
    let id = request.session_id.0.as_ref();
    if sessions.close(id).await {
        tracing::info!(session_id = %id, "ACP session closed");
        let _ = responder.respond(CloseSessionResponse::new());
    } else {
        let _ = responder.respond_with_error(unknown_session(id));
    }
}

/// `cwd` must be absolute, exist and lie inside the workspace root (tools stay
/// rooted at the workspace whatever the `cwd`); its canonical form.
fn check_cwd(cwd: &Path, workspace: &Path) -> Result<PathBuf, Error> {
    check_dir("cwd", cwd, workspace)
}

/// Each additional workspace root must be what `cwd` must be: an absolute, existing
/// directory inside the workspace root (the tools reach nothing outside it, so a
/// root elsewhere is refused rather than silently ignored); their canonical forms.
fn check_roots(roots: &[PathBuf], workspace: &Path) -> Result<Vec<PathBuf>, Error> {
    roots
        .iter()
        .enumerate()
        .map(|(index, root)| check_dir(&format!("additionalDirectories[{index}]"), root, workspace))
        .collect()
}

/// `path` (the request's field `what`) as an absolute, existing directory inside
/// `workspace`; its canonical form.
fn check_dir(what: &str, path: &Path, workspace: &Path) -> Result<PathBuf, Error> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(invalid_params(format!(
            "{what} {shown:?} is not an absolute path: send the absolute path of a directory inside the workspace {}",
            workspace.display()
        )));
    }
    let canonical = std::fs::canonicalize(path).map_err(|error| {
        invalid_params(format!(
            "{what} {shown:?} cannot be used ({error}): send an existing directory inside the workspace {}",
            workspace.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(invalid_params(format!("{what} {shown:?} is not a directory")));
    }
    if !canonical.starts_with(workspace) {
        return Err(invalid_params(format!(
            "{what} {shown:?} lies outside the workspace {} (mecated acp --workspace): sessions run inside it",
            workspace.display()
        )));
    }
    Ok(canonical)
}

fn host_error(error: HostError) -> Error {
    match &error {
        HostError::InvalidClientServers(message) => invalid_params(message.clone()),
        HostError::ClientServersRejected { servers, .. } => {
            invalid_params(error.to_string()).data(json!({ "servers": servers }))
        }
        HostError::ClientServersUnreachable { servers, .. } => {
            Error::new(ErrorCode::INTERNAL_ERROR, error.to_string()).data(json!({ "servers": servers }))
        }
        _ => Error::new(ErrorCode::INTERNAL_ERROR, error.to_string()),
    }
}

/// `session/prompt`: refuses an unknown session, a prompt it cannot read and a second
/// prompt while one runs; otherwise starts the run here (so a `session/cancel` right
/// behind it finds it) and streams it off the dispatch loop. A `$/cancel_request` for
/// it cancels the run as `session/cancel` does (the answer is `cancelled`).
pub(crate) fn prompt(
    sessions: &Sessions,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: &ConnectionTo<Client>,
) {
    let id = request.session_id.0.as_ref();
    let Some(session) = sessions.get(id) else {
        let _ = responder.respond_with_error(unknown_session(id));
        return;
    };
    let text = match prompt_text(&request.prompt) {
        Ok(text) => text,
        Err(error) => {
            let _ = responder.respond_with_error(invalid_params(error.to_string()));
            return;
        }
    };
    if !session.begin_prompt() {
        let _ = responder.respond_with_error(busy(id));
        return;
    }
    let run = match session.engine.run(&session.id, text) {
        Ok(run) => run,
        Err(error) => {
            session.end_prompt();
            let _ = responder.respond_with_error(start_error(id, error));
            return;
        }
    };
    let connection = cx.clone();
    let client_elicitation = sessions.client_elicitation();
    let host = Arc::clone(&sessions.host);
    // Followed by a task of the server, not of the connection: a prompt running when
    // the connection ends goes on (within the drain bound) instead of being dropped.
    sessions.prompts.spawn(async move {
        // The run holds the session only once the store's run lease is taken: a
        // session running in another process is refused like one running here.
        match run.started().await {
            Ok(run) => {
                let streaming = Streaming {
                    session: &session,
                    host: host.as_ref(),
                    client_elicitation,
                    cx: &connection,
                };
                streaming.run(run, responder).await;
            }
            Err(error) => {
                session.end_prompt();
                let _ = responder.respond_with_error(start_error(session.id.as_str(), error));
            }
        }
    });
}

/// What streaming one run needs.
struct Streaming<'a> {
    session: &'a Arc<Session>,
    host: &'a dyn SessionHost,
    client_elicitation: bool,
    cx: &'a ConnectionTo<Client>,
}

impl Streaming<'_> {
    /// Streams a run's events as `session/update`s (asks as
    /// `session/request_permission`, a server's questions as `elicitation/create`,
    /// each answered in its own task so `session/cancel` is never stuck behind one;
    /// each turn's end as a `usage_update`), then answers the prompt with its stop
    /// reason. A `$/cancel_request` of the prompt cancels the run.
    async fn run(self, mut run: Run, responder: Responder<PromptResponse>) {
        let Self {
            session,
            host,
            client_elicitation,
            cx,
        } = self;
        let id = session.id.as_str();
        let cancellation = responder.cancellation();
        let mut cancel_requested = false;
        let mut model = String::new();
        let mut outcome = None;
        loop {
            let event = tokio::select! {
                event = run.next() => event,
                () = cancellation.cancelled(), if !cancel_requested => {
                    cancel_requested = true;
                    session.cancel();
                    continue;
                }
            };
            let Some(event) = event else { break };
            match event.kind {
                EventKind::SessionInit { model: name, .. } => model = name,
                // A turn that reported no usage leaves the editor's figures as they were.
                EventKind::TurnEnd { usage, .. } if usage != Usage::default() => {
                    let spent = session.add_spent(&model, usage);
                    let used = usage.input_tokens.saturating_add(usage.output_tokens);
                    let update = usage_update(host, &session.engine, &model, used, &spent);
                    // A notification that cannot go out (the connection ended) is
                    // dropped: the run goes on, within the drain bound.
                    let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
                }
                EventKind::PermissionAsk {
                    ask_id,
                    call_id,
                    name,
                    args,
                    suggested_rule,
                    ..
                } => {
                    let request =
                        permission_request(id, call_id.as_str(), &name, &args, suggested_rule.as_deref());
                    let answer = cx.send_request(request);
                    let session_for_ask = Arc::clone(session);
                    let ask_for_deny = ask_id.clone();
                    let session = Arc::clone(session);
                    let spawned = cx.spawn(async move {
                    let answer = answer.block_task().await;
                    if let Err(error) = &answer {
                        tracing::warn!(session_id = %session.id, %error, "the permission request failed; denying the call");
                    }
                    session
                        .engine
                        .approve(&session.id, &ask_id, verdict(answer.ok().as_ref()));
                    Ok(())
                });
                    if spawned.is_err() {
                        // The connection ended: nobody can answer, so the call is denied.
                        session_for_ask
                            .engine
                            .approve(&session_for_ask.id, &ask_for_deny, Verdict::Deny);
                    }
                }
                EventKind::ElicitationRequest {
                    elicitation_id,
                    call_id,
                    message,
                    requested_schema,
                    ..
                } => {
                    let question = Question {
                        elicitation_id,
                        call_id: call_id.as_str().to_owned(),
                        message,
                        requested_schema,
                    };
                    forward_question(session, question, client_elicitation, cx);
                }
                EventKind::Result { stop, error, .. } => outcome = Some((stop, error)),
                kind => {
                    if let Some(update) = session_update(&kind) {
                        let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
                    }
                }
            }
        }
        // The store holds the session's totals now (saved before `result`): what
        // the next prompt's costs start from, whoever else ran the session meanwhile.
        if let Ok(snapshot) = session.engine.store().load(&session.id).await {
            session.set_spent(snapshot.model_usage);
        }
        session.end_prompt();
        let _ = responder.respond_with_result(prompt_outcome(outcome));
    }
}

/// The prompt's answer for how its run stopped: `end_turn`, `max_tokens` (the output
/// limit cut the answer off), `max_turn_requests` for every limit, `cancelled`, or a
/// JSON-RPC error carrying the run's error.
fn prompt_outcome(outcome: Option<(StopReason, Option<String>)>) -> Result<PromptResponse, Error> {
    let Some((stop, error)) = outcome else {
        return Err(Error::new(
            ErrorCode::INTERNAL_ERROR,
            "the run ended without a result",
        ));
    };
    let reason = match stop {
        StopReason::EndTurn => AcpStopReason::EndTurn,
        StopReason::MaxTokens => AcpStopReason::MaxTokens,
        StopReason::MaxTurns | StopReason::MaxToolCalls | StopReason::MaxConsecutiveFailures => {
            AcpStopReason::MaxTurnRequests
        }
        StopReason::Cancelled => AcpStopReason::Cancelled,
        StopReason::Error => {
            let message = error.unwrap_or_else(|| "the run failed".to_owned());
            return Err(Error::new(ErrorCode::INTERNAL_ERROR, message));
        }
    };
    Ok(PromptResponse::new(reason))
}

/// `session/set_mode`: one of `default`, `plan`, `acceptEdits`, never while a prompt
/// runs; the change is announced with `current_mode_update` before the answer.
pub(crate) async fn set_mode(
    sessions: &Sessions,
    request: SetSessionModeRequest,
    responder: Responder<SetSessionModeResponse>,
    cx: &ConnectionTo<Client>,
) {
    let id = request.session_id.0.as_ref();
    let requested = request.mode_id.0.as_ref();
    let Ok(mode) = requested.parse::<PermissionMode>() else {
        let _ = responder.respond_with_error(invalid_params(format!(
            "unknown mode {requested:?}: expected one of {}",
            PermissionMode::expected()
        )));
        return;
    };
    let Some(session) = sessions.get(id) else {
        let _ = responder.respond_with_error(unknown_session(id));
        return;
    };
    if session.is_prompting() {
        let _ = responder.respond_with_error(mode_while_prompting(id));
        return;
    }
    match session.engine.set_mode(&session.id, mode).await {
        Ok(()) => {}
        Err(EngineError::Busy(_)) => {
            let _ = responder.respond_with_error(mode_while_prompting(id));
            return;
        }
        Err(error) => {
            let _ = responder.respond_with_error(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("the mode cannot be changed: {error}"),
            ));
            return;
        }
    }
    let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str()));
    let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
    // The mode picker among the config options follows.
    if let Ok(options) = current_options(sessions, &session).await {
        let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(options));
        let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
    }
    let _ = responder.respond(SetSessionModeResponse::new());
}

/// The session's config options as stored now.
async fn current_options(sessions: &Sessions, session: &Session) -> Result<Vec<SessionConfigOption>, Error> {
    match sessions.store.load(&session.id).await {
        Ok(snapshot) => Ok(stored_options(sessions, &snapshot)),
        Err(error) => Err(Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("session {:?} cannot be read: {error}", session.id.as_str()),
        )),
    }
}

/// `session/set_config_option`: `mode` (one of the modes, as `session/set_mode`, which
/// it announces with `current_mode_update`) or `model` (one of the models the host
/// offers, used from the session's next turn on and kept with the session); never
/// while a prompt runs. Answers with every option's current value.
pub(crate) async fn set_config_option(
    sessions: &Sessions,
    request: SetSessionConfigOptionRequest,
    responder: Responder<SetSessionConfigOptionResponse>,
    cx: &ConnectionTo<Client>,
) {
    let id = request.session_id.0.as_ref();
    let option = request.config_id.0.as_ref();
    let Some(session) = sessions.get(id) else {
        let _ = responder.respond_with_error(unknown_session(id));
        return;
    };
    let Some(value) = request.value.as_value_id().map(|value| value.0.to_string()) else {
        let _ = responder.respond_with_error(invalid_params(format!(
            "config option {option:?} takes a value id (a string), not a boolean"
        )));
        return;
    };
    if session.is_prompting() {
        let _ = responder.respond_with_error(option_while_prompting(id));
        return;
    }
    let changed = match option {
        MODE_OPTION => match value.parse::<PermissionMode>() {
            Ok(mode) => session
                .engine
                .set_mode(&session.id, mode)
                .await
                .map(|()| Some(mode)),
            Err(_) => {
                let _ = responder.respond_with_error(invalid_params(format!(
                    "unknown mode {value:?}: expected one of {}",
                    PermissionMode::expected()
                )));
                return;
            }
        },
        MODEL_OPTION => {
            let offered = sessions.host.models();
            if !offered.contains(&value) {
                let _ = responder.respond_with_error(invalid_params(format!(
                    "model {value:?} is not offered: expected one of {} (mecated acp --model, --models)",
                    offered.join(", ")
                )));
                return;
            }
            session
                .engine
                .set_model(&session.id, Some(value.clone()))
                .await
                .map(|()| None)
        }
        _ => {
            let _ = responder.respond_with_error(invalid_params(format!(
                "unknown config option {option:?}: expected {MODE_OPTION:?} or {MODEL_OPTION:?}"
            )));
            return;
        }
    };
    match changed {
        Ok(Some(mode)) => {
            let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str()));
            let _ = cx.send_notification(SessionNotification::new(id.to_owned(), update));
        }
        Ok(None) => {}
        Err(EngineError::Busy(_)) => {
            let _ = responder.respond_with_error(option_while_prompting(id));
            return;
        }
        Err(error) => {
            let _ = responder.respond_with_error(Error::new(
                ErrorCode::INTERNAL_ERROR,
                format!("config option {option:?} cannot be changed: {error}"),
            ));
            return;
        }
    }
    tracing::info!(session_id = %id, option, value, "ACP session config option set");
    let _ = responder.respond_with_result(
        current_options(sessions, &session)
            .await
            .map(SetSessionConfigOptionResponse::new),
    );
}

fn option_while_prompting(id: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "the config options of session {id:?} cannot change while a prompt runs: wait for its response or send session/cancel"
        ),
    )
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn unknown_session(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("unknown session {id:?}: create it with session/new or open it with session/load on this connection"),
    )
    .data(json!({"sessionId": id}))
}

fn unknown_stored_session(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("no stored session {id:?}: session/list names the sessions that can be loaded"),
    )
    .data(json!({"sessionId": id}))
}

fn already_open(id: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_REQUEST,
        format!("session {id:?} is already open on this connection: prompt it, or session/close it first"),
    )
    .data(json!({"sessionId": id}))
}

/// Why a prompt did not start: the one busy answer for a session running here or in
/// another process, else an internal error.
fn start_error(id: &str, error: EngineError) -> Error {
    match error {
        EngineError::Busy(_) => busy(id),
        other => Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the prompt cannot start: {other}"),
        ),
    }
}

fn busy(id: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "session {id:?} already has a prompt in progress: wait for its response or send session/cancel"
        ),
    )
}

fn mode_while_prompting(id: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_REQUEST,
        format!(
            "the mode of session {id:?} cannot change while a prompt runs: wait for its response or send session/cancel"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_map_to_acp() {
        let reason = |stop| prompt_outcome(Some((stop, None))).unwrap().stop_reason;
        assert_eq!(reason(StopReason::EndTurn), AcpStopReason::EndTurn);
        assert_eq!(reason(StopReason::MaxTokens), AcpStopReason::MaxTokens);
        assert_eq!(reason(StopReason::MaxTurns), AcpStopReason::MaxTurnRequests);
        assert_eq!(reason(StopReason::MaxToolCalls), AcpStopReason::MaxTurnRequests);
        assert_eq!(
            reason(StopReason::MaxConsecutiveFailures),
            AcpStopReason::MaxTurnRequests
        );
        assert_eq!(reason(StopReason::Cancelled), AcpStopReason::Cancelled);
        let error = prompt_outcome(Some((StopReason::Error, Some("model exploded".into())))).unwrap_err();
        assert_eq!(error.code, ErrorCode::INTERNAL_ERROR);
        assert_eq!(error.message, "model exploded");
        assert!(prompt_outcome(None).is_err());
    }

    #[test]
    fn cwd_must_be_absolute_existing_and_inside() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let workspace = root.join("ws");
        std::fs::create_dir_all(workspace.join("src")).unwrap();
        assert!(check_cwd(&workspace, &workspace).is_ok());
        assert!(check_cwd(&workspace.join("src"), &workspace).is_ok());
        let outside = check_cwd(&root, &workspace).unwrap_err();
        assert_eq!(outside.code, ErrorCode::INVALID_PARAMS);
        assert!(
            outside
                .message
                .contains(&format!("{:?}", root.display().to_string())),
            "{}",
            outside.message
        );
        assert!(outside.message.contains("outside the workspace"));
        assert!(
            check_cwd(Path::new("ws"), &workspace)
                .unwrap_err()
                .message
                .contains("absolute")
        );
        assert!(check_cwd(&workspace.join("missing"), &workspace).is_err());
        // `..` cannot climb out through a path that looks inside.
        assert!(check_cwd(&workspace.join("src/../.."), &workspace).is_err());
    }
}
