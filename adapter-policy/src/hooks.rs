//! Operator hooks: commands run at engine events, in the shape of Claude Code's
//! hooks. A hook gets a JSON object on stdin; exit 0 goes on (its stdout may be a
//! JSON decision, or context for the model), exit 2 blocks with stderr as the
//! reason, any other exit (or a timeout) is reported and the event goes on. Hooks run
//! in the workspace, in a process group of their own (killed whole on timeout), with
//! the harness's credentials stripped from their environment, their output capped,
//! and, when the sandbox is on, confined as `Shell` commands are.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine_ports::{
    EventAnswer, HookError, HookEvent, HookText, Post, Pre, SessionEvent, SessionId, ToolCall, ToolHooks,
    ToolResult,
};
use sandbox::{Confinement, PrivateTemp};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::rules::canonical_tool;

/// The most bytes of a hook's stdout or stderr kept (64 KiB).
pub const MAX_HOOK_OUTPUT_BYTES: usize = 64 * 1024;

/// Which tools a hook applies to: names (`Write|Edit`, `Bash` read as `Shell`) or
/// an anchored regular expression.
#[derive(Clone, Debug)]
pub enum Matcher {
    /// Tool names.
    Names(Vec<String>),
    /// A regular expression matched against the whole name.
    Regex(regex::Regex),
}

impl Matcher {
    /// Parses a matcher.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text
            .split('|')
            .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        {
            return Ok(Self::Names(
                text.split('|').map(|n| canonical_tool(n).to_owned()).collect(),
            ));
        }
        regex::RegexBuilder::new(&format!("^(?:{text})$"))
            .size_limit(1 << 20)
            .build()
            .map(Self::Regex)
            .map_err(|e| e.to_string())
    }

    fn matches(&self, tool: &str) -> bool {
        match self {
            Self::Names(names) => names.iter().any(|n| n == tool),
            Self::Regex(regex) => regex.is_match(tool),
        }
    }
}

/// One hook command.
#[derive(Clone, Debug)]
pub struct HookCommand {
    /// Its event.
    pub event: HookEvent,
    /// Its tools (`None`: every tool, and every event without tools).
    pub matcher: Option<Matcher>,
    /// The shell command.
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
    /// The settings file it came from.
    pub source: String,
}

/// How one hook run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookRun {
    /// Exit 0, with its stdout.
    Ok(String),
    /// Exit 2: block, with its stderr.
    Block(String),
    /// Anything else (another exit code, a timeout, a failure to start): reported,
    /// and the event goes on.
    Failed(String),
    /// Not run: the sandbox refused to run commands (or could not be set up). A
    /// PreToolUse hook refused this way blocks its call; for other events it is
    /// reported like a failure.
    Refused(String),
}

/// The operator's hook commands, run where the engine has hook points.
#[derive(Clone)]
pub struct CommandHooks {
    hooks: Vec<HookCommand>,
    workspace: PathBuf,
    stripped: fn(&OsStr) -> bool,
    confinement: Confinement,
    /// The private `TMPDIR` of confined hooks.
    temp: Option<Arc<PrivateTemp>>,
}

impl std::fmt::Debug for CommandHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandHooks")
            .field("hooks", &self.hooks.len())
            .field("workspace", &self.workspace)
            .field("confinement", &self.confinement)
            .finish_non_exhaustive()
    }
}

impl CommandHooks {
    /// Hooks run in `workspace`; `stripped` says which environment variables a hook
    /// must not see (the harness's credentials rule).
    pub fn new(hooks: Vec<HookCommand>, workspace: PathBuf, stripped: fn(&OsStr) -> bool) -> Self {
        Self {
            hooks,
            workspace,
            stripped,
            confinement: Confinement::Unconfined,
            temp: None,
        }
    }

    /// The same hooks confined as `confinement` says (the session's `Shell` rule:
    /// writes only in the workspace and a private `TMPDIR`, the network as
    /// configured); a refused confinement runs no hook.
    ///
    /// # Errors
    /// The private temporary directory of a confined hook cannot be created.
    pub fn with_confinement(mut self, confinement: Confinement) -> std::io::Result<Self> {
        self.temp = match &confinement {
            Confinement::Confined(_) => Some(Arc::new(PrivateTemp::create()?)),
            Confinement::Unconfined | Confinement::Refused(_) => None,
        };
        self.confinement = confinement;
        Ok(self)
    }

