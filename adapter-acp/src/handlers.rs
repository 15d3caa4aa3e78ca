//! What each ACP method does: `initialize`, `session/new`, `session/load`,
//! `session/list`, `session/close`, `session/prompt` (and the run that streams its
//! events), `session/set_mode`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandsUpdate, CloseSessionRequest, CloseSessionResponse,
    CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionListCapabilities, SessionMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionModeRequest, SetSessionModeResponse,
    StopReason as AcpStopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use engine_core::{EngineError, Run};
use engine_ports::{EventKind, Keyword, PermissionMode, SessionId, StopReason};
use futures::StreamExt as _;
use serde_json::json;

use super::elicitation::{Question, forward as forward_question};
use super::history::replay;
use super::listing::{cwd_inside, list_sessions};
use super::permission::{permission_request, verdict};
use super::prompt_text::prompt_text;
use super::session::{Session, Sessions};
use super::updates::session_update;
use engine_core::host::{HostError, HostedSession, OpenSession, new_session_id};

/// `initialize`: protocol v1, `agentInfo` `mecated` and this crate's version, no
/// auth methods, `session/load`, `session/list` and `session/close`, prompts of text
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
                        .close(SessionCloseCapabilities::new()),
                ),
        )
        .auth_methods(Vec::new())
        .agent_info(Implementation::new(
            super::ACP_AGENT_NAME,
            env!("CARGO_PKG_VERSION"),
        ))
}

/// `session/new`: checks `cwd`, connects the client's MCP servers (all or nothing),
/// creates the session before its first prompt, answers with its id and modes, then
/// sends the command palette as `available_commands_update`.
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
    let response = NewSessionResponse::new(id.clone()).modes(mode_state(PermissionMode::Default));
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

/// `session/load`: checks `cwd`, reads the stored session, connects the client's MCP
/// servers (all or nothing), replays the conversation as `session/update`s, answers
/// with the session's modes, then sends the command palette. The next
/// `session/prompt` continues the conversation.
pub(crate) async fn load_session(
    sessions: &Sessions,
    request: LoadSessionRequest,
    responder: Responder<LoadSessionResponse>,
    cx: &ConnectionTo<Client>,
) {
    let (session, snapshot) = match open_stored(sessions, &request).await {
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
        if cx
            .send_notification(SessionNotification::new(id.clone(), update))
            .is_err()
        {
            return;
        }
    }
    tracing::info!(session_id = %id, replayed, "ACP session loaded");
    if responder
        .respond(LoadSessionResponse::new().modes(mode_state(snapshot.mode)))
        .is_err()
    {
        return;
    }
    send_palette(&session, cx).await;
}

async fn open_stored(
    sessions: &Sessions,
    request: &LoadSessionRequest,
) -> Result<(Arc<Session>, engine_ports::SessionSnapshot), Error> {
    check_cwd(&request.cwd, sessions.workspace())?;
    let id = request.session_id.0.as_ref();
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
    let engine = session_engine(sessions, &request.mcp_servers).await?;
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
    let shown = cwd.display();
    if !cwd.is_absolute() {
        return Err(invalid_params(format!(
            "cwd {shown:?} is not an absolute path: send the absolute path of a directory inside the workspace {}",
            workspace.display()
        )));
    }
    let canonical = std::fs::canonicalize(cwd).map_err(|error| {
        invalid_params(format!(
            "cwd {shown:?} cannot be used ({error}): send an existing directory inside the workspace {}",
            workspace.display()
        ))
    })?;
    if !canonical.is_dir() {
        return Err(invalid_params(format!("cwd {shown:?} is not a directory")));
    }
    if !canonical.starts_with(workspace) {
        return Err(invalid_params(format!(
            "cwd {shown:?} lies outside the workspace {} (mecated acp --workspace): sessions run inside it",
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
/// behind it finds it) and streams it off the dispatch loop.
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
    let spawned = cx.spawn(async move {
        // The run holds the session only once the store's run lease is taken: a
        // session running in another process is refused like one running here.
        match run.started().await {
            Ok(run) => stream_run(&session, run, client_elicitation, responder, &connection).await,
            Err(error) => {
                session.end_prompt();
                let _ = responder.respond_with_error(start_error(session.id.as_str(), error));
            }
        }
        Ok(())
    });
    if let Err(error) = spawned {
        tracing::warn!(session_id = %id, %error, "the prompt could not be followed; the connection is closing");
    }
}

/// Streams a run's events as `session/update`s (asks as `session/request_permission`,
/// a server's questions as `elicitation/create`, each answered in its own task so
/// `session/cancel` is never stuck behind one), then answers the prompt with its stop
/// reason.
async fn stream_run(
    session: &Arc<Session>,
    mut run: Run,
    client_elicitation: bool,
    responder: Responder<PromptResponse>,
    cx: &ConnectionTo<Client>,
) {
    let id = session.id.as_str();
    let mut outcome = None;
    while let Some(event) = run.next().await {
        match event.kind {
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
                    run.cancel();
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
                if let Some(update) = session_update(&kind)
                    && cx
                        .send_notification(SessionNotification::new(id.to_owned(), update))
                        .is_err()
                {
                    run.cancel();
                }
            }
        }
    }
    session.end_prompt();
    let _ = responder.respond_with_result(prompt_outcome(outcome));
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
    let _ = responder.respond(SetSessionModeResponse::new());
}

/// The three modes, `current` selected.
fn mode_state(current: PermissionMode) -> SessionModeState {
    let modes = PermissionMode::ALL
        .into_iter()
        .map(|mode| {
            let (name, description) = match mode {
                PermissionMode::Default => ("Default", "Every tool; changes ask for approval"),
                PermissionMode::Plan => ("Plan", "Read-only tools only: explore and plan, change nothing"),
                PermissionMode::AcceptEdits => ("Accept edits", "As default, with Write and Edit approved"),
            };
            SessionMode::new(mode.as_str(), name).description(description)
        })
        .collect();
    SessionModeState::new(current.as_str(), modes)
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

    #[test]
    fn modes_list_all_three() {
        let state = serde_json::to_value(mode_state(PermissionMode::Default)).unwrap();
        assert_eq!(state["currentModeId"], "default");
        let ids = crate::field_of_each(&state["availableModes"], "id");
        assert_eq!(ids, ["default", "plan", "acceptEdits"]);
    }
}
