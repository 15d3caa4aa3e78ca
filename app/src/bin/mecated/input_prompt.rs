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
        let mut err = std::io::stderr().lock();
        let about = input.description.as_deref().unwrap_or("a value");
        let shown_default = match &input.default {
            Some(default) if !input.password => format!(" [default: {default}]"),
            Some(_) => " [default: hidden]".to_owned(),
            None => String::new(),
        };
        let asked = writeln!(
            err,
            "MCP input {:?} of {} (or set {}):",
            input.id,
            file.display(),
            input_env_var(&input.id)
        )
        .and_then(|()| match &input.kind {
            McpInputKind::PickString { options } => {
                for (i, option) in options.iter().enumerate() {
                    writeln!(err, "  {}) {option}", i + 1)?;
                }
                write!(err, "{about}, 1-{}{shown_default}: ", options.len())
            }
            _ => write!(err, "{about}{shown_default}: "),
        })
        .and_then(|()| err.flush());
        asked.map_err(|e| format!("cannot write to the terminal: {e}"))?;
        drop(err);
        let typed = if input.password {
            read_hidden()?
        } else {
            read_line()?
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
                .ok_or_else(|| format!("{value:?} is none of the options 1-{}", options.len())),
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

/// One line typed without echo (raw mode for the time of the line): Enter ends it,
/// Backspace erases, Ctrl-C, Ctrl-D and Esc cancel.
fn read_hidden() -> Result<String, String> {
    terminal::enable_raw_mode().map_err(|e| format!("cannot read the terminal: {e}"))?;
    let typed = read_keys();
    let restored = terminal::disable_raw_mode();
    let _ = writeln!(std::io::stderr());
    restored.map_err(|e| format!("cannot restore the terminal: {e}"))?;
    typed
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
            KeyCode::Enter => return Ok(typed),
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
