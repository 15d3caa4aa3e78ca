//! Settings files in the shape of Claude Code's `settings.json`: `permissions`
//! (`allow`, `ask`, `deny`, `defaultMode`), `hooks` by event, and
//! `allowManagedHooksOnly` in the managed file. Every other key is accepted and
//! listed as ignored. Files are read with a size cap; errors name the file, the JSON
//! path and what is expected.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine_ports::{HookEvent, Keyword as _, PermissionMode, RuleEffect};
use serde_json::Value;

use crate::hooks::HookCommand;
use crate::rules::{Roots, Rule, RuleError};

/// The largest settings file read (1 MiB).
pub const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// The default time a hook command may run (60 s).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest `timeout` a hook may ask for (10 minutes).
const MAX_HOOK_TIMEOUT_SECS: u64 = 600;

/// Where a settings file comes from, in the order of their authority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// The administrator's managed file: nothing else can loosen it.
    Managed,
    /// `--settings FILE`.
    CommandLine,
    /// The workspace's `.mecatl/settings.local.json` or `.claude/settings.local.json`
    /// (only with `--trust-project`).
    ProjectLocal,
    /// The workspace's `.mecatl/settings.json` or `.claude/settings.json` (only with
    /// `--trust-project`).
    Project,
    /// The user's `$XDG_CONFIG_HOME/mecatl/settings.json`.
    User,
}

/// A settings file that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("settings file {}: {json_path}: {expected}", file.display())]
pub struct SettingsError {
    /// The file.
    pub file: PathBuf,
    /// Where in it (`$.permissions.allow[2]`; `$` for the file as a whole).
    pub json_path: String,
    /// What is wrong, or what is expected.
    pub expected: String,
}

/// One settings file, read.
#[derive(Clone, Debug)]
pub struct SettingsFile {
    /// Where it came from.
    pub path: PathBuf,
    /// Its tier.
    pub tier: Tier,
    /// Its rules, in `deny`, `ask`, `allow` order.
    pub rules: Vec<Rule>,
    /// `permissions.defaultMode`.
    pub default_mode: Option<PermissionMode>,
    /// Its hooks.
    pub hooks: Vec<HookCommand>,
    /// `allowManagedHooksOnly` (honoured in the managed file only).
    pub managed_hooks_only: bool,
    /// Keys and rules this harness does not use, by JSON path.
    pub ignored: Vec<String>,
}

/// Opens a settings file: `nofollow` refuses a symbolic link at the last component
/// (files a repository could plant); regular files only, at most
/// [`MAX_SETTINGS_BYTES`]. `None` when it does not exist.
pub(crate) fn read_text(path: &Path, nofollow: bool) -> Result<Option<String>, SettingsError> {
    let error = |expected: String| SettingsError {
        file: path.to_owned(),
        json_path: "$".to_owned(),
        expected,
    };
    let opened = if nofollow {
        GUARD.open_existing(path)
    } else {
        match File::open(path) {
            Ok(file) => GUARD.regular_file(&file).map(|meta| Some((file, meta))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    };
    let Some((file, meta)) = opened.map_err(|e| error(format!("cannot be opened: {e}")))? else {
        return Ok(None);
    };
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(error(format!(
            "is {} bytes; a settings file may have at most {MAX_SETTINGS_BYTES}",
            meta.len()
        )));
    }
    let mut text = String::new();
    file.take(MAX_SETTINGS_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| error(format!("cannot be read as UTF-8 text: {e}")))?;
    if text.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(error(format!("grew past {MAX_SETTINGS_BYTES} bytes while read")));
    }
    Ok(Some(text))
}

const GUARD: fs_guard::Guard = fs_guard::Guard {
    symlink: "is a symbolic link; settings in a workspace are never read through one",
    fifo_or_socket: Some("is a FIFO or a socket, not a settings file"),
    directory: None,
    not_regular,
};

pub(crate) fn not_regular(kind: &'static str) -> String {
    format!("is a {kind}, not a regular file")
}

/// Parses a settings file's text.
pub fn parse(
    path: &Path,
    tier: Tier,
    text: &str,
    roots: &Roots,
    known: &dyn Fn(&str) -> bool,
) -> Result<SettingsFile, SettingsError> {
    let error = |json_path: &str, expected: String| SettingsError {
        file: path.to_owned(),
        json_path: json_path.to_owned(),
        expected,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        error(
            "$",
            format!(
                "is not valid JSON (line {}, column {}): {e}",
                e.line(),
                e.column()
            ),
        )
    })?;
    let Value::Object(top) = value else {
        return Err(error("$", "expected a JSON object".to_owned()));
    };
    let source = path.display().to_string();
    let mut file = SettingsFile {
        path: path.to_owned(),
        tier,
        rules: Vec::new(),
        default_mode: None,
        hooks: Vec::new(),
        managed_hooks_only: false,
        ignored: Vec::new(),
    };
    for (key, value) in &top {
        match key.as_str() {
            "permissions" => permissions(&mut file, value, &source, roots, known, &error)?,
            "hooks" => hooks(&mut file, value, &error)?,
            "allowManagedHooksOnly" => {
                file.managed_hooks_only = value
                    .as_bool()
                    .ok_or_else(|| error("$.allowManagedHooksOnly", "expected true or false".to_owned()))?;
                if tier != Tier::Managed {
                    file.ignored
                        .push("$.allowManagedHooksOnly (honoured in the managed file only)".to_owned());
                }
            }
            "$schema" => {}
            other => file.ignored.push(format!("$.{other}")),
        }
    }
    Ok(file)
}

