//! The endpoints a person's view needs besides running sessions: a session's stored
//! history and audit, changing its mode and model, the models offered, memory facts
//! (list, forget), the MCP servers' status and the store's health. Each reads or
//! changes what the host port exposes; the page shows their answers as they are.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse as _, Response};
use engine_ports::{Event, EventKind, MemoryError, ToolCallRecord, clip_chars, format_rfc3339_micros};
use serde::Deserialize;
use serde_json::{Value, json};

use super::body::{JsonBody, invalid, update_body};
use super::error::ApiError;
use super::handlers::{SessionPath, show, stored};
use super::server::ServerState;

type AppState = State<Arc<ServerState>>;

/// The most characters of a call's result an audit row carries.
const RESULT_PREVIEW_CHARS: usize = 2_000;

/// The most facts listed per memory scope.
const MEMORY_LIST_CAP: usize = 1_000;

/// Who forgets a fact through the API, as the memory's history keeps it.
const API_WRITER: &str = "mecated serve";

/// `GET /v1/sessions/{id}/events` → `{"events": [...], "prompts": [...]}`: the
/// session's stored events in `seq` order (a run in progress included, as far as it
/// is logged), and the prompts of its runs as `{"seq", "text"}`, `seq` being the
/// `session.init` of the run the prompt started (see [`run_prompts`]).
pub(crate) async fn events(
    State(state): AppState,
    SessionPath(id): SessionPath,
) -> Result<Json<Value>, ApiError> {
    let snapshot = stored(&state, &id).await?;
    let events = state
        .host
        .event_log()
        .read(&id)
        .await
        .map_err(|e| ApiError::store(&e))?;
    let prompts: Vec<Value> = run_prompts(&events, &snapshot.prompts())
        .into_iter()
        .map(|(seq, text)| json!({"seq": seq, "text": text}))
        .collect();
    Ok(Json(json!({ "events": events, "prompts": prompts })))
}

/// Pairs the runs of `events` with the snapshot's `prompts`: the events do not carry
/// the prompt, and the conversation does not name the run, so the runs that reached
/// a model turn (a refused or failed prompt adds nothing to the conversation) take
/// the prompts from the newest backwards (compaction drops the oldest). Returns the
/// `seq` of each paired run's `session.init` with its prompt, oldest first.
fn run_prompts<'a>(events: &[Event], prompts: &[&'a str]) -> Vec<(u64, &'a str)> {
    let mut runs: Vec<(u64, bool)> = Vec::new();
    for event in events {
        match event.kind {
            EventKind::SessionInit { .. } => runs.push((event.seq, false)),
            EventKind::TurnStart { .. } => {
                if let Some(run) = runs.last_mut() {
                    run.1 = true;
                }
            }
            _ => {}
        }
    }
    let mut paired: Vec<(u64, &str)> = runs
        .iter()
        .rev()
        .filter(|(_, turned)| *turned)
        .zip(prompts.iter().rev())
        .map(|((seq, _), text)| (*seq, *text))
        .collect();
    paired.reverse();
    paired
}

/// The query of the audit endpoint.
#[derive(Debug, Deserialize)]
pub(crate) struct AuditQuery {
    tool: Option<String>,
}

/// `GET /v1/sessions/{id}/audit?tool=` → every recorded call of the session (of
/// `tool` only, when given), in recording order, with who decided and how long it
/// queued and ran, and per tool the count and the 50th and 95th percentiles of the
/// run time of the calls that ran.
pub(crate) async fn audit(
    State(state): AppState,
    SessionPath(id): SessionPath,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    stored(&state, &id).await?;
    let mut records = state
        .host
        .tool_call_log()
        .read(&id)
        .await
        .map_err(|e| ApiError::store(&e))?;
    if let Some(tool) = query.tool.as_deref().filter(|tool| !tool.is_empty()) {
        records.retain(|record| record.tool == tool);
    }
    let calls: Vec<Value> = records.iter().map(audit_row).collect();
    Ok(Json(json!({ "calls": calls, "latency": latency(&records) })))
}

