//! What delegation tools get of the run that calls them: [`DelegationScope`] (per
//! turn, in the tools' [`Environment`](crate::Environment)) and [`RunDelegation`] (per
//! run: this run's subagents, the gate, background results and their notices, every
//! running child's cancel token).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use engine_ports::{
    Conversation, LlmProvider, PermissionMode, PermissionPolicy, RequestPurpose, SessionId, SessionStore,
    ToolCallId,
};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::children::{ChildAccess, ChildEngines, ChildSpec};
use super::policy::{ChildLearning, ChildPolicy};
use crate::dispatch::AskRegistry;
use crate::emitter::EventEmitter;
use crate::engine::Limits;

/// Most subagents running at once per parent run, foreground and background alike.
pub const MAX_RUNNING_SUBAGENTS: usize = 8;

/// How long the end of a run waits for its cancelled background children to save.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(30);

/// The calling run, as delegation tools see it during one turn.
pub(crate) struct DelegationScope {
    /// The parent session.
    pub(crate) parent: SessionId,
    /// Its mode (children inherit it).
    pub(crate) mode: PermissionMode,
    /// Whether the parent run has an operator (asks are relayed) or not.
    pub(crate) interactive: bool,
    /// The session's model (the judge's).
    pub(crate) model: String,
    /// The model's context window, in tokens.
    pub(crate) context_window: u64,
    /// The parent conversation without the calling turn (what a fork starts from).
    pub(crate) conversation: Conversation,
    /// Where child engines come from.
    pub(crate) children: Arc<dyn ChildEngines>,
    /// The model provider (tool-less side requests: judge, salvage).
    pub(crate) llm: Arc<dyn LlmProvider>,
    /// The parent's policy.
    pub(crate) policy: Arc<dyn PermissionPolicy>,
    /// The store child sessions live in.
    pub(crate) store: Arc<dyn SessionStore>,
    /// The parent run's events.
    pub(crate) events: Arc<EventEmitter>,
    /// The parent run's open asks (children's asks are relayed there).
    pub(crate) asks: Arc<AskRegistry>,
    /// Run-wide delegation state.
    pub(crate) run: Arc<RunDelegation>,
}

impl DelegationScope {
    /// What every child of this run starts from, before its kind of delegation
    /// changes what it needs: `access` to the parent's tools (on a private copy
    /// for [`ChildAccess::WorkspaceCopy`], whose `workspace` the caller sets, else on
    /// the parent's workspace), the configured subagent model, no limits, and the
    /// parent's permission policy deciding its calls on behalf of `requester` (its
    /// asks relayed when this run is interactive; its `allow_always` answers learned
    /// for itself alone on a copy, for the parent's session otherwise).
    pub(crate) fn child_spec(
        &self,
        access: ChildAccess,
        purpose: RequestPurpose,
        requester: impl Into<String>,
    ) -> ChildSpec {
        let learning = match access {
            ChildAccess::WorkspaceCopy => ChildLearning::WithinChild,
            ChildAccess::ReadOnly | ChildAccess::ReadWrite => ChildLearning::ForParent,
        };
        ChildSpec {
            access,
            tools: None,
            extra_tools: Vec::new(),
            workspace: None,
            model: self.children.settings().subagent_model.clone(),
            system_prompt: None,
            limits: Limits::default(),
            purpose,
            policy: Arc::new(ChildPolicy::new(
                Arc::clone(&self.policy),
                self.parent.clone(),
                self.interactive,
                requester,
                learning,
            )),
            interactive: self.interactive,
        }
    }

