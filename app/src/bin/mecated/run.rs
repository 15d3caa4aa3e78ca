//! `mecated run`: one headless session on the shared engine.

use std::process::ExitCode;
use std::sync::Arc;

use adapter_llm::ModelPrices;
use app::{SessionRequest, build, new_session_id};
use engine_core::{EngineError, Run};
use engine_ports::{Event, EventKind, SessionId, StopReason, StoreError, Usage};
use futures::StreamExt as _;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::cli::RunArgs;
use crate::out;
use crate::to_config::{apply_model, common_config};

/// Exit status of a run whose answer the output limit cut off (`max_tokens`): the
/// answer is there but incomplete, told apart from a failure (1) and a usage error (2).
const MAX_TOKENS_EXIT: u8 = 3;

/// Builds, runs the prompt, prints the events, closes. Exit 0 when the run stops with
/// `end_turn`, [`MAX_TOKENS_EXIT`] with `max_tokens`, else 1.
pub(crate) async fn run(args: RunArgs) -> ExitCode {
    let cfg = common_config(&args.common).and_then(|mut cfg| {
        apply_model(&mut cfg, &args.model)?;
        cfg.engine.approve = args.approve;
        if let Some(mode) = args.mode {
            cfg.engine.mode = mode;
        }
        cfg.limits.max_turns = args.max_turns;
        Ok(cfg)
    });
    let cfg = match cfg {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    if args.print_system_prompt {
        return match app::system_prompt(&cfg).await {
            Ok(prompt) => {
                out::stdout(&prompt.text);
                ExitCode::SUCCESS
            }
            Err(error) => out::failure(error),
        };
    }
    let jsonl = args.output == "jsonl";
    let built = match build(cfg).await {
        Ok(built) => built,
        Err(error) => return out::failure(error),
    };
    let session = SessionId::from(args.session.clone().unwrap_or_else(new_session_id));
    let stop = match start(&built, &session, &args).await {
        Ok(run) => follow(run, jsonl, Arc::clone(built.prices())).await,
        Err(message) => {
            out::stderr(&format!("error: {message}"));
            None
        }
    };
    if !jsonl && built.store().is_persistent() {
        out::stderr(&format!(
            "[run] session {session} (continue it with --session {session})"
        ));
    }
    if let Err(error) = built.close().await {
        out::stderr(&format!("warning: {error}"));
    }
    match stop {
        Some(StopReason::EndTurn) => ExitCode::SUCCESS,
        Some(StopReason::MaxTokens) => ExitCode::from(MAX_TOKENS_EXIT),
        _ => ExitCode::FAILURE,
    }
}

async fn start(built: &app::Built, session: &SessionId, args: &RunArgs) -> Result<Run, String> {
    let engine = built
        .factory()
        .create(SessionRequest::default())
        .await
        .map_err(|e| e.to_string())?;
    // A new session records the workspace it runs in: an ACP agent lists and loads a
    // stored session only inside the directory it recorded.
    let mode = engine.engine().config().mode;
    // The engine's run fires the session's hooks (SessionStart, UserPromptSubmit,
    // Stop), as for every other surface.
    match engine
        .engine()
        .create_session_in(session, mode, built.workspace_root())
        .await
    {
        Ok(()) | Err(EngineError::Store(StoreError::AlreadyExists { .. })) => {}
        Err(error) => return Err(error.to_string()),
    }
    if let Some(mode) = args.mode {
        engine
            .engine()
            .set_mode(session, mode)
            .await
            .map_err(|e| e.to_string())?;
    }
    // `--model` is the session's model from this run on (a continued session keeps
    // its own otherwise).
    if let Some(model) = &args.model.model {
        engine
            .engine()
            .set_model(session, Some(model.clone()))
            .await
            .map_err(|e| e.to_string())?;
    }
    let prompt = args.prompt.clone().unwrap_or_default();
    let run = engine.engine().run(session, prompt).map_err(|e| e.to_string())?;
    run.started().await.map_err(|e| e.to_string())
}

/// Streams the run's events (Ctrl-C or SIGTERM cancels the run, which then ends
/// normally: its children stop, their copies are removed, the build is closed) and
/// returns how it stopped.
async fn follow(mut run: Run, jsonl: bool, prices: Arc<ModelPrices>) -> Option<StopReason> {
    let mut printer = TextPrinter {
        open_line: false,
        model: String::new(),
        prices,
    };
    let mut stop = None;
    let mut interrupted = false;
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(terminate) => Some(terminate),
        Err(error) => {
            out::stderr(&format!("warning: SIGTERM cannot be handled: {error}"));
            None
        }
    };
    loop {
        let event = tokio::select! {
            event = run.next() => event,
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                run.cancel();
                continue;
            }
            Some(()) = terminated(&mut terminate), if !interrupted => {
                interrupted = true;
                run.cancel();
                continue;
            }
        };
        let Some(event) = event else { break };
        if let EventKind::Result { stop: s, .. } = &event.kind {
            stop = Some(*s);
        }
        if jsonl {
            match serde_json::to_string(&event) {
                Ok(line) => out::stdout(&line),
                Err(error) => out::stderr(&format!("warning: an event did not serialize: {error}")),
            }
        } else {
            printer.event(&event);
        }
    }
    stop
}

