//! `Subagent`: delegates a task to a child engine, in the foreground or the
//! background, fresh, forked from this conversation or resumed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine_ports::{
    EventKind, RequestPurpose, SessionId, SessionSnapshot, StoreError, ToolCall, ToolCallId, ToolResult,
    ToolSpec, clip_chars,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::child_run::{ChildOutcome, ChildRun, Reporter, StartError, salvage};
use super::children::{AgentDefinition, CHILD_MAX_TOOL_CALLS, CHILD_MAX_TURNS, ChildAccess, ChildSpec};
use super::render::{ChildStop, fork_seed, neutralise, preview};
use super::scope::{DelegationScope, Refusal, subagent_id};
use super::submit::{OutputSchema, SUBMIT_ATTEMPTS, SUBMIT_RESULT_TOOL_NAME, Submission, SubmitResultTool};
use super::{
    INSPECT_SUBAGENT_TOOL_NAME, SUBAGENT_STATUS_TOOL_NAME, SUBAGENT_TOOL_NAME, Scoped, ScopedTool, refusal,
};
use crate::engine::{Engine, Limits};
use crate::tool::{Tool, ToolError};

/// Longest `timeout_ms` (24 h).
pub const MAX_SUBAGENT_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// Longest `description`, in characters.
const DESCRIPTION_CHARS: usize = 80;

/// Longest `model` name.
const MODEL_NAME_BYTES: usize = 200;

/// Most named agents listed in the tool's description, and the longest listing.
const LISTED_AGENTS: usize = 32;
const AGENT_LISTING_BYTES: usize = 4_000;

/// What the child is told when it must finish through `SubmitResult`.
const SUBMIT_INSTRUCTIONS: &str = "When you are done, call SubmitResult with your result: its arguments must \
match the schema the delegating agent requires (the tool's parameters). Then end your turn.";

/// The reminder sent to a child that ended without submitting a valid result.
const SUBMIT_REMINDER: &str = "You ended without submitting a valid result. Call SubmitResult now with \
arguments that match its schema, then end your turn.";

/// The last line of a result whose child ended without any text, even after its
/// salvage turn.
fn no_summary(id: &str) -> String {
    format!("(no summary — resume it with agentId {id})")
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Args {
    prompt: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    max_turns: Option<u64>,
    #[serde(default)]
    max_tool_calls: Option<u64>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    fork: bool,
    #[serde(default)]
    resume: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    output_schema: Option<Value>,
}

impl Args {
    fn read_write(&self) -> bool {
        self.mode.as_deref() == Some("read-write")
    }
}

/// `Subagent`: runs a child engine on a task and returns its final report.
///
/// Read-only unless `mode` is `read-write` (then the call is mutating: it runs alone,
/// asks like `Edit`, and is refused in plan mode). The named agents are listed in its
/// description, computed once at construction.
pub struct SubagentTool {
    /// Built once at construction: the catalog asks for it on every turn.
    spec: ToolSpec,
}

impl SubagentTool {
    /// The tool, listing `agents` in its description.
    pub fn new(agents: &[AgentDefinition]) -> Self {
        let mut description = format!(
            "Delegates a task to a subagent: a child agent with a fresh context (or a copy of this \
             conversation: fork) and its own tools, which returns only its final report. Read-only by default; \
             mode read-write gives it this agent's tools on the workspace (the call then asks like Edit). \
             Read-only subagents of one turn run in parallel (at most 8 at once). The result starts with \
             `agentId: <id>`, for `resume` and {INSPECT_SUBAGENT_TOOL_NAME}. background returns at once; \
             {SUBAGENT_STATUS_TOOL_NAME} gives its result. output_schema makes the result JSON matching it."
        );
        if !agents.is_empty() {
            description.push_str("\n\nNamed agents (`agent`):");
            let mut listed = 0usize;
            for agent in agents.iter().take(LISTED_AGENTS) {
                let line = format!(
                    "\n- {}: {}",
                    agent.name,
                    clip_chars(agent.description.lines().next().unwrap_or_default(), 200)
                );
                if listed + line.len() > AGENT_LISTING_BYTES {
                    break;
                }
                listed += line.len();
                description.push_str(&line);
            }
            if agents.len() > LISTED_AGENTS {
                description.push_str(&format!("\n- … and {} more", agents.len() - LISTED_AGENTS));
            }
        }
        let agents: Vec<&str> = agents.iter().map(|agent| agent.name.as_str()).collect();
        Self {
            spec: subagent_spec(&description, &agents),
        }
    }
}

/// The spec of `Subagent` with `description`, offering `agents` by name.
fn subagent_spec(description: &str, agents: &[&str]) -> ToolSpec {
    let mut agent = json!({
        "type": "string",
        "description": "A named agent (system prompt, tools, model)."
    });
    if !agents.is_empty() {
        agent["enum"] = json!(agents);
    }
    ToolSpec::new(SUBAGENT_TOOL_NAME, description).with_schema(json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The task and everything needed for it (the subagent does not see this conversation unless fork)."},
            "description": {"type": "string", "description": "A 3 to 8 word label."},
            "agent": agent,
            "model": {"type": "string", "description": "Provider model name."},
            "max_turns": {"type": "integer", "minimum": 1, "description": "Default and limit 100."},
            "max_tool_calls": {"type": "integer", "minimum": 1, "description": "Default and limit 500."},
            "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_SUBAGENT_TIMEOUT_MS, "description": "Stop it after this long."},
            "background": {"type": "boolean", "description": "Return at once; it keeps running (read-only only)."},
            "fork": {"type": "boolean", "description": "Start from a copy of this conversation."},
            "resume": {"type": "string", "description": "An earlier agentId of this session to continue with prompt."},
            "mode": {"type": "string", "enum": ["read-only", "read-write"]},
            "output_schema": {"type": "object", "description": "JSON Schema of the result."}
        },
        "required": ["prompt"]
    }))
}

