//! Writing to stdout and stderr (a closed pipe is not an error worth dying for), a
//! failed command's `error:` line and exit code, and the short summaries of tool calls and results the run notes and the demo show.

use std::io::Write as _;
use std::process::ExitCode;

use serde_json::Value;

/// Writes `text` and a newline to stdout.
pub(crate) fn stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Writes `text` to stdout as it is, flushed (streamed assistant text).
pub(crate) fn stdout_raw(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Writes `text` and a newline to stderr.
pub(crate) fn stderr(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

/// Says `error: <error>` on stderr; the exit code of a command that failed (1).
pub(crate) fn failure(error: impl std::fmt::Display) -> ExitCode {
    stderr(&format!("error: {error}"));
    ExitCode::FAILURE
}

/// `text` cut to at most `max` chars, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    engine_ports::clip_chars(text, max).into_owned()
}

/// A one-line summary of call arguments: `path=README.md pattern="src/**"` for an
/// object of scalars, else compact JSON; at most `max` chars.
pub(crate) fn args_summary(args: &Value, max: usize) -> String {
    let text = match args {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| match value {
                Value::String(s) if !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '"') => {
                    format!("{key}={s}")
                }
                Value::String(s) => format!("{key}={s:?}"),
                other => format!("{key}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    clip(&text, max)
}

/// The first line of `text` (what a one-line note shows).
pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_short_and_readable() {
        let args = serde_json::json!({"path": "README.md", "pattern": "a b", "limit": 3});
        assert_eq!(args_summary(&args, 80), "path=README.md pattern=\"a b\" limit=3");
        assert_eq!(args_summary(&serde_json::json!({}), 80), "");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(first_line("one\ntwo"), "one");
    }
}
