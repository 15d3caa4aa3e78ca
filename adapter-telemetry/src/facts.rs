//! [`Fact`]: what the observer keeps of an event, an audit record or a store write,
//! and [`Inbox`], the bounded queue that carries facts from a run to the telemetry
//! thread.
//!
//! A run pays only for taking the time and copying a few small values into the
//! inbox: turning facts into spans and metric points, and exporting them, happens on
//! the telemetry's own thread (see the crate doc). A fact holds no text the
//! observer would not export: with content capture off, prompts, arguments and
//! results are reduced to their sizes here, before they leave the run. Times are
//! [`Instant`]s (one clock read each); the thread turns them into wall-clock times
//! when it applies them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use engine_ports::{
    Approval, ChildPhase, Event, EventKind, HookAction, HookPhase, SessionId, StopReason, ToolCallId,
    ToolCallRecord, Usage,
};
use tokio::sync::Notify;

use crate::queue::DropCounter;

/// Facts waiting for the telemetry thread at most; past it they are dropped and
/// counted (`mecatl.telemetry.dropped_facts`).
pub const INBOX_CAPACITY: usize = 32 * 1024;
/// Facts waiting that wake the telemetry thread before its delay is over.
pub(crate) const WAKE_AT: usize = 4096;

/// One observation, in the order the run made it.
#[derive(Debug)]
pub(crate) enum Fact {
    /// An event of `session`, observed at `at`; with how long appending it to the
    /// event log took, when it was observed there.
    Event {
        session: SessionId,
        at: Instant,
        what: Happened,
        appended: Option<Duration>,
    },
    /// An audit record was written (before its `tool.result` event): what it says
    /// of its call, and the write (whose `call` is the record's).
    Record {
        approval: Option<Approval>,
        queued_micros: u64,
        took_micros: u64,
        write: StoreWrite,
    },
    /// A store write was timed; it is also a span.
    StoreWrite(StoreWrite),
    /// A store write was timed; it is measured only (event appends: a run makes
    /// one per event, so this fact holds nothing that allocates).
    Measured { operation: &'static str, took: Duration },
}

/// A store write the ports timed that is also a span.
#[derive(Debug)]
pub(crate) struct StoreWrite {
    pub(crate) session: SessionId,
    pub(crate) operation: &'static str,
    pub(crate) start: Instant,
    pub(crate) took: Duration,
    pub(crate) failed: Option<String>,
    /// The call an audit record belongs to.
    pub(crate) call: Option<ToolCallId>,
}

/// The part of an event the observer uses.
#[derive(Debug)]
pub(crate) enum Happened {
    RunStart {
        model: Arc<str>,
        mode: &'static str,
        tools: usize,
    },
    TurnStart {
        turn: u64,
    },
    /// Answer text, kept only with content capture.
    Text(String),
    Retry {
        attempt: u32,
        status: Option<u16>,
        wait_ms: u64,
    },
    TurnEnd {
        usage: Usage,
    },
    ToolCall {
        call: ToolCallId,
        name: Arc<str>,
        args_bytes: usize,
        /// The arguments as JSON, only with content capture.
        args: Option<String>,
    },
    PermissionAsk {
        call: ToolCallId,
    },
    PermissionVerdict {
        call: ToolCallId,
        verdict: &'static str,
    },
    Hook {
        call: ToolCallId,
        phase: HookPhase,
        action: HookAction,
    },
    ToolResult {
        call: ToolCallId,
        name: Arc<str>,
        result_bytes: usize,
        is_error: bool,
        /// The result text, only with content capture.
        content: Option<String>,
    },
    ChildStart {
        call: ToolCallId,
        child: SessionId,
        what: &'static str,
    },
    Compacted {
        before: u64,
        after: u64,
    },
    RunEnd {
        stop: StopReason,
        usage: Usage,
        turns: u64,
        tool_calls: u64,
        error: Option<String>,
    },
}

impl Happened {
    /// What the observer keeps of `kind`; `None` for events it does not use.
    pub(crate) fn of(kind: &EventKind, content: bool, names: &Names) -> Option<Self> {
        Some(match kind {
            EventKind::SessionInit {
                model, mode, tools, ..
            } => Self::RunStart {
                model: names.get(model),
                mode: mode.as_str(),
                tools: tools.len(),
            },
            EventKind::TurnStart { turn } => Self::TurnStart { turn: *turn },
            EventKind::MessageDelta { text } if content => Self::Text(text.clone()),
            EventKind::ModelRetry {
                attempt,
                status,
                wait_ms,
                ..
            } => Self::Retry {
                attempt: *attempt,
                status: *status,
                wait_ms: *wait_ms,
            },
            EventKind::TurnEnd { usage, .. } => Self::TurnEnd { usage: *usage },
            EventKind::ToolCall { call_id, name, args } => Self::ToolCall {
                call: call_id.clone(),
                name: names.get(name),
                args_bytes: json_len(args),
                args: content.then(|| args.to_string()),
            },
            EventKind::PermissionAsk { call_id, .. } => Self::PermissionAsk {
                call: call_id.clone(),
            },
            EventKind::PermissionVerdict { call_id, verdict, .. } => Self::PermissionVerdict {
                call: call_id.clone(),
                verdict: verdict.as_str(),
            },
            EventKind::Hook {
                call_id,
                phase,
                action,
                ..
            } => Self::Hook {
                call: call_id.clone(),
                phase: *phase,
                action: *action,
            },
            EventKind::ToolResult {
                call_id,
                name,
                content: result,
                is_error,
                ..
            } => Self::ToolResult {
                call: call_id.clone(),
                name: names.get(name),
                result_bytes: result.len(),
                is_error: *is_error,
                content: content.then(|| result.clone()),
            },
            EventKind::SubagentStart {
                call_id, child_id, ..
            }
            | EventKind::TeamStart {
                call_id, child_id, ..
            } => Self::ChildStart {
                call: call_id.clone(),
                child: child_id.clone(),
                what: kind.type_name(),
            },
            EventKind::ParallelBranch {
                call_id,
                child_id,
                activity,
                ..
            }
            | EventKind::TeamMember {
                call_id,
                child_id,
                activity,
                ..
            } if activity.phase == ChildPhase::Start => Self::ChildStart {
                call: call_id.clone(),
                child: child_id.clone(),
                what: kind.type_name(),
            },
            EventKind::ContextCompacted {
                tokens_before,
                tokens_after,
                ..
            } => Self::Compacted {
                before: *tokens_before,
                after: *tokens_after,
            },
            EventKind::Result {
                stop,
                usage,
                turns,
                tool_calls,
                error,
                ..
            } => Self::RunEnd {
                stop: *stop,
                usage: *usage,
                turns: *turns,
                tool_calls: *tool_calls,
                error: error.clone(),
            },
            _ => return None,
        })
    }
}

impl Fact {
    /// The fact of `event`, observed at `at` (after an append to the log that took
    /// `appended`), with its names from `names` and its text only with `content`;
    /// `None` for events the observer does not use.
    pub(crate) fn event(
        session: &SessionId,
        event: &Event,
        content: bool,
        names: &Names,
        at: Instant,
        appended: Option<Duration>,
    ) -> Option<Self> {
        Happened::of(&event.kind, content, names).map(|what| Self::Event {
            session: session.clone(),
            at,
            what,
            appended,
        })
    }

