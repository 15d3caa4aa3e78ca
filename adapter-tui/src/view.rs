//! What the chat shows of a run: each event as streamed text, note lines (a tool
//! call with its short arguments, its status and duration; a delegated child's
//! activity indented under its call), an ask or a question to answer, or the end.
//! Both modes show the same [`Shown`] items; only the painting differs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use engine_core::host::args_summary;
use engine_ports::{ChildActivity, ChildPhase, Event, EventKind, StopReason, Usage, clip_chars};
use serde_json::Value;

use crate::diff::call_diff;
use crate::style::{Line, Style, printable};

/// Longest argument summary of a call line, in characters.
const ARGS_CHARS: usize = 100;
/// Longest result or child preview, in characters.
const PREVIEW_CHARS: usize = 100;

/// One thing to show.
#[derive(Debug)]
pub(crate) enum Shown {
    /// Assistant text, streamed as it comes.
    Text(String),
    /// Whole note lines.
    Lines(Vec<Line>),
    /// A permission ask waiting for the person.
    Ask(Ask),
    /// A tool's question (an elicitation form) waiting for the person.
    Question(Question),
    /// The run ended.
    End {
        /// Why.
        stop: StopReason,
        /// What went wrong, for `error`.
        error: Option<String>,
        /// Tokens of the run.
        usage: Usage,
    },
}

/// A permission ask.
#[derive(Debug)]
pub(crate) struct Ask {
    /// The engine's ask id.
    pub(crate) ask_id: String,
    /// The lines that show it: the tool, its arguments, the reason, a diff.
    pub(crate) lines: Vec<Line>,
}

/// A tool's question: a form asked field by field.
#[derive(Debug)]
pub(crate) struct Question {
    /// The engine's elicitation id.
    pub(crate) elicitation_id: String,
    /// The lines that show it.
    pub(crate) lines: Vec<Line>,
    /// The fields, in the form's order.
    pub(crate) fields: Vec<Field>,
}

/// One field of a form.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Field {
    /// The property name.
    pub(crate) name: String,
    /// What the field is for (title or description), when the form says.
    pub(crate) label: String,
    /// Its type.
    pub(crate) kind: FieldKind,
    /// Whether an answer is required.
    pub(crate) required: bool,
}

/// The type of a form field.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum FieldKind {
    /// Free text.
    Text,
    /// A whole number.
    Integer,
    /// A number.
    Number,
    /// Yes or no.
    Boolean,
    /// One of these words.
    Choice(Vec<String>),
}

impl Field {
    /// The typed value of an answer, or what is expected.
    pub(crate) fn parse(&self, answer: &str) -> Result<Value, String> {
        let answer = answer.trim();
        match &self.kind {
            FieldKind::Text => Ok(Value::String(answer.to_owned())),
            FieldKind::Integer => answer
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("{}: expected a whole number", self.name)),
            FieldKind::Number => answer
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("{}: expected a number", self.name)),
            FieldKind::Boolean => match answer {
                "y" | "yes" | "true" => Ok(Value::Bool(true)),
                "n" | "no" | "false" => Ok(Value::Bool(false)),
                _ => Err(format!("{}: expected y or n", self.name)),
            },
            FieldKind::Choice(words) if words.iter().any(|w| w == answer) => {
                Ok(Value::String(answer.to_owned()))
            }
            FieldKind::Choice(words) => Err(format!("{}: expected one of {}", self.name, words.join(", "))),
        }
    }

    /// The prompt of the field: `name (type)`.
    pub(crate) fn prompt(&self) -> String {
        let kind = match &self.kind {
            FieldKind::Text => "text".to_owned(),
            FieldKind::Integer => "whole number".to_owned(),
            FieldKind::Number => "number".to_owned(),
            FieldKind::Boolean => "y/n".to_owned(),
            FieldKind::Choice(words) => words.join("|"),
        };
        let optional = if self.required { "" } else { ", Enter to skip" };
        if self.label.is_empty() {
            format!("{} ({kind}{optional})", self.name)
        } else {
            format!("{} — {} ({kind}{optional})", self.name, self.label)
        }
    }
}

