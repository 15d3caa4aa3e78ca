//! What both modes share beyond the events: the chat commands' answers, the picker
//! of past sessions, and a stored conversation shown again when a session is
//! continued.

use std::time::{Duration, SystemTime};

use engine_ports::{Message, SessionId, SessionSnapshot};

use crate::commands::{BUILTINS, Builtin, mode_word};
use crate::markdown::Markdown;
use crate::session::{ChatSession, PastSession};
use crate::style::{Line, Style, printable};
use crate::view::{call_line, result_line};

/// What a chat command did.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Lines to show.
    Lines(Vec<Line>),
    /// Leave the chat.
    Exit,
}

/// The state a chat keeps between commands: the last listing of past sessions, so
/// `/resume N` means the N-th line the person saw.
#[derive(Debug, Default)]
pub(crate) struct Commands {
    listed: Vec<PastSession>,
}

impl Commands {
    /// Runs a chat command.
    pub(crate) async fn run(&mut self, session: &mut ChatSession, command: Builtin) -> Outcome {
        let note = |text: String| Outcome::Lines(vec![Line::new(Style::Dim, text)]);
        match command {
            Builtin::Exit => Outcome::Exit,
            Builtin::Help => {
                let mut lines: Vec<Line> = BUILTINS.iter().map(|(_, help)| Line::new(Style::Plain, *help)).collect();
                lines.push(Line::new(
                    Style::Dim,
                    "Other /commands (the project's commands, skills, MCP prompts) go to the model; Tab completes them.",
                ));
                lines.push(Line::new(
                    Style::Dim,
                    "Keys: Enter sends · Alt-Enter or a trailing \\ adds a line · Up/Down history · Esc or Ctrl-C stops a turn · Ctrl-D leaves",
                ));
                Outcome::Lines(lines)
            }
            Builtin::Mode(None) => note(format!(
                "mode: {} (plan, default or acceptEdits; Shift-Tab cycles)",
                session.mode().as_str()
            )),
            Builtin::Mode(Some(word)) => match mode_word(&word) {
                Ok(mode) => match session.set_mode(mode).await {
                    Ok(()) => note(format!("mode: {}", mode.as_str())),
                    Err(error) => note(error),
                },
                Err(error) => note(error),
            },
            Builtin::Tools => {
                let tools = session.tools();
                let mut lines = vec![Line::new(
                    Style::Dim,
                    format!("{} tools in mode {}:", tools.len(), session.mode().as_str()),
                )];
                for tool in tools {
                    let access = if tool.read_only { "read-only" } else { "changes things" };
                    let summary = tool.description.lines().next().unwrap_or_default();
                    lines.push(
                        Line::new(Style::Accent, format!("  {}", printable(&tool.name)))
                            .push(Style::Dim, format!(" ({}, {access}) ", tool.family))
                            .push(Style::Plain, printable(&engine_ports::clip_chars(summary, 80))),
                    );
                }
                Outcome::Lines(lines)
            }
            Builtin::Compact => note(
                "/compact is not available: the engine compacts a conversation by itself when its next request \
                 would pass 80 % of the context window"
                    .to_owned(),
            ),
            Builtin::Model(None) => {
                let current = session.model();
                let others: Vec<&str> = session
                    .models()
                    .iter()
                    .map(String::as_str)
                    .filter(|model| *model != current)
                    .collect();
                let choices = if others.is_empty() {
                    " (no other model offered: start `mecated chat` with --models to offer some)".to_owned()
                } else {
                    format!(" (/model NAME switches to {})", others.join(", "))
                };
                note(format!("model: {current}{choices}"))
            }
            Builtin::Model(Some(name)) => match session.set_model(&name).await {
                Ok(()) => note(format!("model: {name} from the next prompt on")),
                Err(error) => Outcome::Lines(vec![Line::new(Style::Bad, error)]),
            },
            Builtin::Cost => {
                let usage = session.usage();
                let cache = if usage.cache_read_tokens + usage.cache_write_tokens > 0 {
                    format!(
                        " (cache: {} read, {} written)",
                        usage.cache_read_tokens, usage.cache_write_tokens
                    )
                } else {
                    String::new()
                };
                note(format!(
                    "tokens so far: {} in, {} out{cache}",
                    usage.input_tokens, usage.output_tokens
                ))
            }
            Builtin::Clear => {
                session.clear();
                note("a new session starts with the next prompt (the last one stays stored: /resume lists it)".to_owned())
            }
            Builtin::Resume(None) => self.list(session).await,
            Builtin::Resume(Some(which)) => match self.pick(&which) {
                Some(id) => Outcome::Lines(resume(session, &id).await),
                None => note(format!(
                    "{which:?} is neither a number of the last /resume list nor a session id"
                )),
            },
            Builtin::Delete(which) => match self.pick(&which) {
                Some(id) => match session.delete(&id).await {
                    Ok(()) => {
                        self.listed.retain(|past| past.id != id);
                        note(format!("session {} deleted", id.as_str()))
                    }
                    Err(error) => note(error),
                },
                None => note(format!("{which:?} is not a number of the last /resume list")),
            },
        }
    }

