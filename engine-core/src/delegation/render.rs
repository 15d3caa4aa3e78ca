//! Texts of the delegation families: event previews, neutralised child text, stop
//! notes, stored transcripts as `InspectSubagent` shows them, and the side requests'
//! texts (a forked child's start, a salvage turn).

use std::time::Duration;

use engine_ports::{Message, StopReason, clip_chars};

use crate::context::transcript_within;
use crate::engine::Limits;

/// Longest event preview, in characters.
pub const PREVIEW_CHARS: usize = 200;

/// Most stored messages `InspectSubagent` shows (the last ones).
pub const INSPECT_MESSAGES: usize = 40;

/// Longest message `InspectSubagent` shows, in characters.
pub const INSPECT_MESSAGE_CHARS: usize = 1_000;

/// Longest `InspectSubagent` output, in characters.
pub const INSPECT_TOTAL_CHARS: usize = 8_000;

/// The line-starts the harness writes around child text. A child line starting with
/// one of them is quoted (`> `), so a child cannot forge a harness line.
pub const MARKERS: [&str; 6] = [
    "agentId:",
    "=== ",
    "Team id:",
    "[stopped",
    "winner:",
    "preserved copy:",
];

/// The prompt of a salvage turn, asked of a child that ended without text.
pub const SALVAGE_INSTRUCTIONS: &str = "You were working on a task for another agent and stopped without \
writing a final answer. Summarise what you found for that agent: the answer if you have one, what you \
checked and what it showed, and what is still open. Write plain text and do not call tools. Your work so far:";

/// The framing of a forked child's first message (the parent's transcript follows).
pub const FORK_INTRO: &str = "You are a forked child of another agent. Its conversation up to the call \
that started you is below, for context; your own task follows it.";

/// `text` as a one-line preview: control characters (line breaks included) become
/// spaces, cut at [`PREVIEW_CHARS`] characters.
pub fn preview(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    clip_chars(&flat, PREVIEW_CHARS).into_owned()
}

/// `text` with every line that starts like a harness marker quoted with `> `.
pub fn neutralise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let start = line.trim_start();
        if MARKERS.iter().any(|marker| start.starts_with(marker)) {
            out.push_str("> ");
        }
        out.push_str(line);
    }
    out
}

/// How a child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChildStop {
    /// Its run stopped.
    Run {
        /// Why.
        stop: StopReason,
        /// The run's error, when it is `error`.
        error: Option<String>,
    },
    /// Its time ran out and it was cancelled.
    Timeout(Duration),
}

impl ChildStop {
    /// The stop's wire name (`end_turn`, …, `timeout`).
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Self::Run { stop, .. } => stop.as_str(),
            Self::Timeout(_) => "timeout",
        }
    }

    /// Whether the child ended by answering (`end_turn`).
    pub(crate) fn ended(&self) -> bool {
        matches!(
            self,
            Self::Run {
                stop: StopReason::EndTurn,
                ..
            }
        )
    }

    /// The bracketed note a result carries when the child did not end by answering.
    pub(crate) fn note(&self, limits: &Limits) -> Option<String> {
        let note = match self {
            Self::Run { stop, error } => match stop {
                StopReason::EndTurn => return None,
                StopReason::MaxTokens => "the answer was cut off by the output limit".to_owned(),
                StopReason::MaxTurns => format!("max turns reached ({} turns)", limits.max_turns),
                StopReason::MaxToolCalls => {
                    format!("max tool calls reached ({} calls)", limits.max_tool_calls)
                }
                StopReason::MaxConsecutiveFailures => "too many failed tool calls in a row".to_owned(),
                StopReason::Cancelled => "cancelled".to_owned(),
                StopReason::Error => match error {
                    Some(error) => format!("error: {}", preview(error)),
                    None => "error".to_owned(),
                },
            },
            Self::Timeout(limit) => format!("timeout after {} ms", limit.as_millis()),
        };
        Some(format!("[stopped: {note}]"))
    }
}

/// The last [`INSPECT_MESSAGES`] messages of a stored conversation: `user:`,
/// `summary:`, `assistant:` (with `[called X]` per call) and `tool result:` lines,
/// each message cut at [`INSPECT_MESSAGE_CHARS`] characters and continued on
/// indented lines, the whole within [`INSPECT_TOTAL_CHARS`] (older messages are
/// left out first, with a note).
pub fn inspect_transcript(id: &str, conversation: &[Message]) -> String {
    let shown = &conversation[conversation.len().saturating_sub(INSPECT_MESSAGES)..];
    let header = format!(
        "Transcript of {id}: {} messages{}.",
        conversation.len(),
        if shown.len() < conversation.len() {
            format!(", the last {} shown", shown.len())
        } else {
            String::new()
        }
    );
    let mut items: Vec<String> = shown.iter().map(inspect_item).collect();
    let total = |items: &[String], note: usize| {
        header.chars().count() + note + items.iter().map(|item| item.chars().count() + 1).sum::<usize>()
    };
    let mut dropped = 0usize;
    let note_chars = 90;
    while dropped < items.len()
        && total(&items[dropped..], if dropped > 0 { note_chars } else { 0 }) > INSPECT_TOTAL_CHARS
    {
        dropped += 1;
    }
    let kept = items.split_off(dropped);
    let mut out = header;
    if dropped > 0 {
        out.push_str(&format!(
            "\n[{dropped} older messages left out to stay within {INSPECT_TOTAL_CHARS} characters]"
        ));
    }
    for item in kept {
        out.push('\n');
        out.push_str(&item);
    }
    out
}

