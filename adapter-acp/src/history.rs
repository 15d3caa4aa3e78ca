//! `session/load`'s replay: a stored conversation as the `session/update`s a client
//! would have seen live — user text, agent text, and each tool call announced and
//! closed with its final status and result.

use agent_client_protocol::v1::schema::SessionUpdate;
use engine_ports::Message;

use super::updates::{text_chunk, tool_call, tool_result_update};

/// The updates that replay `conversation`, oldest first: a user message is a
/// `user_message_chunk`; an assistant message its text as an `agent_message_chunk`
/// (none when it only called tools) and a `tool_call` (`pending`, as announced live)
/// per call; a tool result the `tool_call_update` with the call's final status
/// (`completed` or `failed`) and the result text; the summary a compaction left in
/// place of older messages an `agent_message_chunk` with its text.
pub(crate) fn replay(conversation: &[Message]) -> Vec<SessionUpdate> {
    let mut updates = Vec::with_capacity(conversation.len());
    for message in conversation {
        match message {
            Message::User { text } => {
                if !text.is_empty() {
                    updates.push(SessionUpdate::UserMessageChunk(text_chunk(text)));
                }
            }
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    updates.push(SessionUpdate::AgentMessageChunk(text_chunk(text)));
                }
                for call in tool_calls {
                    updates.push(SessionUpdate::ToolCall(tool_call(
                        call.id().as_str(),
                        call.name(),
                        &call.args_value(),
                    )));
                }
            }
            Message::Summary { text, .. } => {
                updates.push(SessionUpdate::AgentMessageChunk(text_chunk(text)));
            }
            Message::Tool { result } => updates.push(tool_result_update(
                result.call_id().as_str(),
                result.content(),
                result.is_error(),
            )),
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use engine_ports::{ToolCall, ToolResult};
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn a_conversation_replays_as_its_live_updates_with_final_statuses() {
        let conversation = vec![
            Message::User {
                text: "read it".into(),
            },
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![
                    ToolCall::new("r1", "Read", r#"{"path":"README.md"}"#),
                    ToolCall::new("w1", "Write", r#"{"path":"x","content":"y"}"#),
                ],
            },
            Message::Tool {
                result: ToolResult::text("r1", "1\thello"),
            },
            Message::Tool {
                result: ToolResult::error("w1", "permission denied for Write: the operator denied it"),
            },
            Message::Assistant {
                text: "done".into(),
                tool_calls: Vec::new(),
            },
        ];
        let updates: Vec<Value> = replay(&conversation)
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "tool_call",
                "tool_call",
                "tool_call_update",
                "tool_call_update",
                "agent_message_chunk"
            ]
        );
        assert_eq!(updates[0]["content"], json!({"type": "text", "text": "read it"}));
        assert_eq!(updates[1]["toolCallId"], "r1");
        assert_eq!(updates[1]["kind"], "read");
        assert_eq!(updates[1]["rawInput"], json!({"path": "README.md"}));
        assert_eq!(updates[3]["status"], "completed");
        assert_eq!(updates[3]["content"][0]["content"]["text"], "1\thello");
        assert_eq!(updates[4]["toolCallId"], "w1");
        assert_eq!(updates[4]["status"], "failed");
        assert_eq!(updates[5]["content"]["text"], "done");
    }
}
