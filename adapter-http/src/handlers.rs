//! The endpoint handlers: each parses its request, makes its engine calls and maps
//! every failure onto an [`ApiError`].

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse as _, Response};
use engine_core::ElicitationAnswerError;
use engine_ports::{SessionId, SessionListing, SessionSnapshot, format_rfc3339_micros};
use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::body::{
    JsonBody, approval, child_id, create_body, elicitation_answer, invalid, mode_value, prompt_text,
};
use super::error::ApiError;
use super::server::ServerState;
use super::sessions::HttpSession;
use super::{READY_PROBE_TIMEOUT, sse};
use engine_core::host::{HostedSession, OpenSession, ToolEntry, new_session_id};

type AppState = State<Arc<ServerState>>;

/// The `{id}` of a session path (a JSON 400 when it is not valid UTF-8).
pub(crate) struct SessionPath(pub(crate) SessionId);

impl<S: Send + Sync> FromRequestParts<S> for SessionPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => Ok(Self(SessionId::from(id))),
            Err(rejection) => Err(ApiError::new(rejection.status(), rejection.body_text())),
        }
    }
}

/// `GET /healthz`: open, even with a token.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /readyz`: open, even with a token. 200 `{"status": "ready", "checks"}` when
/// the store answers its probe (within [`READY_PROBE_TIMEOUT`]), the global MCP
/// servers are connected or given up and the server is not draining; else 503
/// `{"status": "not_ready", "failed": [...], "checks", "error"}` naming the failed
/// checks. The store's own error goes to the log, not to this unauthenticated answer.
pub(crate) async fn readyz(State(state): AppState) -> Response {
    let probe = tokio::time::timeout(READY_PROBE_TIMEOUT, state.host.session_store().probe()).await;
    let store = match probe {
        Ok(Ok(())) => json!({"ok": true}),
        Ok(Err(error)) => {
            tracing::warn!(%error, "readiness: the store probe failed");
            json!({"ok": false, "reason": "the store did not answer its probe (see the server's log)"})
        }
        Err(_) => {
            tracing::warn!("readiness: the store probe took over {READY_PROBE_TIMEOUT:?}");
            json!({"ok": false, "reason": format!("the store did not answer within {READY_PROBE_TIMEOUT:?}")})
        }
    };
    let servers = state.host.global_servers();
    let mcp = json!({
        "ok": servers.settled(),
        "connected": servers.connected,
        "given_up": servers.given_up,
        "connecting": servers.connecting,
    });
    let draining = state.is_draining();
    let drain = json!({"ok": !draining});
    let checks = json!({"store": store, "mcp": mcp, "drain": drain});
    let failed: Vec<&str> = ["store", "mcp", "drain"]
        .into_iter()
        .filter(|name| checks[*name]["ok"] != json!(true))
        .collect();
    if failed.is_empty() {
        return Json(json!({"status": "ready", "checks": checks})).into_response();
    }
    let error = format!("not ready: {}", failed.join(", "));
    let body = json!({"status": "not_ready", "failed": failed, "checks": checks, "error": error});
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

/// `POST /v1/sessions {mode?, model?, mcp_servers?}` → 201 `{"session_id"}`. A
/// `model` must be one the host offers; the session keeps it (stored with it).
pub(crate) async fn create(State(state): AppState, JsonBody(body): JsonBody) -> Result<Response, ApiError> {
    let body = create_body(body)?;
    if let Some(model) = &body.model
        && !state.host.models().contains(model)
    {
        return Err(invalid(
            "model",
            &Value::String(model.clone()),
            &format!(
                "expected one of the models this server offers: {} (mecated serve --model, --models)",
                state.host.models().join(", ")
            ),
        ));
    }
    if body.mcp_servers.is_some() && !state.loopback {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "mcp_servers are accepted only when the server listens on a loopback address: \
             this server would connect to them on the caller's behalf",
        ));
    }
    state.ensure_open()?;
    let slot = state.sessions.reserve()?;
    let request = OpenSession {
        client_servers: body.mcp_servers,
        allow_stdio: false,
    };
    let session_engine = state.host.open(request).await?;
    let id = SessionId::from(new_session_id());
    let mode = body.mode.unwrap_or(session_engine.engine().config().mode);
    let mut snapshot = SessionSnapshot::new(id.clone(), mode);
    // The session records the workspace: ACP lists and loads it there only.
    snapshot.cwd = Some(state.host.workspace_root().to_path_buf());
    snapshot.model = body.model;
    let created = session_engine.engine().create_session_from(&snapshot).await;
    if let Err(error) = created {
        close_quietly(session_engine).await;
        return Err(error.into());
    }
    let client_tools = session_engine.client_tool_names().len();
    if let Err((error, session_engine)) = slot.fill(id.clone(), session_engine) {
        close_quietly(session_engine).await;
        return Err(error);
    }
    tracing::info!(session_id = %id, %mode, client_tools, "session created");
    let location = format!("/v1/sessions/{id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(json!({"session_id": id})),
    )
        .into_response())
}

