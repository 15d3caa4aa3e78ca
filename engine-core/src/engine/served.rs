//! Calls a client makes directly, outside any run: the MCP server face offers the
//! catalog to another program, which picks the tool and the arguments itself.
//!
//! There is no model and no conversation, but the call takes the path of every
//! call: [`Engine::call_tool`] dispatches it through the engine's dispatcher, so
//! the gate decides it in its one order (mode, `deny` rules, PreToolUse, `ask` and
//! `allow` rules, the approval level, the person), the PostToolUse hook, the output
//! cap and the audit record follow, and its record names the client
//! ([`ServedCall::caller`]). An ask waits on the returned [`ServedRun`] for the
//! client's answer, or is refused saying why no person can answer
//! ([`ServedCall::no_person`]). [`Engine::offered_tools`] is what such a client is
//! offered: the tools of the newest catalog in a mode, as a turn would advertise
//! them (hidden by a bare `deny` rule, deferred by progressive disclosure).
//!
//! Served calls write no event log and take no run lease: they are not runs, and
//! they change no conversation (only the audit, which every call writes).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use engine_ports::{Caller, Event, PermissionMode, SessionId, ToolCall, ToolResult, ToolSpec};
use futures::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Engine, EngineError, Inner, RUN_CHANNEL_BOUND};
use crate::catalog::available_in;
use crate::disclosure::{Disclosure, tool_search_spec_for};
use crate::dispatch::{AskAnswer, AskRegistry, TurnContext};
use crate::elicitation::{ElicitationAnswerError, ElicitationResponse};
use crate::emitter::{Deliveries, Delivery, EventEmitter};

/// One call a client makes directly.
#[derive(Clone, Debug)]
pub struct ServedCall {
    /// The session the call is audited under (a client connection's).
    pub session: SessionId,
    /// The mode the call is decided in (plan mode refuses a mutating call).
    pub mode: PermissionMode,
    /// The call; its id should be unique in the session (it names the call's
    /// record and events).
    pub call: ToolCall,
    /// Who made it: kept in the call's audit record.
    pub caller: Option<Caller>,
    /// Why no person can answer an ask for this call, when none can (the client
    /// cannot be asked): an ask is then refused with these words, and a tool's
    /// question is declined. `None`: asks and questions wait on the
    /// [`ServedRun`] (on an interactive engine; a headless one refuses them).
    pub no_person: Option<String>,
}

/// The end of a served call.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedOutcome {
    /// The call's one result (final: after PostToolUse and the output cap).
    pub result: ToolResult,
    /// Disclosable tools a successful `ToolSearch` returned in full: a client
    /// that keeps a hydrated set offers them from now on.
    pub hydrated: Vec<String>,
    /// The audit record could not be written (with `audit_required`; the call
    /// itself ran or was refused as `result` says).
    pub audit_failure: Option<String>,
}

/// Where a served call's asks and questions are answered. Cheap to clone, so a
/// host can answer from another task while it reads the events.
#[derive(Clone, Debug)]
pub struct ServedAnswers {
    asks: Arc<AskRegistry>,
}

impl ServedAnswers {
    /// Answers a `permission.ask`; `false` for an unknown or answered ask.
    pub fn approve(&self, ask_id: &str, answer: impl Into<AskAnswer>) -> bool {
        self.asks.answer(ask_id, answer)
    }

    /// Answers an `elicitation.request`.
    ///
    /// # Errors
    /// As [`Engine::answer_elicitation`]: not open, or content that does not fit
    /// the form (the question stays open).
    pub fn answer_elicitation(
        &self,
        id: &str,
        response: ElicitationResponse,
    ) -> Result<(), ElicitationAnswerError> {
        self.asks.answer_elicitation(id, response)
    }
}

/// A served call in progress: its events (`tool.call`, `permission.ask` and
/// `permission.verdict`, `elicitation.request`, `hook`, `tool.result`) as a
/// stream that ends when the call is over, then its [`ServedOutcome`]. Dropping it
/// cancels the call.
///
/// The call runs inside whoever polls this value (its stream, then
/// [`outcome`](Self::outcome)), on that task: a served call is one request of a
/// client's connection, and handing it to a task of its own cost a spawn and a
/// wake-up for every event it delivered. Dropped before its end, the call is
/// cancelled and finished on a task of its own, so its audit record is still
/// written.
pub struct ServedRun {
    events: Deliveries,
    call_future: CallFuture,
    answers: ServedAnswers,
    cancel: CancellationToken,
    call: ToolCall,
}

