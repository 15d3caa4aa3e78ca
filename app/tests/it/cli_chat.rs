//! `mecated chat`: the interactive client driven through a pseudo-terminal (the
//! screen read as a terminal shows it), and its plain mode driven through pipes.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;

use tokio::io::AsyncWriteExt as _;

use crate::support::Scratch;
use crate::support::pty::Pty;

/// A Write of `file` asked for, then `after` once it ran or was refused; twice.
const TWO_WRITES: &str = r#"{"turns": [
  {"tool_calls": [{"id": "w1", "name": "Write", "args": {"path": "yes.txt", "content": "kept"}}]},
  {"text": "first write handled"},
  {"tool_calls": [{"id": "w2", "name": "Write", "args": {"path": "no.txt", "content": "refused"}}]},
  {"text": "second write handled"}
]}"#;

/// Every stored file under `store/` (sessions, events, audit), concatenated.
fn stored_text(scratch: &Scratch) -> String {
    fn walk(dir: &std::path::Path, text: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, text);
            } else {
                text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut text = String::new();
    walk(&scratch.path("store"), &mut text);
    text
}

/// `chat` arguments over the scratch workspace with `script`, sessions in `store/`.
fn chat_args(scratch: &Scratch, script: &str) -> Vec<String> {
    let script = scratch.write("script.json", script);
    vec![
        "chat".into(),
        "--workspace".into(),
        scratch.ws().display().to_string(),
        "--toolhive=false".into(),
        "--mock-script".into(),
        script.display().to_string(),
        "--store-dir".into(),
        scratch.path("store").display().to_string(),
    ]
}

fn spawn(scratch: &Scratch, args: &[String]) -> Pty {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Pty::spawn(scratch.dir.path(), &args)
}

/// Waits until the chat is back at its prompt: the status line under the input is
/// the last line drawn (while a turn runs no input area is drawn).
fn idle(pty: &Pty) -> String {
    pty.wait_until("the prompt", |screen| {
        screen
            .lines()
            .rev()
            .find(|line| !line.trim().is_empty())
            .is_some_and(|line| line.contains("Enter sends"))
    })
}

/// Leaves with Ctrl-D at the empty prompt and checks the exit and the terminal.
fn leave(mut pty: Pty) {
    idle(&pty);
    pty.send("\x04");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}\n{}", pty.screen());
    assert_restored(&pty);
}

/// The terminal is as the chat found it: line mode with echo, bracketed paste off,
/// the cursor shown, and no alternate screen was ever entered.
fn assert_restored(pty: &Pty) {
    assert!(pty.is_cooked(), "raw mode was left on");
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    let paste_off = raw.rfind("\x1b[?2004l").expect("bracketed paste turned off");
    let paste_on = raw.rfind("\x1b[?2004h").expect("bracketed paste turned on");
    assert!(paste_off > paste_on, "bracketed paste left on");
    assert!(raw.rfind("\x1b[?25h").is_some(), "the cursor is shown again");
    assert!(!raw.contains("\x1b[?1049h"), "no alternate screen");
}