/// How many snapshots the listing loads at once (for their titles and models).
const LIST_LOADS: usize = 8;

/// `GET /v1/sessions` → every stored session, most recently modified first: the
/// store's listing, each with its `title` ([`SessionSnapshot::title`], `null` before
/// a prompt) and `model` read from its snapshot (a snapshot that no longer loads is
/// listed without them).
pub(crate) async fn list(State(state): AppState) -> Result<Json<Value>, ApiError> {
    let store = state.host.session_store();
    let mut listings = store.list().await.map_err(|e| ApiError::store(&e))?;
    listings.sort_by(|a, b| b.modified_at.cmp(&a.modified_at).then_with(|| a.id.cmp(&b.id)));
    let sessions: Vec<Value> = futures::stream::iter(listings)
        .map(|listing| {
            let store = Arc::clone(&store);
            let state = Arc::clone(&state);
            async move {
                let mut view = summary(&state, &listing);
                if let Ok(snapshot) = store.load(&listing.id).await {
                    view["title"] = json!(snapshot.title());
                    view["model"] = json!(snapshot.model.as_deref().unwrap_or(state.host.model()));
                }
                view
            }
        })
        .buffered(LIST_LOADS)
        .collect()
        .await;
    Ok(Json(json!({"sessions": sessions})))
}

/// `GET /v1/sessions/{id}` → one summary (its listing entry: title and model
/// included), with its usage so far and, when every model it ran on has a known
/// price, its estimated cost.
pub(crate) async fn show(
    State(state): AppState,
    SessionPath(id): SessionPath,
) -> Result<Json<Value>, ApiError> {
    let listing = match state.host.session_store().listing(&id).await {
        Ok(listing) => listing,
        Err(error) if error.is_not_found() => return Err(ApiError::unknown_session(id.as_str())),
        Err(error) => return Err(ApiError::store(&error)),
    };
    let snapshot = stored(&state, &id).await?;
    let mut view = summary(&state, &listing);
    view["title"] = json!(snapshot.title());
    view["model"] = json!(snapshot.model.as_deref().unwrap_or(state.host.model()));
    view["usage"] = json!(snapshot.usage);
    if let Some(cost) = state.host.cost(&snapshot.model_usage) {
        view["cost_usd"] = json!(cost);
    }
    Ok(Json(view))
}

