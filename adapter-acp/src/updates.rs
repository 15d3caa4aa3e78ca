//! D11 events → ACP `session/update` payloads: assistant and reasoning text, tool
//! calls (with a kind and a short title), their progress and results.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use engine_ports::{ChildActivity, ChildPhase, EventKind, clip_chars};
use serde_json::Value;

/// Longest argument summary in a tool call title, in characters.
const TITLE_SUMMARY_CHARS: usize = 80;

/// The `session/update` an event becomes, if any.
///
/// | event | update |
/// |---|---|
/// | `message.delta` | `agent_message_chunk` |
/// | `reasoning.delta` | `agent_thought_chunk` |
/// | `tool.call` | `tool_call` (status `pending`, kind by tool, `rawInput` = args) |
/// | `permission.verdict` allowing | `tool_call_update` `in_progress` |
/// | `tool.result` | `tool_call_update` `completed` / `failed` with the result text |
///
/// | `subagent.*`, `parallel.*`, `team.*` | `tool_call_update` `in_progress` of the delegating call, the child's latest activity as content |
///
/// Everything else (`session.init`, turns, asks, denials, hooks, `result`) has no
/// update of its own: asks become `session/request_permission`, `result` the
/// prompt's response.
pub(crate) fn session_update(event: &EventKind) -> Option<SessionUpdate> {
    match event {
        EventKind::MessageDelta { text } if !text.is_empty() => {
            Some(SessionUpdate::AgentMessageChunk(text_chunk(text)))
        }
        EventKind::ReasoningDelta { text } if !text.is_empty() => {
            Some(SessionUpdate::AgentThoughtChunk(text_chunk(text)))
        }
        EventKind::ToolCall { call_id, name, args } => {
            Some(SessionUpdate::ToolCall(tool_call(call_id.as_str(), name, args)))
        }
        EventKind::PermissionVerdict { call_id, verdict, .. } if verdict.allows() => {
            Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id.as_str().to_owned(),
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            )))
        }
        EventKind::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => Some(tool_result_update(call_id.as_str(), content, *is_error)),
        _ => child_activity(event).map(|(call_id, line)| {
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call_id.to_owned(),
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::InProgress)
                    .content(vec![ToolCallContent::from(ContentBlock::Text(TextContent::new(
                        line,
                    )))]),
            ))
        }),
    }
}

/// What a delegating call's children are doing, as a line for the call's
/// `tool_call_update` (the call's own id, its latest activity as content).
fn child_activity(event: &EventKind) -> Option<(&str, String)> {
    let step = |activity: &ChildActivity| match activity.phase {
        ChildPhase::Start => "started".to_owned(),
        ChildPhase::Tool => format!(
            "{} {}",
            activity.name.as_deref().unwrap_or_default(),
            activity.preview
        ),
        ChildPhase::End => format!("ended ({})", activity.stop.as_deref().unwrap_or_default()),
    };
    Some(match event {
        EventKind::SubagentStart {
            call_id, child_id, ..
        } => (call_id.as_str(), format!("{child_id}: started")),
        EventKind::SubagentTool {
            call_id,
            child_id,
            name,
            preview,
        } => (call_id.as_str(), format!("{child_id}: {name} {preview}")),
        EventKind::SubagentEnd {
            call_id,
            child_id,
            stop,
            ..
        } => (call_id.as_str(), format!("{child_id}: ended ({stop})")),
        EventKind::ParallelStart {
            call_id,
            branches,
            join,
            ..
        } => (call_id.as_str(), format!("{branches} branch(es), join {join}")),
        EventKind::ParallelBranch {
            call_id,
            index,
            activity,
            ..
        } => (call_id.as_str(), format!("branch-{index}: {}", step(activity))),
        EventKind::ParallelEnd { call_id, preview, .. } => (call_id.as_str(), format!("done: {preview}")),
        EventKind::TeamStart { call_id, members, .. } => {
            (call_id.as_str(), format!("team: {}", members.join(", ")))
        }
        EventKind::TeamMember {
            call_id,
            member,
            round,
            activity,
            ..
        } => (
            call_id.as_str(),
            format!("round {round}, {member}: {}", step(activity)),
        ),
        EventKind::TeamTasks { call_id, preview, .. } => (call_id.as_str(), format!("tasks: {preview}")),
        EventKind::TeamEnd { call_id, stop, .. } => (call_id.as_str(), format!("team ended ({stop})")),
        _ => return None,
    })
}

