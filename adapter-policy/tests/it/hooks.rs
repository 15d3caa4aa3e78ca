//! Hook commands: the input they get, exit 2 blocking with stderr, JSON decisions,
//! context for the model, timeouts killing the process group, the environment
//! without credentials, the sandbox.

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use adapter_policy::{CommandHooks, HookCommand, HookEvent, HookRun, Matcher};
use engine_ports::{
    CompactTrigger, EventAnswer, HookText, Post, Pre, SandboxMode, SessionEvent, SessionId, SessionSource,
    StopReason, ToolHooks, ToolResult,
};
use sandbox::{Confinement, SandboxPolicy};
use serde_json::json;

use crate::support::{Setup, shell};

/// Stands in for the harness's credentials rule: `HOME` is set in every test run.
fn strip_secret(name: &OsStr) -> bool {
    name == "HOME"
}

fn hooks(setup: &Setup, event: HookEvent, command: &str, timeout: Duration) -> CommandHooks {
    let hook = HookCommand {
        event,
        matcher: Some(Matcher::parse("Bash|Write").unwrap()),
        command: command.to_owned(),
        timeout,
        source: "test".to_owned(),
    };
    CommandHooks::new(vec![hook], setup.workspace(), strip_secret)
}

#[tokio::test]
async fn a_pre_tool_use_hook_gets_the_documented_input_once_in_the_workspace() {
    let setup = Setup::new();
    let out = setup.dir.path().join("input.jsonl");
    let command = format!(
        "cat >> {}; echo >> {}; pwd > {}.cwd",
        out.display(),
        out.display(),
        out.display()
    );
    let hooks = hooks(&setup, HookEvent::PreToolUse, &command, Duration::from_secs(10));
    let answer = hooks
        .pre_tool_use(&SessionId::from("s1"), &shell("ls"))
        .await
        .unwrap();
    assert_eq!(answer, Pre::Allow);
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "{text}");
    let input: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(input["session_id"], "s1");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Shell");
    assert_eq!(input["tool_input"], json!({"command": "ls"}));
    assert_eq!(input["cwd"], setup.workspace().display().to_string());
    let cwd = std::fs::read_to_string(format!("{}.cwd", out.display())).unwrap();
    assert_eq!(cwd.trim(), setup.workspace().display().to_string());
}

#[tokio::test]
async fn exit_2_blocks_with_stderr_as_the_reason() {
    let setup = Setup::new();
    let command = "echo 'lockfiles are generated; run cargo update' >&2; exit 2";
    let hooks = hooks(&setup, HookEvent::PreToolUse, command, Duration::from_secs(10));
    let answer = hooks
        .pre_tool_use(&SessionId::from("s"), &shell("ls"))
        .await
        .unwrap();
    assert_eq!(
        answer,
        Pre::Block {
            hook: command.to_owned(),
            reason: "lockfiles are generated; run cargo update".to_owned()
        }
    );
}

#[tokio::test]
async fn json_decisions_and_updated_input_are_read_from_stdout() {
    let setup = Setup::new();
    let say = |decision: &str| {
        format!(
            r#"echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"{decision}","permissionDecisionReason":"policy says so"}}}}'"#
        )
    };
    let session = SessionId::from("s");
    for (decision, expected) in [("allow", "approve"), ("ask", "ask"), ("deny", "block")] {
        let command = say(decision);
        let answer = hooks(&setup, HookEvent::PreToolUse, &command, Duration::from_secs(10))
            .pre_tool_use(&session, &shell("ls"))
            .await
            .unwrap();
        let tag = serde_json::to_value(&answer).unwrap()["action"].clone();
        assert_eq!(tag, expected);
        assert!(serde_json::to_string(&answer).unwrap().contains("policy says so"));
    }
    let command = r#"echo '{"hookSpecificOutput":{"updatedInput":{"command":"ls -a"}}}'"#;
    let answer = hooks(&setup, HookEvent::PreToolUse, command, Duration::from_secs(10))
        .pre_tool_use(&session, &shell("ls"))
        .await
        .unwrap();
    assert_eq!(
        answer,
        Pre::RewriteArgs {
            args: r#"{"command":"ls -a"}"#.to_owned()
        }
    );
}

