//! `mecated memory list|show KEY|forget KEY [--user]`: the operator's view of what was
//! remembered, on the same store (and the same flags) the tools use.

use std::process::ExitCode;

use adapter_pgstore::PgStoreOptions;
use app::{BuildError, MemoryConfig, MemoryEnv, MemorySetting, OpenedMemory, StoreConfig, open_memory};
use engine_ports::{MemoryStore, check_memory_key, format_rfc3339_micros, truncate_with_ellipsis};
use serde_json::json;

use crate::cli::{MemoryCommand, MemoryScopeArgs};
use crate::out;
use crate::to_config::{existing_dir, memory_config, store_url};
use crate::usage::UsageError;

/// Who `memory forget` writes as.
const OPERATOR_WRITER: &str = "mecated memory forget";

/// Runs one `memory` subcommand. Exit 0 on success, 1 when the key is missing or the
/// store fails, 2 for usage errors.
pub(crate) async fn memory(command: MemoryCommand) -> ExitCode {
    let scope = match &command {
        MemoryCommand::List(args) => &args.scope,
        MemoryCommand::Show(args) | MemoryCommand::Forget(args) => &args.scope,
    };
    let opened = match open_scope(scope).await {
        Ok(Ok(opened)) => opened,
        Ok(Err(message)) => return out::failure(message),
        Err(error) => return error.exit(),
    };
    let place = opened.place.clone();
    let result = match &command {
        MemoryCommand::List(args) => list(&opened, &place, args.json).await,
        MemoryCommand::Show(args) => match key_of(scope, &args.key) {
            Ok(key) => show(opened.store.as_ref(), &place, &key).await,
            Err(error) => return error.exit(),
        },
        MemoryCommand::Forget(args) => match key_of(scope, &args.key) {
            Ok(key) => forget(opened.store.as_ref(), &place, &key).await,
            Err(error) => return error.exit(),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => out::failure(message),
    }
}

/// The store the flags select: project memory, or the user model with `--user`. A
/// usage error, or (inner) a database that cannot be opened.
async fn open_scope(scope: &MemoryScopeArgs) -> Result<Result<OpenedMemory, String>, UsageError> {
    let workspace = existing_dir("--workspace", &scope.workspace)?;
    let store = match &scope.store_url {
        Some(raw) => StoreConfig::Postgres {
            url: Box::new(store_url(raw)?),
            options: PgStoreOptions::default(),
        },
        None => StoreConfig::Memory,
    };
    let config = memory_config(&scope.memory, &workspace, &MemoryEnv::from_process(), &store)?;
    let (setting, off) = if scope.user {
        (config.user, "the user model is off (--no-user-model)")
    } else {
        (config.project, "project memory is off (--no-memory)")
    };
    match &setting {
        MemorySetting::Off => return Err(UsageError::new(off)),
        MemorySetting::Unavailable(reason) => return Err(UsageError::new(reason.clone())),
        _ => {}
    }
    let config = if scope.user {
        MemoryConfig {
            project: MemorySetting::Off,
            user: setting,
        }
    } else {
        MemoryConfig {
            project: setting,
            user: MemorySetting::Off,
        }
    };
    let stores = match open_memory(&config, &workspace).await {
        Ok(stores) => stores,
        Err(error @ BuildError::Database { .. }) => return Ok(Err(error.to_string())),
        Err(error) => return Err(UsageError::new(error.to_string())),
    };
    let opened = if scope.user { stores.user } else { stores.project };
    opened.map(Ok).ok_or_else(|| {
        let reason = stores
            .diagnostics
            .first()
            .map(|d| d.message.clone())
            .unwrap_or_else(|| off.to_owned());
        UsageError::new(reason)
    })
}

fn key_of(scope: &MemoryScopeArgs, key: &str) -> Result<String, UsageError> {
    let key = if scope.user {
        engine_core::user_key(key)
    } else {
        key.to_owned()
    };
    check_memory_key(&key).map_err(|e| UsageError::new(e.to_string()))?;
    Ok(key)
}

async fn list(opened: &OpenedMemory, place: &str, json: bool) -> Result<(), String> {
    let index = opened.store.index().await.map_err(|e| e.to_string())?;
    if json {
        let keys: Vec<serde_json::Value> = index
            .iter()
            .map(|e| {
                json!({
                    "key": e.key,
                    "description": e.description,
                    "version": e.version,
                    "updated_at": format_rfc3339_micros(e.updated_at),
                })
            })
            .collect();
        out::stdout(&json!({"dir": opened.dir, "scope": opened.scope, "keys": keys}).to_string());
        return Ok(());
    }
    if index.is_empty() {
        out::stderr(&format!("[memory] nothing remembered in {place}"));
        return Ok(());
    }
    out::stderr(&format!(
        "[memory] {} key(s) in {place}, most recently updated first",
        index.len()
    ));
    for entry in &index {
        let description = out::first_line(&entry.description);
        let mut line = format!(
            "{}  v{}  {}",
            entry.key,
            entry.version,
            format_rfc3339_micros(entry.updated_at)
        );
        if !description.is_empty() {
            line.push_str("  ");
            line.push_str(&truncate_with_ellipsis(description, 120));
        }
        out::stdout(&line);
    }
    Ok(())
}

async fn show(store: &dyn MemoryStore, place: &str, key: &str) -> Result<(), String> {
    let history = store.history(key).await.map_err(|e| e.to_string())?;
    let Some(current) = history.first() else {
        return Err(format!("no memory {key:?} in {place}"));
    };
    if current.forgotten {
        return Err(format!(
            "no memory {key:?} in {place}: it was forgotten at version {} ({})",
            current.entry.version, current.entry.writer
        ));
    }
    let entry = &current.entry;
    let mut text = format!(
        "key: {}\nversion: {}\nupdated_at: {}\nwriter: {}\ndescription: {}\nhistory:",
        entry.key,
        entry.version,
        format_rfc3339_micros(entry.updated_at),
        entry.writer,
        out::first_line(&entry.description)
    );
    for revision in &history {
        let what = if revision.forgotten {
            "forgotten"
        } else {
            "written"
        };
        text.push_str(&format!(
            " v{} {what} {} by {};",
            revision.entry.version,
            format_rfc3339_micros(revision.entry.updated_at),
            revision.entry.writer
        ));
    }
    text.pop();
    text.push_str("\nvalue:\n");
    text.push_str(&entry.value);
    out::stdout(&text);
    Ok(())
}

async fn forget(store: &dyn MemoryStore, place: &str, key: &str) -> Result<(), String> {
    let Some(entry) = store.get(key).await.map_err(|e| e.to_string())? else {
        return Err(format!("no memory {key:?} in {place}"));
    };
    let version = store
        .forget(key, entry.version, OPERATOR_WRITER)
        .await
        .map_err(|e| e.to_string())?;
    out::stdout(&format!("forgot key=\"{key}\" version=\"{version}\""));
    Ok(())
}
