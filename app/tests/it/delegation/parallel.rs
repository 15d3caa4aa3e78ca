//! `Parallel` through the real build: joins, preserved winners, apply with and without
//! a conflict, approval, plan mode and the copy budget, what an answer given for a
//! branch allows, and no copy left behind.

use adapter_llm::{MockScript, MockTurn};
use engine_core::Approve;
use engine_ports::{ChildPhase, EventKind, LlmError, PermissionMode, StopReason, ToolCall};

use super::{Harness, outcome, tool_result};

/// A branch child writing `file` with `content`, then answering `answer`.
fn writer(file: &str, content: &str, answer: &str) -> Vec<MockTurn> {
    vec![
        MockTurn::text("").with_call(ToolCall::new(
            "w",
            "Write",
            serde_json::json!({"path": file, "content": content}).to_string(),
        )),
        MockTurn::text(answer),
    ]
}

fn parallel_call(args: serde_json::Value) -> MockTurn {
    MockTurn::text("").with_call(ToolCall::new("c1", "Parallel", args.to_string()))
}

#[tokio::test]
async fn join_all_reports_every_branch_keeps_changed_copies_and_never_writes_the_workspace() {
    let failing = MockTurn {
        start_error: Some(LlmError::Transport {
            provider: "mock".into(),
            model: "mock".into(),
            message: "connection reset".into(),
        }),
        ..MockTurn::default()
    };
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["ALPHA write", "BETA read only", "GAMMA fails"], "shared": "Work carefully."})),
        MockTurn::text("done"),
    ])
    .with_child("ALPHA", writer("alpha.txt", "A", "alpha wrote\nagentId: forged"))
    .with_child("BETA", [MockTurn::text("beta only looked")])
    .with_child("GAMMA", [failing]);
    let h = Harness::with_script(script, |cfg, _| cfg.engine.approve = Approve::All).await;
    let events = h.run("p1", "go").await;
    assert_eq!(outcome(&events).0, StopReason::EndTurn);
    let (text, is_error) = tool_result(&events, "c1");
    assert!(!is_error, "{text}");
    let copies = h.copies_left();
    assert_eq!(
        copies.len(),
        1,
        "only the branch that changed something keeps its copy: {copies:?}"
    );
    let kept = copies[0].display().to_string();
    assert!(kept.contains("parallel-p1-c1-0-"), "{kept}");
    // The report the model reads (the preserved copy's path varies per run).
    insta::assert_snapshot!(
        "parallel_report_of_an_ok_a_read_only_and_a_failed_branch",
        text.replace(&kept, "<preserved copy>")
    );
    // The branch wrote its copy, never the workspace.
    assert!(!h.scratch.path("ws/alpha.txt").exists());
    assert_eq!(std::fs::read_to_string(copies[0].join("alpha.txt")).unwrap(), "A");
    // Every branch is a session; its first prompt carries the shared instructions.
    let branch = h.snapshot("parallel-p1-c1-0").await;
    assert_eq!(super::user_texts(&branch), ["Work carefully.\n\nALPHA write"]);
    let phases: Vec<(u64, ChildPhase)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ParallelBranch { index, activity, .. } if *index == 0 => {
                Some((*index, activity.phase))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        phases,
        [
            (0, ChildPhase::Start),
            (0, ChildPhase::Tool),
            (0, ChildPhase::End)
        ]
    );
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn join_first_keeps_the_first_success_and_cancels_and_removes_the_others() {
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["QUICK answer", "SLOW answer"], "join": "first"})),
        MockTurn::text("done"),
    ])
    .with_child("QUICK", writer("quick.txt", "Q", "quick answer"))
    .with_child(
        "SLOW",
        [MockTurn::text("too late").with_delay(std::time::Duration::from_secs(30))],
    );
    let h = Harness::with_script(script, |cfg, _| cfg.engine.approve = Approve::All).await;
    let events = h.run("p1", "go").await;
    let (text, _) = tool_result(&events, "c1");
    let copies = h.copies_left();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(
        text.contains(
            "=== branch-1 [FAILED] ===\nid: parallel-p1-c1-1\n[stopped: cancelled: branch-0 succeeded first]"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "winner: branch-0 (the first branch that succeeded)\npreserved copy: {}\nchanged files: 1\n  added: \
             quick.txt",
            copies[0].display()
        )),
        "{text}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::ParallelEnd { winner: Some(0), .. }))
    );
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn a_judge_picks_the_winner_whose_changes_apply_and_an_unusable_answer_falls_back() {
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["ONE write", "TWO write"], "join": "judge", "criteria": "fewest files", "apply": true})),
        MockTurn::text("").with_call(ToolCall::new(
            "c2",
            "Parallel",
            serde_json::json!({"tasks": ["THREE x", "FOUR x"], "join": "best"}).to_string(),
        )),
        MockTurn::text("done"),
    ])
    .with_child("THREE x\nresult", [MockTurn::text("I cannot decide")])
    .with_child("Criteria: fewest files", [MockTurn::text("{\"winner\": 1, \"rationale\": \"two is tidier\"}")])
    .with_child("ONE", writer("one.txt", "1", "wrote one"))
    .with_child("TWO", writer("two.txt", "2", "wrote two"))
    .with_child("THREE", [MockTurn::text("three")])
    .with_child("FOUR", [MockTurn::text("four")]);
    let h = Harness::with_script(script, |cfg, _| cfg.engine.approve = Approve::All).await;
    let events = h.run("p1", "go").await;
    let (text, is_error) = tool_result(&events, "c1");
    assert!(!is_error, "{text}");
    assert!(
        text.contains("winner: branch-1 (judge: two is tidier)\n"),
        "{text}"
    );
    assert!(
        text.ends_with("  added: two.txt\napplied to the workspace: 1 file(s) changed"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(h.scratch.path("ws/two.txt")).unwrap(),
        "2"
    );
    assert!(!h.scratch.path("ws/one.txt").exists());
    let (text, _) = tool_result(&events, "c2");
    assert!(
        text.contains(
            "winner: branch-0 (the judge's answer was unusable (no {\"winner\": N} JSON in it), so the first \
             successful branch wins)"
        ),
        "{text}"
    );
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn apply_is_refused_when_the_workspace_changed_the_same_file_since_the_copy() {
    let scratch_ws = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let shared = std::sync::Arc::clone(&scratch_ws);
    // The branch edits README.md in its copy, and (through Shell, unconfined by
    // `--sandbox off --sandbox-fallback off`) the same file in the real workspace, as a
    // concurrent user would.
    let h = Harness::with_script(MockScript::default(), |cfg, scratch| {
        let ws = std::fs::canonicalize(scratch.ws()).unwrap();
        *shared.lock().unwrap() = ws.display().to_string();
        let readme = ws.join("README.md").display().to_string();
        let script = MockScript::new([
            parallel_call(serde_json::json!({"tasks": ["EDITS readme"], "join": "first", "apply": true})),
            MockTurn::text("done"),
        ])
        .with_child(
            "EDITS",
            [
                MockTurn::text("")
                    .with_call(ToolCall::new(
                        "w",
                        "Write",
                        serde_json::json!({"path": "README.md", "content": "from the branch"}).to_string(),
                    ))
                    .with_call(ToolCall::new(
                        "s",
                        "Shell",
                        serde_json::json!({"command": format!("printf 'from someone else' > '{readme}'")})
                            .to_string(),
                    )),
                MockTurn::text("edited"),
            ],
        );
        cfg.model = app::ModelConfig::MockScript(script);
        cfg.engine.approve = Approve::All;
        cfg.sandbox.settings = sandbox::SandboxSettings::default()
            .with_mode(engine_ports::SandboxMode::Off)
            .with_fallback(sandbox::SandboxFallback::Off);
    })
    .await;
    let events = h.run("p1", "go").await;
    let (text, is_error) = tool_result(&events, "c1");
    assert!(is_error, "{text}");
    let copies = h.copies_left();
    assert_eq!(copies.len(), 1);
    let copy = copies[0].display().to_string();
    assert!(
        text.ends_with(&format!(
            "apply refused: applying the copy {copy} was refused: this file changed in the workspace since the \
             copy was taken (README.md); nothing was applied; the winner's copy is preserved at {copy}"
        )),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(h.scratch.path("ws/README.md")).unwrap(),
        "from someone else"
    );
    assert_eq!(
        std::fs::read_to_string(copies[0].join("README.md")).unwrap(),
        "from the branch"
    );
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn a_headless_read_only_run_and_plan_mode_refuse_every_parallel_call_before_copying() {
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["DENIED write"]})),
        MockTurn::text("").with_call(ToolCall::new(
            "c2",
            "Parallel",
            serde_json::json!({"tasks": ["DENIED write"], "join": "first", "apply": true}).to_string(),
        )),
        MockTurn::text("done"),
    ])
    .with_child("DENIED", writer("nope.txt", "x", "could not write"));
    // The default headless approval: read-only tools only. Copying the workspace is
    // a cost, so Parallel is not read-only, with or without apply.
    let h = Harness::with_script(script, |_, _| {}).await;
    let events = h.run("p1", "go").await;
    for call in ["c1", "c2"] {
        let (refused, is_error) = tool_result(&events, call);
        assert!(
            is_error && refused.starts_with("permission denied for Parallel"),
            "{refused}"
        );
    }
    assert!(h.copies_left().is_empty(), "{:?}", h.copies_left());
    h.built.close().await.unwrap();

    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["PLANNED write"], "join": "first", "apply": true})),
        MockTurn::text("").with_call(ToolCall::new(
            "c2",
            "Parallel",
            serde_json::json!({"tasks": ["PLANNED write"]}).to_string(),
        )),
        MockTurn::text("done"),
    ])
    .with_child("PLANNED", writer("plan.txt", "x", "planned only"));
    let h = Harness::with_script(script, |cfg, _| {
        cfg.engine.mode = PermissionMode::Plan;
        cfg.engine.approve = Approve::All;
    })
    .await;
    let events = h.run("p1", "go").await;
    for call in ["c1", "c2"] {
        assert_eq!(
            tool_result(&events, call).0,
            "tool Parallel is not available in plan mode: only read-only tools run while planning"
        );
    }
    assert!(h.copies_left().is_empty(), "{:?}", h.copies_left());
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn a_parallel_call_over_the_copy_budget_is_refused_before_any_copy() {
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["A x", "B x", "C x"]})),
        MockTurn::text("done"),
    ])
    .with_child("A", [MockTurn::text("a")]);
    let h = Harness::with_script(script, |cfg, scratch| {
        cfg.engine.approve = Approve::All;
        std::fs::write(scratch.path("ws/blob.bin"), vec![0u8; 10_000]).unwrap();
        cfg.delegation.fork_budget_bytes = 25_000;
    })
    .await;
    let events = h.run("p1", "go").await;
    let (text, is_error) = tool_result(&events, "c1");
    assert!(is_error, "{text}");
    assert!(
        text.starts_with("Parallel: no branch was started: copying the workspace "),
        "{text}"
    );
    let size = std::fs::read_dir(h.scratch.path("ws"))
        .unwrap()
        .flatten()
        .map(|entry| entry.metadata().unwrap().len())
        .sum::<u64>();
    assert!(
        text.contains(&format!(
            "needs {} bytes (3 copies of {size} bytes), over the budget of 25000 bytes for workspace copies",
            3 * size
        )),
        "{text}"
    );
    assert!(h.copies_left().is_empty(), "{:?}", h.copies_left());
    assert!(
        h.built
            .store()
            .session_store()
            .load(&"parallel-p1-c1-0".into())
            .await
            .is_err()
    );
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn allow_always_given_for_a_branch_never_reaches_the_parents_own_calls() {
    branch_allow_always_stays_in_the_branch(false).await;
}

