//! [`Observer`]: turns the facts of a session's events, audit records and store
//! writes ([`Fact`]) into spans and metric points. A run only queues facts
//! ([`Observer::observe`]); [`Observer::drain`] applies them, on the telemetry thread.
//!
//! One trace per run: `invoke_agent` (the run) holds a `chat {model}` span per model
//! request and an `execute_tool {tool}` span per call; a delegation call's children
//! (subagents, `Parallel` branches, team members) start their runs under the call's
//! span, so they share the parent's trace. Store writes of a run are `store {op}`
//! spans under it (an audit record under its call). Attribute names follow the
//! OpenTelemetry GenAI semantic conventions (`gen_ai.*`) where they exist, and
//! `mecatl.*` where they do not. Prompt, argument, result and answer text are never
//! attributes unless content capture is on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use engine_ports::{ApprovalVerdict, SessionId, StopReason, ToolCallId, Usage, clip_chars};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::trace::SdkTracer;

use crate::facts::{Fact, Happened, Inbox, Names, StoreWrite};
use crate::metrics::Instruments;
use crate::queue::DropCounter;

/// The longest text exported in one attribute when content capture is on
/// (characters); longer text is cut with a marker.
pub const CONTENT_CAP: usize = 16 * 1024;
/// The longest error text of a failed run exported (characters).
const ERROR_CAP: usize = 512;

/// What the observer knows of tools: the family of each catalog name.
pub(crate) type Families = RwLock<HashMap<String, String>>;

/// The span state of every open run and the instruments.
pub(crate) struct Observer {
    /// `None` when traces are not exported (metrics only).
    pub(crate) tracer: Option<SdkTracer>,
    pub(crate) instruments: Instruments,
    pub(crate) content: bool,
    pub(crate) provider: Option<String>,
    pub(crate) families: Families,
    /// The names facts share (see [`Names`]).
    pub(crate) names: Names,
    inbox: Inbox,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    runs: HashMap<SessionId, Run>,
    /// A child session's parent context: the span of the delegating call.
    parents: HashMap<SessionId, Context>,
    /// The facts being applied (kept between drains for its capacity).
    spare: Vec<Fact>,
}

struct Run {
    cx: Context,
    model: Arc<str>,
    turn: Option<Turn>,
    /// A model request that ended, waiting for what came next to know why it ended.
    ended: Option<(Context, SystemTime)>,
    tools: HashMap<ToolCallId, ToolSpan>,
    /// Children started by this run's delegation calls (linked until the run ends:
    /// a background child may start its run after its call returned).
    children: Vec<SessionId>,
}

struct Turn {
    cx: Context,
    start: SystemTime,
    retries: u32,
    text: String,
}

struct ToolSpan {
    cx: Context,
    /// Who decided and whether it ran (from the audit record).
    denied: bool,
    took: Option<Duration>,
}