    /// Lists the past sessions of the workspace, numbered, newest first.
    pub(crate) async fn list(&mut self, session: &ChatSession) -> Outcome {
        match session.past_sessions().await {
            Ok(past) if past.is_empty() => Outcome::Lines(vec![Line::new(
                Style::Dim,
                "no stored session of this workspace yet",
            )]),
            Ok(past) => {
                let now = SystemTime::now();
                let mut lines = vec![Line::new(
                    Style::Dim,
                    "past sessions, newest first (/resume N continues one, /resume delete N deletes it; \
                     the store keeps no names, so sessions go by their first prompt):",
                )];
                for (n, entry) in past.iter().enumerate() {
                    let age = now.duration_since(entry.modified_at).unwrap_or(Duration::ZERO);
                    lines.push(
                        Line::new(Style::Accent, format!("  {:>2}. ", n + 1))
                            .push(Style::Plain, entry.title.clone())
                            .push(
                                Style::Dim,
                                format!(
                                    "  · {} turns · {} ago · {}",
                                    entry.turns,
                                    ago(age),
                                    entry.id.as_str()
                                ),
                            ),
                    );
                }
                self.listed = past;
                Outcome::Lines(lines)
            }
            Err(error) => Outcome::Lines(vec![Line::new(Style::Bad, error)]),
        }
    }

    /// The session `which` names: a number of the last listing, else an id.
    fn pick(&self, which: &str) -> Option<SessionId> {
        match which.parse::<usize>() {
            Ok(n) if n >= 1 => self.listed.get(n - 1).map(|past| past.id.clone()),
            Ok(_) => None,
            Err(_) => Some(SessionId::from(which.to_owned())),
        }
    }
}

/// Continues the stored session `id` and shows its conversation.
pub(crate) async fn resume(session: &mut ChatSession, id: &SessionId) -> Vec<Line> {
    match session.resume(id).await {
        Ok(snapshot) => {
            let mut lines = replay(&snapshot);
            lines.push(Line::new(
                Style::Dim,
                format!(
                    "continuing session {} (mode {})",
                    id.as_str(),
                    session.mode().as_str()
                ),
            ));
            lines
        }
        Err(error) => vec![Line::new(Style::Bad, error)],
    }
}

/// A stored conversation as the chat showed it: prompts, answers (Markdown), calls
/// with their results.
pub(crate) fn replay(snapshot: &SessionSnapshot) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut names = std::collections::HashMap::new();
    for message in snapshot.conversation.iter() {
        match message {
            Message::User { text } => {
                for (n, line) in text.lines().enumerate() {
                    let mark = if n == 0 { "› " } else { "  " };
                    lines.push(Line::new(Style::Accent, mark).push(Style::Bold, printable(line)));
                }
            }
            Message::Assistant { text, tool_calls } => {
                let mut markdown = Markdown::default();
                lines.extend(text.lines().map(|line| markdown.line(line)));
                for call in tool_calls {
                    names.insert(call.id().as_str().to_owned(), call.name().to_owned());
                    lines.push(call_line(call.name(), &call.args_value()));
                }
            }
            Message::Tool { result } => {
                lines.push(result_line(result.is_error(), None, result.content()));
            }
            Message::Summary { .. } => {
                lines.push(Line::new(
                    Style::Dim,
                    "(earlier turns were compacted into a summary)",
                ));
            }
        }
    }
    lines
}

/// `5 s`, `3 min`, `2 h`, `4 days`.
fn ago(age: Duration) -> String {
    let secs = age.as_secs();
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => format!("{} h", secs / 3600),
        _ => format!("{} days", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use engine_ports::{PermissionMode, ToolCall, ToolResult};

    use super::*;

    #[test]
    fn a_stored_conversation_shows_prompts_answers_and_calls() {
        let mut snapshot = SessionSnapshot::new("s", PermissionMode::Default);
        snapshot.conversation.push(Message::User {
            text: "write it".into(),
        });
        snapshot.conversation.push(Message::Assistant {
            text: "on it".into(),
            tool_calls: vec![ToolCall::new("w1", "Write", r#"{"path":"a"}"#)],
        });
        snapshot.conversation.push(Message::Tool {
            result: ToolResult::text("w1", "wrote a"),
        });
        let texts: Vec<String> = replay(&snapshot).iter().map(Line::text).collect();
        assert_eq!(
            texts,
            ["› write it", "on it", "● Write path=a", "  ⎿ ok · wrote a"]
        );
    }

    #[test]
    fn ages_read_naturally() {
        assert_eq!(ago(Duration::from_secs(5)), "5 s");
        assert_eq!(ago(Duration::from_secs(7200)), "2 h");
        assert_eq!(ago(Duration::from_secs(3 * 86_400)), "3 days");
    }
}