    /// Whether any hook listens to `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// The hooks of `event` that apply to `tool` (every hook of the event when no
    /// tool is given).
    fn matching(&self, event: HookEvent, tool: Option<&str>) -> impl Iterator<Item = &HookCommand> {
        self.hooks.iter().filter(move |h| {
            h.event == event
                && match (&h.matcher, tool) {
                    (Some(matcher), Some(tool)) => matcher.matches(tool),
                    _ => true,
                }
        })
    }

    /// Runs every hook of `event` (for `tool`, if any) with `input` plus the common
    /// fields, in order, until one blocks; returns each hook with how it ended.
    pub async fn fire(
        &self,
        event: HookEvent,
        session: &SessionId,
        tool: Option<&str>,
        mut input: Value,
    ) -> Vec<(HookCommand, HookRun)> {
        if let Value::Object(map) = &mut input {
            map.insert("session_id".into(), json!(session.as_str()));
            map.insert("cwd".into(), json!(self.workspace.display().to_string()));
            map.insert("hook_event_name".into(), json!(event.as_str()));
        }
        let mut runs = Vec::new();
        for hook in self.matching(event, tool) {
            let run = self.run(hook, &input).await;
            if let HookRun::Failed(why) | HookRun::Refused(why) = &run {
                tracing::warn!(hook = %hook.command, source = %hook.source, event = event.as_str(), "hook failed and was ignored: {why}");
            }
            let blocked = matches!(run, HookRun::Block(_));
            runs.push((hook.clone(), run));
            if blocked {
                break;
            }
        }
        runs
    }
}