#[async_trait]
impl ScopedTool for SubagentTool {
    const READ_ONLY: bool = true;
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call_read_only(&self, call: &ToolCall) -> bool {
        // A call whose arguments do not parse is refused by `execute`, changing nothing.
        call.parse_args::<Args>().map_or(true, |args| !args.read_write())
    }

    async fn run(&self, at: Scoped<'_>, args: Args) -> Result<ToolResult, ToolError> {
        let Scoped(cancel, call, _, scope) = at;
        match Prepared::new(scope, call, args).await {
            Ok(prepared) => Ok(prepared.run(cancel).await),
            Err(message) => Ok(refusal(call, SUBAGENT_TOOL_NAME, message)),
        }
    }
}

/// A `Subagent` call that passed its checks, holding its place under the gate.
struct Prepared {
    scope: Arc<DelegationScope>,
    call_id: ToolCallId,
    child_id: SessionId,
    description: String,
    reporter: Reporter,
    engine: Engine,
    limits: Limits,
    prompt: String,
    timeout: Option<Duration>,
    background: bool,
    submission: Option<Arc<Submission>>,
}

impl Prepared {
    async fn new(scope: &Arc<DelegationScope>, call: &ToolCall, args: Args) -> Result<Self, String> {
        let prompt = args.prompt.trim().to_owned();
        if prompt.is_empty() {
            return Err("`prompt` is empty: say what the subagent should do".to_owned());
        }
        let mode = args.mode.as_deref().unwrap_or("read-only");
        if mode != "read-only" && mode != "read-write" {
            return Err(format!("`mode` {mode:?} is not one of read-only, read-write"));
        }
        let read_write = args.read_write();
        if read_write && args.background {
            return Err(
                "`mode` read-write cannot run in the background: a read-write subagent changes the workspace, so \
                 its call runs alone; drop `background`, or keep the subagent read-only"
                    .to_owned(),
            );
        }
        if args.fork && args.resume.is_some() {
            return Err(
                "`fork` and `resume` cannot be combined: a resumed subagent keeps its own conversation"
                    .to_owned(),
            );
        }
        for (name, value) in [
            ("max_turns", args.max_turns),
            ("max_tool_calls", args.max_tool_calls),
        ] {
            if value == Some(0) {
                return Err(format!("`{name}` must be at least 1"));
            }
        }
        let timeout = match args.timeout_ms {
            None => None,
            Some(ms) if (1..=MAX_SUBAGENT_TIMEOUT_MS).contains(&ms) => Some(Duration::from_millis(ms)),
            Some(ms) => {
                return Err(format!(
                    "`timeout_ms` {ms} is out of range (1 to {MAX_SUBAGENT_TIMEOUT_MS})"
                ));
            }
        };
        if let Some(model) = &args.model
            && (model.trim().is_empty()
                || model.len() > MODEL_NAME_BYTES
                || model.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(format!(
                "unknown model {:?}: give a provider model name (no spaces, at most {MODEL_NAME_BYTES} bytes)",
                preview(model)
            ));
        }
        let agent = match &args.agent {
            None => None,
            Some(name) => Some(find_agent(scope, name)?),
        };
        let schema = match &args.output_schema {
            None => None,
            Some(schema) => {
                Some(Arc::new(OutputSchema::compile(schema).map_err(|reason| {
                    format!("`output_schema` is unusable: {reason}")
                })?))
            }
        };

        let description = args
            .description
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map_or_else(|| default_description(&prompt), preview)
            .chars()
            .take(DESCRIPTION_CHARS)
            .collect::<String>();
        let reporter = Reporter::Subagent {
            description: description.clone(),
        };
        let child_id = match &args.resume {
            Some(id) => {
                if !scope.started_child(id, false) {
                    return Err(format!(
                        "bad resume id {:?}: unknown agent id: only the exact agentId of a subagent of this session \
                         can be resumed",
                        preview(id)
                    ));
                }
                SessionId::from(id.as_str())
            }
            None => subagent_id(&scope.parent, call.id()),
        };
        if args.resume.is_some() {
            match scope.store.load(&child_id).await {
                Ok(_) => {}
                Err(error) if error.is_not_found() => {
                    return Err(format!(
                        "bad resume id {:?}: no such subagent session in the store",
                        child_id.as_str()
                    ));
                }
                Err(error) => return Err(format!("the subagent session could not be read: {error}")),
            }
        }

        match scope.run.admit(child_id.as_str(), args.background) {
            Ok(()) => {}
            Err(Refusal::AlreadyRunning) => return Err(format!("{child_id} is already running")),
            Err(Refusal::GateFull { background }) => return Err(gate_full(&background)),
        }
        // From here on the gate holds a place: give it back on any failure.
        let admitted = Admitted {
            scope: Arc::clone(scope),
            id: child_id.clone(),
            armed: true,
        };

        let mut limits = Limits {
            max_turns: CHILD_MAX_TURNS,
            max_tool_calls: CHILD_MAX_TOOL_CALLS,
            max_consecutive_failures: 0,
        };
        for cap in [agent.and_then(|a| a.max_turns), args.max_turns]
            .into_iter()
            .flatten()
        {
            limits.max_turns = limits.max_turns.min(cap.max(1));
        }
        if let Some(cap) = args.max_tool_calls {
            limits.max_tool_calls = limits.max_tool_calls.min(cap);
        }
        let submission = schema.as_ref().map(|_| Arc::new(Submission::default()));
        let extra_tools: Vec<Arc<dyn Tool>> = match (&schema, &submission) {
            (Some(schema), Some(submission)) => vec![Arc::new(SubmitResultTool::new(
                Arc::clone(schema),
                Arc::clone(submission),
            ))],
            _ => Vec::new(),
        };
        let settings = scope.children.settings();
        let access = if read_write {
            ChildAccess::ReadWrite
        } else {
            ChildAccess::ReadOnly
        };
        let spec = ChildSpec {
            tools: agent.and_then(|a| a.tools.clone()),
            extra_tools,
            model: args
                .model
                .clone()
                .or_else(|| agent.and_then(|a| a.model.clone()))
                .or_else(|| settings.subagent_model.clone()),
            system_prompt: agent.map(|a| a.system_prompt.clone()),
            limits,
            ..scope.child_spec(access, RequestPurpose::Subagent, reporter.requester())
        };
        let engine = scope
            .children
            .engine(&spec)
            .map_err(|error| format!("the subagent could not be built: {error}"))?;

        if args.resume.is_some() {
            engine
                .set_mode(&child_id, scope.mode)
                .await
                .map_err(|error| match error {
                    crate::engine::EngineError::Busy(_) => format!("{child_id} is already running"),
                    other => format!("the subagent session could not be prepared: {other}"),
                })?;
        } else {
            let mut snapshot = SessionSnapshot::new(child_id.clone(), scope.mode);
            if args.fork {
                snapshot
                    .conversation
                    .push(fork_seed(&scope.conversation.to_vec(), scope.context_window));
            }
            match scope.store.create(&snapshot).await {
                Ok(()) => {}
                Err(StoreError::AlreadyExists { .. }) => {
                    return Err(format!(
                        "a session named {child_id} already exists in the store, and a subagent never replaces one; \
                         continue it with `resume`"
                    ));
                }
                Err(error) => return Err(format!("the subagent session could not be created: {error}")),
            }
        }
        let prompt = if submission.is_some() {
            format!("{prompt}\n\n{SUBMIT_INSTRUCTIONS}")
        } else {
            prompt
        };
        admitted.disarm();
        Ok(Self {
            scope: Arc::clone(scope),
            call_id: call.id().clone(),
            child_id,
            description,
            reporter,
            engine,
            limits,
            prompt,
            timeout,
            background: args.background,
            submission,
        })
    }