    /// The fact of an audit record written at `start` in `took`.
    pub(crate) fn record(
        record: &ToolCallRecord,
        start: Instant,
        took: Duration,
        failed: Option<String>,
    ) -> Self {
        Self::Record {
            approval: record.approval,
            queued_micros: record.queued_micros,
            took_micros: record.took_micros,
            write: StoreWrite {
                session: record.session_id.clone(),
                operation: "record",
                start,
                took,
                failed,
                call: Some(record.call_id.clone()),
            },
        }
    }
}

/// Names of tools and models that facts share rather than copy, at most
/// [`NAMES_CAP`] (past it, a name is copied into its fact).
///
/// A fact is made by a run and dropped on the telemetry thread. Text copied into
/// it would be allocated on the run's thread and freed on the other, which costs
/// the run far more than the copy: the allocator's pages the run keeps allocating
/// from are then written from two cores. Measured on the turn bench (current-thread
/// runtime, eight processes of five pairs): the three names a read + text run
/// copied cost it 0.6 µs, a fifth of the telemetry's cost on that run.
#[derive(Debug, Default)]
pub(crate) struct Names(RwLock<HashMap<Box<str>, Arc<str>>>);

/// Distinct names [`Names`] keeps (a catalog's tools and the models in use are far
/// fewer; a server that keeps renaming its tools does not grow it past this).
const NAMES_CAP: usize = 4096;

impl Names {
    /// The shared `name`.
    pub(crate) fn get(&self, name: &str) -> Arc<str> {
        if let Some(found) = self.0.read().unwrap_or_else(PoisonError::into_inner).get(name) {
            return Arc::clone(found);
        }
        let mut names = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = names.get(name) {
            return Arc::clone(found);
        }
        let shared: Arc<str> = Arc::from(name);
        if names.len() < NAMES_CAP {
            names.insert(name.into(), Arc::clone(&shared));
        }
        shared
    }
}

/// The bounded queue of facts between the runs and the telemetry thread.
///
/// [`Inbox::push`] never waits on the thread: it takes a lock held only for a push
/// or a swap of the whole queue. It wakes the thread for the first fact after the
/// thread emptied the queue and again once [`WAKE_AT`] facts wait, so a busy
/// process wakes it once per delay or per [`WAKE_AT`] facts, not per fact.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    facts: Mutex<Vec<Fact>>,
    /// Told when the thread has something to do.
    pub(crate) wake: Notify,
    drops: Arc<DropCounter>,
}