#[async_trait]
impl ToolHooks for CommandHooks {
    async fn pre_tool_use(&self, session: &SessionId, call: &ToolCall) -> Result<Pre, HookError> {
        let mut args = call.args_value();
        let mut answer = Pre::Allow;
        let mut rewritten = false;
        for hook in self.matching(HookEvent::PreToolUse, Some(call.name())) {
            let input = json!({
                "session_id": session.as_str(),
                "cwd": self.workspace.display().to_string(),
                "hook_event_name": "PreToolUse",
                "tool_name": call.name(),
                "tool_input": args,
            });
            match self.run(hook, &input).await {
                HookRun::Refused(why) => return Err(HookError::new(why)),
                HookRun::Block(stderr) => {
                    return Ok(Pre::Block {
                        hook: hook.command.clone(),
                        reason: non_empty(stderr, "blocked by a PreToolUse hook"),
                    });
                }
                HookRun::Failed(why) => {
                    tracing::warn!(hook = %hook.command, source = %hook.source, "PreToolUse hook failed and was ignored: {why}");
                }
                HookRun::Ok(stdout) => {
                    let Ok(Value::Object(out)) = serde_json::from_str::<Value>(stdout.trim()) else {
                        continue;
                    };
                    let specific = out.get("hookSpecificOutput").cloned().unwrap_or(Value::Null);
                    let reason = specific
                        .get("permissionDecisionReason")
                        .or_else(|| out.get("reason"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let decision = specific
                        .get("permissionDecision")
                        .and_then(Value::as_str)
                        .or_else(|| out.get("decision").and_then(Value::as_str));
                    let hook_name = hook.command.clone();
                    match decision {
                        Some("deny" | "block") => {
                            return Ok(Pre::Block {
                                hook: hook_name,
                                reason: non_empty(reason, "denied by a PreToolUse hook"),
                            });
                        }
                        Some("ask") => {
                            answer = Pre::Ask {
                                hook: hook_name,
                                reason: non_empty(reason, "a PreToolUse hook asks for approval"),
                            }
                        }
                        Some("allow" | "approve") if !matches!(answer, Pre::Ask { .. }) => {
                            answer = Pre::Approve {
                                hook: hook_name,
                                reason: non_empty(reason, "allowed by a PreToolUse hook"),
                            };
                        }
                        _ => {}
                    }
                    if let Some(updated @ Value::Object(_)) = specific.get("updatedInput") {
                        args = updated.clone();
                        rewritten = true;
                    }
                }
            }
        }
        if rewritten && matches!(answer, Pre::Allow) {
            return Ok(Pre::RewriteArgs {
                args: args.to_string(),
            });
        }
        if rewritten {
            tracing::warn!(
                tool = call.name(),
                "a PreToolUse hook's updatedInput was ignored: another hook decided the call"
            );
        }
        Ok(answer)
    }

    async fn post_tool_use(
        &self,
        session: &SessionId,
        call: &ToolCall,
        result: &ToolResult,
    ) -> Result<Post, HookError> {
        let input = json!({
            "session_id": session.as_str(),
            "cwd": self.workspace.display().to_string(),
            "hook_event_name": "PostToolUse",
            "tool_name": call.name(),
            "tool_input": call.args_value(),
            "tool_response": {"content": result.content(), "is_error": result.is_error()},
        });
        let mut feedback = Vec::new();
        for hook in self.matching(HookEvent::PostToolUse, Some(call.name())) {
            match self.run(hook, &input).await {
                HookRun::Block(stderr) => feedback.push(non_empty(stderr, "a PostToolUse hook objected")),
                HookRun::Failed(why) | HookRun::Refused(why) => {
                    tracing::warn!(hook = %hook.command, source = %hook.source, "PostToolUse hook failed and was ignored: {why}");
                }
                HookRun::Ok(stdout) => {
                    if let Ok(Value::Object(out)) = serde_json::from_str::<Value>(stdout.trim())
                        && out.get("decision").and_then(Value::as_str) == Some("block")
                    {
                        let reason = out.get("reason").and_then(Value::as_str).unwrap_or("").to_owned();
                        feedback.push(non_empty(reason, "a PostToolUse hook objected"));
                    }
                }
            }
        }
        if feedback.is_empty() {
            return Ok(Post::Keep);
        }
        Ok(Post::Rewrite {
            content: format!(
                "{}\n\nPostToolUse hook feedback:\n{}",
                result.content(),
                feedback.join("\n")
            ),
            is_error: result.is_error(),
        })
    }

    async fn session_event(&self, session: &SessionId, event: &SessionEvent) -> EventAnswer {
        let name = event.name();
        if !self.has(name) {
            return EventAnswer::default();
        }
        let runs = self.fire(name, session, None, event_input(event)).await;
        // Only the prompt's and the session's hooks add context (plain stdout, or
        // `hookSpecificOutput.additionalContext`).
        let gives_context = matches!(name, HookEvent::UserPromptSubmit | HookEvent::SessionStart);
        let default_reason = format!("blocked by a {name} hook");
        let mut answer = EventAnswer::default();
        for (hook, run) in runs {
            let said = |text: String| HookText {
                hook: hook.command.clone(),
                text: non_empty(text, &default_reason),
            };
            match run {
                HookRun::Block(stderr) => {
                    answer.block.get_or_insert_with(|| said(stderr));
                }
                HookRun::Ok(stdout) => {
                    let stdout = stdout.trim();
                    if stdout.is_empty() {
                        continue;
                    }
                    let Ok(Value::Object(out)) = serde_json::from_str::<Value>(stdout) else {
                        if gives_context {
                            answer.context.push(said(stdout.to_owned()));
                        }
                        continue;
                    };
                    if out.get("decision").and_then(Value::as_str) == Some("block") {
                        let reason = out.get("reason").and_then(Value::as_str).unwrap_or("");
                        answer.block.get_or_insert_with(|| said(reason.to_owned()));
                    }
                    let context = out
                        .get("hookSpecificOutput")
                        .and_then(|specific| specific.get("additionalContext"))
                        .and_then(Value::as_str)
                        .filter(|text| !text.trim().is_empty());
                    if let Some(context) = context
                        && gives_context
                    {
                        answer.context.push(said(context.to_owned()));
                    }
                }
                HookRun::Failed(_) | HookRun::Refused(_) => {}
            }
        }
        answer
    }
}

/// The fields of `event`'s hook input besides the common ones (`session_id`, `cwd`,
/// `hook_event_name`).
fn event_input(event: &SessionEvent) -> Value {
    match event {
        SessionEvent::SessionStart { source } => json!({"source": source.as_str()}),
        SessionEvent::UserPromptSubmit { prompt } => json!({"prompt": prompt}),
        SessionEvent::Stop {
            stop_hook_active,
            stop_reason,
        }
        | SessionEvent::SubagentStop {
            stop_hook_active,
            stop_reason,
        } => json!({"stop_hook_active": stop_hook_active, "stop_reason": stop_reason.as_str()}),
        SessionEvent::PreCompact {
            trigger,
            custom_instructions,
        } => json!({"trigger": trigger.as_str(), "custom_instructions": custom_instructions}),
    }
}

fn non_empty(text: String, default: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        default.to_owned()
    } else {
        trimmed.to_owned()
    }
}

impl CommandHooks {
    /// The sandbox of one hook run: nothing, a prepared one with its `TMPDIR`, or why
    /// the hook may not run.
    fn sandbox(&self, hook: &HookCommand) -> Result<Option<(sandbox::Prepared, &Path)>, String> {
        let refused = |why: &str| format!("`{}` was not run: {why}", hook.command);
        match (&self.confinement, &self.temp) {
            (Confinement::Unconfined, _) => Ok(None),
            (Confinement::Refused(reason), _) => Err(refused(reason)),
            (Confinement::Confined(policy), Some(temp)) => policy
                .prepare(&self.workspace, temp.path())
                .map(|prepared| Some((prepared, temp.path())))
                .map_err(|error| refused(&format!("the sandbox could not be set up: {error}"))),
            (Confinement::Confined(_), None) => Err(refused("the sandbox has no temporary directory")),
        }
    }