    async fn run(self, cancel: &CancellationToken) -> ToolResult {
        self.scope
            .events
            .emit(EventKind::SubagentStart {
                call_id: self.call_id.clone(),
                child_id: self.child_id.clone(),
                description: self.description.clone(),
                background: self.background,
                preview: preview(&self.prompt),
            })
            .await;
        if self.background {
            let id = self.child_id.clone();
            let call_id = self.call_id.clone();
            let token = self.scope.run.background_token();
            // Cancellable by id from now on, not only once its run has started.
            let live = self.scope.run.register_live(id.as_str(), token.clone());
            let scope = Arc::clone(&self.scope);
            scope.run.spawn(async move {
                let _ = self.finish(&token).await;
                drop(live);
            });
            return ToolResult::text(
                call_id,
                format!(
                    "agentId: {id}\n\nStarted in the background. A notice arrives when it finishes; \
                     {SUBAGENT_STATUS_TOOL_NAME} with this agent_id returns its result (or waits for it with \
                     wait_ms)."
                ),
            );
        }
        self.finish(cancel).await
    }

    /// Runs the child to its end and builds the call's result; records it in the
    /// run's roster and emits `subagent.end`.
    async fn finish(self, cancel: &CancellationToken) -> ToolResult {
        let (stop, body, is_error) = self.outcome(cancel).await;
        let text = format!("agentId: {}\n\n{body}", self.child_id);
        self.scope
            .events
            .emit(EventKind::SubagentEnd {
                call_id: self.call_id.clone(),
                child_id: self.child_id.clone(),
                stop: stop.clone(),
                preview: preview(&body),
            })
            .await;
        self.scope.run.finish(
            self.child_id.as_str(),
            &stop,
            self.background.then(|| text.clone()),
        );
        if is_error {
            ToolResult::error(self.call_id.clone(), text)
        } else {
            ToolResult::text(self.call_id.clone(), text)
        }
    }

