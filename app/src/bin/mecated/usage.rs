//! Command-line mistakes: [`UsageError`] (exit 2, naming the flag, the value and what
//! is expected) and the rendering of `clap`'s own errors.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::CommandFactory as _;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::cli::Cli;
use crate::out;

/// The exit status of a usage error.
pub(crate) const USAGE_EXIT: u8 = 2;

/// A flag or argument the command line cannot use: printed on stderr, exit 2.
#[derive(Debug)]
pub(crate) struct UsageError {
    message: String,
}

impl UsageError {
    /// `invalid value '<value>' for '<flag>': <expected>`.
    pub(crate) fn value(flag: &str, value: impl std::fmt::Display, expected: impl std::fmt::Display) -> Self {
        Self {
            message: format!("invalid value '{value}' for '{flag}': {expected}"),
        }
    }

    /// Any other message.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// Prints it and gives exit status 2.
    pub(crate) fn exit(&self) -> ExitCode {
        out::stderr(&format!(
            "error: {}\n\nFor more information, try '--help'.",
            self.message
        ));
        ExitCode::from(USAGE_EXIT)
    }
}

/// Prints a `clap` error the way the CLI promises and returns its exit status:
/// `--help` and `--version` go to stdout (0); an unknown subcommand names the word and
/// lists the subcommands; flags before any subcommand get the usage (2).
pub(crate) fn clap_failure(error: &clap::Error, args: &[OsString]) -> ExitCode {
    match error.kind() {
        ErrorKind::InvalidSubcommand => {
            let word = match error.get(ContextKind::InvalidSubcommand) {
                Some(ContextValue::String(word)) => word.clone(),
                _ => String::new(),
            };
            let (path, names) = subcommands_at(args, &word);
            out::stderr(&format!(
                "error: unknown subcommand '{word}' for '{path}'; expected one of: {}\n\n{}\n\nFor more information, try '--help'.",
                names.join(", "),
                usage_of(&path)
            ));
            ExitCode::from(USAGE_EXIT)
        }
        ErrorKind::UnknownArgument if !has_subcommand(args) => {
            let names = visible_subcommands(&Cli::command());
            out::stderr(&format!(
                "error: a subcommand comes first ({}), then its flags\n\n{}\n\nFor more information, try '--help'.",
                names.join(", "),
                usage_of("mecated")
            ));
            ExitCode::from(USAGE_EXIT)
        }
        _ => {
            let text = error.render().to_string();
            if error.use_stderr() {
                out::stderr(text.trim_end());
            } else {
                out::stdout(text.trim_end());
            }
            ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(USAGE_EXIT))
        }
    }
}

/// Whether some argument names a top-level subcommand.
fn has_subcommand(args: &[OsString]) -> bool {
    let command = Cli::command();
    args.iter().skip(1).any(|arg| {
        arg.to_str()
            .is_some_and(|word| command.find_subcommand(word).is_some())
    })
}

/// The command path leading to the unknown `word` and the subcommands offered there.
fn subcommands_at(args: &[OsString], word: &str) -> (String, Vec<String>) {
    let mut command = Cli::command();
    let mut path = vec!["mecated".to_owned()];
    for arg in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if arg == word {
            break;
        }
        let next = command.find_subcommand(arg).cloned();
        if let Some(next) = next {
            path.push(arg.to_owned());
            command = next;
        }
    }
    (path.join(" "), visible_subcommands(&command))
}

fn visible_subcommands(command: &clap::Command) -> Vec<String> {
    command
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .map(|c| c.get_name().to_owned())
        .collect()
}

/// The usage line(s) of the command at `path` (`mecated`, `mecated skills`).
fn usage_of(path: &str) -> String {
    let mut command = Cli::command();
    command.build();
    let mut current = command;
    for word in path.split(' ').skip(1) {
        if let Some(next) = current.find_subcommand(word).cloned() {
            current = next;
        }
    }
    current.render_usage().to_string()
}
