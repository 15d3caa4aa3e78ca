//! `Team` and `InspectMember` through the real build: rounds driven by messages and
//! tasks, findings, the lead's report or its fallback, the token budget, and what
//! the parent's policy allows.

use adapter_llm::{MockScript, MockTurn};
use engine_core::Approve;
use engine_ports::{ChildPhase, EventKind, PermissionMode, ToolCall, Usage};

use super::{Harness, tool_result};

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

fn team_call(args: serde_json::Value) -> MockTurn {
    MockTurn::text("").with_call(call("c1", "Team", args))
}

fn two_members() -> serde_json::Value {
    serde_json::json!({
        "goal": "Find the TODOs",
        "members": [
            {"name": "lead", "role": "plan the search"},
            {"name": "scout", "role": "search the files", "mutating": true}
        ]
    })
}

#[tokio::test]
async fn members_work_in_rounds_through_messages_tasks_and_findings_and_the_lead_reports() {
    let script = MockScript::new([
        team_call(two_members()),
        MockTurn::text("").with_call(call(
            "c2",
            "InspectMember",
            serde_json::json!({"team_id": "team-p1-c1", "member": "scout"}),
        )),
        MockTurn::text("done"),
    ])
    .with_child(
        "You are lead,",
        [
            MockTurn::text("")
                .with_call(call(
                    "a",
                    "AddTask",
                    serde_json::json!({"description": "search TODOs"}),
                ))
                .with_call(call(
                    "b",
                    "SendMessage",
                    serde_json::json!({"to": "scout", "body": "take task-1"}),
                ))
                .with_call(call(
                    "x",
                    "CompleteTask",
                    serde_json::json!({"task_id": "task-1"}),
                )),
            MockTurn::text("planned"),
            MockTurn::text("REPORT: one TODO, in a.rs"),
        ],
    )
    .with_child(
        "You are scout,",
        [
            MockTurn::text("ready"),
            MockTurn::text("")
                .with_call(call("c", "ClaimTask", serde_json::json!({})))
                .with_call(call(
                    "w",
                    "Write",
                    serde_json::json!({"path": "scratch.txt", "content": "notes"}),
                ))
                .with_call(call(
                    "d",
                    "RecordFinding",
                    serde_json::json!({"finding": "TODO in a.rs"}),
                ))
                .with_call(call(
                    "e",
                    "CompleteTask",
                    serde_json::json!({"task_id": "task-1"}),
                )),
            MockTurn::text("done"),
        ],
    );
    let h = Harness::with_script(script, |cfg, _| cfg.engine.approve = Approve::All).await;
    let events = h.run("p1", "go").await;
    assert_eq!(
        tool_result(&events, "c1"),
        (
            "Team id: team-p1-c1\n\nREPORT: one TODO, in a.rs".to_owned(),
            false
        )
    );
    let rounds: Vec<(String, u64, ChildPhase)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TeamMember {
                member,
                round,
                activity,
                ..
            } if activity.phase != ChildPhase::Tool => Some((member.clone(), *round, activity.phase)),
            _ => None,
        })
        .filter(|(_, _, phase)| *phase == ChildPhase::Start)
        .collect();
    // Round 0 briefs everyone; round 1 runs only the member a message waited for;
    // round 2 has no work; then the lead's report.
    assert_eq!(
        rounds,
        [
            ("lead".to_owned(), 0, ChildPhase::Start),
            ("scout".to_owned(), 0, ChildPhase::Start),
            ("scout".to_owned(), 1, ChildPhase::Start),
            ("lead".to_owned(), 2, ChildPhase::Start),
        ]
    );
    let tasks: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TeamTasks { preview, .. } => Some(preview.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        tasks,
        [
            "task-1 added by lead: search TODOs",
            "task-1 claimed by scout",
            "task-1 completed by scout"
        ]
    );
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::TeamEnd { stop, .. } if stop == "converged"
    )));
    // Only the assignee completes a task.
    let lead = h.events_of("team-p1-c1-lead").await;
    assert_eq!(
        tool_result(&lead, "x"),
        (
            "CompleteTask: task-1 is not claimed: claim it first".to_owned(),
            true
        )
    );
    // The mutating member wrote its own copy, which is gone; nothing was merged.
    let scout = h.events_of("team-p1-c1-scout").await;
    assert!(!tool_result(&scout, "w").1);
    assert!(!h.scratch.path("ws/scratch.txt").exists());
    assert!(h.copies_left().is_empty(), "{:?}", h.copies_left());
    // The message reached the scout at the start of its next turn, fenced.
    let scout_session = h.snapshot("team-p1-c1-scout").await;
    let round_one = &super::user_texts(&scout_session)[1];
    assert!(
        round_one.contains("<message from=\"lead\">\ntake task-1\n</message>"),
        "{round_one}"
    );
    let (transcript, _) = tool_result(&events, "c2");
    assert!(
        transcript.starts_with("Transcript of team-p1-c1-scout: "),
        "{transcript}"
    );
    assert!(
        transcript.contains("[called ClaimTask] [called Write]"),
        "{transcript}"
    );
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn the_budget_stops_the_team_at_a_round_boundary_and_the_findings_stand_in_for_an_empty_report() {
    let spend = |text: &str| MockTurn {
        usage: Some(Usage::new(100, 50)),
        ..MockTurn::text(text)
    };
    let script = MockScript::new([
        team_call(serde_json::json!({
            "goal": "Audit",
            "members": [{"name": "lead", "role": "lead"}, {"name": "helper", "role": "help"}],
            "max_team_tokens": 5000
        })),
        MockTurn::text("done"),
    ])
    .with_child(
        "You are lead,",
        [
            MockTurn {
                usage: Some(Usage::new(100, 50)),
                ..MockTurn::text("")
                    .with_call(call(
                        "f",
                        "RecordFinding",
                        serde_json::json!({"finding": "lead saw X"}),
                    ))
                    .with_call(call(
                        "m",
                        "SendMessage",
                        serde_json::json!({"to": "helper", "body": "go on"}),
                    ))
            },
            spend("briefed"),
            MockTurn::text("").with_call(call("g", "ListTasks", serde_json::json!({}))),
        ],
    )
    .with_child(
        "You are helper,",
        [
            MockTurn::text("").with_call(call(
                "h",
                "RecordFinding",
                serde_json::json!({"finding": "helper saw Y"}),
            )),
            spend("ok"),
        ],
    );
    let h = Harness::with_script(script, |cfg, _| {
        cfg.engine.approve = Approve::All;
        cfg.delegation.max_team_tokens = 200;
    })
    .await;
    let events = h.run("p1", "go").await;
    insta::assert_snapshot!(
        "team_report_of_a_team_stopped_by_its_token_budget",
        tool_result(&events, "c1").0
    );
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::TeamEnd { stop, .. } if stop == "budget"
    )));
    // Round 1 never ran (the helper's message was still waiting): after round 0
    // only the lead's report turn came.
    assert!(!events.iter().any(|e| matches!(
        &e.kind,
        EventKind::TeamMember { member, round: 1, .. } if member == "helper"
    )));
    h.built.close().await.unwrap();
}