    /// The stop's wire name, the result's body (after the `agentId` line) and
    /// whether it is an error.
    async fn outcome(&self, cancel: &CancellationToken) -> (String, String, bool) {
        let mut outcome = match self.drive(self.prompt.clone(), cancel).await {
            Ok(outcome) => outcome,
            Err(StartError::Busy) => {
                return (
                    "refused".to_owned(),
                    format!("{} is already running", self.child_id),
                    true,
                );
            }
            Err(StartError::Failed(reason)) => {
                return (
                    "error".to_owned(),
                    format!("[stopped: error: {}]", preview(&reason)),
                    true,
                );
            }
        };
        if let Some(submission) = &self.submission {
            while submission.accepted().is_none()
                && outcome.stop.ended()
                && submission.attempts() < SUBMIT_ATTEMPTS
                && !cancel.is_cancelled()
            {
                submission.count_reminder();
                outcome = match self.drive(SUBMIT_REMINDER.to_owned(), cancel).await {
                    Ok(next) => next,
                    Err(_) => break,
                };
            }
            let note = outcome
                .stop
                .note(&self.limits)
                .map(|n| format!("{n}\n"))
                .unwrap_or_default();
            return match submission.accepted() {
                Some(value) => (outcome.stop.as_str().to_owned(), format!("{note}{value}"), false),
                None => {
                    let why = match submission.last_failure() {
                        Some(failure) => format!("the last validation failure: {failure}"),
                        None => format!("it never called {SUBMIT_RESULT_TOOL_NAME}"),
                    };
                    (
                        outcome.stop.as_str().to_owned(),
                        format!(
                            "{note}output_schema: no valid result after {} attempt(s); {why}",
                            submission.attempts()
                        ),
                        true,
                    )
                }
            };
        }
        let note = outcome.stop.note(&self.limits);
        let mut text = outcome.text.trim().to_owned();
        if text.is_empty() && salvageable(&outcome, cancel) {
            let model = self.engine.config().model.clone();
            if let Some(answer) = salvage(&self.scope, &self.child_id, &model, cancel).await {
                text = answer;
            }
        }
        if text.is_empty() {
            text = no_summary(self.child_id.as_str());
        } else {
            text = neutralise(&text);
        }
        let body = match note {
            Some(note) => format!("{note}\n{text}"),
            None => text,
        };
        (outcome.stop.as_str().to_owned(), body, false)
    }