    /// Runs one hook command with `input` on stdin: `sh -c`, in the workspace, in its
    /// own process group (killed whole at the timeout), without the stripped
    /// variables, confined when the sandbox is on, stdout and stderr capped.
    async fn run(&self, hook: &HookCommand, input: &Value) -> HookRun {
        let sandbox = match self.sandbox(hook) {
            Ok(sandbox) => sandbox,
            Err(why) => return HookRun::Refused(why),
        };
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(&hook.command)
            .current_dir(&self.workspace)
            .env_clear()
            .envs(std::env::vars_os().filter(|(name, _)| !(self.stripped)(name)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some((prepared, temp)) = sandbox {
            command.env("TMPDIR", temp);
            prepared.apply_to(command.as_std_mut());
        }
        run_spawned(hook, command, input).await
    }
}

/// Spawns a hook's prepared command, writes `input` to its stdin and waits (bounded
/// by the hook's timeout, then the process group is killed).
async fn run_spawned(hook: &HookCommand, mut command: tokio::process::Command, input: &Value) -> HookRun {
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return HookRun::Failed(format!("could not start `{}`: {e}", hook.command)),
    };
    let pid = child.id();
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let text = input.to_string();
    let work = async {
        let write = async {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input closes the pipe: not an error.
                let _ = stdin.write_all(text.as_bytes()).await;
            }
        };
        let (_, out, err, status) = tokio::join!(write, capped(stdout), capped(stderr), child.wait());
        (out, err, status)
    };
    match tokio::time::timeout(hook.timeout, work).await {
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            HookRun::Failed(format!(
                "`{}` timed out after {} s and was killed",
                hook.command,
                hook.timeout.as_secs()
            ))
        }
        Ok((_, _, Err(e))) => HookRun::Failed(format!("`{}` could not be waited for: {e}", hook.command)),
        Ok((out, err, Ok(status))) => match status.code() {
            Some(0) => HookRun::Ok(out),
            Some(2) => HookRun::Block(err),
            Some(code) => HookRun::Failed(format!("`{}` exited with {code}: {}", hook.command, err.trim())),
            None => HookRun::Failed(format!("`{}` was killed by a signal", hook.command)),
        },
    }
}

/// Reads a pipe to its end, keeping at most [`MAX_HOOK_OUTPUT_BYTES`].
async fn capped(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let Some(mut pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_HOOK_OUTPUT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