/// The `tool_call_update` carrying a call's final status (`completed`, or `failed`
/// for an error result) and its result text.
pub(crate) fn tool_result_update(call_id: &str, content: &str, is_error: bool) -> SessionUpdate {
    let status = if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_owned(),
        ToolCallUpdateFields::new()
            .status(status)
            .content(vec![ToolCallContent::from(ContentBlock::Text(TextContent::new(
                content.to_owned(),
            )))]),
    ))
}

/// The `tool_call` announcing a call: id = call id, a title, the kind, status
/// `pending`, `rawInput` = the arguments.
pub(crate) fn tool_call(call_id: &str, name: &str, args: &Value) -> ToolCall {
    ToolCall::new(call_id.to_owned(), tool_title(name, args))
        .kind(tool_kind(name))
        .status(ToolCallStatus::Pending)
        .raw_input(args.clone())
}

/// What kind of tool `name` is, for the client's icons and grouping: the core
/// readers `read`, Write and Edit `edit`, Shell `execute`, Glob, Grep and ToolSearch
/// `search`; everything else (MCP tools, skills, drafts) `other`.
pub(crate) fn tool_kind(name: &str) -> ToolKind {
    match name {
        "Read" | "ListDir" | "ReadMcpResource" | "ListMcpResources" => ToolKind::Read,
        "Write" | "Edit" => ToolKind::Edit,
        "Shell" => ToolKind::Execute,
        "Glob" | "Grep" | "ToolSearch" => ToolKind::Search,
        _ => ToolKind::Other,
    }
}

/// `<name> <summary>`: the argument a person recognises the call by (`path`,
/// `pattern`, `command`, …) or else `key=value` pairs, at most 80 characters.
pub(crate) fn tool_title(name: &str, args: &Value) -> String {
    let summary = args_summary(args);
    if summary.is_empty() {
        name.to_owned()
    } else {
        format!("{name} {summary}")
    }
}

