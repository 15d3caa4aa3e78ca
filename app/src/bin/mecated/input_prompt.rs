//! The terminal prompt for VS Code's `${input:ID}` of an MCP config file: asked on
//! stderr, read from stdin, only when both are terminals (never under `serve`, `acp`
//! or CI, where `MCP_INPUT_<ID>` supplies the value). A `password` input is typed
//! without echo; a `pickString` lists its options by number. The answer is never
//! logged nor written anywhere.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;

use adapter_mcp::{InputPrompter, McpInput, McpInputKind, input_env_var};
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal;

/// Asks the person at the terminal.
pub(crate) struct TerminalPrompter;

impl InputPrompter for TerminalPrompter {
    fn prompt(&self, input: &McpInput, file: &Path) -> Result<String, String> {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return Err("no terminal to ask on".to_owned());
        }
        // No echo from before the question shows: a key typed ahead stays hidden.
        let hidden = input.password.then(Hidden::start).transpose()?;
        // Raw mode moves the cursor down without returning it.
        let newline = if hidden.is_some() { "\r\n" } else { "\n" };
        let mut err = std::io::stderr().lock();
        let about = input.description.as_deref().unwrap_or("a value");
        let shown_default = match &input.default {
            Some(default) if !input.password => format!(" [default: {default}]"),
            Some(_) => " [default: hidden]".to_owned(),
            None => String::new(),
        };
        let asked = write!(
            err,
            "MCP input {:?} of {} (or set {}):{newline}",
            input.id,
            file.display(),
            input_env_var(&input.id)
        )
        .and_then(|()| match &input.kind {
            McpInputKind::PickString { options } => {
                for (i, option) in options.iter().enumerate() {
                    write!(err, "  {}) {option}{newline}", i + 1)?;
                }
                write!(err, "{about}, 1-{}{shown_default}: ", options.len())
            }
            _ => write!(err, "{about}{shown_default}: "),
        })
        .and_then(|()| err.flush());
        asked.map_err(|e| format!("cannot write to the terminal: {e}"))?;
        drop(err);
        let typed = match hidden {
            Some(hidden) => hidden.read()?,
            None => read_line()?,
        };
        let typed = typed.trim_end_matches(['\r', '\n']);
        let value = match (typed.is_empty(), &input.default) {
            (true, Some(default)) => default.clone(),
            _ => typed.to_owned(),
        };
        match &input.kind {
            McpInputKind::PickString { options } if !options.contains(&value) => value
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| options.get(n.checked_sub(1)?))
                .cloned()
                // The answer is not repeated: it may have been typed without echo.
                .ok_or_else(|| format!("the answer is none of the options 1-{}", options.len())),
            _ => Ok(value),
        }
    }
}

/// One line of stdin, echoed by the terminal.
fn read_line() -> Result<String, String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) => Err("the terminal closed its input".to_owned()),
        Ok(_) => Ok(line),
        Err(e) => Err(format!("cannot read the terminal: {e}")),
    }
}

/// The terminal in raw mode (no echo) from before the question until the answer is
/// read; left on drop whatever happens.
struct Hidden;

impl Hidden {
    fn start() -> Result<Self, String> {
        terminal::enable_raw_mode().map_err(|e| format!("cannot read the terminal: {e}"))?;
        Ok(Self)
    }

    /// One line typed without echo: Enter ends it, Backspace erases, Ctrl-C, Ctrl-D
    /// and Esc cancel.
    fn read(self) -> Result<String, String> {
        let typed = read_keys();
        drop(self);
        let _ = writeln!(std::io::stderr());
        typed
    }
}

impl Drop for Hidden {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

fn read_keys() -> Result<String, String> {
    let mut typed = String::new();
    loop {
        let Event::Key(key) = event::read().map_err(|e| format!("cannot read the terminal: {e}"))? else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        let control = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            // Ctrl-J is a newline too.
            KeyCode::Enter => return Ok(typed),
            KeyCode::Char('j') if control => return Ok(typed),
            KeyCode::Esc => return Err("cancelled".to_owned()),
            KeyCode::Char('c' | 'd') if control => return Err("cancelled".to_owned()),
            KeyCode::Backspace => {
                typed.pop();
            }
            KeyCode::Char(c) if !control => typed.push(c),
            _ => {}
        }
    }
}