/// Resolves at the next SIGTERM (never without a handler).
async fn terminated(terminate: &mut Option<Signal>) -> Option<()> {
    match terminate {
        Some(terminate) => terminate.recv().await,
        None => std::future::pending().await,
    }
}

/// `--output text`: assistant text to stdout, one-line tool notes to stderr, the
/// run's tokens and cost at the end.
struct TextPrinter {
    /// Whether stdout is mid-line.
    open_line: bool,
    /// The run's model (from `session.init`).
    model: String,
    /// What models cost.
    prices: Arc<ModelPrices>,
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The run's usage line: `tokens: 1,234 in (1,000 cached) · 56 out · $0.0042`, the
/// cached and cache-write counts only when reported, the cost only when the model's
/// price is known.
fn usage_line(usage: &Usage, cost: Option<f64>) -> String {
    let mut notes = Vec::new();
    if usage.cache_read_tokens > 0 {
        notes.push(format!("{} cached", thousands(usage.cache_read_tokens)));
    }
    if usage.cache_write_tokens > 0 {
        notes.push(format!(
            "{} written to cache",
            thousands(usage.cache_write_tokens)
        ));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let cost = cost
        .map(|dollars| format!(" · ${dollars:.4}"))
        .unwrap_or_default();
    format!(
        "tokens: {} in{notes} · {} out{cost}",
        thousands(usage.input_tokens),
        thousands(usage.output_tokens)
    )
}

/// One line of a child's activity: started, a tool it called, or how it ended.
fn child_activity(activity: &engine_ports::ChildActivity) -> String {
    match activity.phase {
        engine_ports::ChildPhase::Start => "started".to_owned(),
        engine_ports::ChildPhase::Tool => format!(
            "→ {} {}",
            activity.name.as_deref().unwrap_or_default(),
            out::clip(&activity.preview, 120)
        ),
        engine_ports::ChildPhase::End => format!("ended: {}", activity.stop.as_deref().unwrap_or_default()),
    }
}

impl TextPrinter {
    fn event(&mut self, event: &Event) {
        match &event.kind {
            EventKind::MessageDelta { text } => {
                out::stdout_raw(text);
                self.open_line = !text.ends_with('\n');
            }
            EventKind::TurnEnd { .. } => self.end_line(),
            EventKind::ModelRetry {
                attempt,
                status,
                wait_ms,
                max_tokens,
                error,
            } => {
                self.end_line();
                let line = match (max_tokens, status) {
                    (Some(limit), _) => {
                        format!("[model] {error}; asking again with an output limit of {limit} tokens")
                    }
                    (None, Some(status)) => format!(
                        "[model] attempt {attempt} failed (HTTP {status}); retrying in {:.1} s: {}",
                        *wait_ms as f64 / 1000.0,
                        out::clip(error, 200)
                    ),
                    (None, None) => format!(
                        "[model] attempt {attempt} failed; retrying in {:.1} s: {}",
                        *wait_ms as f64 / 1000.0,
                        out::clip(error, 200)
                    ),
                };
                out::stderr(&line);
            }
            EventKind::ToolCall { name, args, .. } => {
                out::stderr(&format!("[tool] {name} {}", out::args_summary(args, 120)));
            }
            EventKind::PermissionAsk { name, reason, .. } => {
                out::stderr(&format!("[ask] {name}: {reason}"));
            }
            EventKind::SubagentStart {
                child_id,
                description,
                ..
            } => {
                self.end_line();
                out::stderr(&format!("[subagent] {child_id} started: {description}"));
            }
            EventKind::SubagentTool {
                child_id,
                name,
                preview,
                ..
            } => {
                out::stderr(&format!(
                    "[subagent] {child_id} → {name} {}",
                    out::clip(preview, 120)
                ));
            }
            EventKind::SubagentEnd { child_id, stop, .. } => {
                out::stderr(&format!("[subagent] {child_id} ended: {stop}"));
            }
            EventKind::ParallelStart {
                child_id,
                branches,
                join,
                ..
            } => {
                self.end_line();
                out::stderr(&format!(
                    "[parallel] {child_id}: {branches} branch(es), join {join}"
                ));
            }
            EventKind::ParallelBranch {
                child_id, activity, ..
            } => {
                out::stderr(&format!("[parallel] {child_id} {}", child_activity(activity)));
            }
            EventKind::TeamStart {
                child_id, members, ..
            } => {
                self.end_line();
                out::stderr(&format!("[team] {child_id}: {}", members.join(", ")));
            }
            EventKind::TeamMember {
                member,
                round,
                activity,
                ..
            } => {
                out::stderr(&format!(
                    "[team] round {round}, {member} {}",
                    child_activity(activity)
                ));
            }
            EventKind::TeamTasks { preview, .. } => {
                out::stderr(&format!("[team] {preview}"));
            }
            EventKind::TeamEnd { child_id, stop, .. } => {
                out::stderr(&format!("[team] {child_id} ended: {stop}"));
            }
            EventKind::ParallelEnd { winner, preview, .. } => {
                let winner = winner.map_or_else(|| "none".to_owned(), |w| format!("branch-{w}"));
                out::stderr(&format!("[parallel] winner: {winner} {preview}"));
            }
            EventKind::ContextCompacted {
                tokens_before,
                tokens_after,
                context_window,
                messages_replaced,
                ..
            } => {
                self.end_line();
                out::stderr(&format!(
                    "[context] compacted: {messages_replaced} messages summarized, about {tokens_before} → {tokens_after} tokens of a {context_window}-token window"
                ));
            }
            EventKind::ElicitationRequest { name, message, .. } => {
                out::stderr(&format!(
                    "[question] {name} asks: {}",
                    out::clip(out::first_line(message), 120)
                ));
            }
            EventKind::ElicitationResult { action, reason, .. } => {
                let why = reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                out::stderr(&format!("[question] {}{}", action.as_str(), out::clip(&why, 200)));
            }
            EventKind::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let status = if *is_error { "error" } else { "ok" };
                out::stderr(&format!(
                    "[tool] {name} → {status}: {}",
                    out::clip(out::first_line(content), 120)
                ));
            }
            EventKind::SessionInit { model, .. } => self.model.clone_from(model),
            EventKind::Result {
                stop, error, usage, ..
            } => {
                self.end_line();
                if *usage != Usage::default() {
                    let cost = self.prices.cost(&self.model, usage);
                    out::stderr(&usage_line(usage, cost));
                }
                if *stop == StopReason::MaxTokens {
                    out::stderr(
                        "[run] stopped: max_tokens: the answer was cut off by the output limit (raise it with --max-tokens)",
                    );
                } else if *stop != StopReason::EndTurn {
                    let detail = error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
                    out::stderr(&format!("[run] stopped: {}{detail}", stop.as_str()));
                }
            }
            _ => {}
        }
    }

    fn end_line(&mut self) {
        if self.open_line {
            out::stdout_raw("\n");
            self.open_line = false;
        }
    }
}
