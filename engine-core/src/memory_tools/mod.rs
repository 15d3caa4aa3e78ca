//! The memory and user-model tool families over a [`MemoryStore`]: `Remember`,
//! `Recall`, `SearchMemory`, `ForgetMemory` (project notes) and `RememberUser`,
//! `RecallUser`, `SearchUserModel`, `ForgetUser` (facts about the operator, keys under
//! `user/`). Writes are mutating tools (asked for, hidden in plan mode); every refusal
//! is a model-visible error result and changes nothing.

mod fold;
mod guards;
mod render;

use std::sync::Arc;

use async_trait::async_trait;
use engine_ports::{
    MAX_MEMORY_KEY_BYTES, MemoryError, MemoryStore, MemoryWrite, ToolCall, ToolResult, ToolSpec,
    truncate_with_ellipsis,
};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::environment::Environment;
use crate::tool::{Tool, ToolError, with_args};

pub use render::{
    MEMORY_DATA_LINE, MEMORY_INDEX_MAX_BYTES, MEMORY_INDEX_MAX_ENTRIES, OPERATOR_PROFILE_MAX_BYTES,
    render_memory_index, render_operator_profile,
};

/// `Remember`.
pub const REMEMBER_TOOL_NAME: &str = "Remember";
/// `Recall`.
pub const RECALL_TOOL_NAME: &str = "Recall";
/// `SearchMemory`.
pub const SEARCH_MEMORY_TOOL_NAME: &str = "SearchMemory";
/// `ForgetMemory`.
pub const FORGET_MEMORY_TOOL_NAME: &str = "ForgetMemory";
/// `RememberUser`.
pub const REMEMBER_USER_TOOL_NAME: &str = "RememberUser";
/// `RecallUser`.
pub const RECALL_USER_TOOL_NAME: &str = "RecallUser";
/// `SearchUserModel`.
pub const SEARCH_USER_MODEL_TOOL_NAME: &str = "SearchUserModel";
/// `ForgetUser`.
pub const FORGET_USER_TOOL_NAME: &str = "ForgetUser";
/// The mutating tools of both families (what `acceptEdits` lets through without an ask).
pub const MEMORY_WRITE_TOOL_NAMES: [&str; 4] = [
    REMEMBER_TOOL_NAME,
    FORGET_MEMORY_TOOL_NAME,
    REMEMBER_USER_TOOL_NAME,
    FORGET_USER_TOOL_NAME,
];

/// The prefix of every user-model key.
pub const USER_KEY_PREFIX: &str = "user/";
/// Most entries `Recall` lists on a miss.
pub const RECALL_PREFIX_LIMIT: usize = 32;
/// `SearchMemory`'s default `limit`.
pub const DEFAULT_MEMORY_SEARCH_LIMIT: usize = 10;
/// `SearchMemory`'s largest `limit`.
pub const MAX_MEMORY_SEARCH_LIMIT: usize = 50;
/// The longest query, in bytes.
pub const MAX_MEMORY_QUERY_BYTES: usize = 4096;

/// `key` under `user/` (added when missing).
pub fn user_key(key: &str) -> String {
    if key.starts_with(USER_KEY_PREFIX) {
        key.to_owned()
    } else {
        format!("{USER_KEY_PREFIX}{key}")
    }
}

/// Which store the tools act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Project,
    User,
}

impl Scope {
    fn key(self, key: &str) -> String {
        match self {
            Self::Project => key.to_owned(),
            Self::User => user_key(key),
        }
    }
}

/// The four project-memory tools over `store`.
pub fn memory_tools(store: Arc<dyn MemoryStore>) -> Vec<Arc<dyn Tool>> {
    family(store, Scope::Project)
}

/// The four user-model tools over `store` (a different scope from project memory).
pub fn user_model_tools(store: Arc<dyn MemoryStore>) -> Vec<Arc<dyn Tool>> {
    family(store, Scope::User)
}

fn family(store: Arc<dyn MemoryStore>, scope: Scope) -> Vec<Arc<dyn Tool>> {
    let (remember, recall, search, forget) = match scope {
        Scope::Project => (
            REMEMBER_TOOL_NAME,
            RECALL_TOOL_NAME,
            SEARCH_MEMORY_TOOL_NAME,
            FORGET_MEMORY_TOOL_NAME,
        ),
        Scope::User => (
            REMEMBER_USER_TOOL_NAME,
            RECALL_USER_TOOL_NAME,
            SEARCH_USER_MODEL_TOOL_NAME,
            FORGET_USER_TOOL_NAME,
        ),
    };
    let tool = |name: &'static str, kind: Kind| -> Arc<dyn Tool> {
        Arc::new(MemoryTool {
            name,
            kind,
            scope,
            store: Arc::clone(&store),
            spec: spec(name, kind, scope, recall),
        })
    };
    vec![
        tool(remember, Kind::Remember),
        tool(recall, Kind::Recall),
        tool(search, Kind::Search),
        tool(forget, Kind::Forget),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Remember,
    Recall,
    Search,
    Forget,
}