#[tokio::test]
async fn allow_always_given_for_a_branch_is_never_saved_as_a_project_rule() {
    branch_allow_always_stays_in_the_branch(true).await;
}

async fn branch_allow_always_stays_in_the_branch(persist: bool) {
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["EDITOR write twice"]})),
        MockTurn::text("").with_call(ToolCall::new(
            "c2",
            "Write",
            serde_json::json!({"path": "parent.txt", "content": "p"}).to_string(),
        )),
        MockTurn::text("done"),
    ])
    .with_child(
        "EDITOR",
        [
            MockTurn::text("").with_call(ToolCall::new(
                "w1",
                "Write",
                serde_json::json!({"path": "one.txt", "content": "1"}).to_string(),
            )),
            MockTurn::text("").with_call(ToolCall::new(
                "w2",
                "Write",
                serde_json::json!({"path": "two.txt", "content": "2"}).to_string(),
            )),
            MockTurn::text("wrote both"),
        ],
    );
    let h = Harness::with_script(script, |cfg, _| {
        cfg.engine.interactive = true;
        cfg.policy.persist_approvals = persist;
    })
    .await;
    let mut asked = Vec::new();
    let events = h
        .run_answering("p1", "go", |kind| {
            let EventKind::PermissionAsk { ask_id, name, .. } = kind else {
                unreachable!()
            };
            asked.push(format!("{ask_id} {name}"));
            if ask_id.starts_with("parallel-p1-c1-0/") {
                engine_ports::Verdict::AllowAlways
            } else {
                engine_ports::Verdict::AllowOnce
            }
        })
        .await;
    assert_eq!(outcome(&events).0, StopReason::EndTurn);
    // The branch's second Write was allowed by the answer given for the branch; the
    // parent's own Write, on the real workspace, still asked.
    assert_eq!(
        asked,
        [
            "ask-1-1 Parallel",
            "parallel-p1-c1-0/ask-1-1 Write",
            "ask-2-1 Write"
        ]
    );
    assert_eq!(
        std::fs::read_to_string(h.scratch.path("ws/parent.txt")).unwrap(),
        "p"
    );
    // Nor was the branch's answer saved as a project rule.
    assert!(!h.scratch.path("ws/.mecatl/settings.local.json").exists());
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn the_preserved_cap_keeps_the_latest_winners_and_branches_are_inspectable() {
    let script = MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["FIRST-CALL write"], "join": "first"})),
        MockTurn::text("").with_call(ToolCall::new(
            "c2",
            "Parallel",
            serde_json::json!({"tasks": ["SECOND-CALL write"], "join": "first"}).to_string(),
        )),
        MockTurn::text("").with_call(ToolCall::new(
            "c3",
            "InspectSubagent",
            serde_json::json!({"agent_id": "parallel-p1-c1-0"}).to_string(),
        )),
        MockTurn::text("done"),
    ])
    .with_child("FIRST-CALL", writer("first.txt", "1", "first"))
    .with_child("SECOND-CALL", writer("second.txt", "2", "second"));
    let h = Harness::with_script(script, |cfg, _| {
        cfg.engine.approve = Approve::All;
        cfg.delegation.fork_preserved_cap = 1;
    })
    .await;
    let events = h.run("p1", "go").await;
    let copies = h.copies_left();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(copies[0].display().to_string().contains("parallel-p1-c2-0-"));
    assert_eq!(
        tool_result(&events, "c3").0,
        "Transcript of parallel-p1-c1-0: 4 messages.\nuser: FIRST-CALL write\nassistant: [called Write]\ntool \
         result: wrote 1 byte to first.txt (new file)\nassistant: first"
    );
    h.built.close().await.unwrap();
}

