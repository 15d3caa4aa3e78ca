//! Saving an "allow always" answer as an `allow` rule of the project's
//! `.mecatl/settings.local.json`: a prefix rule that will match the next such call
//! (`Shell(git commit:*)`), never the exact command; the file is replaced
//! atomically, its other keys kept.

use std::io::Write as _;
use std::path::Path;

use engine_ports::ToolCall;
use serde_json::{Value, json};

use crate::settings::{self, SettingsError};
use crate::shell;

/// Why an approval could not be saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistError {
    /// The existing file cannot be used.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// Writing failed.
    #[error("cannot write {file}: {cause}")]
    Write {
        /// The file.
        file: String,
        /// What went wrong.
        cause: std::io::Error,
    },
}

/// The rule an "allow always" of `call` saves: `Shell(cmd sub:*)` for a single
/// simple command (the subcommand kept when the second word is one), the bare tool
/// otherwise; `None` for a compound or unparsed command.
pub fn learned_rule(call: &ToolCall) -> Option<String> {
    if call.name() != "Shell" {
        return Some(call.name().to_owned());
    }
    let args = call.args_value();
    let command = args.get("command")?.as_str()?;
    let parts = shell::split(command)?;
    let [part] = parts.as_slice() else {
        return None;
    };
    if part.assigns || part.writes_file {
        return None;
    }
    let first = part.words.first()?;
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' || c == '/')
    };
    if !plain(first) {
        return None;
    }
    let prefix = match part.words.get(1) {
        Some(sub)
            if !sub.starts_with('-')
                && sub
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            format!("{first} {sub}")
        }
        _ => first.clone(),
    };
    Some(format!("Shell({prefix}:*)"))
}

/// Adds `rule` to `permissions.allow` of the settings file at `path` (created when
/// missing), replacing the file atomically; a rule already there is not repeated.
pub fn persist_allow(path: &Path, rule: &str) -> Result<(), PersistError> {
    let write_error = |cause| PersistError::Write {
        file: path.display().to_string(),
        cause,
    };
    let mut value = match settings::read_text(path, true)? {
        Some(text) => serde_json::from_str::<Value>(&text).map_err(|e| SettingsError {
            file: path.to_owned(),
            json_path: "$".to_owned(),
            expected: format!("is not valid JSON: {e}"),
        })?,
        None => json!({}),
    };
    let not_object = |at: &str| SettingsError {
        file: path.to_owned(),
        json_path: at.to_owned(),
        expected: "expected an object".to_owned(),
    };
    let top = value.as_object_mut().ok_or_else(|| not_object("$"))?;
    let permissions = top
        .entry("permissions")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object("$.permissions"))?;
    let allow = permissions
        .entry("allow")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| SettingsError {
            file: path.to_owned(),
            json_path: "$.permissions.allow".to_owned(),
            expected: "expected an array of rule strings".to_owned(),
        })?;
    if allow.iter().any(|r| r.as_str() == Some(rule)) {
        return Ok(());
    }
    allow.push(json!(rule));
    let text = serde_json::to_string_pretty(&value).map_err(|e| write_error(std::io::Error::other(e)))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(write_error)?;
    let temp = dir.join(format!(".settings.local.json.{}.tmp", fastrand::u64(..)));
    let written = (|| {
        let mut file = GUARD.create_new(&temp)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        fs_guard::sync_dir(dir)
    })();
    if let Err(cause) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(write_error(cause));
    }
    Ok(())
}

const GUARD: fs_guard::Guard = fs_guard::Guard {
    symlink: "is a symbolic link",
    fifo_or_socket: None,
    directory: None,
    not_regular: settings::not_regular,
};