impl Observer {
    pub(crate) fn new(
        tracer: Option<SdkTracer>,
        instruments: Instruments,
        content: bool,
        provider: Option<String>,
        drops: Arc<DropCounter>,
    ) -> Self {
        Self {
            tracer,
            instruments,
            content,
            provider,
            families: RwLock::default(),
            names: Names::default(),
            inbox: Inbox::new(drops),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn family(&self, tool: &str) -> String {
        let families = self.families.read().unwrap_or_else(PoisonError::into_inner);
        match families.get(tool) {
            Some(family) => family.clone(),
            // A session's own MCP servers are not in the shared listing.
            None if tool.starts_with("mcp__") => "mcp-client".to_owned(),
            None => "unknown".to_owned(),
        }
    }

    fn start_span(
        &self,
        name: String,
        kind: SpanKind,
        start: SystemTime,
        attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> Option<Context> {
        let tracer = self.tracer.as_ref()?;
        let span = tracer
            .span_builder(name)
            .with_kind(kind)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(tracer, parent);
        Some(Context::new().with_span(span))
    }

    /// Queues `fact` for the telemetry thread (never waits on it).
    pub(crate) fn observe(&self, fact: Fact) {
        self.inbox.push(fact);
    }

    /// Whether content capture is on (facts then keep prompt, argument and result
    /// text).
    pub(crate) fn content(&self) -> bool {
        self.content
    }

    /// The inbox, for the telemetry thread to wait on.
    pub(crate) fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    /// Turns every waiting fact into spans and metric points, in the order they
    /// came: on the telemetry thread, and inline before the metrics are read for a
    /// page and at shutdown. Facts are taken while the span state is held, so two
    /// callers never apply them out of order.
    pub(crate) fn drain(&self) {
        let mut state = self.state();
        let mut facts = std::mem::take(&mut state.spare);
        self.inbox.take_into(&mut facts);
        // Facts carry monotonic times; spans want wall-clock times.
        let (wall, mono) = (SystemTime::now(), Instant::now());
        let wall_time = |at: Instant| {
            wall.checked_sub(mono.saturating_duration_since(at))
                .unwrap_or(wall)
        };
        for fact in facts.drain(..) {
            match fact {
                Fact::Event {
                    session,
                    at,
                    what,
                    appended,
                } => {
                    if let Some(took) = appended {
                        self.store_duration("append", took);
                    }
                    self.event(&mut state, &session, what, wall_time(at));
                }
                Fact::Record {
                    approval,
                    queued_micros,
                    took_micros,
                    write,
                } => {
                    if let Some(call) = &write.call
                        && let Some(tool) = tool_span(&mut state, &write.session, call)
                    {
                        let span = tool.cx.span();
                        if let Some(approval) = approval {
                            tool.denied = approval.verdict == ApprovalVerdict::Deny;
                            span.set_attribute(KeyValue::new(
                                "mecatl.tool.decision",
                                wire_name(&approval.verdict),
                            ));
                            span.set_attribute(KeyValue::new(
                                "mecatl.tool.decided_by",
                                wire_name(&approval.by),
                            ));
                        }
                        span.set_attribute(KeyValue::new("mecatl.tool.queued_us", queued_micros as i64));
                        span.set_attribute(KeyValue::new("mecatl.tool.took_us", took_micros as i64));
                        tool.took = Some(Duration::from_micros(took_micros));
                    }
                    self.store_write(&mut state, &write, wall_time(write.start));
                }
                Fact::StoreWrite(write) => self.store_write(&mut state, &write, wall_time(write.start)),
                Fact::Measured { operation, took } => self.store_duration(operation, took),
            }
        }
        state.spare = facts;
    }

    /// One event of `session`, observed at `now`.
    fn event(&self, state: &mut State, session: &SessionId, what: Happened, now: SystemTime) {
        match what {
            Happened::RunStart { model, mode, tools } => {
                if let Some(stale) = state.runs.remove(session) {
                    end_run_unfinished(stale, now);
                }
                let parent = state.parents.get(session).cloned();
                let agent = if parent.is_some() {
                    "mecatl-child"
                } else {
                    "mecatl"
                };
                let attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                    KeyValue::new("gen_ai.agent.name", agent),
                    KeyValue::new("gen_ai.conversation.id", session.to_string()),
                    KeyValue::new("gen_ai.request.model", model.clone()),
                    KeyValue::new("mecatl.mode", mode),
                    KeyValue::new("mecatl.tools.advertised", tools as i64),
                ];
                let parent = parent.unwrap_or_default();
                let Some(cx) = self.start_span(
                    format!("invoke_agent {agent}"),
                    SpanKind::Internal,
                    now,
                    attributes,
                    &parent,
                ) else {
                    state.runs.insert(session.clone(), Run::metrics_only(model));
                    return;
                };
                state.runs.insert(session.clone(), Run::new(cx, model));
            }
            Happened::TurnStart { turn } => {
                let Some(run) = state.runs.get_mut(session) else {
                    return;
                };
                if let Some(ended) = run.ended.take() {
                    end_model_request(ended, None);
                }
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.request.model", run.model.clone()),
                    KeyValue::new("mecatl.turn", turn as i64),
                ];
                if let Some(provider) = &self.provider {
                    attributes.push(KeyValue::new("gen_ai.provider.name", provider.clone()));
                }
                let cx = self
                    .start_span(
                        format!("chat {}", run.model),
                        SpanKind::Client,
                        now,
                        attributes,
                        &run.cx,
                    )
                    .unwrap_or_default();
                run.turn = Some(Turn {
                    cx,
                    start: now,
                    retries: 0,
                    text: String::new(),
                });
            }
            Happened::Text(text) => {
                if let Some(turn) = state.runs.get_mut(session).and_then(|run| run.turn.as_mut())
                    && turn.text.len() < CONTENT_CAP * 4
                {
                    turn.text.push_str(&text);
                }
            }
            Happened::Retry {
                attempt,
                status,
                wait_ms,
            } => {
                let Some(turn) = state.runs.get_mut(session).and_then(|run| run.turn.as_mut()) else {
                    return;
                };
                turn.retries += 1;
                let mut attributes = vec![
                    KeyValue::new("mecatl.model.attempt", i64::from(attempt)),
                    KeyValue::new("mecatl.model.wait_ms", wait_ms as i64),
                ];
                if let Some(status) = status {
                    attributes.push(KeyValue::new("http.response.status_code", i64::from(status)));
                }
                turn.cx
                    .span()
                    .add_event_with_timestamp("model.retry", now, attributes);
            }
            Happened::TurnEnd { usage } => {
                let Some(run) = state.runs.get_mut(session) else {
                    return;
                };
                let Some(turn) = run.turn.take() else { return };
                self.model_request_metrics(
                    &run.model,
                    &usage,
                    now.duration_since(turn.start).unwrap_or_default(),
                );
                let span = turn.cx.span();
                span.set_attributes(usage_attributes(&usage));
                span.set_attribute(KeyValue::new("mecatl.model.retries", i64::from(turn.retries)));
                if self.content && !turn.text.is_empty() {
                    let message = serde_json::json!([{
                        "role": "assistant",
                        "parts": [{"type": "text", "content": clip_chars(&turn.text, CONTENT_CAP)}],
                    }]);
                    span.set_attribute(KeyValue::new("gen_ai.output.messages", message.to_string()));
                }
                run.ended = Some((turn.cx, now));
            }
            Happened::ToolCall {
                call,
                name,
                args_bytes,
                args,
            } => {
                let Some(run) = state.runs.get_mut(session) else {
                    return;
                };
                if let Some(ended) = run.ended.take() {
                    end_model_request(ended, Some("tool_calls"));
                }
                let family = self.family(&name);
                let mut attributes = vec![
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", name.clone()),
                    KeyValue::new("gen_ai.tool.call.id", call.to_string()),
                    KeyValue::new(
                        "gen_ai.tool.type",
                        if family.starts_with("mcp") {
                            "extension"
                        } else {
                            "function"
                        },
                    ),
                    KeyValue::new("mecatl.tool.args_bytes", args_bytes as i64),
                ];
                if let Some(server) = mcp_server(&name) {
                    attributes.push(KeyValue::new("mcp.method.name", "tools/call"));
                    attributes.push(KeyValue::new("mcp.server.name", server.to_owned()));
                }
                attributes.push(KeyValue::new("mecatl.tool.family", family));
                if let Some(args) = args {
                    attributes.push(KeyValue::new(
                        "gen_ai.tool.call.arguments",
                        clip_chars(&args, CONTENT_CAP).into_owned(),
                    ));
                }
                let cx = self
                    .start_span(
                        format!("execute_tool {name}"),
                        SpanKind::Internal,
                        now,
                        attributes,
                        &run.cx,
                    )
                    .unwrap_or_default();
                run.tools.insert(
                    call,
                    ToolSpan {
                        cx,
                        denied: false,
                        took: None,
                    },
                );
            }
            Happened::PermissionAsk { call } => {
                if let Some(tool) = tool_span(state, session, &call) {
                    tool.cx
                        .span()
                        .add_event_with_timestamp("permission.ask", now, Vec::new());
                }
            }
            Happened::PermissionVerdict { call, verdict } => {
                if let Some(tool) = tool_span(state, session, &call) {
                    tool.cx.span().add_event_with_timestamp(
                        "permission.verdict",
                        now,
                        vec![KeyValue::new("mecatl.verdict", verdict)],
                    );
                }
            }
            Happened::Hook { call, phase, action } => {
                if let Some(tool) = tool_span(state, session, &call) {
                    tool.cx.span().add_event_with_timestamp(
                        "hook",
                        now,
                        vec![
                            KeyValue::new("mecatl.hook.phase", wire_name(&phase)),
                            KeyValue::new("mecatl.hook.action", wire_name(&action)),
                        ],
                    );
                }
            }
            Happened::ToolResult {
                call,
                name,
                result_bytes,
                is_error,
                content,
            } => {
                let tool = state
                    .runs
                    .get_mut(session)
                    .and_then(|run| run.tools.remove(&call));
                let outcome = match &tool {
                    Some(tool) if tool.denied => "denied",
                    _ if is_error => "error",
                    _ => "ok",
                };
                let attributes = [
                    KeyValue::new("gen_ai.tool.name", name),
                    KeyValue::new("mecatl.tool.outcome", outcome),
                ];
                self.instruments.tool_calls.add(1, &attributes);
                let Some(tool) = tool else { return };
                if let Some(took) = tool.took.filter(|_| !tool.denied) {
                    self.instruments
                        .tool_duration
                        .record(took.as_secs_f64(), &attributes);
                }
                let span = tool.cx.span();
                span.set_attribute(KeyValue::new("mecatl.tool.outcome", outcome));
                span.set_attribute(KeyValue::new("mecatl.tool.result_bytes", result_bytes as i64));
                if let Some(content) = content {
                    span.set_attribute(KeyValue::new(
                        "gen_ai.tool.call.result",
                        clip_chars(&content, CONTENT_CAP).into_owned(),
                    ));
                }
                if is_error {
                    span.set_attribute(KeyValue::new(
                        "error.type",
                        if tool.denied { "denied" } else { "tool_error" },
                    ));
                    span.set_status(Status::error(outcome));
                }
                span.end_with_timestamp(now);
            }
            Happened::ChildStart { call, child, what } => {
                link_child(state, session, &call, &child, what, now);
            }
            Happened::Compacted { before, after } => {
                if let Some(run) = state.runs.get(session) {
                    run.cx.span().add_event_with_timestamp(
                        "context.compacted",
                        now,
                        vec![
                            KeyValue::new("mecatl.tokens_before", before as i64),
                            KeyValue::new("mecatl.tokens_after", after as i64),
                        ],
                    );
                }
            }
            Happened::RunEnd {
                stop,
                usage,
                turns,
                tool_calls,
                error,
            } => {
                self.instruments
                    .runs
                    .add(1, &[KeyValue::new("mecatl.run.stop", stop.as_str())]);
                let Some(mut run) = state.runs.remove(session) else {
                    return;
                };
                for child in run.children.drain(..) {
                    state.parents.remove(&child);
                }
                if let Some(ended) = run.ended.take() {
                    end_model_request(ended, Some(stop.as_str()));
                }
                if let Some(turn) = run.turn.take() {
                    end_model_request((turn.cx, now), Some(stop.as_str()));
                }
                for (_, tool) in run.tools.drain() {
                    tool.cx
                        .span()
                        .set_status(Status::error("the run ended before the call"));
                    tool.cx.span().end_with_timestamp(now);
                }
                let span = run.cx.span();
                span.set_attributes(usage_attributes(&usage));
                span.set_attribute(KeyValue::new("mecatl.run.stop", stop.as_str()));
                span.set_attribute(KeyValue::new("mecatl.run.turns", turns as i64));
                span.set_attribute(KeyValue::new("mecatl.run.tool_calls", tool_calls as i64));
                if stop == StopReason::Error {
                    span.set_attribute(KeyValue::new("error.type", "run_error"));
                    let text = error.as_deref().unwrap_or("the run failed");
                    span.set_status(Status::error(clip_chars(text, ERROR_CAP).into_owned()));
                }
                span.end_with_timestamp(now);
            }
        }
    }

    /// A store write's duration.
    fn store_duration(&self, operation: &'static str, took: Duration) {
        self.instruments.store_duration.record(
            took.as_secs_f64(),
            &[KeyValue::new("mecatl.store.operation", operation)],
        );
    }

    /// A store write that started at `start`: its duration is measured; inside a
    /// run it is also a span.
    fn store_write(&self, state: &mut State, write: &StoreWrite, start: SystemTime) {
        self.store_duration(write.operation, write.took);
        if self.tracer.is_none() {
            return;
        }
        let operation = KeyValue::new("mecatl.store.operation", write.operation);
        let parent = match &write.call {
            Some(call) => tool_span(state, &write.session, call).map(|tool| tool.cx.clone()),
            None => None,
        }
        .or_else(|| state.runs.get(&write.session).map(|run| run.cx.clone()));
        let Some(parent) = parent else { return };
        let Some(cx) = self.start_span(
            format!("store {}", write.operation),
            SpanKind::Internal,
            start,
            vec![operation],
            &parent,
        ) else {
            return;
        };
        let span = cx.span();
        if let Some(error) = &write.failed {
            span.set_status(Status::error(clip_chars(error, ERROR_CAP).into_owned()));
        }
        span.end_with_timestamp(start + write.took);
    }

    /// Applies what is waiting, then ends every open span (at shutdown), so that
    /// nothing open is lost.
    pub(crate) fn end_all(&self, now: SystemTime) {
        self.drain();
        let mut state = self.state();
        state.parents.clear();
        for (_, run) in state.runs.drain() {
            end_run_unfinished(run, now);
        }
    }

    fn model_request_metrics(&self, model: &Arc<str>, usage: &Usage, took: Duration) {
        let operation = KeyValue::new("gen_ai.operation.name", "chat");
        let model = KeyValue::new("gen_ai.request.model", Arc::clone(model));
        self.instruments
            .model_duration
            .record(took.as_secs_f64(), &[operation.clone(), model.clone()]);
        for (kind, count) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
            self.instruments.tokens.record(
                count,
                &[
                    operation.clone(),
                    model.clone(),
                    KeyValue::new("gen_ai.token.type", kind),
                ],
            );
        }
    }
}