/// The fields of an elicitation form (an object of primitive properties).
pub(crate) fn form_fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let text = |key: &str| property.get(key).and_then(Value::as_str);
            let choices = property.get("enum").and_then(Value::as_array).map(|words| {
                words
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            });
            let kind = match (choices, text("type")) {
                (Some(words), _) => FieldKind::Choice(words),
                (None, Some("integer")) => FieldKind::Integer,
                (None, Some("number")) => FieldKind::Number,
                (None, Some("boolean")) => FieldKind::Boolean,
                _ => FieldKind::Text,
            };
            Field {
                name: name.clone(),
                label: printable(text("title").or_else(|| text("description")).unwrap_or_default()),
                kind,
                required: required.contains(&name.as_str()),
            }
        })
        .collect()
}

/// Turns a run's events into [`Shown`] items; remembers when each call started (or
/// was approved: the time a person takes to answer is not the call's).
#[derive(Debug, Default)]
pub(crate) struct View {
    started: HashMap<String, Instant>,
}

impl View {
    /// What `event` shows, if anything.
    pub(crate) fn event(&mut self, event: &Event) -> Option<Shown> {
        let note = |lines: Vec<Line>| Some(Shown::Lines(lines));
        match &event.kind {
            EventKind::MessageDelta { text } => Some(Shown::Text(text.clone())),
            EventKind::ToolCall { call_id, name, args } => {
                self.started.insert(call_id.as_str().to_owned(), Instant::now());
                note(vec![call_line(name, args)])
            }
            EventKind::PermissionVerdict { call_id, .. } => {
                // The call's time starts once the person answered.
                self.started.insert(call_id.as_str().to_owned(), Instant::now());
                None
            }
            EventKind::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let took = self.started.remove(call_id.as_str()).map(|t| t.elapsed());
                note(vec![result_line(*is_error, took, content)])
            }
            EventKind::PermissionAsk {
                ask_id,
                name,
                args,
                reason,
                ..
            } => {
                let mut lines = vec![
                    Line::new(Style::Ask, "? ")
                        .push(Style::Accent, printable(name))
                        .push(Style::Plain, spaced_args(args)),
                    Line::new(Style::Dim, format!("  {}", printable(reason))),
                ];
                lines.extend(call_diff(name, args).unwrap_or_default());
                Some(Shown::Ask(Ask {
                    ask_id: ask_id.clone(),
                    lines,
                }))
            }
            EventKind::ElicitationRequest {
                elicitation_id,
                name,
                message,
                requested_schema,
                ..
            } => Some(Shown::Question(Question {
                elicitation_id: elicitation_id.clone(),
                lines: vec![
                    Line::new(Style::Ask, "? ")
                        .push(Style::Accent, printable(name))
                        .push(Style::Plain, " asks:"),
                    Line::new(Style::Plain, format!("  {}", printable(message))),
                ],
                fields: form_fields(requested_schema),
            })),
            EventKind::ElicitationResult { action, reason, .. } => reason.as_ref().map(|reason| {
                Shown::Lines(vec![Line::new(
                    Style::Dim,
                    format!("  question {}: {}", action.as_str(), printable(reason)),
                )])
            }),
            EventKind::Hook { name, message, .. } => note(vec![Line::new(
                Style::Dim,
                format!("  ⚑ hook on {}: {}", printable(name), clip(message)),
            )]),
            EventKind::ModelRetry { attempt, error, .. } => note(vec![Line::new(
                Style::Dim,
                format!("  model attempt {attempt} failed, retrying: {}", clip(error)),
            )]),
            EventKind::ContextCompacted {
                tokens_before,
                tokens_after,
                messages_replaced,
                ..
            } => note(vec![Line::new(
                Style::Dim,
                format!(
                    "  context compacted: {messages_replaced} messages summarized, about {tokens_before} → {tokens_after} tokens"
                ),
            )]),
            EventKind::CatalogChanged { added, removed } => note(vec![Line::new(
                Style::Dim,
                format!("  tools changed: +{} -{}", added.join(" +"), removed.join(" -")),
            )]),
            EventKind::SubagentStart { description, .. } => {
                note(vec![child_line(1, format!("↳ subagent: {}", clip(description)))])
            }
            EventKind::SubagentTool { name, preview, .. } => note(vec![child_line(
                2,
                format!("→ {} {}", printable(name), clip(preview)),
            )]),
            EventKind::SubagentEnd { stop, preview, .. } => note(vec![child_line(
                1,
                format!("↳ subagent ended: {stop} {}", clip(preview)),
            )]),
            EventKind::ParallelStart { branches, join, .. } => note(vec![child_line(
                1,
                format!("↳ parallel: {branches} branches, join {join}"),
            )]),
            EventKind::ParallelBranch { index, activity, .. } => note(vec![child_line(
                2,
                format!("branch {index} {}", activity_text(activity)),
            )]),
            EventKind::ParallelEnd { winner, preview, .. } => {
                let winner = winner.map_or_else(|| "none".to_owned(), |w| format!("branch {w}"));
                note(vec![child_line(
                    1,
                    format!("↳ parallel ended: winner {winner} {}", clip(preview)),
                )])
            }
            EventKind::TeamStart { members, .. } => note(vec![child_line(
                1,
                format!("↳ team: {}", printable(&members.join(", "))),
            )]),
            EventKind::TeamMember {
                member,
                round,
                activity,
                ..
            } => note(vec![child_line(
                2,
                format!("round {round}, {} {}", printable(member), activity_text(activity)),
            )]),
            EventKind::TeamTasks { preview, .. } => {
                note(vec![child_line(2, format!("tasks: {}", clip(preview)))])
            }
            EventKind::TeamEnd { stop, preview, .. } => note(vec![child_line(
                1,
                format!("↳ team ended: {stop} {}", clip(preview)),
            )]),
            EventKind::Result {
                stop, error, usage, ..
            } => Some(Shown::End {
                stop: *stop,
                error: error.clone(),
                usage: *usage,
            }),
            _ => None,
        }
    }
}