    async fn drive(&self, prompt: String, cancel: &CancellationToken) -> Result<ChildOutcome, StartError> {
        ChildRun {
            scope: &self.scope,
            call_id: &self.call_id,
            child_id: &self.child_id,
            reporter: &self.reporter,
            engine: &self.engine,
            prompt,
            timeout: self.timeout,
        }
        .drive(cancel)
        .await
    }
}

/// Whether a child that ended without text gets a salvage turn: not when it was
/// cancelled or timed out, nor when its call is being cancelled.
fn salvageable(outcome: &ChildOutcome, cancel: &CancellationToken) -> bool {
    !cancel.is_cancelled()
        && !matches!(
            outcome.stop,
            ChildStop::Timeout(_)
                | ChildStop::Run {
                    stop: engine_ports::StopReason::Cancelled,
                    ..
                }
        )
}

/// Gives a gate place back unless the call got going.
struct Admitted {
    scope: Arc<DelegationScope>,
    id: SessionId,
    armed: bool,
}

impl Admitted {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if self.armed {
            self.scope.run.abandon(self.id.as_str());
        }
    }
}

fn find_agent<'a>(scope: &'a DelegationScope, name: &str) -> Result<&'a AgentDefinition, String> {
    let agents = scope.children.agents();
    agents.iter().find(|agent| agent.name == name).ok_or_else(|| {
        if agents.is_empty() {
            format!(
                "unknown agent {:?}: no named agents are defined (the operator adds them with --agents-dir)",
                preview(name)
            )
        } else {
            let names: Vec<&str> = agents.iter().map(|agent| agent.name.as_str()).collect();
            format!(
                "unknown agent {:?}; the agents are: {}",
                preview(name),
                names.join(", ")
            )
        }
    })
}

fn gate_full(background: &[String]) -> String {
    let mut background = background.to_vec();
    background.sort();
    let running = if background.is_empty() {
        "none of them in the background".to_owned()
    } else {
        format!("in the background: {}", background.join(", "))
    };
    let example = background.first().map_or("<agentId>", String::as_str);
    format!(
        "the gate is full: {} subagents are already running in this run (at most {} at once, foreground and \
         background together; {running}). Wait for one to finish with {SUBAGENT_STATUS_TOOL_NAME} \
         {{\"agent_id\": \"{example}\", \"wait_ms\": 60000}}, then call {SUBAGENT_TOOL_NAME} again.",
        super::MAX_RUNNING_SUBAGENTS,
        super::MAX_RUNNING_SUBAGENTS,
    )
}

/// The first words of the prompt, as a label.
fn default_description(prompt: &str) -> String {
    let words: Vec<&str> = prompt.split_whitespace().take(6).collect();
    preview(&words.join(" "))
}
