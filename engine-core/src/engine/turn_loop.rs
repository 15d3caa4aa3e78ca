//! The turn loop of one run: run lease, load, `session.init`, command expansion, then
//! turns of (compaction when the request nears the context window) → model stream →
//! dispatch → save until a stop reason, then `result`.

use std::collections::BTreeSet;
use std::sync::Arc;

use engine_ports::{
    Chunk, ChunkStream, CompactionTrigger, EventKind, Expansion, LlmError, LlmRequest, Message,
    ReportedContext, RunLease, SessionId, SessionSnapshot, StopReason, ToolCall, Usage,
};
use futures::{FutureExt as _, StreamExt as _};
use tokio::sync::{mpsc, oneshot};

use super::compaction::Compacted;
use super::live::LiveRun;
use super::run::StartOutcome;
use super::{EngineError, Inner, SessionModel};
use crate::catalog::Catalog;
use crate::context::{self, ConversationSizes};
use crate::delegation::DelegationScope;
use crate::disclosure::{hydrate, turn_tools};
use crate::dispatch::{TurnContext, normalize_owned_call_ids};
use crate::emitter::{Delivery, EventEmitter};
use crate::environment::Environment;

/// One run, moved into its own task.
pub(super) struct RunTask {
    pub(super) inner: Arc<Inner>,
    pub(super) live: Arc<LiveRun>,
    pub(super) session: SessionId,
    pub(super) prompt: String,
    pub(super) channel: mpsc::Sender<Delivery>,
}

/// Counters of this run (limits are per run).
#[derive(Default)]
pub(super) struct RunCounters {
    turns: u64,
    tool_calls: u64,
    consecutive_failures: u64,
    pub(super) usage: Usage,
    /// The prompt passed its hooks (the run's `Stop` hooks fire only then).
    pub(super) prompt_accepted: bool,
    /// The `Stop` hooks fired for the run's current ending.
    pub(super) stop_fired: bool,
    /// How many times a `Stop` hook made the model go on.
    pub(super) stop_continuations: u32,
}

/// How the loop ended.
pub(super) struct Ending {
    stop: StopReason,
    error: Option<String>,
}

impl Ending {
    pub(super) fn stop(stop: StopReason) -> Self {
        Self { stop, error: None }
    }

    pub(super) fn error(message: impl Into<String>) -> Self {
        Self {
            stop: StopReason::Error,
            error: Some(message.into()),
        }
    }

    /// A run that wrote no audit record for something it did, under required audit.
    fn audit_failed(failure: &str) -> Self {
        Self::error(format!(
            "an audit record could not be written ({failure}); audit is required, so the run stops"
        ))
    }
}

/// Adds `usage` to the session's totals, and to those of `model` (when named).
pub(super) fn add_usage(snapshot: &mut SessionSnapshot, model: &str, usage: Usage) {
    snapshot.usage += usage;
    if !model.is_empty() && usage != Usage::default() {
        *snapshot.model_usage.entry(model.to_owned()).or_default() += usage;
    }
}

/// Most deltas emitted as one delivery to the run's stream.
const MAX_DELTA_BATCH: usize = 64;

/// One model turn as streamed.
struct Streamed {
    text: String,
    calls: Vec<ToolCall>,
    usage: Usage,
    failure: Option<Ending>,
    /// The provider refused the request as longer than the context window before
    /// anything of it streamed.
    too_long: Option<LlmError>,
    /// The output limit cut the answer off.
    truncated: bool,
}

/// The result of a call the output limit cut off (the call is never run).
fn cut_off_call_text(max_tokens: u32) -> String {
    format!(
        "This call was not run: the answer was cut off by the output limit ({max_tokens} tokens) while \
         its arguments were being written, so they were incomplete. Make the call again with smaller \
         arguments: split large content over several calls (for example, write a file in parts)."
    )
}

impl RunTask {
    /// Takes the session's run lease (telling `started` whether it did), then runs.
    pub(super) async fn run(self, started: oneshot::Sender<StartOutcome>) {
        let lease = match self.inner.store.acquire_run(&self.session).await {
            Ok(lease) => lease,
            Err(error) => {
                self.leave_live();
                let error = EngineError::from_lease(error);
                tracing::debug!(session_id = %self.session, %error, "the run did not start");
                let _ = started.send(Err(error));
                return;
            }
        };
        let _ = started.send(Ok(()));
        self.run_leased(lease).await;
    }