/// `● Name short arguments`.
pub(crate) fn call_line(name: &str, args: &Value) -> Line {
    Line::new(Style::Accent, "● ")
        .push(Style::Accent, printable(name))
        .push(Style::Plain, spaced_args(args))
}

/// ` short arguments`, or nothing for a call without arguments.
fn spaced_args(args: &Value) -> String {
    let summary = printable(&args_summary(args, ARGS_CHARS));
    if summary.is_empty() {
        summary
    } else {
        format!(" {summary}")
    }
}

/// `  ⎿ ok · 12 ms · first line of the result`.
pub(crate) fn result_line(is_error: bool, took: Option<Duration>, content: &str) -> Line {
    let (style, status) = if is_error {
        (Style::Bad, "error")
    } else {
        (Style::Good, "ok")
    };
    let took = took.map(|t| format!(" · {}", duration(t))).unwrap_or_default();
    let first = content.lines().find(|line| !line.trim().is_empty()).unwrap_or("");
    Line::new(Style::Dim, "  ⎿ ")
        .push(style, status)
        .push(Style::Dim, took)
        .push(Style::Dim, if first.is_empty() { "" } else { " · " })
        .push(Style::Dim, clip(first))
}

/// A child's note, indented `depth` steps under its delegating call.
fn child_line(depth: usize, text: String) -> Line {
    Line::new(Style::Dim, format!("{}{text}", "  ".repeat(depth)))
}