    /// Whether `id` is, whole, the id of a child this session started: a subagent
    /// (`subagent-<session>-<call id>` of a `Subagent` call) or, with `branches`, a
    /// `Parallel` branch (`parallel-<session>-<call id>-<n>`, `n` below the call's
    /// task count). The ids are rebuilt from the delegating calls of the session's
    /// conversation and this run's roster and compared whole, never by prefix: a
    /// cut-short id, or the child of another session whose name extends this one's
    /// (`subagent-<session>-x-…` of session `<session>-x`), is not one. A child whose
    /// delegating call was compacted away is no longer known.
    pub(crate) fn started_child(&self, id: &str, branches: bool) -> bool {
        if self.run.roster().iter().any(|entry| entry.id == id) {
            return true;
        }
        self.calls().any(|call| match call.name() {
            super::SUBAGENT_TOOL_NAME => id == subagent_id(&self.parent, call.id()).as_str(),
            super::PARALLEL_TOOL_NAME if branches => {
                let group = parallel_id(&self.parent, call.id());
                (0..super::parallel::task_count(call)).any(|index| id == branch_id(&group, index).as_str())
            }
            _ => false,
        })
    }

    /// Whether `id` is, whole, the id of a team this session started
    /// (`team-<session>-<call id>` of a `Team` call), by the rule of
    /// [`DelegationScope::started_child`].
    pub(crate) fn started_team(&self, id: &str) -> bool {
        self.calls().any(|call| {
            call.name() == super::TEAM_TOOL_NAME && id == team_id(&self.parent, call.id()).as_str()
        })
    }

    /// The tool calls of the session's conversation.
    fn calls(&self) -> impl Iterator<Item = &engine_ports::ToolCall> {
        self.conversation
            .iter()
            .filter_map(|message| match message {
                engine_ports::Message::Assistant { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flatten()
    }
}

/// The id of the team that `Team` call `call` of session `parent` starts.
pub(crate) fn team_id(parent: &SessionId, call: &ToolCallId) -> SessionId {
    SessionId::from(format!("team-{parent}-{call}"))
}

/// The id of the subagent that `Subagent` call `call` of session `parent` starts.
pub(crate) fn subagent_id(parent: &SessionId, call: &ToolCallId) -> SessionId {
    SessionId::from(format!("subagent-{parent}-{call}"))
}

/// The id of the group of branches of `Parallel` call `call` of session `parent`.
pub(crate) fn parallel_id(parent: &SessionId, call: &ToolCallId) -> SessionId {
    SessionId::from(format!("parallel-{parent}-{call}"))
}

/// The id of branch `index` of the group `group`.
pub(crate) fn branch_id(group: &SessionId, index: usize) -> SessionId {
    SessionId::from(format!("{group}-{index}"))
}

/// How a subagent of this run stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChildState {
    /// Still running.
    Running,
    /// Ended, how (a stop's wire name, or `timeout`).
    Finished(String),
}

/// One subagent of this run.
#[derive(Clone, Debug)]
pub(crate) struct RosterEntry {
    /// Its id.
    pub(crate) id: String,
    /// Whether its call returned at once.
    pub(crate) background: bool,
    /// Running or finished.
    pub(crate) state: ChildState,
    /// A background child's result, until it is delivered.
    pub(crate) result: Option<String>,
    /// Whether its result reached the model (a foreground result always has).
    pub(crate) delivered: bool,
}

/// Why a subagent may not start now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// [`MAX_RUNNING_SUBAGENTS`] are running; the background ones are named.
    GateFull { background: Vec<String> },
    /// That id is running in this run.
    AlreadyRunning,
}

/// What `SubagentStatus` learns about one id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Not a subagent of this run.
    Unknown,
    /// Still running.
    Running { background: bool },
    /// A background child's result, handed over now (once).
    Result { stop: String, text: String },
    /// Finished, and its result was already delivered.
    Delivered { stop: String },
}

#[derive(Default)]
struct State {
    roster: Vec<RosterEntry>,
    /// Background children that finished since the last turn boundary.
    notices: Vec<String>,
    live: HashMap<String, CancellationToken>,
    tasks: Vec<JoinHandle<()>>,
}

/// Delegation state of one parent run.
pub(crate) struct RunDelegation {
    /// Cancelled with the run, or at its end: every background child's token
    /// descends from it.
    background: CancellationToken,
    state: Mutex<State>,
    changed: Notify,
}