    /// Removes this run from the engine's runs in progress.
    fn leave_live(&self) {
        let mut live = self.inner.lock_live();
        if live
            .get(&self.session)
            .is_some_and(|l| Arc::ptr_eq(l, &self.live))
        {
            live.remove(&self.session);
        }
    }

    async fn run_leased(self, lease: RunLease) {
        let inner = Arc::clone(&self.inner);
        let (snapshot, load_error) = match inner.store.load(&self.session).await {
            Ok(snapshot) => (snapshot, None),
            Err(error) if error.is_not_found() => (
                SessionSnapshot::new(self.session.clone(), inner.config.mode),
                None,
            ),
            Err(error) => (
                SessionSnapshot::new(self.session.clone(), inner.config.mode),
                Some(format!("loading the session failed: {error}")),
            ),
        };
        let emitter = Arc::new(
            EventEmitter::new(self.session.clone(), snapshot.next_seq.max(1))
                .with_clock(inner.clock.clone())
                .with_log(inner.event_log.clone())
                .with_sink(inner.sink.clone())
                .with_channel(self.channel.clone()),
        );
        let mut snapshot = snapshot;
        // A session keeps the system prompt of its first run (byte-stable turns).
        if snapshot.system_prompt.is_none() && !inner.config.system_prompt.is_empty() {
            snapshot.system_prompt = Some(inner.config.system_prompt.clone());
        }
        let model = inner.session_model(&snapshot);
        let mut counters = RunCounters::default();
        let mut final_text = String::new();
        let mut sizes = inner.take_sizes(&self.session);

        let mut catalog = inner.latest_catalog().await;
        let advertised = inner.visible(turn_tools(
            &catalog.1,
            snapshot.mode,
            &snapshot.hydrated,
            inner.config.disclosure.resolve(&catalog.1, model.context_window),
        ));
        emitter
            .emit(EventKind::SessionInit {
                session_id: self.session.clone(),
                mode: snapshot.mode,
                model: model.name.clone(),
                tools: advertised.specs.iter().map(|s| s.name().to_owned()).collect(),
                mcp_servers: inner.config.mcp_servers.clone(),
                sandbox: inner.config.sandbox.clone(),
            })
            .await;

        // A session that failed to load is never saved over: its file stays as it was.
        let persist = load_error.is_none();
        let ending = match load_error {
            Some(message) => Ending::error(message),
            None => {
                self.turns(
                    &emitter,
                    &mut catalog,
                    &mut snapshot,
                    &mut counters,
                    &mut final_text,
                    &mut sizes,
                )
                .await
            }
        };
        inner.keep_sizes(&self.session, sizes);
        // Background children still running are cancelled with the run, and saved
        // before it ends.
        if let Some(delegation) = &self.live.delegation {
            delegation.shutdown().await;
        }
        self.final_stop_hooks(&emitter, &mut counters, ending.stop).await;
        if inner.config.audit_required {
            self.flush_audit(&emitter).await;
        }
        let ending = match emitter.audit_failure() {
            Some(failure) if inner.config.audit_required && ending.error.is_none() => {
                Ending::audit_failed(&failure)
            }
            _ => ending,
        };
        self.finish(
            &emitter,
            lease,
            persist.then_some(snapshot),
            counters,
            final_text,
            ending,
        )
        .await;
    }