fn activity_text(activity: &ChildActivity) -> String {
    match activity.phase {
        ChildPhase::Start => "started".to_owned(),
        ChildPhase::Tool => format!(
            "→ {} {}",
            printable(activity.name.as_deref().unwrap_or_default()),
            clip(&activity.preview)
        ),
        ChildPhase::End => format!(
            "ended: {}",
            printable(activity.stop.as_deref().unwrap_or_default())
        ),
    }
}

/// `text` on one line, bounded.
fn clip(text: &str) -> String {
    printable(&clip_chars(text.lines().next().unwrap_or(""), PREVIEW_CHARS))
}

/// `850 ms`, `2.4 s`, `3 min 5 s`.
pub(crate) fn duration(took: Duration) -> String {
    let ms = took.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", took.as_secs_f64())
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

#[cfg(test)]
mod tests {
    use engine_ports::ToolCallId;
    use serde_json::json;

    use super::*;

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 1,
            time: None,
            kind,
        }
    }

    #[test]
    fn a_call_shows_its_arguments_then_its_status_and_duration() {
        let mut view = View::default();
        let Some(Shown::Lines(call)) = view.event(&event(EventKind::ToolCall {
            call_id: ToolCallId::from("c1"),
            name: "Read".into(),
            args: json!({"path": "a.txt"}),
        })) else {
            panic!("a call is a note");
        };
        assert_eq!(call[0].text(), "● Read path=a.txt");
        assert_eq!(call_line("Now", &json!({})).text(), "● Now");
        let Some(Shown::Lines(result)) = view.event(&event(EventKind::ToolResult {
            call_id: ToolCallId::from("c1"),
            name: "Read".into(),
            content: "\n1\thello\n2\tworld".into(),
            is_error: false,
            parts: Vec::new(),
        })) else {
            panic!("a result is a note");
        };
        let text = result[0].text();
        assert!(
            text.starts_with("  ⎿ ok · ") && text.ends_with(" ms · 1 hello"),
            "{text}"
        );
    }

    #[test]
    fn an_edit_ask_carries_its_diff_and_children_are_indented() {
        let mut view = View::default();
        let Some(Shown::Ask(ask)) = view.event(&event(EventKind::PermissionAsk {
            ask_id: "a1".into(),
            call_id: ToolCallId::from("c1"),
            name: "Edit".into(),
            args: json!({"path": "x", "old_string": "a", "new_string": "b"}),
            reason: "Edit can change the workspace".into(),
            suggested_rule: None,
        })) else {
            panic!("an ask");
        };
        let texts: Vec<String> = ask.lines.iter().map(Line::text).collect();
        assert_eq!(texts[0], "? Edit path=x old_string=a new_string=b");
        assert_eq!(texts[2..], ["    - a", "    + b"]);
        let Some(Shown::Lines(child)) = view.event(&event(EventKind::SubagentTool {
            call_id: ToolCallId::from("c2"),
            child_id: "k".into(),
            name: "Grep".into(),
            preview: "pattern=x".into(),
        })) else {
            panic!("a child's call is a note");
        };
        assert_eq!(child[0].text(), "    → Grep pattern=x");
    }

    #[test]
    fn form_fields_are_typed_and_answers_checked() {
        let fields = form_fields(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name"},
                "age": {"type": "integer"},
                "ok": {"type": "boolean"},
                "color": {"type": "string", "enum": ["red", "blue"]}
            },
            "required": ["name"]
        }));
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[0].prompt(), "name — Your name (text)");
        assert!(fields[0].required && !fields[1].required);
        assert_eq!(fields[1].parse("42").unwrap(), json!(42));
        assert!(fields[1].parse("x").unwrap_err().contains("whole number"));
        assert_eq!(fields[2].parse("y").unwrap(), json!(true));
        assert_eq!(fields[3].parse("blue").unwrap(), json!("blue"));
        assert!(fields[3].parse("green").unwrap_err().contains("red, blue"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(850)), "850 ms");
        assert_eq!(duration(Duration::from_millis(2400)), "2.4 s");
        assert_eq!(duration(Duration::from_secs(185)), "3 min 5 s");
    }
}
