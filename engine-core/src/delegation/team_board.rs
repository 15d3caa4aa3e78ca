//! A team's shared state — messages, tasks, findings, tokens used — and the
//! coordination tools each member gets over it (`SendMessage`, `AddTask`,
//! `ClaimTask`, `CompleteTask`, `ListTasks`, `RecordFinding`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use engine_ports::{EventKind, SessionId, ToolCall, ToolCallId, ToolResult, ToolSpec, clip_chars};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::refusal;
use super::render::preview;
use crate::emitter::EventEmitter;
use crate::environment::Environment;
use crate::tool::{Tool, ToolError, with_args};

/// Most tasks of a team.
pub const MAX_TEAM_TASKS: usize = 512;
/// Most findings of a team.
pub const MAX_TEAM_FINDINGS: usize = 512;
/// Most messages queued for one member.
pub const MAX_QUEUED_MESSAGES: usize = 256;
/// Longest message, task description or finding, in characters.
const ITEM_CHARS: usize = 4_000;

/// Where a task stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    /// Nobody has it.
    Open,
    /// A member works on it.
    Claimed(String),
    /// Its assignee completed it.
    Done(String),
}

/// One task of the team's list.
#[derive(Clone, Debug)]
pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) deps: Vec<String>,
    pub(crate) state: TaskState,
}

#[derive(Default)]
struct Board {
    tasks: Vec<Task>,
    findings: Vec<(String, String)>,
    inboxes: HashMap<String, VecDeque<(String, String)>>,
}

/// The shared state of one team, and where its events go.
pub(crate) struct TeamBoard {
    members: Vec<String>,
    board: Mutex<Board>,
    events: Arc<EventEmitter>,
    call_id: ToolCallId,
    team_id: SessionId,
}