fn args_summary(args: &Value) -> String {
    const PRIMARY: [&str; 7] = ["path", "pattern", "command", "query", "url", "uri", "name"];
    let text = match args {
        Value::Object(map) => {
            if let Some(Value::String(value)) = PRIMARY.iter().find_map(|key| map.get(*key)) {
                value.clone()
            } else {
                map.iter()
                    .map(|(key, value)| match value {
                        Value::String(s) => format!("{key}={s}"),
                        other => format!("{key}={other}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            }
        }
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let line = text.lines().next().unwrap_or_default();
    if line.len() < text.len() {
        // More lines follow: the summary always ends with the ellipsis.
        clip_chars(&format!("{line}…"), TITLE_SUMMARY_CHARS).into_owned()
    } else {
        clip_chars(line, TITLE_SUMMARY_CHARS).into_owned()
    }
}

pub(crate) fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

#[cfg(test)]
mod tests {
    use engine_ports::{ToolCallId, Verdict};
    use serde_json::json;

    use super::*;

    fn wire(update: &SessionUpdate) -> Value {
        serde_json::to_value(update).unwrap()
    }

    #[test]
    fn text_and_reasoning_become_chunks() {
        let message = session_update(&EventKind::MessageDelta { text: "done".into() }).unwrap();
        assert_eq!(
            wire(&message),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}})
        );
        let thought = session_update(&EventKind::ReasoningDelta { text: "hmm".into() }).unwrap();
        assert_eq!(wire(&thought)["sessionUpdate"], "agent_thought_chunk");
        assert!(session_update(&EventKind::MessageDelta { text: String::new() }).is_none());
    }

    #[test]
    fn a_call_is_pending_with_kind_title_and_raw_input() {
        let update = session_update(&EventKind::ToolCall {
            call_id: ToolCallId::from("c1"),
            name: "Read".into(),
            args: json!({"path": "README.md"}),
        })
        .unwrap();
        assert_eq!(
            wire(&update),
            json!({
                "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read README.md",
                "kind": "read", "rawInput": {"path": "README.md"}
            })
        );
    }

    #[test]
    fn verdicts_and_results_update_the_call() {
        let allowed = session_update(&EventKind::PermissionVerdict {
            ask_id: "ask-1-1".into(),
            call_id: ToolCallId::from("w1"),
            verdict: Verdict::AllowOnce,
            saved_rule: None,
            reason: None,
        })
        .unwrap();
        assert_eq!(
            wire(&allowed),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "in_progress"})
        );
        assert!(
            session_update(&EventKind::PermissionVerdict {
                ask_id: "ask-1-1".into(),
                call_id: ToolCallId::from("w1"),
                verdict: Verdict::Deny,
                saved_rule: None,
                reason: None,
            })
            .is_none()
        );
        let failed = session_update(&EventKind::ToolResult {
            call_id: ToolCallId::from("w1"),
            name: "Write".into(),
            content: "permission denied".into(),
            is_error: true,
            parts: Vec::new(),
        })
        .unwrap();
        assert_eq!(
            wire(&failed),
            json!({
                "sessionUpdate": "tool_call_update", "toolCallId": "w1", "status": "failed",
                "content": [{"type": "content", "content": {"type": "text", "text": "permission denied"}}]
            })
        );
    }

    #[test]
    fn child_activity_updates_the_delegating_call() {
        let update = session_update(&EventKind::SubagentTool {
            call_id: ToolCallId::from("c1"),
            child_id: engine_ports::SessionId::from("subagent-s-c1"),
            name: "Read".into(),
            preview: "{\"path\":\"a.rs\"}".into(),
        })
        .unwrap();
        assert_eq!(
            wire(&update),
            json!({
                "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress",
                "content": [{"type": "content", "content": {"type": "text", "text": "subagent-s-c1: Read {\"path\":\"a.rs\"}"}}]
            })
        );
        let branch = session_update(&EventKind::ParallelBranch {
            call_id: ToolCallId::from("c2"),
            child_id: engine_ports::SessionId::from("parallel-s-c2-1"),
            index: 1,
            activity: ChildActivity::started_or_ended(
                ChildPhase::End,
                Some("end_turn".into()),
                "done".into(),
            ),
        })
        .unwrap();
        assert_eq!(wire(&branch)["toolCallId"], "c2");
        assert_eq!(
            wire(&branch)["content"][0]["content"]["text"],
            "branch-1: ended (end_turn)"
        );
    }

    #[test]
    fn kinds_and_titles_by_tool() {
        assert_eq!(tool_kind("ListDir"), ToolKind::Read);
        assert_eq!(tool_kind("Edit"), ToolKind::Edit);
        assert_eq!(tool_kind("Shell"), ToolKind::Execute);
        assert_eq!(tool_kind("Grep"), ToolKind::Search);
        assert_eq!(tool_kind("mcp__fs__read_file"), ToolKind::Other);
        assert_eq!(
            tool_title("Shell", &json!({"command": "ls -la\nrm x"})),
            "Shell ls -la…"
        );
        assert_eq!(
            tool_title("mcp__cli__echo", &json!({"text": "hi", "n": 2})),
            "mcp__cli__echo text=hi n=2"
        );
        assert_eq!(tool_title("ListDir", &json!({})), "ListDir");
        let long = "x".repeat(200);
        assert_eq!(tool_title("Read", &json!({"path": long})).chars().count(), 5 + 80);
    }
}