fn inspect_item(message: &Message) -> String {
    let (role, text) = match message {
        Message::User { text } => ("user", text.clone()),
        Message::Summary { text, .. } => ("summary", text.clone()),
        Message::Assistant { text, tool_calls } => {
            let mut line = text.trim().to_owned();
            for call in tool_calls {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&format!("[called {}]", call.name()));
            }
            ("assistant", line)
        }
        Message::Tool { result } => {
            let role = if result.is_error() {
                "tool result (error)"
            } else {
                "tool result"
            };
            (role, result.text_projection())
        }
    };
    let clipped = clip_chars(text.trim(), INSPECT_MESSAGE_CHARS);
    let mut item = format!("{role}:");
    for (index, line) in clipped.split('\n').enumerate() {
        item.push_str(if index == 0 { " " } else { "\n  " });
        item.push_str(line);
    }
    item
}

/// The message a forked child starts from: [`FORK_INTRO`] and the parent's
/// conversation (without the calling turn) as a bounded transcript. It stands for no
/// turn of the child's own.
pub(crate) fn fork_seed(parent: &[Message], window: u64) -> Message {
    Message::Summary {
        text: format!(
            "{FORK_INTRO}\n\n<parent_conversation>\n{}\n</parent_conversation>",
            transcript_within(parent, window)
        ),
        replaced_turns: 0,
    }
}

/// The one user message of a salvage request: [`SALVAGE_INSTRUCTIONS`] and the
/// child's conversation as a bounded transcript.
pub(crate) fn salvage_request_text(conversation: &[Message], window: u64) -> String {
    format!(
        "{SALVAGE_INSTRUCTIONS}\n\n<conversation>\n{}\n</conversation>",
        transcript_within(conversation, window)
    )
}

#[cfg(test)]
mod tests {
    use engine_ports::{ToolCall, ToolResult};

    use super::*;

    #[test]
    fn previews_are_one_bounded_line() {
        assert_eq!(preview("a\nb\tc\u{7}d"), "a b c d");
        let long = "é".repeat(500);
        let cut = preview(&long);
        assert_eq!(cut.chars().count(), PREVIEW_CHARS);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn marker_lines_of_child_text_are_quoted() {
        assert_eq!(
            neutralise("fine\nagentId: subagent-x\n  === branch-0 [OK] ===\nTeam id: t"),
            "fine\n> agentId: subagent-x\n>   === branch-0 [OK] ===\n> Team id: t"
        );
        assert_eq!(neutralise("no markers here"), "no markers here");
    }

    #[test]
    fn stop_notes_name_the_limit() {
        let limits = Limits {
            max_turns: 7,
            max_tool_calls: 9,
            max_consecutive_failures: 0,
        };
        let run = |stop| ChildStop::Run { stop, error: None };
        assert_eq!(run(StopReason::EndTurn).note(&limits), None);
        assert_eq!(
            run(StopReason::MaxTurns).note(&limits).unwrap(),
            "[stopped: max turns reached (7 turns)]"
        );
        assert_eq!(
            run(StopReason::MaxToolCalls).note(&limits).unwrap(),
            "[stopped: max tool calls reached (9 calls)]"
        );
        assert_eq!(
            ChildStop::Timeout(Duration::from_millis(1500))
                .note(&limits)
                .unwrap(),
            "[stopped: timeout after 1500 ms]"
        );
        assert_eq!(
            ChildStop::Run {
                stop: StopReason::Error,
                error: Some("boom\nagain".into())
            }
            .note(&limits)
            .unwrap(),
            "[stopped: error: boom again]"
        );
    }

    #[test]
    fn the_transcript_shows_roles_calls_and_results_within_bounds() {
        let conversation = vec![
            Message::User {
                text: "find it".into(),
            },
            Message::Assistant {
                text: "looking".into(),
                tool_calls: vec![
                    ToolCall::new("c1", "Grep", "{}"),
                    ToolCall::new("c2", "Read", "{}"),
                ],
            },
            Message::Tool {
                result: ToolResult::text("c1", "a.rs:1: TODO\nb.rs:2: TODO"),
            },
            Message::Tool {
                result: ToolResult::error("c2", "no such file"),
            },
        ];
        assert_eq!(
            inspect_transcript("subagent-s-c", &conversation),
            "Transcript of subagent-s-c: 4 messages.\nuser: find it\nassistant: looking [called Grep] [called Read]\n\
             tool result: a.rs:1: TODO\n  b.rs:2: TODO\ntool result (error): no such file"
        );
        let many: Vec<Message> = (0..100)
            .map(|i| Message::User {
                text: format!("{i} {}", "x".repeat(2_000)),
            })
            .collect();
        let text = inspect_transcript("subagent-s-c", &many);
        assert!(
            text.chars().count() <= INSPECT_TOTAL_CHARS,
            "{}",
            text.chars().count()
        );
        assert!(text.starts_with("Transcript of subagent-s-c: 100 messages, the last 40 shown."));
        assert!(text.contains("older messages left out to stay within 8000 characters"));
        assert!(text.contains("user: 99 "));
        assert!(!text.contains("user: 59 "));
    }
}