impl TeamBoard {
    pub(crate) fn new(
        members: Vec<String>,
        events: Arc<EventEmitter>,
        call_id: ToolCallId,
        team_id: SessionId,
    ) -> Self {
        Self {
            members,
            board: Mutex::default(),
            events,
            call_id,
            team_id,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `member`'s queued messages (`from`, body), oldest first.
    pub(crate) fn take_messages(&self, member: &str) -> Vec<(String, String)> {
        self.lock()
            .inboxes
            .get_mut(member)
            .map(|inbox| inbox.drain(..).collect())
            .unwrap_or_default()
    }

    /// Whether `member` has messages waiting.
    pub(crate) fn has_messages(&self, member: &str) -> bool {
        self.lock()
            .inboxes
            .get(member)
            .is_some_and(|inbox| !inbox.is_empty())
    }

    /// Whether `member` holds a claimed task it has not completed.
    pub(crate) fn holds_task(&self, member: &str) -> bool {
        self.lock()
            .tasks
            .iter()
            .any(|task| task.state == TaskState::Claimed(member.to_owned()))
    }

    /// How many open tasks can be claimed now (every dependency done).
    pub(crate) fn claimable(&self) -> usize {
        let board = self.lock();
        board.tasks.iter().filter(|task| claimable(&board, task)).count()
    }

    /// The task list.
    pub(crate) fn tasks(&self) -> Vec<Task> {
        self.lock().tasks.clone()
    }

    /// The findings, (member, finding) in the order recorded.
    pub(crate) fn findings(&self) -> Vec<(String, String)> {
        self.lock().findings.clone()
    }

    async fn tasks_event(&self, what: String) {
        self.events
            .emit(EventKind::TeamTasks {
                call_id: self.call_id.clone(),
                child_id: self.team_id.clone(),
                preview: preview(&what),
            })
            .await;
    }

    /// The coordination tools of `member`.
    pub(crate) fn tools_for(self: &Arc<Self>, member: &str) -> Vec<Arc<dyn Tool>> {
        [Op::Send, Op::Add, Op::Claim, Op::Complete, Op::List, Op::Record]
            .into_iter()
            .map(|op| {
                Arc::new(Coordination {
                    op,
                    board: Arc::clone(self),
                    member: member.to_owned(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }
}

fn claimable(board: &Board, task: &Task) -> bool {
    task.state == TaskState::Open
        && task.deps.iter().all(|dep| {
            board
                .tasks
                .iter()
                .any(|other| &other.id == dep && matches!(other.state, TaskState::Done(_)))
        })
}

/// The task list as text, one task per line.
pub(crate) fn tasks_text(tasks: &[Task]) -> String {
    if tasks.is_empty() {
        return "No tasks.".to_owned();
    }
    tasks
        .iter()
        .map(|task| {
            let state = match &task.state {
                TaskState::Open => "open".to_owned(),
                TaskState::Claimed(member) => format!("claimed by {member}"),
                TaskState::Done(member) => format!("done by {member}"),
            };
            let deps = if task.deps.is_empty() {
                String::new()
            } else {
                format!(" (after {})", task.deps.join(", "))
            };
            format!("{} [{state}]{deps}: {}", task.id, task.description)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Send,
    Add,
    Claim,
    Complete,
    List,
    Record,
}

/// One coordination tool of one member.
struct Coordination {
    op: Op,
    board: Arc<TeamBoard>,
    member: String,
}

#[derive(Deserialize)]
struct SendArgs {
    to: String,
    body: String,
}

#[derive(Deserialize)]
struct AddArgs {
    description: String,
    #[serde(default)]
    deps: Vec<String>,
}

#[derive(Deserialize, Default)]
struct ClaimArgs {
    #[serde(default)]
    task_id: Option<String>,
}

#[derive(Deserialize)]
struct CompleteArgs {
    task_id: String,
}

#[derive(Deserialize)]
struct RecordArgs {
    finding: String,
}

#[async_trait]
impl Tool for Coordination {
    fn spec(&self) -> ToolSpec {
        let (name, description, schema) = match self.op {
            Op::Send => (
                "SendMessage",
                "Sends a message to a teammate by name (or to all of them with \"all\"); it reaches them at the \
                 start of their next turn.",
                json!({"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "body"]}),
            ),
            Op::Add => (
                "AddTask",
                "Adds a task to the team's list and returns its id (task-N); deps are task ids that must be done \
                 before it can be claimed.",
                json!({"type": "object", "properties": {"description": {"type": "string"}, "deps": {"type": "array", "items": {"type": "string"}}}, "required": ["description"]}),
            ),
            Op::Claim => (
                "ClaimTask",
                "Claims an open task whose dependencies are done: the one named, or else the first such task.",
                json!({"type": "object", "properties": {"task_id": {"type": "string"}}}),
            ),
            Op::Complete => (
                "CompleteTask",
                "Marks a task you claimed as done.",
                json!({"type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]}),
            ),
            Op::List => (
                "ListTasks",
                "Lists the team's tasks with who holds them. Read-only.",
                json!({"type": "object", "properties": {}}),
            ),
            Op::Record => (
                "RecordFinding",
                "Records a finding for the team's final report (the lead writes it from the findings and the \
                 completed tasks).",
                json!({"type": "object", "properties": {"finding": {"type": "string"}}, "required": ["finding"]}),
            ),
        };
        ToolSpec::new(name, description).with_schema(schema)
    }

    /// They change only the team's own list, never the workspace.
    fn read_only(&self) -> bool {
        true
    }

    /// One team member's coordination calls do not overlap.
    fn dispatch_serial(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        Ok(match self.op {
            Op::Send => with_args(call, |args| self.send(call, args)).await,
            Op::Add => with_args(call, |args| self.add(call, args)).await,
            Op::Claim => with_args(call, |args| self.claim(call, args)).await,
            Op::Complete => with_args(call, |args| self.complete(call, args)).await,
            Op::List => ToolResult::text(call.id().clone(), tasks_text(&self.board.tasks())),
            Op::Record => with_args(call, |args| self.record(call, args)).await,
        })
    }
}

/// A message, task description or finding as the board keeps it: trimmed, at most
/// [`ITEM_CHARS`] characters.
fn item(text: &str) -> String {
    clip_chars(text.trim(), ITEM_CHARS).into_owned()
}

/// A coordination call refused with `message` (the board is unchanged).
fn fail(call: &ToolCall, message: String) -> ToolResult {
    refusal(call, call.name(), message)
}

impl Coordination {
    /// `SendMessage`: queues the message for one teammate or for all.
    async fn send(&self, call: &ToolCall, args: SendArgs) -> ToolResult {
        let id = call.id().clone();
        let board = &self.board;
        let me = self.member.as_str();
        let to = args.to.trim();
        let recipients: Vec<String> = if to == "all" {
            board
                .members
                .iter()
                .filter(|m| m.as_str() != me)
                .cloned()
                .collect()
        } else if board.members.iter().any(|m| m == to) && to != me {
            vec![to.to_owned()]
        } else {
            return fail(
                call,
                format!(
                    "unknown recipient {:?}: send to one of {} or \"all\"",
                    preview(to),
                    board
                        .members
                        .iter()
                        .filter(|m| m.as_str() != me)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        };
        let body = item(&args.body);
        let mut state = board.lock();
        if let Some(full) = recipients.iter().find(|r| {
            state
                .inboxes
                .get(r.as_str())
                .is_some_and(|inbox| inbox.len() >= MAX_QUEUED_MESSAGES)
        }) {
            return fail(
                call,
                format!("{full} already has {MAX_QUEUED_MESSAGES} messages waiting"),
            );
        }
        for recipient in &recipients {
            state
                .inboxes
                .entry(recipient.clone())
                .or_default()
                .push_back((me.to_owned(), body.clone()));
        }
        ToolResult::text(id, format!("Sent to {}.", recipients.join(", ")))
    }

    /// `AddTask`: adds a task to the list.
    async fn add(&self, call: &ToolCall, args: AddArgs) -> ToolResult {
        let id = call.id().clone();
        let board = &self.board;
        let me = self.member.as_str();
        let description = item(&args.description);
        if description.is_empty() {
            return fail(call, "`description` is empty".to_owned());
        }
        let task_id = {
            let mut state = board.lock();
            if state.tasks.len() >= MAX_TEAM_TASKS {
                return fail(call, format!("the team already has {MAX_TEAM_TASKS} tasks"));
            }
            if let Some(unknown) = args
                .deps
                .iter()
                .find(|dep| !state.tasks.iter().any(|t| &t.id == *dep))
            {
                return fail(call, format!("unknown dependency {:?}", preview(unknown)));
            }
            let task_id = format!("task-{}", state.tasks.len() + 1);
            state.tasks.push(Task {
                id: task_id.clone(),
                description: description.clone(),
                deps: args.deps,
                state: TaskState::Open,
            });
            task_id
        };
        board
            .tasks_event(format!("{task_id} added by {me}: {description}"))
            .await;
        ToolResult::text(id, task_id)
    }

    /// `ClaimTask`: gives the member the task named, or the first one that can be claimed.
    async fn claim(&self, call: &ToolCall, args: ClaimArgs) -> ToolResult {
        let id = call.id().clone();
        let board = &self.board;
        let me = self.member.as_str();
        let claimed = {
            let mut state = board.lock();
            let index = match &args.task_id {
                Some(wanted) => match state.tasks.iter().position(|t| &t.id == wanted) {
                    None => return fail(call, format!("unknown task {:?}", preview(wanted))),
                    Some(index) if !claimable(&state, &state.tasks[index]) => {
                        return fail(
                            call,
                            format!(
                                "{wanted} cannot be claimed: it is not open, or a dependency is not done"
                            ),
                        );
                    }
                    Some(index) => index,
                },
                None => match state.tasks.iter().position(|t| claimable(&state, t)) {
                    Some(index) => index,
                    None => return ToolResult::text(id, "No task can be claimed now."),
                },
            };
            let task = &mut state.tasks[index];
            task.state = TaskState::Claimed(me.to_owned());
            (task.id.clone(), task.description.clone())
        };
        board.tasks_event(format!("{} claimed by {me}", claimed.0)).await;
        ToolResult::text(id, format!("Claimed {}: {}", claimed.0, claimed.1))
    }

    /// `CompleteTask`: marks the member's task done.
    async fn complete(&self, call: &ToolCall, args: CompleteArgs) -> ToolResult {
        let id = call.id().clone();
        let board = &self.board;
        let me = self.member.as_str();
        {
            let mut state = board.lock();
            let Some(task) = state.tasks.iter_mut().find(|t| t.id == args.task_id) else {
                return fail(call, format!("unknown task {:?}", preview(&args.task_id)));
            };
            match &task.state {
                TaskState::Claimed(holder) if holder == me => task.state = TaskState::Done(me.to_owned()),
                TaskState::Claimed(holder) => {
                    return fail(
                        call,
                        format!("only its assignee ({holder}) can complete {}", task.id),
                    );
                }
                TaskState::Open => {
                    return fail(call, format!("{} is not claimed: claim it first", task.id));
                }
                TaskState::Done(_) => return fail(call, format!("{} is already done", task.id)),
            }
        }
        board
            .tasks_event(format!("{} completed by {me}", args.task_id))
            .await;
        ToolResult::text(id, format!("{} is done.", args.task_id))
    }

    /// `RecordFinding`: keeps a finding for the final report.
    async fn record(&self, call: &ToolCall, args: RecordArgs) -> ToolResult {
        let finding = item(&args.finding);
        if finding.is_empty() {
            return fail(call, "`finding` is empty".to_owned());
        }
        let mut state = self.board.lock();
        if state.findings.len() >= MAX_TEAM_FINDINGS {
            return fail(call, format!("the team already has {MAX_TEAM_FINDINGS} findings"));
        }
        state.findings.push((self.member.clone(), finding));
        ToolResult::text(call.id().clone(), "Recorded.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> Arc<TeamBoard> {
        Arc::new(TeamBoard::new(
            vec!["lead".into(), "scout".into(), "fixer".into()],
            Arc::new(EventEmitter::new(SessionId::from("p"), 1)),
            ToolCallId::from("c1"),
            SessionId::from("team-p-c1"),
        ))
    }

    async fn run(
        board: &Arc<TeamBoard>,
        member: &str,
        tool: &str,
        args: serde_json::Value,
    ) -> (String, bool) {
        let tools = board.tools_for(member);
        let tool = tools.iter().find(|t| t.spec().name() == tool).unwrap();
        let result = tool
            .execute(
                &CancellationToken::new(),
                &ToolCall::new("x", tool.spec().name(), args.to_string()),
                &Environment::new("/tmp").unwrap(),
            )
            .await
            .unwrap();
        (result.content().to_owned(), result.is_error())
    }

    #[tokio::test]
    async fn tasks_follow_their_dependencies_and_only_the_assignee_completes_one() {
        let b = board();
        assert_eq!(
            run(&b, "lead", "AddTask", json!({"description": "first"}))
                .await
                .0,
            "task-1"
        );
        assert_eq!(
            run(
                &b,
                "lead",
                "AddTask",
                json!({"description": "second", "deps": ["task-1"]})
            )
            .await
            .0,
            "task-2"
        );
        assert_eq!(
            run(
                &b,
                "lead",
                "AddTask",
                json!({"description": "x", "deps": ["task-9"]})
            )
            .await,
            ("AddTask: unknown dependency \"task-9\"".into(), true)
        );
        assert_eq!(b.claimable(), 1);
        assert_eq!(
            run(&b, "scout", "ClaimTask", json!({"task_id": "task-2"})).await,
            (
                "ClaimTask: task-2 cannot be claimed: it is not open, or a dependency is not done".into(),
                true
            )
        );
        assert_eq!(
            run(&b, "scout", "ClaimTask", json!({})).await.0,
            "Claimed task-1: first"
        );
        assert!(b.holds_task("scout"));
        assert_eq!(
            run(&b, "fixer", "CompleteTask", json!({"task_id": "task-1"})).await,
            (
                "CompleteTask: only its assignee (scout) can complete task-1".into(),
                true
            )
        );
        assert_eq!(
            run(&b, "scout", "CompleteTask", json!({"task_id": "task-1"}))
                .await
                .0,
            "task-1 is done."
        );
        assert_eq!(b.claimable(), 1);
        assert_eq!(
            run(&b, "lead", "ListTasks", json!({})).await.0,
            "task-1 [done by scout]: first\ntask-2 [open] (after task-1): second"
        );
    }

    #[tokio::test]
    async fn messages_queue_per_recipient_up_to_the_cap() {
        let b = board();
        assert_eq!(
            run(&b, "lead", "SendMessage", json!({"to": "nobody", "body": "hi"})).await,
            (
                "SendMessage: unknown recipient \"nobody\": send to one of scout, fixer or \"all\"".into(),
                true
            )
        );
        assert_eq!(
            run(&b, "lead", "SendMessage", json!({"to": "all", "body": "hi"}))
                .await
                .0,
            "Sent to scout, fixer."
        );
        assert!(b.has_messages("scout") && b.has_messages("fixer") && !b.has_messages("lead"));
        assert_eq!(b.take_messages("scout"), [("lead".to_owned(), "hi".to_owned())]);
        assert!(!b.has_messages("scout"));
        for _ in 0..MAX_QUEUED_MESSAGES - 1 {
            assert!(
                !run(&b, "lead", "SendMessage", json!({"to": "fixer", "body": "again"}))
                    .await
                    .1
            );
        }
        assert_eq!(
            run(
                &b,
                "lead",
                "SendMessage",
                json!({"to": "fixer", "body": "one too many"})
            )
            .await,
            ("SendMessage: fixer already has 256 messages waiting".into(), true)
        );
        assert!(
            !run(&b, "scout", "RecordFinding", json!({"finding": "seen"}))
                .await
                .1
        );
        assert_eq!(b.findings(), [("scout".to_owned(), "seen".to_owned())]);
    }
}