#[test]
fn a_prompt_streams_its_answer_on_screen_and_joins_the_private_history() {
    let scratch = Scratch::new();
    let script = scratch.write(
        "script.json",
        r#"{"turns": [{"text": "Hello **there**, this answer was streamed.\n```sh\nls -l\n```\ndone"}]}"#,
    );
    // No --store-dir: the session and the history go to the workspace's chat
    // directory under the XDG state directory.
    let ws = scratch.ws().display().to_string();
    let script = script.display().to_string();
    let mut pty = Pty::spawn(
        scratch.dir.path(),
        &[
            "chat",
            "--workspace",
            &ws,
            "--toolhive=false",
            "--mock-script",
            &script,
        ],
    );
    idle(&pty);
    pty.send("say hello\r");
    let screen = pty.wait_for("Hello there, this answer was streamed.");
    assert!(screen.contains("› say hello"), "{screen}");
    let screen = pty.wait_for("│ ls -l");
    assert!(screen.contains("╭─ sh"), "the code block is set apart:\n{screen}");
    pty.wait_for("done");
    leave(pty);

    let chat = scratch.path(".local/state/mecatl/chat");
    let workspace_dir = std::fs::read_dir(&chat).unwrap().next().unwrap().unwrap().path();
    let history = workspace_dir.join("history");
    assert_eq!(std::fs::read_to_string(&history).unwrap(), "\"say hello\"\n");
    assert_eq!(
        std::fs::metadata(&history).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let sessions = std::fs::read_dir(workspace_dir.join("sessions")).unwrap().count();
    assert!(sessions > 0, "the session was stored");
}

#[test]
fn an_ask_answered_y_writes_the_file_and_one_answered_n_does_not_and_tells_the_model_why() {
    let scratch = Scratch::new();
    let mut pty = spawn(&scratch, &chat_args(&scratch, TWO_WRITES));
    idle(&pty);
    pty.send("write the first\r");
    let screen = pty.wait_for("allow? [y]");
    assert!(screen.contains("? Write path=yes.txt content=kept"), "{screen}");
    assert!(
        screen.contains("+ kept"),
        "the ask shows the content as a diff:\n{screen}"
    );
    pty.send("y");
    pty.wait_for("first write handled");
    idle(&pty);
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("yes.txt")).unwrap(),
        "kept"
    );

    pty.send("write the second\r");
    pty.wait_until("the second ask", |s| {
        s.matches("allow? [y]").count() == 1 && s.contains("no.txt")
    });
    pty.send("n");
    pty.wait_for("why not? ›");
    pty.send("keep it in notes.md\r");
    let screen = pty.wait_for("second write handled");
    assert!(screen.contains("→ no: keep it in notes.md"), "{screen}");
    assert!(!scratch.ws().join("no.txt").exists());
    leave(pty);
    assert!(
        stored_text(&scratch).contains("the operator denied it, saying: keep it in notes.md"),
        "the model read the reason in the call's result"
    );
}

#[test]
fn in_plan_mode_a_mutating_call_is_refused_without_an_ask() {
    let scratch = Scratch::new();
    let mut pty = spawn(&scratch, &chat_args(&scratch, TWO_WRITES));
    idle(&pty);
    pty.send("/mode plan\r");
    pty.wait_for("mode plan ·");
    idle(&pty);
    pty.send("write it\r");
    let screen = pty.wait_for("first write handled");
    assert!(screen.contains("⎿ error"), "{screen}");
    assert!(screen.contains("not available in plan mode"), "{screen}");
    assert!(!screen.contains("allow? [y]"), "plan mode never asks:\n{screen}");
    assert!(!scratch.ws().join("yes.txt").exists());
    leave(pty);
}

#[test]
fn ctrl_c_cancels_a_running_turn_and_the_chat_goes_on() {
    let scratch = Scratch::new();
    let slow = r#"{"turns": [{"delay_ms": 30000, "text": "too late"}]}"#;
    let mut pty = spawn(&scratch, &chat_args(&scratch, slow));
    idle(&pty);
    pty.send("take your time\r");
    pty.wait_for("› take your time");
    pty.send("\x03");
    pty.wait_for("⏹ interrupted");
    pty.send("/cost\r");
    let screen = pty.wait_for("tokens so far");
    assert!(!screen.contains("too late"), "{screen}");
    leave(pty);
}

#[test]
fn resume_picks_a_past_session_and_shows_its_turns() {
    let scratch = Scratch::new();
    let script = r#"{"turns": [{"text": "the tide turns at six"}, {"text": "still six"}]}"#;
    let args = chat_args(&scratch, script);
    let mut first = spawn(&scratch, &args);
    idle(&first);
    first.send("when does the tide turn?\r");
    first.wait_for("the tide turns at six");
    leave(first);

    let mut resumed = args.clone();
    resumed.push("--resume".into());
    let mut pty = spawn(&scratch, &resumed);
    let screen = pty.wait_for("pick ›");
    assert!(screen.contains(" 1. when does the tide turn?"), "{screen}");
    pty.send("1\r");
    let screen = pty.wait_for("continuing session");
    assert!(screen.contains("› when does the tide turn?"), "{screen}");
    assert!(screen.contains("the tide turns at six"), "{screen}");
    idle(&pty);
    pty.send("and tomorrow?\r");
    pty.wait_for("still six");
    leave(pty);
}

