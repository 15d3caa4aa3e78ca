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

/// A one-line summary of call arguments (the host port's, which the terminal client
/// shows too).
pub(crate) fn args_summary(args: &Value, max: usize) -> String {
    engine_core::host::args_summary(args, max)
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
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(first_line("one\ntwo"), "one");
    }
}