/// One audit row: the record with its server and decision spelled out.
fn audit_row(record: &ToolCallRecord) -> Value {
    let server = record
        .tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .map(|(server, _)| server);
    let (by, decision) = record.approval.as_ref().map_or((None, None), |approval| {
        (
            serde_json::to_value(approval.by).ok(),
            serde_json::to_value(approval.verdict).ok(),
        )
    });
    json!({
        "time": record.time,
        "call_id": record.call_id,
        "tool": record.tool,
        "server": server,
        "args": record.args,
        "result": clip_chars(&record.result, RESULT_PREVIEW_CHARS),
        "is_error": record.is_error,
        "decision": decision,
        "by": by,
        "provenance": record.provenance,
        "queued_micros": record.queued_micros,
        "took_micros": record.took_micros,
    })
}

/// Per tool (sorted by name): how many calls ran, and the nearest-rank 50th and
/// 95th percentiles and the maximum of their run times. Refused calls never ran
/// and are left out.
fn latency(records: &[ToolCallRecord]) -> Vec<Value> {
    let mut by_tool: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for record in records {
        let refused = record.approval.is_some_and(|approval| !approval.allows());
        if !refused {
            by_tool.entry(&record.tool).or_default().push(record.took_micros);
        }
    }
    by_tool
        .into_iter()
        .map(|(tool, mut took)| {
            took.sort_unstable();
            json!({
                "tool": tool,
                "count": took.len(),
                "p50_micros": percentile(&took, 50),
                "p95_micros": percentile(&took, 95),
                "max_micros": took.last().copied().unwrap_or(0),
            })
        })
        .collect()
}

/// The nearest-rank `p`th percentile of `sorted` (0 when empty).
fn percentile(sorted: &[u64], p: usize) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// `PATCH /v1/sessions/{id} {mode?, model?}` → the session's view once changed: the
/// mode from now on, the model from its next run on (`null`: the server's). 409
/// while it runs; a model must be one the server offers.
pub(crate) async fn update(
    state: AppState,
    path: SessionPath,
    JsonBody(body): JsonBody,
) -> Result<Json<Value>, ApiError> {
    let body = update_body(body)?;
    let SessionPath(id) = &path;
    if let Some(Some(model)) = &body.model
        && !state.host.models().contains(model)
    {
        return Err(invalid(
            "model",
            &Value::String(model.clone()),
            &format!(
                "expected one of the models this server offers: {}",
                state.host.models().join(", ")
            ),
        ));
    }
    state.ensure_open()?;
    stored(&state, id).await?;
    let engine = match state.sessions.get(id) {
        Some(session) => Arc::clone(session.engine()),
        None => Arc::clone(state.host.shared_engine()),
    };
    if let Some(mode) = body.mode {
        engine.set_mode(id, mode).await?;
    }
    if let Some(model) = body.model {
        engine.set_model(id, model).await?;
    }
    tracing::info!(session_id = %id, "session updated");
    show(state, path).await
}

/// `GET /v1/models` → `{"model", "models"}`: the model of a session that chose
/// none, and every model a session may choose (it first).
pub(crate) async fn models(State(state): AppState) -> Json<Value> {
    Json(json!({ "model": state.host.model(), "models": state.host.models() }))
}

/// `GET /v1/memory` → `{"scopes": [{scope, place, facts: [{key, description,
/// version, updated_at}], total}]}`: each memory scope that is on, its facts most
/// recently written first (at most 1,000 listed; `total` counts them all).
pub(crate) async fn memory(State(state): AppState) -> Result<Json<Value>, ApiError> {
    let mut scopes = Vec::new();
    for scope in state.host.memory_scopes() {
        let index = scope
            .store
            .index()
            .await
            .map_err(|e| memory_error(&e, scope.name))?;
        let facts: Vec<Value> = index
            .iter()
            .take(MEMORY_LIST_CAP)
            .map(|entry| {
                json!({
                    "key": entry.key,
                    "description": entry.description,
                    "version": entry.version,
                    "updated_at": format_rfc3339_micros(entry.updated_at),
                })
            })
            .collect();
        scopes.push(json!({
            "scope": scope.name,
            "place": scope.place,
            "facts": facts,
            "total": index.len(),
        }));
    }
    Ok(Json(json!({ "scopes": scopes })))
}