#[test]
fn sigterm_during_a_turn_ends_the_chat_and_restores_the_terminal() {
    let scratch = Scratch::new();
    let slow = r#"{"turns": [{"delay_ms": 30000, "text": "too late"}]}"#;
    let mut pty = spawn(&scratch, &chat_args(&scratch, slow));
    idle(&pty);
    pty.send("take your time\r");
    pty.wait_for("› take your time");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pty.pid()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}");
    assert_restored(&pty);
}

/// `mecated chat` with `input` on stdin (not a terminal).
async fn plain(scratch: &Scratch, script: &str, extra: &[&str], input: &str) -> crate::support::Output {
    let mut args = chat_args(scratch, script);
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let mut command = crate::support::mecated_command(scratch.dir.path());
    command
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(crate::support::pty::PTY_WAIT, child.wait_with_output())
        .await
        .expect("mecated chat ends at the end of its input")
        .unwrap();
    crate::support::Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: std::time::Duration::ZERO,
    }
}

#[tokio::test]
async fn plain_mode_answers_asks_from_input_lines() {
    let scratch = Scratch::new();
    let input = "write the first\ny\nwrite the second\nn, keep it in notes.md\n";
    let output = plain(&scratch, TWO_WRITES, &[], input).await;
    assert_eq!(output.code, 0, "{output:?}");
    let out = &output.stdout;
    assert!(out.contains("? Write path=yes.txt content=kept\n"), "{out}");
    assert!(
        out.contains("  allow? y = yes once, a = always (this tool, this session), n [why] = no\n"),
        "{out}"
    );
    assert!(out.contains("● Write path=yes.txt content=kept\n"), "{out}");
    assert!(out.contains("first write handled\n"), "{out}");
    assert!(out.contains("second write handled\n"), "{out}");
    assert_eq!(
        std::fs::read_to_string(scratch.ws().join("yes.txt")).unwrap(),
        "kept"
    );
    assert!(!scratch.ws().join("no.txt").exists());
    assert!(
        stored_text(&scratch).contains("the operator denied it, saying: keep it in notes.md"),
        "the reason on the line reached the model"
    );
    assert!(!out.contains('\u{1b}'), "plain text only:\n{out}");
}

#[tokio::test]
async fn plain_mode_runs_chat_commands_and_multi_line_prompts() {
    let scratch = Scratch::new();
    let script = r#"{"turns": [{"text": "got two lines"}]}"#;
    let input =
        "/mode plan\n/model other\n/compact\n/tools\nfirst line \\\nsecond line\n/cost\n/bogus-command\n";
    let output = plain(&scratch, script, &[], input).await;
    assert_eq!(output.code, 0, "{output:?}");
    let out = &output.stdout;
    assert!(out.contains("mode: plan\n"), "{out}");
    assert!(
        out.contains("no model \"other\" here: choose one of mock"),
        "only the offered models are taken:\n{out}"
    );
    assert!(out.contains("/compact is not available"), "{out}");
    assert!(out.contains("tools in mode plan:"), "{out}");
    assert!(out.contains("  Read (core, read-only)"), "{out}");
    assert!(!out.contains("  Write (core"), "plan mode hides Write:\n{out}");
    assert!(out.contains("got two lines\n"), "{out}");
    assert!(out.contains("tokens so far:"), "{out}");
    // A /name the palette does not know goes to the model as it is (here: the script
    // has run out).
    assert!(out.contains("The mock script is exhausted"), "{out}");
}