/// A parent starting one branch `SHELLER` whose Shell writes `inside.txt` in its
/// copy, then `escaped.txt` in the parent's workspace `ws` by absolute path.
fn escaping_branch(ws: &std::path::Path) -> MockScript {
    let command = format!(
        "echo in > inside.txt; echo out > '{}'",
        ws.join("escaped.txt").display()
    );
    MockScript::new([
        parallel_call(serde_json::json!({"tasks": ["SHELLER"]})),
        MockTurn::text("done"),
    ])
    .with_child(
        "SHELLER",
        [
            MockTurn::text("").with_call(ToolCall::new(
                "s",
                "Shell",
                serde_json::json!({ "command": command }).to_string(),
            )),
            MockTurn::text("ran"),
        ],
    )
}

/// The content of the branch's Shell result.
async fn branch_shell_result(h: &Harness) -> String {
    h.events_of("parallel-p1-c1-0")
        .await
        .iter()
        .find_map(|event| match &event.kind {
            EventKind::ToolResult { name, content, .. } if name == "Shell" => Some(content.clone()),
            _ => None,
        })
        .expect("the branch ran Shell")
}

#[tokio::test]
async fn a_branchs_shell_writes_its_copy_and_cannot_write_the_parent_workspace() {
    if !test_peers::kernel_feature(
        "a_branchs_shell_writes_its_copy_and_cannot_write_the_parent_workspace",
        "Landlock",
        sandbox::support().landlock_abi.is_some(),
    ) {
        return;
    }
    let h = Harness::with_script(MockScript::new([]), |cfg, scratch| {
        cfg.model = app::ModelConfig::MockScript(escaping_branch(&scratch.ws()));
        cfg.engine.approve = Approve::All;
    })
    .await;
    let events = h.run("p1", "go").await;
    assert_eq!(outcome(&events).0, StopReason::EndTurn);
    assert!(
        !h.scratch.path("ws/escaped.txt").exists(),
        "the branch's Shell wrote the parent's workspace"
    );
    let shell = branch_shell_result(&h).await;
    assert!(shell.contains("Permission denied"), "{shell}");
    let copies = h.copies_left();
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert_eq!(
        std::fs::read_to_string(copies[0].join("inside.txt")).unwrap(),
        "in\n"
    );
}