/// The query of the forget endpoint.
#[derive(Debug, Deserialize)]
pub(crate) struct ForgetQuery {
    version: Option<u64>,
}

/// `DELETE /v1/memory/{scope}/{key}?version=N` → `{"version"}` of the tombstone:
/// forgets the fact if it is still at version `N` (the one listed), else 409; 404
/// for an unknown scope or key.
pub(crate) async fn forget(
    State(state): AppState,
    Path((scope_name, key)): Path<(String, String)>,
    query: Result<Query<ForgetQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(query) = query.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let Some(version) = query.version else {
        return Err(ApiError::bad_request(
            "missing query parameter version: send ?version=<the fact's version as listed by GET /v1/memory>",
        ));
    };
    let scopes = state.host.memory_scopes();
    let Some(scope) = scopes.iter().find(|scope| scope.name == scope_name) else {
        let on: Vec<&str> = scopes.iter().map(|scope| scope.name).collect();
        return Err(ApiError::not_found(format!(
            "memory scope {scope_name:?} is not on: expected one of [{}]",
            on.join(", ")
        )));
    };
    let tombstone = scope
        .store
        .forget(&key, version, API_WRITER)
        .await
        .map_err(|e| memory_error(&e, scope.name))?;
    tracing::info!(scope = scope.name, key = %key, version = tombstone, "memory fact forgotten");
    Ok(Json(json!({ "version": tombstone })))
}

/// A memory failure as an answer: 404 for a key not held, 409 for a stale
/// version, 400 for a bad key, 500 otherwise (the message never holds a value).
fn memory_error(error: &MemoryError, scope: &str) -> ApiError {
    let status = match error {
        MemoryError::NotFound { .. } => StatusCode::NOT_FOUND,
        MemoryError::VersionMismatch { .. } => StatusCode::CONFLICT,
        MemoryError::InvalidKey { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, format!("memory scope {scope:?}: {error}"))
}

/// `GET /v1/mcp` → `{"servers": [...]}`: the server-global MCP servers in connect
/// order with their status, counts, last error and whether a login is needed.
pub(crate) async fn mcp(State(state): AppState) -> Json<Value> {
    Json(json!({ "servers": state.host.mcp_servers() }))
}

/// `GET /v1/store` → the session store's kind, place and a probe's outcome; 503
/// when the probe failed.
pub(crate) async fn store(State(state): AppState) -> Response {
    let health = state.host.store_health().await;
    let status = if health.ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(json!(health))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(percentile(&[], 50), 0);
        assert_eq!(percentile(&[7], 95), 7);
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&hundred, 50), 50);
        assert_eq!(percentile(&hundred, 95), 95);
        assert_eq!(percentile(&[1, 2, 3, 4], 50), 2);
        assert_eq!(percentile(&[1, 2, 3, 4], 95), 4);
    }

    fn event(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            time: None,
            kind,
        }
    }

    fn init(seq: u64) -> Event {
        event(
            seq,
            EventKind::SessionInit {
                session_id: "s".into(),
                mode: engine_ports::PermissionMode::Default,
                model: "m".to_owned(),
                tools: Vec::new(),
                mcp_servers: Vec::new(),
                sandbox: None,
            },
        )
    }

    #[test]
    fn prompts_pair_with_the_newest_runs_that_reached_a_turn() {
        let turn = |seq| event(seq, EventKind::TurnStart { turn: 1 });
        // Run 1 was compacted away, run 3 was refused before any turn.
        let events = [init(1), turn(2), init(3), turn(4), init(5), init(6), turn(7)];
        assert_eq!(
            run_prompts(&events, &["second", "third"]),
            vec![(3, "second"), (6, "third")]
        );
        assert_eq!(run_prompts(&events, &[]), Vec::<(u64, &str)>::new());
    }
}