/// The served call's own work, until it ends with its outcome.
enum CallFuture {
    Running(Pin<Box<dyn Future<Output = ServedOutcome> + Send>>),
    Done(ServedOutcome),
    Taken,
}

impl ServedRun {
    /// Where this call's asks and questions are answered.
    pub fn answers(&self) -> ServedAnswers {
        self.answers.clone()
    }

    /// Cancels the call (an open ask is dropped, a running tool is told to stop);
    /// the outcome is then the cancelled result.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A token that cancels the call, for a host that cancels it from elsewhere.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Runs the call to its end (the rest of its events are dropped).
    pub async fn outcome(mut self) -> ServedOutcome {
        self.events.close();
        match std::mem::replace(&mut self.call_future, CallFuture::Taken) {
            CallFuture::Running(future) => future.await,
            CallFuture::Done(outcome) => outcome,
            CallFuture::Taken => ServedOutcome {
                result: ToolResult::error(
                    self.call.id().clone(),
                    format!("call to {} ended without a result", self.call.name()),
                ),
                hydrated: Vec::new(),
                audit_failure: None,
            },
        }
    }
}

impl Stream for ServedRun {
    type Item = Event;

    /// Drives the call until it delivers an event or ends; delivered events are
    /// handed out before the call is driven further, so a full channel never
    /// stalls it.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = &mut *self;
        loop {
            if let Poll::Ready(Some(event)) = this.events.poll_next(cx) {
                return Poll::Ready(Some(event));
            }
            let CallFuture::Running(future) = &mut this.call_future else {
                // Ended: what it delivered is drained, and its sender is gone.
                return this.events.poll_next(cx);
            };
            match future.as_mut().poll(cx) {
                Poll::Ready(outcome) => this.call_future = CallFuture::Done(outcome),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for ServedRun {
    /// A call dropped before its end is cancelled and finished on a task of its
    /// own (its record is written); without a runtime it is dropped.
    fn drop(&mut self) {
        if let CallFuture::Running(future) = std::mem::replace(&mut self.call_future, CallFuture::Taken) {
            self.cancel.cancel();
            self.events.close();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(future);
            }
        }
    }
}

impl std::fmt::Debug for ServedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedRun")
            .field("call", &self.call.id())
            .finish_non_exhaustive()
    }
}

/// One tool as a client of the engine is offered it.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedTool {
    /// The full spec under its catalog name.
    pub spec: ToolSpec,
    /// Whether it never mutates anything (MCP's `readOnlyHint`).
    pub read_only: bool,
    /// Whether a call may destroy or overwrite something (MCP's `destructiveHint`).
    pub destructive: bool,
    /// The schema of its structured result, when declared.
    pub output_schema: Option<Value>,
}

impl Engine {
    /// The generation of the newest catalog (0: the one the engine was built with),
    /// after asking the engine's catalog source for a newer one (a re-list of the
    /// MCP servers that announced a change). A client-facing host polls it to tell
    /// its clients that the tool list changed.
    pub async fn refresh_catalog(&self) -> u64 {
        self.inner.latest_catalog().await.0
    }