impl RunDelegation {
    /// The state of a run whose token is `cancel` (background children are cancelled
    /// with it).
    pub(crate) fn new(cancel: CancellationToken) -> Self {
        Self {
            background: cancel.child_token(),
            state: Mutex::default(),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A token for a background child: cancelled with the run.
    pub(crate) fn background_token(&self) -> CancellationToken {
        self.background.child_token()
    }

    /// Admits a subagent under the gate (one gate for foreground and background).
    pub(crate) fn admit(&self, id: &str, background: bool) -> Result<(), Refusal> {
        let mut state = self.lock();
        let running = |entry: &&RosterEntry| entry.state == ChildState::Running;
        if state.roster.iter().filter(running).any(|entry| entry.id == id) {
            return Err(Refusal::AlreadyRunning);
        }
        if state.roster.iter().filter(running).count() >= MAX_RUNNING_SUBAGENTS {
            let background = state
                .roster
                .iter()
                .filter(running)
                .filter(|entry| entry.background)
                .map(|entry| entry.id.clone())
                .collect();
            return Err(Refusal::GateFull { background });
        }
        state.roster.retain(|entry| entry.id != id);
        state.roster.push(RosterEntry {
            id: id.to_owned(),
            background,
            state: ChildState::Running,
            result: None,
            delivered: false,
        });
        Ok(())
    }

    /// Drops a subagent that never got going (its call failed after admission).
    pub(crate) fn abandon(&self, id: &str) {
        self.lock()
            .roster
            .retain(|entry| entry.id != id || entry.state != ChildState::Running);
        self.changed.notify_waiters();
    }

    /// Records that a subagent ended. A background child's `result` waits for
    /// `SubagentStatus`, and a one-line notice waits for the parent's next turn
    /// boundary; a foreground result was delivered by its call.
    pub(crate) fn finish(&self, id: &str, stop: &str, result: Option<String>) {
        {
            let mut state = self.lock();
            let Some(entry) = state.roster.iter_mut().find(|entry| entry.id == id) else {
                return;
            };
            entry.state = ChildState::Finished(stop.to_owned());
            let background = entry.background;
            if background {
                entry.result = result;
                entry.delivered = false;
                state.notices.push(id.to_owned());
            } else {
                entry.delivered = true;
            }
        }
        self.changed.notify_waiters();
    }

    /// The notices of background children that finished since the last call, one
    /// line each (id and stop; where to get the result unless it was handed over
    /// already).
    pub(crate) fn take_notices(&self) -> Vec<String> {
        let mut state = self.lock();
        let ids = std::mem::take(&mut state.notices);
        ids.into_iter()
            .filter_map(|id| {
                let entry = state.roster.iter().find(|entry| entry.id == id)?;
                let ChildState::Finished(stop) = &entry.state else {
                    return None;
                };
                Some(if entry.delivered {
                    format!("[background subagent {id} finished ({stop}); its result was already delivered]")
                } else {
                    format!(
                        "[background subagent {id} finished ({stop}); call SubagentStatus with agent_id \"{id}\" for its result]"
                    )
                })
            })
            .collect()
    }

    /// This run's subagents, in start order.
    pub(crate) fn roster(&self) -> Vec<RosterEntry> {
        self.lock().roster.clone()
    }

    /// Where `id` stands; a finished background child's result is handed over once.
    pub(crate) fn status(&self, id: &str) -> Status {
        let mut state = self.lock();
        let Some(entry) = state.roster.iter_mut().find(|entry| entry.id == id) else {
            return Status::Unknown;
        };
        let stop = match &entry.state {
            ChildState::Running => {
                return Status::Running {
                    background: entry.background,
                };
            }
            ChildState::Finished(stop) => stop.clone(),
        };
        if entry.delivered {
            return Status::Delivered { stop };
        }
        entry.delivered = true;
        let text = entry.result.take().unwrap_or_default();
        Status::Result { stop, text }
    }

    /// A future resolving when some subagent finishes, registered before the caller
    /// checks the roster (so a finish in between is not missed).
    pub(crate) fn change_listener(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Registers a running child (any family) under `id` so a host can cancel it;
    /// the registration ends when the guard drops.
    pub(crate) fn register_live(self: &Arc<Self>, id: &str, token: CancellationToken) -> LiveGuard {
        self.lock().live.insert(id.to_owned(), token);
        LiveGuard {
            run: Arc::clone(self),
            id: id.to_owned(),
        }
    }

    /// Cancels the running child `id` (a subagent, a branch, a group of branches, a
    /// team or a member); `false` when none runs under that id.
    pub(crate) fn cancel_child(&self, id: &str) -> bool {
        match self.lock().live.get(id) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Runs a background child's task; it is awaited at the end of the run.
    pub(crate) fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task);
        let mut state = self.lock();
        state.tasks.retain(|task| !task.is_finished());
        state.tasks.push(handle);
    }

    /// Ends the run's delegation: cancels background children still running and
    /// waits (bounded) until they are saved.
    pub(crate) async fn shutdown(&self) {
        self.background.cancel();
        let tasks = std::mem::take(&mut self.lock().tasks);
        if tasks.is_empty() {
            return;
        }
        let all = futures::future::join_all(tasks);
        if tokio::time::timeout(SHUTDOWN_WAIT, all).await.is_err() {
            tracing::warn!(
                "background children did not finish within {} s of the end of their parent run",
                SHUTDOWN_WAIT.as_secs()
            );
        }
    }
}

/// Removes a child's cancel token when the child ends.
pub(crate) struct LiveGuard {
    run: Arc<RunDelegation>,
    id: String,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.run.lock().live.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_admits_eight_and_names_the_background_ones_when_full() {
        let run = RunDelegation::new(CancellationToken::new());
        for i in 0..MAX_RUNNING_SUBAGENTS {
            run.admit(&format!("s-{i}"), i % 2 == 0).unwrap();
        }
        assert_eq!(run.admit("s-0", false), Err(Refusal::AlreadyRunning));
        assert_eq!(
            run.admit("s-9", false),
            Err(Refusal::GateFull {
                background: vec!["s-0".into(), "s-2".into(), "s-4".into(), "s-6".into()]
            })
        );
        run.finish("s-3", "end_turn", None);
        run.admit("s-9", true).unwrap();
        run.abandon("s-9");
        assert!(run.roster().iter().all(|entry| entry.id != "s-9"));
    }

    #[test]
    fn a_background_result_is_handed_over_once_and_noticed_at_the_next_boundary() {
        let run = RunDelegation::new(CancellationToken::new());
        run.admit("bg", true).unwrap();
        run.admit("fg", false).unwrap();
        assert_eq!(run.status("bg"), Status::Running { background: true });
        run.finish("fg", "end_turn", Some("ignored".into()));
        run.finish("bg", "max_turns", Some("agentId: bg\n\nreport".into()));
        assert_eq!(
            run.take_notices(),
            [
                "[background subagent bg finished (max_turns); call SubagentStatus with agent_id \"bg\" for its result]"
            ]
        );
        assert!(run.take_notices().is_empty());
        assert_eq!(
            run.status("bg"),
            Status::Result {
                stop: "max_turns".into(),
                text: "agentId: bg\n\nreport".into()
            }
        );
        assert_eq!(
            run.status("bg"),
            Status::Delivered {
                stop: "max_turns".into()
            }
        );
        assert_eq!(
            run.status("fg"),
            Status::Delivered {
                stop: "end_turn".into()
            }
        );
        assert_eq!(run.status("nope"), Status::Unknown);

        run.admit("bg2", true).unwrap();
        run.finish("bg2", "end_turn", Some("r".into()));
        let _ = run.status("bg2");
        assert_eq!(
            run.take_notices(),
            ["[background subagent bg2 finished (end_turn); its result was already delivered]"]
        );
    }

    #[test]
    fn children_are_cancelled_by_id_while_registered() {
        let run = Arc::new(RunDelegation::new(CancellationToken::new()));
        let token = CancellationToken::new();
        let guard = run.register_live("child-1", token.clone());
        assert!(!run.cancel_child("child-2"));
        assert!(run.cancel_child("child-1"));
        assert!(token.is_cancelled());
        drop(guard);
        assert!(!run.cancel_child("child-1"));
    }
}