impl Run {
    fn new(cx: Context, model: Arc<str>) -> Self {
        Self {
            cx,
            model,
            turn: None,
            ended: None,
            tools: HashMap::new(),
            children: Vec::new(),
        }
    }

    /// A run whose spans are not exported: the metrics still need its model and
    /// the calls' outcomes.
    fn metrics_only(model: Arc<str>) -> Self {
        Self::new(Context::new(), model)
    }
}

fn tool_span<'a>(state: &'a mut State, session: &SessionId, call: &ToolCallId) -> Option<&'a mut ToolSpan> {
    state.runs.get_mut(session)?.tools.get_mut(call)
}

fn link_child(
    state: &mut State,
    session: &SessionId,
    call: &ToolCallId,
    child: &SessionId,
    what: &'static str,
    now: SystemTime,
) {
    let Some(run) = state.runs.get_mut(session) else {
        return;
    };
    let Some(tool) = run.tools.get(call) else { return };
    tool.cx.span().add_event_with_timestamp(
        what,
        now,
        vec![KeyValue::new("mecatl.child.id", child.to_string())],
    );
    let cx = tool.cx.clone();
    if !run.children.contains(child) {
        run.children.push(child.clone());
    }
    state.parents.insert(child.clone(), cx);
}

fn end_model_request((cx, end): (Context, SystemTime), finish: Option<&str>) {
    let span = cx.span();
    if let Some(reason) = finish {
        span.set_attribute(KeyValue::new(
            "gen_ai.response.finish_reasons",
            Value::Array(vec![opentelemetry::StringValue::from(reason.to_owned())].into()),
        ));
    }
    span.end_with_timestamp(end);
}