    async fn turns(
        &self,
        emitter: &Arc<EventEmitter>,
        catalog: &mut (u64, Arc<Catalog>),
        snapshot: &mut SessionSnapshot,
        counters: &mut RunCounters,
        final_text: &mut String,
        sizes: &mut ConversationSizes,
    ) -> Ending {
        let inner = &self.inner;
        let cancel = &self.live.cancel;
        let context = match self.before_prompt(emitter, snapshot, counters).await {
            Ok(context) => context,
            Err(refused) => return refused,
        };
        let prompt = match &inner.commands {
            None => self.prompt.clone(),
            Some(commands) => {
                let limit = inner.config.command_timeout;
                let expansion = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Ending::stop(StopReason::Cancelled),
                    expansion = tokio::time::timeout(limit, commands.expand(&self.prompt)) => expansion,
                };
                match expansion {
                    Ok(Ok(Expansion::Expanded(text))) => text,
                    Ok(Ok(Expansion::NotExpanded)) => self.prompt.clone(),
                    Ok(Err(error)) => return Ending::error(error.to_string()),
                    Err(_) => {
                        return Ending::error(format!(
                            "expanding the slash command did not finish within {} s",
                            limit.as_secs_f64()
                        ));
                    }
                }
            }
        };
        snapshot.conversation.push(Message::User { text: prompt });
        if let Some(context) = context {
            snapshot.conversation.push(context);
        }
        // The run's model (a session's model changes only between runs).
        let model = &inner.session_model(snapshot);
        let limits = inner.config.limits;
        loop {
            if cancel.is_cancelled() {
                return Ending::stop(StopReason::Cancelled);
            }
            if limits.max_turns > 0 && counters.turns >= limits.max_turns {
                return Ending::stop(StopReason::MaxTurns);
            }
            if limits.max_tool_calls > 0 && counters.tool_calls >= limits.max_tool_calls {
                return Ending::stop(StopReason::MaxToolCalls);
            }
            if limits.max_consecutive_failures > 0
                && counters.consecutive_failures >= limits.max_consecutive_failures
            {
                return Ending::stop(StopReason::MaxConsecutiveFailures);
            }

            if counters.turns > 0 {
                self.switch_catalog(emitter, catalog).await;
                self.deliver_notices(snapshot);
            }
            let tools = inner.visible(turn_tools(
                &catalog.1,
                snapshot.mode,
                &snapshot.hydrated,
                inner.config.disclosure.resolve(&catalog.1, model.context_window),
            ));
            let system = snapshot.system_prompt.clone().unwrap_or_default();
            let fixed_bytes = context::fixed_bytes(&system, &tools);
            let estimate = context::estimate(sizes, &snapshot.conversation, snapshot.context, fixed_bytes);
            if estimate > context::compaction_threshold(model.context_window)
                && let Err(ending) = self
                    .compact(
                        emitter,
                        snapshot,
                        counters,
                        CompactionTrigger::Threshold,
                        estimate,
                        fixed_bytes,
                    )
                    .await
            {
                return ending;
            }
            counters.turns += 1;
            snapshot.turns += 1;
            let turn = counters.turns;
            emitter.emit(EventKind::TurnStart { turn }).await;
            // A request the provider refuses as too long gets one compaction and one
            // retry; a second refusal ends the run. An answer whose tool call the
            // output limit cut off is requested once more with a larger limit.
            let mut compacted_for_retry = false;
            let mut max_tokens = model.output_limits.default;
            let mut raised_for_cut_call = false;
            let mut discarded = Usage::default();
            let mut streamed = loop {
                let request = LlmRequest {
                    model: model.name.clone(),
                    system: system.clone(),
                    messages: snapshot.conversation.clone(),
                    tools: tools.specs.clone(),
                    purpose: inner.config.purpose,
                    max_tokens: Some(max_tokens),
                };
                let mut streamed = self.stream(emitter, request).await;
                if streamed.failure.is_none()
                    && streamed.truncated
                    && !streamed.calls.is_empty()
                    && !raised_for_cut_call
                    && let Some(larger) = model.output_limits.raised(max_tokens)
                {
                    raised_for_cut_call = true;
                    discarded += streamed.usage;
                    emitter
                        .emit(EventKind::ModelRetry {
                            attempt: 1,
                            status: None,
                            wait_ms: 0,
                            max_tokens: Some(larger),
                            error: format!("the output limit of {max_tokens} tokens cut off a tool call"),
                        })
                        .await;
                    max_tokens = larger;
                    continue;
                }
                let Some(error) = streamed.too_long.take() else {
                    break streamed;
                };
                if compacted_for_retry {
                    streamed.failure = Some(Ending::error(format!(
                        "{error}; the conversation was already compacted and retried once for this request, so \
                         the run stops (the configured context window may be larger than the model's)"
                    )));
                    break streamed;
                }
                compacted_for_retry = true;
                let estimate =
                    context::estimate(sizes, &snapshot.conversation, snapshot.context, fixed_bytes);
                match self
                    .compact(
                        emitter,
                        snapshot,
                        counters,
                        CompactionTrigger::ContextTooLong,
                        estimate,
                        fixed_bytes,
                    )
                    .await
                {
                    Ok(Compacted::Yes) => {}
                    Ok(Compacted::NothingToCompact) => {
                        streamed.failure = Some(Ending::error(format!(
                            "{error}; nothing in the conversation can be compacted to make it fit"
                        )));
                        break streamed;
                    }
                    Err(ending) => {
                        streamed.failure = Some(ending);
                        break streamed;
                    }
                }
            };
            streamed.usage += discarded;
            counters.usage += streamed.usage;
            add_usage(snapshot, &model.name, streamed.usage);
            emitter
                .emit(EventKind::TurnEnd {
                    turn,
                    usage: streamed.usage,
                })
                .await;
            if let Some(failure) = streamed.failure {
                return failure;
            }

            let calls = normalize_owned_call_ids(streamed.calls, snapshot.turns);
            let answered = calls.is_empty();
            // A call of a cut-off answer never runs: the history keeps it with empty
            // arguments (valid JSON for every provider) and an error result.
            let calls = if streamed.truncated {
                calls
                    .iter()
                    .map(|call| ToolCall::new(call.id().clone(), call.name(), "{}"))
                    .collect()
            } else {
                calls
            };
            snapshot.conversation.push(Message::Assistant {
                text: streamed.text.clone(),
                tool_calls: calls,
            });
            // The provider's count covers the request and its answer: the next
            // request's estimate starts from it.
            snapshot.context = (streamed.usage.input_tokens > 0).then(|| ReportedContext {
                tokens: streamed
                    .usage
                    .input_tokens
                    .saturating_add(streamed.usage.output_tokens),
                messages: snapshot.conversation.len() as u64,
            });
            *final_text = streamed.text;
            if answered {
                if streamed.truncated {
                    return Ending::stop(StopReason::MaxTokens);
                }
                let Some(go_on) = self
                    .stop_hooks(emitter, counters, StopReason::EndTurn, true)
                    .await
                else {
                    return Ending::stop(StopReason::EndTurn);
                };
                snapshot.conversation.push(go_on);
                snapshot.next_seq = emitter.next_seq();
                if let Err(error) = inner.store.save(snapshot).await {
                    return Ending::error(format!("saving the session failed: {error}"));
                }
                continue;
            }
            if streamed.truncated {
                self.refuse_cut_off_calls(emitter, snapshot, counters, max_tokens)
                    .await;
                snapshot.next_seq = emitter.next_seq();
                if let Err(error) = inner.store.save(snapshot).await {
                    return Ending::error(format!("saving the session failed: {error}"));
                }
                continue;
            }

            let ctx = TurnContext {
                session_id: self.session.clone(),
                turn: snapshot.turns,
                mode: snapshot.mode,
                catalog: Arc::clone(&catalog.1),
                environment: self.turn_environment(emitter, model, snapshot),
                progressive_tools: inner.config.disclosure.is_progressive(),
                policy: Arc::clone(&inner.policy),
                asks: inner.config.interactive.then(|| Arc::clone(&self.live.asks)),
                headless_reason: None,
                caller: None,
                rules: inner.rules.clone(),
                hooks: inner.hooks.clone(),
                recorder: inner.recorder.clone(),
                clock: inner.clock.clone(),
                events: Arc::clone(emitter),
                cancel: cancel.clone(),
            };
            // The calls are dispatched from the message just appended (a shared
            // handle on the conversation: nothing is copied).
            let conversation = snapshot.conversation.clone();
            let calls = match conversation.last() {
                Some(Message::Assistant { tool_calls, .. }) => tool_calls.as_slice(),
                _ => &[],
            };
            let outcome = inner.dispatcher.dispatch(&ctx, calls).await;
            let n = outcome.results.len() as u64;
            counters.tool_calls += n;
            snapshot.tool_calls += n;
            for result in outcome.results {
                if result.is_error() {
                    counters.consecutive_failures += 1;
                } else {
                    counters.consecutive_failures = 0;
                }
                snapshot.conversation.push(Message::Tool { result });
            }
            hydrate(snapshot, outcome.hydrated);
            snapshot.next_seq = emitter.next_seq();
            if let Err(error) = inner.store.save(snapshot).await {
                return Ending::error(format!("saving the session failed: {error}"));
            }
            if outcome.cancelled {
                return Ending::stop(StopReason::Cancelled);
            }
            if inner.config.audit_required {
                self.flush_audit(emitter).await;
                if let Some(failure) = emitter.audit_failure() {
                    return Ending::audit_failed(&failure);
                }
            }
        }
    }

    /// Answers every call of the latest (cut-off) assistant message with an error
    /// result without running it, reported like any call.
    async fn refuse_cut_off_calls(
        &self,
        emitter: &EventEmitter,
        snapshot: &mut SessionSnapshot,
        counters: &mut RunCounters,
        max_tokens: u32,
    ) {
        let calls = match snapshot.conversation.last() {
            Some(Message::Assistant { tool_calls, .. }) => tool_calls.clone(),
            _ => Vec::new(),
        };
        for call in calls {
            emitter
                .emit(EventKind::ToolCall {
                    call_id: call.id().clone(),
                    name: call.name().to_owned(),
                    args: call.args_value(),
                })
                .await;
            let result = engine_ports::ToolResult::error(call.id().clone(), cut_off_call_text(max_tokens));
            emitter
                .emit(EventKind::ToolResult {
                    call_id: call.id().clone(),
                    name: call.name().to_owned(),
                    content: result.content().to_owned(),
                    is_error: true,
                    parts: Vec::new(),
                })
                .await;
            counters.consecutive_failures += 1;
            snapshot.conversation.push(Message::Tool { result });
        }
    }

    /// The environment of this turn's tools: the engine's, carrying the delegation
    /// scope when the engine can start children (the conversation without the
    /// calling turn, which was just appended).
    fn turn_environment(
        &self,
        emitter: &Arc<EventEmitter>,
        model: &SessionModel,
        snapshot: &SessionSnapshot,
    ) -> Environment {
        let inner = &self.inner;
        let (Some(children), Some(run)) = (&inner.children, &self.live.delegation) else {
            return inner.environment.clone();
        };
        let before_call = snapshot.conversation.len().saturating_sub(1);
        inner.environment.with_delegation(Arc::new(DelegationScope {
            parent: self.session.clone(),
            mode: snapshot.mode,
            interactive: inner.config.interactive,
            model: model.name.clone(),
            context_window: model.context_window,
            conversation: snapshot.conversation.prefix(before_call),
            children: Arc::clone(children),
            llm: Arc::clone(&inner.llm),
            policy: Arc::clone(&inner.policy),
            store: Arc::clone(&inner.store),
            events: Arc::clone(emitter),
            asks: Arc::clone(&self.live.asks),
            run: Arc::clone(run),
        }))
    }

    /// At a turn boundary: one user message with the notices of background children
    /// that finished since the last turn.
    fn deliver_notices(&self, snapshot: &mut SessionSnapshot) {
        let Some(run) = &self.live.delegation else {
            return;
        };
        let notices = run.take_notices();
        if !notices.is_empty() {
            snapshot.conversation.push(Message::User {
                text: notices.join("\n"),
            });
        }
    }

    /// Writes what the audit outputs buffer; a loss they report is an audit failure.
    async fn flush_audit(&self, emitter: &EventEmitter) {
        let inner = &self.inner;
        if let Some(recorder) = &inner.recorder
            && let Err(error) = recorder.flush(&self.session).await
        {
            emitter.note_audit_failure(error.to_string());
        }
        if let Some(log) = &inner.event_log
            && let Err(error) = log.flush(&self.session).await
        {
            emitter.note_audit_failure(format!("events were not logged: {error}"));
        }
    }

    /// At a turn boundary: takes a newer catalog when there is one, telling the run's
    /// consumers what appeared and disappeared.
    async fn switch_catalog(&self, emitter: &EventEmitter, catalog: &mut (u64, Arc<Catalog>)) {
        let latest = self.inner.latest_catalog().await;
        if latest.0 == catalog.0 {
            return;
        }
        let old: BTreeSet<&str> = catalog.1.names().collect();
        let new: BTreeSet<&str> = latest.1.names().collect();
        let added = new.difference(&old).map(|n| (*n).to_owned()).collect();
        let removed = old.difference(&new).map(|n| (*n).to_owned()).collect();
        emitter.emit(EventKind::CatalogChanged { added, removed }).await;
        *catalog = latest;
    }

    /// Streams one model turn; text and reasoning go out as deltas, calls are
    /// collected whole (D12). A cancelled or failed turn is discarded.
    async fn stream(&self, emitter: &EventEmitter, request: LlmRequest) -> Streamed {
        let cancel = &self.live.cancel;
        let mut out = Streamed {
            text: String::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            failure: None,
            too_long: None,
            truncated: false,
        };
        let failed = |error: LlmError| {
            if cancel.is_cancelled() || matches!(error, LlmError::Cancelled) {
                Ending::stop(StopReason::Cancelled)
            } else {
                Ending::error(error.to_string())
            }
        };
        let mut stream = match self.inner.llm.stream(request, cancel.child_token()).await {
            Ok(stream) => stream,
            Err(error) if error.is_context_too_long() && !cancel.is_cancelled() => {
                out.too_long = Some(error);
                return out;
            }
            Err(error) => {
                out.failure = Some(failed(error));
                return out;
            }
        };
        // An item read ahead while collecting deltas, handled next.
        let mut read_ahead = None;
        loop {
            let item = match read_ahead.take() {
                Some(item) => item,
                None => tokio::select! {
                    biased;
                    () = cancel.cancelled() => {
                        out.failure = Some(Ending::stop(StopReason::Cancelled));
                        return out;
                    }
                    item = stream.next() => item,
                },
            };
            match item {
                None | Some(Ok(Chunk::Done)) => return out,
                Some(Ok(Chunk::Text(text))) => {
                    out.text.push_str(&text);
                    let first = EventKind::MessageDelta { text };
                    read_ahead = self.emit_deltas(emitter, &mut stream, &mut out.text, first).await;
                }
                Some(Ok(Chunk::Reasoning(text))) => {
                    let first = EventKind::ReasoningDelta { text };
                    read_ahead = self.emit_deltas(emitter, &mut stream, &mut out.text, first).await;
                }
                Some(Ok(Chunk::ToolCall(call))) => out.calls.push(call),
                Some(Ok(Chunk::Usage(usage))) => out.usage += usage,
                Some(Ok(Chunk::Truncated)) => out.truncated = true,
                Some(Ok(Chunk::Retry(retry))) => {
                    emitter
                        .emit(EventKind::ModelRetry {
                            attempt: retry.attempt,
                            status: retry.status,
                            wait_ms: u64::try_from(retry.wait.as_millis()).unwrap_or(u64::MAX),
                            max_tokens: None,
                            error: retry.error,
                        })
                        .await;
                }
                Some(Err(error))
                    if error.is_context_too_long()
                        && out.text.is_empty()
                        && out.calls.is_empty()
                        && !cancel.is_cancelled() =>
                {
                    out.too_long = Some(error);
                    return out;
                }
                Some(Err(error)) => {
                    out.failure = Some(failed(error));
                    return out;
                }
            }
        }
    }

    /// Emits `first` together with the text and reasoning deltas the model already
    /// streamed (those ready without waiting, at most [`MAX_DELTA_BATCH`]) in one
    /// delivery; the first other item read, if any, is handed back.
    async fn emit_deltas(
        &self,
        emitter: &EventEmitter,
        stream: &mut ChunkStream,
        text: &mut String,
        first: EventKind,
    ) -> Option<Option<Result<Chunk, LlmError>>> {
        let mut deltas = vec![first];
        let mut read_ahead = None;
        while deltas.len() < MAX_DELTA_BATCH && !self.live.cancel.is_cancelled() {
            match stream.next().now_or_never() {
                Some(Some(Ok(Chunk::Text(delta)))) => {
                    text.push_str(&delta);
                    deltas.push(EventKind::MessageDelta { text: delta });
                }
                Some(Some(Ok(Chunk::Reasoning(delta)))) => {
                    deltas.push(EventKind::ReasoningDelta { text: delta });
                }
                Some(other) => {
                    read_ahead = Some(other);
                    break;
                }
                None => break,
            }
        }
        if deltas.len() == 1 {
            for kind in deltas {
                emitter.emit(kind).await;
            }
        } else {
            emitter.emit_all(deltas).await;
        }
        read_ahead
    }

    async fn finish(
        self,
        emitter: &EventEmitter,
        lease: RunLease,
        snapshot: Option<SessionSnapshot>,
        counters: RunCounters,
        final_text: String,
        mut ending: Ending,
    ) {
        let result_seq = emitter.reserve_seq();
        if let Some(mut snapshot) = snapshot {
            snapshot.next_seq = result_seq + 1;
            if let Err(error) = self.inner.store.save(&snapshot).await {
                tracing::warn!(session_id = %self.session, %error, "saving the session at the end of the run failed");
                if ending.stop != StopReason::Error {
                    ending = Ending::error(format!("saving the session failed: {error}"));
                }
            }
        }
        let result = emitter
            .log_with_seq(
                result_seq,
                EventKind::Result {
                    stop: ending.stop,
                    text: final_text,
                    usage: counters.usage,
                    turns: counters.turns,
                    tool_calls: counters.tool_calls,
                    error: ending.error,
                },
            )
            .await;
        // The run is over (lease released, no longer in progress) before its last
        // event goes out, so a host that starts the next run on seeing `result`
        // never gets `Busy`, in this process or another.
        lease.release().await;
        self.leave_live();
        if let Some(result) = result {
            emitter.deliver(result).await;
        }
    }
}
