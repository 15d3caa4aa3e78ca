//! The chat's own commands (`/mode`, `/tools`, `/compact`, `/clear`, `/resume`,
//! `/cost`, `/model`, `/help`, `/exit`), told apart from the project's slash
//! commands, skills and MCP prompts, which go to the engine as prompts and are
//! expanded there; and Tab completion over both.

use engine_ports::{CommandInfo, Keyword as _, PermissionMode};

/// The chat's own commands with their one-line help, in the order `/help` lists them.
pub(crate) const BUILTINS: &[(&str, &str)] = &[
    (
        "mode",
        "/mode plan|default|acceptEdits — switch the permission mode (Shift-Tab cycles)",
    ),
    ("tools", "/tools — the tools the model sees in this mode"),
    ("compact", "/compact — compact the conversation now"),
    ("clear", "/clear — start a new session (this one stays stored)"),
    (
        "resume",
        "/resume [ID|N] — continue a past session of this workspace; /resume delete N",
    ),
    ("cost", "/cost — tokens used so far"),
    ("model", "/model [NAME] — show or switch the model of this chat"),
    ("help", "/help — this list"),
    ("exit", "/exit — leave (Ctrl-D at an empty prompt too)"),
];

/// A chat command the person typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Builtin {
    /// `/mode [MODE]`.
    Mode(Option<String>),
    /// `/tools`.
    Tools,
    /// `/compact`.
    Compact,
    /// `/clear`.
    Clear,
    /// `/resume [ID|N]` (`None`: list).
    Resume(Option<String>),
    /// `/resume delete N`.
    Delete(String),
    /// `/cost`.
    Cost,
    /// `/model [NAME]`.
    Model(Option<String>),
    /// `/help`.
    Help,
    /// `/exit` or `/quit`.
    Exit,
}

/// The chat command `input` is, `None` for anything else (a prompt, or a project
/// command the engine expands).
pub(crate) fn parse(input: &str) -> Option<Builtin> {
    let rest = input.trim().strip_prefix('/')?;
    let (name, argument) = match rest.split_once(char::is_whitespace) {
        Some((name, argument)) => (name, Some(argument.trim().to_owned()).filter(|a| !a.is_empty())),
        None => (rest, None),
    };
    Some(match name {
        "mode" => Builtin::Mode(argument),
        "tools" => Builtin::Tools,
        "compact" => Builtin::Compact,
        "clear" | "new" => Builtin::Clear,
        "resume" => match argument.as_deref().and_then(|a| a.strip_prefix("delete ")) {
            Some(which) => Builtin::Delete(which.trim().to_owned()),
            None => Builtin::Resume(argument),
        },
        "cost" => Builtin::Cost,
        "model" => Builtin::Model(argument),
        "help" => Builtin::Help,
        "exit" | "quit" => Builtin::Exit,
        _ => return None,
    })
}

/// The mode after `mode` in the Shift-Tab cycle: default → acceptEdits → plan.
pub(crate) fn next_mode(mode: PermissionMode) -> PermissionMode {
    match mode {
        PermissionMode::Default => PermissionMode::AcceptEdits,
        PermissionMode::AcceptEdits => PermissionMode::Plan,
        _ => PermissionMode::Default,
    }
}

/// The mode a `/mode` argument names, or what is expected.
pub(crate) fn mode_word(word: &str) -> Result<PermissionMode, String> {
    word.parse::<PermissionMode>().map_err(|_| {
        format!(
            "unknown mode {word:?}: expected one of {}",
            PermissionMode::words().collect::<Vec<_>>().join(", ")
        )
    })
}

/// Tab completion of a `/name` being typed: the commands whose names start with it
/// (the chat's first, then the palette's), each `(name, description)`.
pub(crate) fn completions(input: &str, palette: &[CommandInfo]) -> Vec<(String, String)> {
    let Some(prefix) = input.strip_prefix('/') else {
        return Vec::new();
    };
    if prefix.contains(char::is_whitespace) {
        return Vec::new();
    }
    let mut found: Vec<(String, String)> = BUILTINS
        .iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(name, help)| ((*name).to_owned(), (*help).to_owned()))
        .collect();
    for command in palette {
        if command.name.starts_with(prefix) && !found.iter().any(|(name, _)| *name == command.name) {
            found.push((command.name.clone(), command.description.clone()));
        }
    }
    found
}

/// The longest prefix all `names` share.
pub(crate) fn common_prefix(names: &[&str]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut end = first.len();
    for name in &names[1..] {
        end = first
            .char_indices()
            .zip(name.chars())
            .find(|((_, a), b)| a != b)
            .map_or(end.min(name.len()), |((at, _), _)| at.min(end));
    }
    first[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_commands_are_told_apart_from_project_commands() {
        assert_eq!(parse("/mode plan"), Some(Builtin::Mode(Some("plan".into()))));
        assert_eq!(parse("/mode"), Some(Builtin::Mode(None)));
        assert_eq!(parse(" /resume 2 "), Some(Builtin::Resume(Some("2".into()))));
        assert_eq!(parse("/resume delete 3"), Some(Builtin::Delete("3".into())));
        assert_eq!(parse("/quit"), Some(Builtin::Exit));
        assert_eq!(parse("/review src/lib.rs"), None);
        assert_eq!(parse("hello /mode"), None);
    }

    #[test]
    fn modes_cycle_and_bad_words_list_the_good_ones() {
        assert_eq!(next_mode(PermissionMode::Default), PermissionMode::AcceptEdits);
        assert_eq!(next_mode(PermissionMode::AcceptEdits), PermissionMode::Plan);
        assert_eq!(next_mode(PermissionMode::Plan), PermissionMode::Default);
        assert_eq!(mode_word("plan"), Ok(PermissionMode::Plan));
        assert!(mode_word("yolo").unwrap_err().contains("plan"));
    }

    #[test]
    fn completion_offers_chat_and_palette_commands() {
        let palette = vec![
            CommandInfo {
                name: "review".into(),
                description: "Review a file".into(),
            },
            CommandInfo {
                name: "release-notes".into(),
                description: String::new(),
            },
        ];
        let names = |input: &str| -> Vec<String> {
            completions(input, &palette)
                .into_iter()
                .map(|(name, _)| name)
                .collect()
        };
        assert_eq!(names("/re"), ["resume", "review", "release-notes"]);
        assert_eq!(names("/rev"), ["review"]);
        assert!(names("/review x").is_empty());
        assert!(names("plain").is_empty());
        assert_eq!(common_prefix(&["resume", "review", "release-notes"]), "re");
        assert_eq!(common_prefix(&["review"]), "review");
    }
}