fn end_run_unfinished(mut run: Run, now: SystemTime) {
    if let Some(ended) = run.ended.take() {
        end_model_request(ended, None);
    }
    if let Some(turn) = run.turn.take() {
        end_model_request((turn.cx, now), None);
    }
    for (_, tool) in run.tools.drain() {
        tool.cx.span().end_with_timestamp(now);
    }
    run.cx.span().set_status(Status::error("the run did not finish"));
    run.cx.span().end_with_timestamp(now);
}

fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let mut attributes = vec![
        KeyValue::new("gen_ai.usage.input_tokens", usage.input_tokens as i64),
        KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
    ];
    if usage.cache_read_tokens > 0 {
        attributes.push(KeyValue::new(
            "gen_ai.usage.cache_read.input_tokens",
            usage.cache_read_tokens as i64,
        ));
    }
    if usage.cache_write_tokens > 0 {
        attributes.push(KeyValue::new(
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_tokens as i64,
        ));
    }
    attributes
}

/// The server of an `mcp__<server>__<tool>` name.
fn mcp_server(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, _) = rest.split_once("__")?;
    (!server.is_empty()).then_some(server)
}

/// The serde wire name of a unit enum value (`allow_once`, `policy`).
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_names_give_their_server() {
        assert_eq!(mcp_server("mcp__github__search"), Some("github"));
        assert_eq!(mcp_server("mcp____x"), None);
        assert_eq!(mcp_server("Read"), None);
    }
}
