//! `mecated demo`: the offline main job — a scripted session on a small temporary
//! workspace, printed as a readable transcript, with the audit files it left.

use std::path::PathBuf;
use std::process::ExitCode;

use app::demo::{DEMO_PROMPT, demo_config, demo_script, demo_shell, write_demo_workspace};
use app::{Built, build, new_session_id};
use engine_ports::{Event, EventKind, SessionId, StopReason, Verdict};
use futures::StreamExt as _;

use crate::cli::DemoArgs;
use crate::out;

/// Lines of each tool result the transcript shows.
const RESULT_LINES: usize = 4;

/// Runs the demo; exit 0 iff the session ends with `end_turn`.
pub(crate) async fn demo(args: DemoArgs) -> ExitCode {
    let (workspace, store_dir) = match locations(&args) {
        Ok(paths) => paths,
        Err(error) => {
            out::stderr(&format!("error: the demo workspace cannot be prepared: {error}"));
            return ExitCode::FAILURE;
        }
    };
    let shell = demo_shell();
    let script = match demo_script(shell.is_some()) {
        Ok(script) => script,
        Err(error) => return out::failure(error),
    };
    let built = match build(demo_config(&workspace, &store_dir, shell, script)).await {
        Ok(built) => built,
        Err(error) => return out::failure(error),
    };
    let session = SessionId::from(format!("demo-{}", new_session_id()));
    out::stdout("mecated demo: an offline scripted session (mock model, no network, no key)");
    out::stdout(&format!("user: {DEMO_PROMPT}\n"));
    let stop = transcript(&built, &session).await;
    let closed = built.close().await;
    out::stdout("");
    out::stdout(&format!("workspace: {}", built.workspace_root().display()));
    if let Some(paths) = built.store().paths(&session) {
        out::stdout("audit files:");
        out::stdout(&format!("  session snapshot  {}", paths.snapshot.display()));
        out::stdout(&format!("  tool calls        {}", paths.tools.display()));
        out::stdout(&format!("  events            {}", paths.events.display()));
    }
    if let Err(error) = closed {
        out::stderr(&format!("warning: {error}"));
    }
    match stop {
        Some(StopReason::EndTurn) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}

/// The workspace (with the demo files written into it) and the store directory:
/// `--workspace` / `--store-dir`, else `workspace/` and `store/` side by side in a
/// fresh temporary directory that is kept for inspection.
fn locations(args: &DemoArgs) -> std::io::Result<(PathBuf, PathBuf)> {
    let base = if args.workspace.is_none() || args.store_dir.is_none() {
        Some(tempfile::Builder::new().prefix("mecated-demo-").tempdir()?.keep())
    } else {
        None
    };
    let under = |name: &str| base.as_deref().map(|b| b.join(name)).unwrap_or_default();
    let workspace = args.workspace.clone().unwrap_or_else(|| under("workspace"));
    let store = args.store_dir.clone().unwrap_or_else(|| under("store"));
    std::fs::create_dir_all(&workspace)?;
    write_demo_workspace(&workspace)?;
    Ok((workspace, store))
}

/// Runs the session, answering every permission ask `allow_once`, and prints it.
async fn transcript(built: &Built, session: &SessionId) -> Option<StopReason> {
    let engine = built.shared_engine();
    let mut run = match engine.run(session, DEMO_PROMPT) {
        Ok(run) => run,
        Err(error) => {
            out::stderr(&format!("error: {error}"));
            return None;
        }
    };
    let mut text = String::new();
    let mut stop = None;
    while let Some(event) = run.next().await {
        if !matches!(event.kind, EventKind::MessageDelta { .. }) {
            flush_text(&mut text);
        }
        match &event.kind {
            EventKind::MessageDelta { text: delta } => text.push_str(delta),
            EventKind::PermissionAsk {
                ask_id, name, reason, ..
            } => {
                out::stdout(&format!("  ? {name} asks for approval: {reason}"));
                let approved = engine.approve(session, ask_id, Verdict::AllowOnce);
                let note = if approved {
                    "approved automatically (allow_once)"
                } else {
                    "the ask was already answered"
                };
                out::stdout(&format!("  ✓ {note}"));
            }
            EventKind::Result {
                stop: s,
                turns,
                tool_calls,
                error,
                ..
            } => {
                stop = Some(*s);
                let detail = error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
                out::stdout(&format!(
                    "\nstop: {} after {turns} turn(s) and {tool_calls} tool call(s){detail}",
                    s.as_str()
                ));
            }
            _ => print_tool_event(&event),
        }
    }
    stop
}

fn flush_text(text: &mut String) {
    if !text.trim().is_empty() {
        out::stdout(&format!("assistant: {}", text.trim()));
    }
    text.clear();
}

fn print_tool_event(event: &Event) {
    match &event.kind {
        EventKind::ToolCall { name, args, .. } => {
            out::stdout(&format!("  → {name} {}", out::args_summary(args, 100)));
        }
        EventKind::ToolResult {
            name,
            content,
            is_error,
            ..
        } => {
            let lines: Vec<&str> = content.lines().collect();
            let status = if *is_error { "error" } else { "ok" };
            out::stdout(&format!("  ← {name} {status} ({} line(s))", lines.len()));
            for line in lines.iter().take(RESULT_LINES) {
                out::stdout(&format!("    │ {}", out::clip(line, 100)));
            }
            if lines.len() > RESULT_LINES {
                out::stdout(&format!("    │ … {} more line(s)", lines.len() - RESULT_LINES));
            }
        }
        _ => {}
    }
}