impl Inbox {
    /// An empty inbox counting its drops in `drops`.
    pub(crate) fn new(drops: Arc<DropCounter>) -> Self {
        Self {
            facts: Mutex::default(),
            wake: Notify::new(),
            drops,
        }
    }

    /// Queues `fact`; drops and counts it when [`INBOX_CAPACITY`] facts wait.
    pub(crate) fn push(&self, fact: Fact) {
        let waiting = {
            let mut facts = self.facts.lock().unwrap_or_else(PoisonError::into_inner);
            if facts.len() >= INBOX_CAPACITY {
                drop(facts);
                self.drops.note_fact_dropped();
                return;
            }
            facts.push(fact);
            facts.len()
        };
        if waiting == 1 || waiting == WAKE_AT {
            self.wake.notify_one();
        }
    }

    /// How many facts wait.
    pub(crate) fn len(&self) -> usize {
        self.facts.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Swaps the waiting facts into `into` (empty, keeping its capacity for the
    /// next swap), in the order they came.
    pub(crate) fn take_into(&self, into: &mut Vec<Fact>) {
        debug_assert!(into.is_empty());
        std::mem::swap(
            &mut *self.facts.lock().unwrap_or_else(PoisonError::into_inner),
            into,
        );
    }
}

/// The length of `value` as compact JSON, without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(session: &str) -> Fact {
        Fact::StoreWrite(StoreWrite {
            session: SessionId::from(session),
            operation: "save",
            start: Instant::now(),
            took: Duration::ZERO,
            failed: None,
            call: None,
        })
    }

    fn session_of(fact: &Fact) -> &str {
        match fact {
            Fact::StoreWrite(write) | Fact::Record { write, .. } => write.session.as_str(),
            Fact::Event { session, .. } => session.as_str(),
            Fact::Measured { .. } => "",
        }
    }

    #[test]
    fn a_name_is_shared_by_every_fact_and_names_past_the_cap_are_copied() {
        let names = Names::default();
        let first = names.get("Read");
        assert!(
            Arc::ptr_eq(&first, &names.get("Read")),
            "the name was copied again"
        );
        for i in 1..NAMES_CAP {
            names.get(&format!("tool{i}"));
        }
        assert_eq!(names.0.read().unwrap().len(), NAMES_CAP);
        let past = names.get("one more");
        assert_eq!(&*past, "one more");
        assert!(!Arc::ptr_eq(&past, &names.get("one more")), "kept past the cap");
        assert_eq!(names.0.read().unwrap().len(), NAMES_CAP);
    }

    #[test]
    fn json_lengths_match_the_compact_text() {
        let value = serde_json::json!({"path": "a b", "n": [1, 2]});
        assert_eq!(json_len(&value), value.to_string().len());
    }

    #[test]
    fn a_full_inbox_drops_and_counts_what_comes_after() {
        let inbox = Inbox::default();
        for i in 0..INBOX_CAPACITY + 5 {
            inbox.push(saved(&i.to_string()));
        }
        assert_eq!(inbox.len(), INBOX_CAPACITY);
        assert_eq!(inbox.drops.facts(), 5);
        let mut taken = Vec::new();
        inbox.take_into(&mut taken);
        // The first ones are kept, in order; the last five were dropped.
        assert_eq!(session_of(&taken[0]), "0");
        assert_eq!(
            session_of(&taken[INBOX_CAPACITY - 1]),
            (INBOX_CAPACITY - 1).to_string()
        );
        assert_eq!(inbox.len(), 0);
    }

    #[tokio::test]
    async fn the_first_fact_and_a_full_batch_wake_the_thread_and_the_others_do_not() {
        let inbox = Inbox::default();
        inbox.push(saved("a"));
        // The first fact left a wake-up.
        tokio::time::timeout(Duration::from_secs(5), inbox.wake.notified())
            .await
            .expect("the first fact wakes the thread");
        for _ in 1..WAKE_AT - 1 {
            inbox.push(saved("a"));
        }
        let notified = inbox.wake.notified();
        tokio::pin!(notified);
        assert!(
            futures_ready(notified.as_mut()).is_none(),
            "a fact short of a batch woke the thread"
        );
        inbox.push(saved("a"));
        assert_eq!(inbox.len(), WAKE_AT);
        assert!(
            futures_ready(notified.as_mut()).is_some(),
            "a full batch did not wake the thread"
        );
        // Emptied, the next fact wakes it again.
        let mut taken = Vec::new();
        inbox.take_into(&mut taken);
        inbox.push(saved("a"));
        tokio::time::timeout(Duration::from_secs(5), inbox.wake.notified())
            .await
            .expect("the first fact after a swap wakes the thread");
    }

    /// Polls `future` once.
    fn futures_ready<F: Future>(future: std::pin::Pin<&mut F>) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        match future.poll(&mut std::task::Context::from_waker(waker)) {
            std::task::Poll::Ready(out) => Some(out),
            std::task::Poll::Pending => None,
        }
    }
}