    /// The tools a client is offered in `mode`, sorted by name, with the newest
    /// catalog's generation: every tool of the mode that no bare `deny` rule hides,
    /// in full; when progressive disclosure defers the catalog's Disclosable tools,
    /// those not in `hydrated` are left out and `ToolSearch` (which names them, and
    /// returns their specs) is offered; `ToolSearch` is offered too when they are
    /// advertised light (a client gets full specs either way).
    pub async fn offered_tools(
        &self,
        mode: PermissionMode,
        hydrated: &BTreeSet<String>,
    ) -> (u64, Vec<OfferedTool>) {
        let (generation, catalog) = self.inner.latest_catalog().await;
        let disclosure = self
            .inner
            .config
            .disclosure
            .resolve(&catalog, self.inner.context_window);
        let hidden = |name: &str| {
            self.inner
                .rules
                .as_ref()
                .is_some_and(|rules| rules.hides(name).is_some())
        };
        let mut offered: Vec<OfferedTool> = catalog
            .entries()
            .filter(|(name, tool)| available_in(tool.as_ref(), mode) && !hidden(name))
            .filter(|(name, tool)| {
                disclosure != Disclosure::Deferred
                    || tool.advertised_spec().is_none()
                    || hydrated.contains(*name)
            })
            .map(|(name, tool)| OfferedTool {
                spec: tool.spec().with_name(name),
                read_only: tool.read_only(),
                destructive: !tool.read_only() && tool.destructive(),
                output_schema: tool.output_schema(),
            })
            .collect();
        if let Some(search) = tool_search_spec_for(&catalog, mode, disclosure) {
            offered.push(OfferedTool {
                spec: search,
                read_only: true,
                destructive: false,
                output_schema: None,
            });
        }
        offered.sort_by(|a, b| a.spec.name().cmp(b.spec.name()));
        (generation, offered)
    }

    /// Prepares one call a client made directly (see the module doc): decided and
    /// executed by the engine's dispatcher on the newest catalog, recorded with its
    /// caller, as the returned [`ServedRun`] is polled (on a tokio runtime).
    ///
    /// # Errors
    /// [`EngineError::Closed`] after [`Engine::close`].
    pub fn call_tool(&self, request: ServedCall) -> Result<ServedRun, EngineError> {
        if self.inner.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(EngineError::Closed);
        }
        let (tx, rx) = mpsc::channel(RUN_CHANNEL_BOUND);
        let cancel = CancellationToken::new();
        let asks = Arc::new(AskRegistry::new());
        let call = request.call.clone();
        let task = ServedTask {
            inner: Arc::clone(&self.inner),
            request,
            asks: Arc::clone(&asks),
            cancel: cancel.clone(),
        };
        Ok(ServedRun {
            events: Deliveries::new(rx),
            call_future: CallFuture::Running(Box::pin(task.run(tx))),
            answers: ServedAnswers { asks },
            cancel,
            call,
        })
    }
}

/// One served call's work (driven by its [`ServedRun`]).
struct ServedTask {
    inner: Arc<Inner>,
    request: ServedCall,
    asks: Arc<AskRegistry>,
    cancel: CancellationToken,
}

impl ServedTask {
    async fn run(self, channel: mpsc::Sender<Delivery>) -> ServedOutcome {
        let inner = &self.inner;
        let ServedCall {
            session,
            mode,
            call,
            caller,
            no_person,
        } = self.request;
        let events = Arc::new(
            EventEmitter::new(session.clone(), 1)
                .with_clock(inner.clock.clone())
                .with_channel(channel),
        );
        let (_, catalog) = inner.latest_catalog().await;
        let person = inner.config.interactive && no_person.is_none();
        let ctx = TurnContext {
            session_id: session.clone(),
            turn: 1,
            mode,
            catalog,
            environment: inner.environment.clone(),
            progressive_tools: inner.config.disclosure.is_progressive(),
            policy: Arc::clone(&inner.policy),
            asks: person.then_some(self.asks),
            headless_reason: no_person.map(Arc::from),
            caller: caller.map(Arc::new),
            rules: inner.rules.clone(),
            hooks: inner.hooks.clone(),
            recorder: inner.recorder.clone(),
            clock: inner.clock.clone(),
            events: Arc::clone(&events),
            cancel: self.cancel,
        };
        let outcome = inner.dispatcher.dispatch(&ctx, std::slice::from_ref(&call)).await;
        if inner.config.audit_required
            && let Some(recorder) = &inner.recorder
            && let Err(error) = recorder.flush(&session).await
        {
            events.note_audit_failure(error.to_string());
        }
        let result = outcome.results.into_iter().next().unwrap_or_else(|| {
            ToolResult::error(
                call.id().clone(),
                format!("call to {} ended without a result", call.name()),
            )
        });
        ServedOutcome {
            result,
            hydrated: outcome.hydrated,
            audit_failure: events.audit_failure().filter(|_| inner.config.audit_required),
        }
    }
}