/// `DELETE /v1/sessions/{id}` → 204: cancels its run, closes its engine, deletes it.
pub(crate) async fn delete(
    State(state): AppState,
    SessionPath(id): SessionPath,
) -> Result<Response, ApiError> {
    let (live, _deletion) = state.sessions.begin_delete(&id);
    match live {
        Some(session) => session.close().await,
        None => {
            stored(&state, &id).await?;
        }
    }
    state
        .host
        .session_store()
        .delete(&id)
        .await
        .map_err(|e| ApiError::store(&e))?;
    tracing::info!(session_id = %id, "session deleted");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /v1/sessions/{id}/prompt {text}` → the run's events as SSE, ending after
/// `result`.
pub(crate) async fn prompt(
    State(state): AppState,
    SessionPath(id): SessionPath,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let text = prompt_text(body)?;
    state.ensure_open()?;
    // A session unloaded between the lookup and the start is looked up (loaded) again.
    let (session, run) = loop {
        let session = live_session(&state, &id).await?;
        if let Some(run) = session.start_run(&text).await? {
            break (session, run);
        }
    };
    let (events, response) = sse::channel(state.keep_alive);
    session.follow(&state.runs, sse::forward(run, events));
    Ok(response)
}

/// `POST /v1/sessions/{id}/approve {ask_id, verdict, save_rule?}` → 204.
pub(crate) async fn approve(
    State(state): AppState,
    SessionPath(id): SessionPath,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let (ask_id, answer) = approval(body)?;
    let session = running_session(&state, &id).await?;
    if !session.engine().approve(&id, &ask_id, answer) {
        return Err(ApiError::not_found(format!(
            "ask {ask_id:?} is not open in session {:?} (unknown or already answered)",
            id.as_str()
        )));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /v1/sessions/{id}/elicit {elicitation_id, action, content?}` → 204 once the
/// answer reached the tool; 400 when the content does not fit the form (naming the
/// field; the question stays open), 404 for an elicitation that is not open, 409
/// without a run.
pub(crate) async fn elicit(
    State(state): AppState,
    SessionPath(id): SessionPath,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let (elicitation_id, response) = elicitation_answer(body)?;
    let session = running_session(&state, &id).await?;
    match session
        .engine()
        .answer_elicitation(&id, &elicitation_id, response)
    {
        Ok(()) => Ok(StatusCode::NO_CONTENT.into_response()),
        Err(ElicitationAnswerError::InvalidContent(problem)) => Err(ApiError::bad_request(format!(
            "the answer to elicitation {elicitation_id:?} does not fit its form: {problem}"
        ))),
        Err(_) => Err(ApiError::not_found(format!(
            "elicitation {elicitation_id:?} is not open in session {:?} (unknown, already answered, or ended)",
            id.as_str()
        ))),
    }
}

/// `POST /v1/sessions/{id}/cancel` → 204, whether or not a run was in progress.
pub(crate) async fn cancel(
    State(state): AppState,
    SessionPath(id): SessionPath,
) -> Result<Response, ApiError> {
    match state.sessions.get(&id) {
        Some(session) => {
            session.engine().cancel(&id);
        }
        None => {
            stored(&state, &id).await?;
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /v1/sessions/{id}/cancel-child {child_id}` → 204 when that child (a
/// subagent, a `Parallel` call or branch, a team or member) of the session's run was
/// cancelled; its delegating call then ends with a cancelled stop note.
pub(crate) async fn cancel_child(
    State(state): AppState,
    SessionPath(id): SessionPath,
    JsonBody(body): JsonBody,
) -> Result<Response, ApiError> {
    let child = child_id(body)?;
    let session = running_session(&state, &id).await?;
    if !session.engine().cancel_child(&id, &child) {
        return Err(ApiError::not_found(format!(
            "no child {child:?} is running in session {:?}",
            id.as_str()
        )));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The query of the tools endpoint.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolsQuery {
    mode: Option<String>,
}

/// `GET /v1/sessions/{id}/tools?mode=` → the session's tools in `mode` (default:
/// the session's mode), sorted by name, and the tools the shared catalog skipped
/// (`SessionHost::skipped_tools`: name, family, why).
pub(crate) async fn tools(
    State(state): AppState,
    SessionPath(id): SessionPath,
    query: Result<Query<ToolsQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let requested = query.mode.as_deref().map(|m| mode_value("mode", m)).transpose()?;
    let snapshot = stored(&state, &id).await?;
    let mode = requested.unwrap_or(snapshot.mode);
    let tools = match state.sessions.get(&id) {
        Some(session) => session.tools(mode),
        None => state.host.tools(mode),
    };
    let tools: Vec<Value> = tools.iter().map(tool_json).collect();
    Ok(Json(
        json!({"tools": tools, "skipped": state.host.skipped_tools()}),
    ))
}

/// `GET /v1/sessions/{id}/commands` → the command palette (slash commands, skills,
/// MCP prompts).
pub(crate) async fn commands(
    State(state): AppState,
    SessionPath(id): SessionPath,
) -> Result<Json<Value>, ApiError> {
    let chain = match state.sessions.get(&id) {
        Some(session) => session.engine().commands().cloned(),
        None => {
            stored(&state, &id).await?;
            None
        }
    };
    let chain = chain.unwrap_or_else(|| Arc::clone(state.host.commands()));
    let commands = chain
        .list()
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Json(json!({"commands": commands})))
}

/// Any other path: 404.
pub(crate) async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {method} {}", uri.path()))
}

/// Any request but `GET /healthz` and `GET /readyz` on a connection over the cap: 503.
pub(crate) async fn over_capacity() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "too many open connections: only GET /healthz and GET /readyz are answered now; retry later",
    )
}

/// A known path with another method: 405.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("method {method} is not allowed on {}", uri.path()),
    )
}

/// The live session `id`, adopting a stored one (from an earlier process or `mecated
/// run`) onto the shared engine.
async fn live_session(state: &ServerState, id: &SessionId) -> Result<Arc<HttpSession>, ApiError> {
    if let Some(session) = state.sessions.get(id) {
        return Ok(session);
    }
    if state.sessions.is_deleting(id) {
        return Err(ApiError::unknown_session(id.as_str()));
    }
    stored(state, id).await?;
    let slot = state.sessions.reserve()?;
    let shared = state.host.open(OpenSession::default()).await?;
    slot.fill(id.clone(), shared).map_err(|(error, _shared)| error)
}

/// Closes the engine of a session that did not come to be.
async fn close_quietly(session_engine: Box<dyn HostedSession>) {
    if let Err(error) = session_engine.close().await {
        tracing::warn!(%error, "closing the engine of a session that was not created failed");
    }
}

/// The stored snapshot of `id`; 404 naming it when the store does not hold it.
pub(crate) async fn stored(state: &ServerState, id: &SessionId) -> Result<SessionSnapshot, ApiError> {
    match state.host.session_store().load(id).await {
        Ok(snapshot) => Ok(snapshot),
        Err(error) if error.is_not_found() => Err(ApiError::unknown_session(id.as_str())),
        Err(error) => Err(ApiError::store(&error)),
    }
}

/// The live session `id` with a run in progress: 404 for a session that does not exist,
/// 409 for one without a run.
async fn running_session(state: &ServerState, id: &SessionId) -> Result<Arc<HttpSession>, ApiError> {
    let Some(session) = state.sessions.get(id) else {
        stored(state, id).await?;
        return Err(no_run(id));
    };
    if !session.engine().is_running(id) {
        return Err(no_run(id));
    }
    Ok(session)
}

fn no_run(id: &SessionId) -> ApiError {
    ApiError::conflict(format!("session {:?} has no run in progress", id.as_str()))
}

/// `{session_id, state, mode, turns, tool_calls, modified_at}`.
fn summary(state: &ServerState, listing: &SessionListing) -> Value {
    let run_state = state
        .sessions
        .get(&listing.id)
        .map_or("idle", |session| session.state());
    json!({
        "session_id": listing.id,
        "state": run_state,
        "mode": listing.mode,
        "turns": listing.turns,
        "tool_calls": listing.tool_calls,
        "modified_at": format_rfc3339_micros(listing.modified_at),
    })
}

fn tool_json(tool: &ToolEntry) -> Value {
    json!({
        "name": tool.name,
        "family": tool.family,
        "read_only": tool.read_only,
        "plan_only": tool.plan_only,
        "disclosable": tool.disclosable,
        "description": tool.description,
    })
}