type ErrorAt<'a> = dyn Fn(&str, String) -> SettingsError + 'a;

fn permissions(
    file: &mut SettingsFile,
    value: &Value,
    source: &str,
    roots: &Roots,
    known: &dyn Fn(&str) -> bool,
    error: &ErrorAt<'_>,
) -> Result<(), SettingsError> {
    let Value::Object(map) = value else {
        return Err(error("$.permissions", "expected an object".to_owned()));
    };
    for (key, value) in map {
        let at = format!("$.permissions.{key}");
        let effect = match key.as_str() {
            "allow" => RuleEffect::Allow,
            "ask" => RuleEffect::Ask,
            "deny" => RuleEffect::Deny,
            "defaultMode" => {
                let text = value.as_str().unwrap_or_default();
                file.default_mode = Some(text.parse::<PermissionMode>().map_err(|_| {
                    error(
                        &at,
                        format!("expected one of default, plan, acceptEdits (found {value})"),
                    )
                })?);
                continue;
            }
            _ => {
                file.ignored.push(at);
                continue;
            }
        };
        let Value::Array(items) = value else {
            return Err(error(&at, "expected an array of rule strings".to_owned()));
        };
        for (i, item) in items.iter().enumerate() {
            let at = format!("{at}[{i}]");
            let Some(text) = item.as_str() else {
                return Err(error(
                    &at,
                    format!("expected a rule string such as \"Bash(git:*)\" (found {item})"),
                ));
            };
            match Rule::parse(text, effect, source, roots, known) {
                Ok(rule) => file.rules.push(rule),
                Err(RuleError::Foreign(tool)) => {
                    file.ignored.push(format!("{at} ({tool}: no such tool here)"))
                }
                Err(RuleError::UnknownTool(tool)) => {
                    return Err(error(
                        &at,
                        format!(
                            "unknown tool {tool:?} in rule {text:?}: expected a tool of `mecated tools`, Bash, or mcp__server[__tool]"
                        ),
                    ));
                }
                Err(RuleError::Syntax(why)) => return Err(error(&at, format!("rule {text:?}: {why}"))),
            }
        }
    }
    file.rules.sort_by_key(|rule| match rule.effect {
        RuleEffect::Deny => 0,
        RuleEffect::Ask => 1,
        RuleEffect::Allow => 2,
    });
    Ok(())
}

fn hooks(file: &mut SettingsFile, value: &Value, error: &ErrorAt<'_>) -> Result<(), SettingsError> {
    let Value::Object(events) = value else {
        return Err(error("$.hooks", "expected an object of hook events".to_owned()));
    };
    for (event, groups) in events {
        let at = format!("$.hooks.{event}");
        let Ok(event) = event.parse::<HookEvent>() else {
            return Err(error(
                &at,
                format!(
                    "unknown hook event {event:?}: expected one of {}",
                    HookEvent::expected()
                ),
            ));
        };
        let Value::Array(groups) = groups else {
            return Err(error(
                &at,
                "expected an array of {\"matcher\", \"hooks\"} objects".to_owned(),
            ));
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("{at}[{g}]");
            let matcher =
                match group.get("matcher") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(m)) if m.is_empty() || m == "*" => None,
                    Some(Value::String(m)) => Some(crate::hooks::Matcher::parse(m).map_err(|why| {
                        error(&format!("{at}.matcher"), format!("bad matcher {m:?}: {why}"))
                    })?),
                    Some(other) => {
                        return Err(error(
                            &format!("{at}.matcher"),
                            format!("expected a tool name or regex (found {other})"),
                        ));
                    }
                };
            let Some(Value::Array(commands)) = group.get("hooks") else {
                return Err(error(
                    &format!("{at}.hooks"),
                    "expected an array of {\"type\": \"command\", …}".to_owned(),
                ));
            };
            for (h, command) in commands.iter().enumerate() {
                let at = format!("{at}.hooks[{h}]");
                if command.get("type").and_then(Value::as_str) != Some("command") {
                    return Err(error(&format!("{at}.type"), "expected \"command\"".to_owned()));
                }
                let Some(text) = command
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|c| !c.trim().is_empty())
                else {
                    return Err(error(
                        &format!("{at}.command"),
                        "expected a non-empty command string".to_owned(),
                    ));
                };
                let timeout = match command.get("timeout") {
                    None | Some(Value::Null) => DEFAULT_HOOK_TIMEOUT,
                    Some(t) => match t.as_u64() {
                        Some(secs) if (1..=MAX_HOOK_TIMEOUT_SECS).contains(&secs) => {
                            Duration::from_secs(secs)
                        }
                        _ => {
                            return Err(error(
                                &format!("{at}.timeout"),
                                format!(
                                    "expected whole seconds from 1 to {MAX_HOOK_TIMEOUT_SECS} (found {t})"
                                ),
                            ));
                        }
                    },
                };
                file.hooks.push(HookCommand {
                    event,
                    matcher: matcher.clone(),
                    command: text.to_owned(),
                    timeout,
                    source: file.path.display().to_string(),
                });
            }
        }
    }
    Ok(())
}