/// The spec of one tool; `recall` names the family's `Recall` tool.
fn spec(name: &'static str, kind: Kind, scope: Scope, recall: &str) -> ToolSpec {
    let key_rule = "lowercase segments joined by \"/\", each starting with a-z then a-z, 0-9, _ or - \
                    (e.g. build/test-command), at most 128 bytes";
    let (what, key_example) = match scope {
        Scope::Project => (
            "a durable note about this project (kept across sessions)",
            "build/test-command",
        ),
        Scope::User => (
            "a durable fact about the operator you work for: a preference, convention or context, \
             never a command (kept across sessions and workspaces; keys live under user/, added when missing)",
            "user/editor",
        ),
    };
    let version = json!({
        "type": "integer",
        "minimum": 1,
        "description": format!("The key's current version, as {recall} or the system prompt shows it.")
    });
    match kind {
        Kind::Remember => ToolSpec::new(
            name,
            format!(
                "Saves {what}. Without expected_version it only creates: an existing key is refused with \
                 its current version. To replace a value, pass that version as expected_version. Never \
                 store secrets (keys, tokens, passwords): they are refused. The value is not echoed back."
            ),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": format!("The key: {key_rule}; e.g. {key_example}.")},
                "value": {"type": "string", "description": "What to keep (at most 64 KiB)."},
                "description": {"type": "string", "description": "One line saying what the value is for; shown in the index (at most 64 KiB)."},
                "expected_version": version,
            },
            "required": ["key", "value"],
            "additionalProperties": false
        })),
        Kind::Recall => ToolSpec::new(
            name,
            format!(
                "Returns the value saved under a key, as data. When no key matches exactly, returns the \
                 entries whose keys start with it (at most {RECALL_PREFIX_LIMIT})."
            ),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {"key": {"type": "string", "description": "A key, or the start of keys (e.g. build/)."}},
            "required": ["key"],
            "additionalProperties": false
        })),
        Kind::Search => ToolSpec::new(
            name,
            format!(
                "Finds saved entries by words (ranked, best first) and returns their keys, descriptions \
                 and versions, never values: call {recall} with a key to read it."
            ),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for in keys, descriptions and values."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_MEMORY_SEARCH_LIMIT, "description": format!("Most results (default {DEFAULT_MEMORY_SEARCH_LIMIT}).")},
            },
            "required": ["query"],
            "additionalProperties": false
        })),
        Kind::Forget => ToolSpec::new(
            name,
            format!(
                "Forgets a saved entry: {recall} and the system prompt no longer show it (its past \
                 versions are kept for the operator). Needs the key's current version."
            ),
        )
        .with_schema(json!({
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "The key to forget."},
                "expected_version": version,
            },
            "required": ["key", "expected_version"],
            "additionalProperties": false
        })),
    }
}

struct MemoryTool {
    name: &'static str,
    kind: Kind,
    scope: Scope,
    store: Arc<dyn MemoryStore>,
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    key: String,
    value: String,
    #[serde(default)]
    description: String,
    #[serde(default, deserialize_with = "version")]
    expected_version: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    key: String,
    #[serde(default, deserialize_with = "version")]
    expected_version: Option<u64>,
}

/// A version given as a number or as its decimal text (receipts quote it).
fn version<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<serde_json::Value>::deserialize(deserializer)?;
    match value {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => n
            .as_u64()
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom("expected_version must be a positive integer")),
        Some(serde_json::Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom("expected_version must be a positive integer")),
        Some(_) => Err(serde::de::Error::custom(
            "expected_version must be a positive integer",
        )),
    }
}

fn error(call: &ToolCall, text: impl Into<String>) -> ToolResult {
    ToolResult::error(call.id().clone(), text.into())
}

fn quoted(key: &str) -> String {
    format!("{:?}", truncate_with_ellipsis(key, 140))
}

#[async_trait]
impl Tool for MemoryTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn read_only(&self) -> bool {
        matches!(self.kind, Kind::Recall | Kind::Search)
    }

    async fn execute(
        &self,
        cancel: &CancellationToken,
        call: &ToolCall,
        _env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let work = async {
            match self.kind {
                Kind::Remember => with_args(call, |args| self.remember(call, args)).await,
                Kind::Recall => with_args(call, |args| self.recall(call, args)).await,
                Kind::Search => with_args(call, |args| self.search(call, args)).await,
                Kind::Forget => with_args(call, |args| self.forget(call, args)).await,
            }
        };
        tokio::select! {
            result = work => Ok(result),
            () = cancel.cancelled() => Err(ToolError::Cancelled),
        }
    }
}