#[tokio::test]
async fn plain_mode_resumes_a_session_by_id_and_refuses_an_unknown_one() {
    let scratch = Scratch::new();
    let script = r#"{"turns": [{"text": "first answer"}, {"text": "second answer"}]}"#;
    let first = plain(&scratch, script, &[], "remember the tide\n/resume\n").await;
    assert_eq!(first.code, 0, "{first:?}");
    let id = first
        .stdout
        .lines()
        .find(|line| line.contains("1. remember the tide"))
        .and_then(|line| line.rsplit(" · ").next())
        .unwrap_or_else(|| panic!("the listing names the session:\n{}", first.stdout))
        .to_owned();
    let second = plain(&scratch, script, &["--resume", &id], "and now?\n").await;
    assert_eq!(second.code, 0, "{second:?}");
    assert!(
        second.stdout.starts_with("› remember the tide\nfirst answer\n"),
        "{}",
        second.stdout
    );
    assert!(second.stdout.contains("second answer"), "{}", second.stdout);

    let unknown = plain(&scratch, script, &["--resume", "no-such-session"], "").await;
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(
        unknown.stderr.contains("no stored session \"no-such-session\""),
        "{}",
        unknown.stderr
    );
}

#[test]
fn mecated_alone_on_a_terminal_starts_a_chat() {
    let scratch = Scratch::new();
    // No model flag: the chat's own configuration error, not the command-line usage.
    let mut pty = Pty::spawn(scratch.dir.path(), &[]);
    let status = pty.wait_exit();
    let screen = pty.screen();
    assert_eq!(status.code(), Some(2), "{screen}");
    assert!(screen.contains("a model is required"), "{screen}");
    assert!(!screen.contains("Usage:"), "{screen}");
}

#[tokio::test]
async fn plain_mode_answers_a_servers_question_field_by_field() {
    const TEST: &str = "plain_mode_answers_a_servers_question_field_by_field";
    let Some(peer) = test_peers::elicit_server(TEST) else {
        return;
    };
    let scratch = Scratch::new();
    let script = r#"{"turns": [
      {"tool_calls": [{"id": "q1", "name": "mcp__py__ask_name", "args": {}}]},
      {"text": "greeted"}
    ]}"#;
    let server = format!("py={}/mcp", peer.base_url());
    // The name (required), then Enter to skip the optional age.
    let input = "who am I?\nAda\n\n";
    let output = plain(
        &scratch,
        script,
        &["--mcp-server", &server, "--approve", "all"],
        input,
    )
    .await;
    assert_eq!(output.code, 0, "{output:?}");
    let out = &output.stdout;
    assert!(
        out.contains("? mcp__py__ask_name asks:\n  What is your name?\n"),
        "{out}"
    );
    assert!(out.contains("● mcp__py__ask_name\n"), "{out}");
    assert!(out.contains("  name — Name (text):\n"), "{out}");
    assert!(
        out.contains("  age — Age (whole number, Enter to skip):\n"),
        "{out}"
    );
    assert!(out.contains("· hello Ada\n"), "the server got the answer:\n{out}");
    assert!(out.contains("greeted\n"), "{out}");
}

#[tokio::test]
async fn slash_model_switches_to_an_offered_model_from_the_next_prompt_on() {
    let scratch = Scratch::new();
    let script = r#"{"turns": [{"text": "first answer"}, {"text": "second answer"}]}"#;
    let input = "/model\nhello\n/model other\n/model\nagain\n";
    let output = plain(&scratch, script, &["--models", "other"], input).await;
    assert_eq!(output.code, 0, "{output:?}");
    let out = &output.stdout;
    assert!(
        out.contains("model: mock (/model NAME switches to other)\n"),
        "{out}"
    );
    assert!(out.contains("model: other from the next prompt on\n"), "{out}");
    assert!(
        out.contains("model: other (/model NAME switches to mock)\n"),
        "{out}"
    );
    assert!(out.contains("second answer\n"), "{out}");
    let stored = stored_text(&scratch);
    assert!(
        stored.contains(r#""model":"other""#),
        "the session's model is stored with it: {stored}"
    );
}