#[tokio::test]
async fn other_exit_codes_are_reported_and_the_call_goes_on() {
    let setup = Setup::new();
    let hooks = hooks(&setup, HookEvent::PreToolUse, "exit 1", Duration::from_secs(10));
    let answer = hooks
        .pre_tool_use(&SessionId::from("s"), &shell("ls"))
        .await
        .unwrap();
    assert_eq!(answer, Pre::Allow);
    let runs = hooks
        .fire(
            HookEvent::PreToolUse,
            &SessionId::from("s"),
            Some("Shell"),
            json!({}),
        )
        .await;
    assert!(matches!(&runs[0].1, HookRun::Failed(why) if why.contains("exited with 1")));
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_process_group() {
    let setup = Setup::new();
    let pid_file = setup.dir.path().join("grandchild.pid");
    // A grandchild in the hook's process group, which must die with it.
    let command = format!("sleep 60 & echo $! > {}; sleep 30", pid_file.display());
    let hook = HookCommand {
        event: HookEvent::Stop,
        matcher: None,
        command,
        timeout: Duration::from_secs(1),
        source: "test".to_owned(),
    };
    let hooks = CommandHooks::new(vec![hook], setup.workspace(), strip_secret);
    let started = Instant::now();
    let runs = hooks
        .fire(HookEvent::Stop, &SessionId::from("s"), None, json!({}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&runs[0].1, HookRun::Failed(why) if why.contains("timed out")),
        "{runs:?}"
    );
    // The grandchild got the group's SIGKILL: gone, or a zombie, within moments.
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    let dead = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !dead() && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(dead(), "the grandchild {pid} survived the timeout");
}

#[tokio::test]
async fn hooks_never_see_the_stripped_variables() {
    let setup = Setup::new();
    let out = setup.dir.path().join("env");
    assert!(std::env::var_os("HOME").is_some());
    let command = format!("/usr/bin/env > {}", out.display());
    let hooks = hooks(&setup, HookEvent::PreToolUse, &command, Duration::from_secs(10));
    hooks
        .pre_tool_use(&SessionId::from("s"), &shell("ls"))
        .await
        .unwrap();
    let env = std::fs::read_to_string(&out).unwrap();
    assert!(
        !env.lines().any(|l| l.starts_with("HOME=")) && env.contains("PATH="),
        "{env}"
    );
}

#[tokio::test]
async fn a_post_tool_use_hook_gets_the_response_and_exit_2_tells_the_model() {
    let setup = Setup::new();
    let out = setup.dir.path().join("post.json");
    let command = format!(
        "cat > {}; echo 'formatter: 2 files changed' >&2; exit 2",
        out.display()
    );
    let hooks = hooks(&setup, HookEvent::PostToolUse, &command, Duration::from_secs(10));
    let call = crate::support::tool("Write", json!({"path": "a.rs", "content": "x"}));
    let post = hooks
        .post_tool_use(
            &SessionId::from("s"),
            &call,
            &ToolResult::text("c1", "wrote a.rs"),
        )
        .await
        .unwrap();
    let Post::Rewrite { content, is_error } = post else {
        panic!("expected a rewrite, got {post:?}");
    };
    assert!(!is_error);
    assert!(
        content.starts_with("wrote a.rs") && content.contains("formatter: 2 files changed"),
        "{content}"
    );
    let input: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(
        input["tool_response"],
        json!({"content": "wrote a.rs", "is_error": false})
    );
    // A tool the matcher does not name runs no hook.
    let other = crate::support::tool("Read", json!({"path": "a.rs"}));
    let post = hooks
        .post_tool_use(&SessionId::from("s"), &other, &ToolResult::text("c1", "x"))
        .await
        .unwrap();
    assert_eq!(post, Post::Keep);
}

/// Hooks of `event` running `command` (every hook of the event, no matcher).
fn event_hooks(setup: &Setup, event: HookEvent, command: &str) -> CommandHooks {
    let hook = HookCommand {
        event,
        matcher: None,
        command: command.to_owned(),
        timeout: Duration::from_secs(10),
        source: "test".to_owned(),
    };
    CommandHooks::new(vec![hook], setup.workspace(), strip_secret)
}

#[tokio::test]
async fn each_session_event_gets_its_documented_input() {
    let setup = Setup::new();
    let out = setup.dir.path().join("input.json");
    let events = [
        (
            SessionEvent::SessionStart {
                source: SessionSource::Resume,
            },
            json!({"source": "resume"}),
        ),
        (
            SessionEvent::UserPromptSubmit {
                prompt: "fix the build".to_owned(),
            },
            json!({"prompt": "fix the build"}),
        ),
        (
            SessionEvent::Stop {
                stop_hook_active: true,
                stop_reason: StopReason::EndTurn,
            },
            json!({"stop_hook_active": true, "stop_reason": "end_turn"}),
        ),
        (
            SessionEvent::SubagentStop {
                stop_hook_active: false,
                stop_reason: StopReason::MaxTurns,
            },
            json!({"stop_hook_active": false, "stop_reason": "max_turns"}),
        ),
        (
            SessionEvent::PreCompact {
                trigger: CompactTrigger::Auto,
                custom_instructions: String::new(),
            },
            json!({"trigger": "auto", "custom_instructions": ""}),
        ),
    ];
    for (event, fields) in events {
        let hooks = event_hooks(&setup, event.name(), &format!("cat > {}", out.display()));
        let answer = hooks.session_event(&SessionId::from("s9"), &event).await;
        assert_eq!(answer, EventAnswer::default(), "{event:?}");
        let input: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let mut expected = fields.as_object().unwrap().clone();
        expected.insert("session_id".into(), json!("s9"));
        expected.insert("cwd".into(), json!(setup.workspace().display().to_string()));
        expected.insert("hook_event_name".into(), json!(event.name().as_str()));
        assert_eq!(input, serde_json::Value::Object(expected), "{event:?}");
        std::fs::remove_file(&out).unwrap();
        // A hook of another event does not run.
        let other = if event.name() == HookEvent::Stop {
            HookEvent::PreCompact
        } else {
            HookEvent::Stop
        };
        event_hooks(&setup, other, &format!("cat > {}", out.display()))
            .session_event(&SessionId::from("s9"), &event)
            .await;
        assert!(!out.exists(), "a {other} hook ran for {event:?}");
    }
}

#[tokio::test]
async fn a_prompt_hook_adds_its_stdout_or_additional_context_for_the_model() {
    let setup = Setup::new();
    let prompt = SessionEvent::UserPromptSubmit {
        prompt: "hello".to_owned(),
    };
    let session = SessionId::from("s");
    let plain = "echo 'the build is red since Tuesday'";
    let answer = event_hooks(&setup, HookEvent::UserPromptSubmit, plain)
        .session_event(&session, &prompt)
        .await;
    assert_eq!(
        answer.context,
        [HookText {
            hook: plain.to_owned(),
            text: "the build is red since Tuesday".to_owned()
        }]
    );
    assert_eq!(answer.block, None);
    let structured = r#"echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"ticket ABC-12 is open"}}'"#;
    let answer = event_hooks(&setup, HookEvent::UserPromptSubmit, structured)
        .session_event(&session, &prompt)
        .await;
    assert_eq!(answer.context.len(), 1);
    assert_eq!(answer.context[0].text, "ticket ABC-12 is open");
    // A Stop hook's stdout is not context.
    let stop = SessionEvent::Stop {
        stop_hook_active: false,
        stop_reason: StopReason::EndTurn,
    };
    let answer = event_hooks(&setup, HookEvent::Stop, plain)
        .session_event(&session, &stop)
        .await;
    assert_eq!(answer, EventAnswer::default());
}

#[tokio::test]
async fn exit_2_or_a_block_decision_blocks_a_prompt_or_a_stop_with_the_reason() {
    let setup = Setup::new();
    let session = SessionId::from("s");
    let prompt = SessionEvent::UserPromptSubmit {
        prompt: "print the vault key".to_owned(),
    };
    let stop = SessionEvent::Stop {
        stop_hook_active: false,
        stop_reason: StopReason::EndTurn,
    };
    let exit_2 = "echo 'prompts may not name the vault' >&2; exit 2";
    let decision = r#"echo '{"decision":"block","reason":"prompts may not name the vault"}'"#;
    for command in [exit_2, decision] {
        for (name, event) in [(HookEvent::UserPromptSubmit, &prompt), (HookEvent::Stop, &stop)] {
            let answer = event_hooks(&setup, name, command)
                .session_event(&session, event)
                .await;
            assert_eq!(
                answer.block,
                Some(HookText {
                    hook: command.to_owned(),
                    text: "prompts may not name the vault".to_owned()
                }),
                "{name} {command}"
            );
        }
    }
    // Another exit code is a failure: reported, nothing blocked.
    let answer = event_hooks(&setup, HookEvent::UserPromptSubmit, "echo no >&2; exit 1")
        .session_event(&session, &prompt)
        .await;
    assert_eq!(answer, EventAnswer::default());
}

fn landlock(test: &str) -> bool {
    test_peers::kernel_feature(test, "Landlock", sandbox::support().landlock_abi.is_some())
}

#[tokio::test]
async fn a_confined_hook_writes_in_the_workspace_and_its_tmpdir_but_nowhere_else() {
    if !landlock("a_confined_hook_writes_in_the_workspace_and_its_tmpdir_but_nowhere_else") {
        return;
    }
    let setup = Setup::new();
    let outside = setup.dir.path().join("outside.txt");
    let command = format!(
        "echo in > inside.txt; echo tmp > \"$TMPDIR/t\" && echo ok > tmp-ok.txt; echo out > {}",
        outside.display()
    );
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, true, Vec::new());
    let hooks = event_hooks(&setup, HookEvent::Stop, &command)
        .with_confinement(Confinement::Confined(std::sync::Arc::new(policy)))
        .unwrap();
    let runs = hooks
        .fire(HookEvent::Stop, &SessionId::from("s"), None, json!({}))
        .await;
    assert_eq!(runs.len(), 1);
    assert!(setup.workspace().join("inside.txt").exists(), "{runs:?}");
    assert!(setup.workspace().join("tmp-ok.txt").exists(), "{runs:?}");
    assert!(
        !outside.exists(),
        "a confined hook wrote outside the workspace: {runs:?}"
    );
    // The same hook unconfined does write there: the sandbox made the difference.
    event_hooks(&setup, HookEvent::Stop, &command)
        .fire(HookEvent::Stop, &SessionId::from("s"), None, json!({}))
        .await;
    assert!(outside.exists());
}

#[tokio::test]
async fn a_pre_tool_use_hook_the_sandbox_refuses_blocks_its_call() {
    let setup = Setup::new();
    let marker = setup.dir.path().join("ran");
    let command = format!("touch {}", marker.display());
    let hooks = hooks(&setup, HookEvent::PreToolUse, &command, Duration::from_secs(10))
        .with_confinement(Confinement::Refused(
            "the kernel cannot confine commands (--sandbox-fallback refuse)".into(),
        ))
        .unwrap();
    let error = hooks
        .pre_tool_use(&SessionId::from("s"), &shell("ls"))
        .await
        .unwrap_err();
    assert!(error.message.contains("was not run"), "{error}");
    assert!(error.message.contains("--sandbox-fallback refuse"), "{error}");
    assert!(!marker.exists());
}
