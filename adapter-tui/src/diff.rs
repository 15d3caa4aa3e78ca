//! What an `Edit` or `Write` call would change, from its arguments alone: `Edit`'s
//! `old_string` → `new_string` as a line diff, `Write`'s `content` as added lines.
//! The file itself is not read (the ask is about what the model asked for).

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::style::{Line, Style, printable};

/// Most diff lines an ask shows; the rest are counted.
const MAX_DIFF_LINES: usize = 40;

/// The diff lines of a call, `None` when its arguments do not give one.
pub(crate) fn call_diff(name: &str, args: &Value) -> Option<Vec<Line>> {
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let changes: Vec<(ChangeTag, String)> = match name {
        "Edit" => {
            let diff = TextDiff::from_lines(text("old_string")?, text("new_string")?);
            diff.iter_all_changes()
                .map(|change| (change.tag(), change.value().trim_end_matches('\n').to_owned()))
                .collect()
        }
        "Write" => text("content")?
            .lines()
            .map(|line| (ChangeTag::Insert, line.to_owned()))
            .collect(),
        _ => return None,
    };
    let mut lines: Vec<Line> = changes
        .iter()
        .take(MAX_DIFF_LINES)
        .map(|(tag, text)| {
            let (style, mark) = match tag {
                ChangeTag::Insert => (Style::Good, "+ "),
                ChangeTag::Delete => (Style::Bad, "- "),
                ChangeTag::Equal => (Style::Dim, "  "),
            };
            Line::new(Style::Dim, "    ").push(style, format!("{mark}{}", printable(text)))
        })
        .collect();
    if changes.len() > MAX_DIFF_LINES {
        lines.push(Line::new(
            Style::Dim,
            format!("    … {} more lines", changes.len() - MAX_DIFF_LINES),
        ));
    }
    Some(lines)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn an_edit_shows_removed_and_added_lines() {
        let args = json!({"path": "a.rs", "old_string": "one\ntwo\n", "new_string": "one\nzwei\n"});
        let lines = call_diff("Edit", &args).unwrap();
        assert_eq!(texts(&lines), ["      one", "    - two", "    + zwei"]);
    }

    #[test]
    fn a_write_shows_its_content_as_added_and_long_ones_are_cut() {
        let content: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let lines = call_diff("Write", &json!({"path": "x", "content": content})).unwrap();
        assert_eq!(lines.len(), MAX_DIFF_LINES + 1);
        assert_eq!(lines[0].text(), "    + line 0");
        assert_eq!(lines[MAX_DIFF_LINES].text(), "    … 10 more lines");
        assert!(call_diff("Shell", &json!({"command": "ls"})).is_none());
        assert!(call_diff("Edit", &json!({"path": "x"})).is_none());
    }
}