impl MemoryTool {
    async fn remember(&self, call: &ToolCall, args: RememberArgs) -> ToolResult {
        let write = MemoryWrite {
            key: self.scope.key(&args.key),
            value: args.value,
            description: args.description,
            expected_version: args.expected_version,
            writer: self.name.to_owned(),
        };
        if let Err(e) = engine_ports::check_memory_write(&write) {
            return error(call, e.to_string());
        }
        for (part, text) in [("value", &write.value), ("description", &write.description)] {
            if let Some(reason) = guards::secret_reason(text) {
                return error(
                    call,
                    format!(
                        "refused: the {part} for {} looks like a secret ({reason}); memory never stores \
                         credentials, keep them in the environment or a secret manager",
                        quoted(&write.key)
                    ),
                );
            }
            if self.scope == Scope::User
                && let Some(reason) = guards::directive_reason(text)
            {
                return error(
                    call,
                    format!(
                        "refused: the {part} for {} reads as an instruction to the agent ({reason}); the \
                         user model keeps facts about the person (preferences, conventions, context), not \
                         commands",
                        quoted(&write.key)
                    ),
                );
            }
        }
        match self.store.put(write).await {
            Ok(entry) => ToolResult::text(
                call.id().clone(),
                format!("remembered key=\"{}\" version=\"{}\"", entry.key, entry.version),
            ),
            Err(e) => error(call, e.to_string()),
        }
    }

    async fn recall(&self, call: &ToolCall, args: RecallArgs) -> ToolResult {
        let key = self.scope.key(&args.key);
        if args.key.is_empty() || key.len() > MAX_MEMORY_KEY_BYTES {
            return error(
                call,
                MemoryError::InvalidKey {
                    key: args.key,
                    reason: format!("give a key or the start of keys, 1 to {MAX_MEMORY_KEY_BYTES} bytes"),
                }
                .to_string(),
            );
        }
        match self.store.get(&key).await {
            Ok(Some(entry)) => {
                return ToolResult::text(
                    call.id().clone(),
                    format!("{MEMORY_DATA_LINE}\n{}", render::fenced_value(&entry)),
                );
            }
            Ok(None) => {}
            Err(e) => return error(call, e.to_string()),
        }
        let listed = match self.store.prefix(&key, RECALL_PREFIX_LIMIT).await {
            Ok(listed) => listed,
            Err(e) => return error(call, e.to_string()),
        };
        if listed.entries.is_empty() {
            return ToolResult::text(call.id().clone(), format!("no memory for {}", quoted(&key)));
        }
        let mut text = if listed.total > listed.entries.len() {
            format!(
                "no memory for {}; {} keys start with it, the first {} by key:",
                quoted(&key),
                listed.total,
                listed.entries.len()
            )
        } else {
            format!(
                "no memory for {}; {} keys start with it:",
                quoted(&key),
                listed.total
            )
        };
        text.push('\n');
        text.push_str(MEMORY_DATA_LINE);
        for entry in &listed.entries {
            text.push('\n');
            text.push_str(&render::fenced_value(entry));
        }
        ToolResult::text(call.id().clone(), text)
    }

    async fn search(&self, call: &ToolCall, args: SearchArgs) -> ToolResult {
        if args.query.trim().is_empty() {
            return error(call, "the query is empty: give words to look for");
        }
        if args.query.len() > MAX_MEMORY_QUERY_BYTES {
            return error(
                call,
                format!(
                    "the query is {} bytes; at most {MAX_MEMORY_QUERY_BYTES} are allowed",
                    args.query.len()
                ),
            );
        }
        let limit = match args.limit.map(usize::try_from) {
            None => DEFAULT_MEMORY_SEARCH_LIMIT,
            Some(Ok(n)) if (1..=MAX_MEMORY_SEARCH_LIMIT).contains(&n) => n,
            Some(_) => {
                let n = args.limit.unwrap_or_default();
                return error(
                    call,
                    format!(
                        "limit {n} is out of range: give 1 to {MAX_MEMORY_SEARCH_LIMIT} (default \
                         {DEFAULT_MEMORY_SEARCH_LIMIT})"
                    ),
                );
            }
        };
        match self.store.search(&args.query, limit).await {
            Ok(hits) => {
                let rows: Vec<serde_json::Value> = hits
                    .iter()
                    .map(|hit| {
                        json!({
                            "key": hit.key,
                            "description": truncate_with_ellipsis(&hit.description, render::DESCRIPTION_LINE_BYTES),
                            "version": hit.version,
                        })
                    })
                    .collect();
                ToolResult::text(call.id().clone(), serde_json::Value::Array(rows).to_string())
            }
            Err(e) => error(call, e.to_string()),
        }
    }

    async fn forget(&self, call: &ToolCall, args: ForgetArgs) -> ToolResult {
        let key = self.scope.key(&args.key);
        let Some(expected) = args.expected_version else {
            return error(
                call,
                format!(
                    "expected_version is required: Recall {} to see its current version",
                    quoted(&key)
                ),
            );
        };
        match self.store.forget(&key, expected, self.name).await {
            Ok(version) => ToolResult::text(
                call.id().clone(),
                format!("forgot key=\"{key}\" version=\"{version}\" (a tombstone; past versions are kept)"),
            ),
            Err(e) => error(call, e.to_string()),
        }
    }
}