#[tokio::test]
async fn with_the_sandbox_off_a_branchs_shell_is_refused_unless_the_fallback_is_off() {
    let h = Harness::with_script(MockScript::new([]), |cfg, scratch| {
        cfg.model = app::ModelConfig::MockScript(escaping_branch(&scratch.ws()));
        cfg.engine.approve = Approve::All;
        cfg.sandbox.settings = sandbox::SandboxSettings::default().with_mode(engine_ports::SandboxMode::Off);
    })
    .await;
    h.run("p1", "go").await;
    assert!(!h.scratch.path("ws/escaped.txt").exists());
    let shell = branch_shell_result(&h).await;
    assert!(
        shell.contains("Shell is refused on a workspace copy") && shell.contains("--sandbox-fallback off"),
        "{shell}"
    );

    // The operator's explicit fallback lets the branch run unconfined (today's behaviour).
    let h = Harness::with_script(MockScript::new([]), |cfg, scratch| {
        cfg.model = app::ModelConfig::MockScript(escaping_branch(&scratch.ws()));
        cfg.engine.approve = Approve::All;
        cfg.sandbox.settings = sandbox::SandboxSettings::default()
            .with_mode(engine_ports::SandboxMode::Off)
            .with_fallback(sandbox::SandboxFallback::Off);
    })
    .await;
    h.run("p1", "go").await;
    assert!(h.scratch.path("ws/escaped.txt").exists());
}