#[tokio::test]
async fn team_arguments_are_checked_and_the_call_is_mutating() {
    let script = MockScript::new([
        MockTurn::text("")
            .with_call(call(
                "c1",
                "Team",
                serde_json::json!({"goal": "g", "members": [{"name": "a", "role": "r"}, {"name": "a", "role": "r"}]}),
            ))
            .with_call(call(
                "c2",
                "Team",
                serde_json::json!({"goal": "g", "members": [{"name": "Bad Name", "role": "r"}]}),
            ))
            .with_call(call("c3", "Team", serde_json::json!({"goal": " ", "members": [{"name": "a", "role": "r"}]})))
            .with_call(call(
                "c4",
                "InspectMember",
                serde_json::json!({"team_id": "team-other-c1", "member": "a"}),
            )),
        MockTurn::text("done"),
    ]);
    let h = Harness::with_script(script, |cfg, _| cfg.engine.approve = Approve::All).await;
    let events = h.run("p1", "go").await;
    assert_eq!(
        tool_result(&events, "c1").0,
        "Team: member name \"a\" is given twice"
    );
    assert!(
        tool_result(&events, "c2")
            .0
            .starts_with("Team: member name \"Bad Name\" is invalid"),
        "{}",
        tool_result(&events, "c2").0
    );
    assert_eq!(
        tool_result(&events, "c3").0,
        "Team: `goal` is empty: say what the team should achieve"
    );
    assert_eq!(
        tool_result(&events, "c4").0,
        "InspectMember: unknown team id \"team-other-c1\": no team of this session has exactly that id"
    );
    h.built.close().await.unwrap();

    // Headless read-only approval denies it; plan mode does not offer it.
    let script = MockScript::new([team_call(two_members()), MockTurn::text("done")]);
    let h = Harness::with_script(script.clone(), |_, _| {}).await;
    let events = h.run("p1", "go").await;
    assert!(
        tool_result(&events, "c1")
            .0
            .starts_with("permission denied for Team")
    );
    h.built.close().await.unwrap();
    let h = Harness::with_script(script, |cfg, _| cfg.engine.mode = PermissionMode::Plan).await;
    let events = h.run("p1", "go").await;
    assert_eq!(
        tool_result(&events, "c1").0,
        "tool Team is not available in plan mode: only read-only tools run while planning"
    );
    h.built.close().await.unwrap();
}
