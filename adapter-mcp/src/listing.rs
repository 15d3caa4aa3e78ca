//! Listings: our own `nextCursor` loop with caps, tolerant decoding of raw list
//! results (a schema-less tool gets `{"type":"object"}`), and the snapshot entries.

use std::collections::HashSet;
use std::sync::Arc;

use engine_ports::ToolSpec;
use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::naming::validate_tool_name;
use crate::session::{Failure, ListKind, Session};

/// Most entries one listing gathers.
pub(crate) const MAX_LIST_ENTRIES: usize = 10_000;
/// Most pages one listing reads.
pub(crate) const MAX_LIST_PAGES: usize = 1_000;

/// One advertised tool, as built once per listing.
#[derive(Clone)]
pub(crate) struct ToolDef {
    pub(crate) remote: String,
    pub(crate) full: Arc<str>,
    pub(crate) spec: ToolSpec,
    pub(crate) light: ToolSpec,
    pub(crate) read_only: bool,
    /// The server's `destructiveHint` (MCP's default, `true`, when absent).
    pub(crate) destructive: bool,
    /// The advertised `outputSchema`, kept privately (never sent to the model).
    pub(crate) output_schema: Option<Value>,
    /// Its validator, compiled with the listing; `None` without a usable schema.
    pub(crate) output_validator: Option<Arc<jsonschema::Validator>>,
}

impl ToolDef {
    /// Whether the tool declares an `outputSchema` (its results are structured).
    pub(crate) fn has_output_schema(&self) -> bool {
        self.output_schema.is_some()
    }
}

/// Equal listings are equal tools: the validator is a function of the schema.
impl PartialEq for ToolDef {
    fn eq(&self, other: &Self) -> bool {
        self.remote == other.remote
            && self.full == other.full
            && self.spec == other.spec
            && self.light == other.light
            && self.read_only == other.read_only
            && self.destructive == other.destructive
            && self.output_schema == other.output_schema
    }
}

impl std::fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDef")
            .field("full", &self.full)
            .field("read_only", &self.read_only)
            .field("output_schema", &self.output_schema.is_some())
            .field("validated", &self.output_validator.is_some())
            .finish_non_exhaustive()
    }
}

/// One resource of a server's snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpResource {
    /// The server that lists it.
    pub server: String,
    /// Its URI.
    pub uri: String,
    /// Programmatic name (may be empty).
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type.
    pub mime: Option<String>,
    /// Advertised size in bytes.
    pub size: Option<u64>,
    /// Always `true`: reading a resource changes nothing.
    pub read_only: bool,
}

/// One prompt of a server's snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpPrompt {
    /// The server that lists it.
    pub server: String,
    /// Its name.
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<McpPromptArgument>,
}

/// One argument of an [`McpPrompt`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpPromptArgument {
    /// The name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Whether the server requires it.
    pub required: bool,
}

/// What one listing gathered, and the cap that stopped it early.
pub(crate) struct Gathered {
    pub(crate) items: Vec<Value>,
    pub(crate) cap: Option<String>,
}

/// Lists every page of `kind` on `session`: stops after [`MAX_LIST_ENTRIES`]
/// entries, [`MAX_LIST_PAGES`] pages, or on a repeated cursor, keeping what was
/// gathered and naming the cap.
pub(crate) async fn list_all(
    session: &Session,
    kind: ListKind,
    cancel: &CancellationToken,
) -> Result<Gathered, Failure> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    let mut pages = 0usize;
    loop {
        let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
        let reply = session
            .request(
                ClientRequest::CustomRequest(CustomRequest::new(kind.method(), params)),
                cancel,
            )
            .await?;
        let page = result_value(reply);
        let Value::Object(mut page) = page else {
            return Err(Failure::Other(format!(
                "the {} result is not a JSON object",
                kind.method()
            )));
        };
        pages += 1;
        match page.remove(kind.key()) {
            Some(Value::Array(list)) => items.extend(list),
            None | Some(Value::Null) => {}
            Some(_) => {
                return Err(Failure::Other(format!(
                    "the {} result's `{}` is not an array",
                    kind.method(),
                    kind.key()
                )));
            }
        }
        if items.len() >= MAX_LIST_ENTRIES {
            items.truncate(MAX_LIST_ENTRIES);
            return Ok(Gathered {
                items,
                cap: Some(format!("{MAX_LIST_ENTRIES} entries")),
            });
        }
        let next = match page.remove("nextCursor") {
            Some(Value::String(next)) if !next.is_empty() => next,
            _ => return Ok(Gathered { items, cap: None }),
        };
        if !seen.insert(next.clone()) {
            return Ok(Gathered {
                items,
                cap: Some("a repeated cursor".to_owned()),
            });
        }
        if pages >= MAX_LIST_PAGES {
            return Ok(Gathered {
                items,
                cap: Some(format!("{MAX_LIST_PAGES} pages")),
            });
        }
        cursor = Some(next);
    }
}

/// The raw JSON of a reply, whichever variant rmcp's untagged decoding picked.
pub(crate) fn result_value(result: ServerResult) -> Value {
    match result {
        ServerResult::CustomResult(custom) => custom.0,
        other => serde_json::to_value(&other).unwrap_or(Value::Null),
    }
}

fn string_field(object: &Map<String, Value>, key: &str) -> Option<String> {
    object.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// One entry of a listing, with what names it in an error.
struct Entry<'a> {
    server: &'a str,
    kind: ListKind,
    index: usize,
    object: Map<String, Value>,
}

impl Entry<'_> {
    /// The error for a bad entry: `problem` follows the entry's server, listing and index.
    fn error(&self, problem: &str) -> String {
        format!(
            "MCP server {:?}: {} entry {} {problem}",
            self.server,
            self.kind.method(),
            self.index
        )
    }

    /// The string field `key`, when it is one.
    fn string(&self, key: &str) -> Option<String> {
        string_field(&self.object, key)
    }

    /// The string field `key`, which the entry must have.
    fn required_string(&self, key: &str) -> Result<String, String> {
        self.string(key)
            .ok_or_else(|| self.error(&format!("has no {key}")))
    }
}

/// Decodes every entry of a `kind` listing of `server` with `decode`; an entry that is
/// not an object, or that `decode` refuses, fails the whole listing.
fn decode_entries<T>(
    server: &str,
    kind: ListKind,
    items: Vec<Value>,
    mut decode: impl FnMut(Entry<'_>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::Object(object) = item else {
                return Err(format!(
                    "MCP server {server:?}: {} entry {index} is not an object",
                    kind.method()
                ));
            };
            decode(Entry {
                server,
                kind,
                index,
                object,
            })
        })
        .collect()
}

/// Decodes and validates a tool listing. An entry that is not an object or whose
/// name breaks a rule (missing, not a string, empty, a control character, over 256
/// bytes with its prefix) is skipped with a warning naming the server, the entry and
/// the rule, so one bad tool never takes the server's other tools with it.
pub(crate) fn decode_tools(server: &str, items: Vec<Value>) -> Result<Vec<ToolDef>, String> {
    let items = items
        .into_iter()
        .enumerate()
        .filter_map(|(index, item)| match tool_name_problem(server, &item) {
            None => Some(item),
            Some(problem) => {
                tracing::warn!(
                    server,
                    entry = index,
                    "MCP server {server:?}: tools/list entry {index} is skipped: {problem}"
                );
                None
            }
        })
        .collect();
    decode_entries(server, ListKind::Tools, items, |entry| {
        let object = &entry.object;
        let remote = match object.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(entry.error("has no string name")),
        };
        let full = validate_tool_name(server, &remote).map_err(|e| e.to_string())?;
        let description = entry.string("description").unwrap_or_default();
        let schema = match object.get("inputSchema") {
            None | Some(Value::Null) => json!({"type": "object"}),
            Some(Value::Object(map)) if map.is_empty() => json!({"type": "object"}),
            Some(other) => other.clone(),
        };
        let read_only = object
            .get("annotations")
            .and_then(|a| a.get("readOnlyHint"))
            .is_some_and(|hint| *hint == Value::Bool(true));
        let destructive = object
            .get("annotations")
            .and_then(|a| a.get("destructiveHint"))
            .is_none_or(|hint| *hint != Value::Bool(false));
        let output_schema = object.get("outputSchema").filter(|s| !s.is_null()).cloned();
        let output_validator = output_schema
            .as_ref()
            .and_then(|schema| crate::output_schema::compile(server, &remote, schema));
        let full: Arc<str> = Arc::from(full);
        let first_line = description.lines().next().unwrap_or("").to_owned();
        Ok(ToolDef {
            spec: ToolSpec::new(Arc::clone(&full), description).with_schema(schema),
            light: ToolSpec::new(Arc::clone(&full), first_line),
            remote,
            full,
            read_only,
            destructive,
            output_schema,
            output_validator,
        })
    })
}

/// Why a tool entry cannot be offered, if it cannot (its name's rule).
fn tool_name_problem(server: &str, item: &Value) -> Option<String> {
    let Value::Object(object) = item else {
        return Some("it is not an object".to_owned());
    };
    match object.get("name") {
        Some(Value::String(name)) => validate_tool_name(server, name).err().map(|e| e.to_string()),
        None | Some(Value::Null) => Some("it has no name".to_owned()),
        Some(_) => Some("its name is not a string".to_owned()),
    }
}

/// Decodes a resource listing; entries without a string `uri` are a listing error.
pub(crate) fn decode_resources(server: &str, items: Vec<Value>) -> Result<Vec<McpResource>, String> {
    decode_entries(server, ListKind::Resources, items, |entry| {
        Ok(McpResource {
            server: server.to_owned(),
            uri: entry.required_string("uri")?,
            name: entry.string("name").unwrap_or_default(),
            title: entry.string("title"),
            description: entry.string("description"),
            mime: entry.string("mimeType"),
            size: entry.object.get("size").and_then(Value::as_u64),
            read_only: true,
        })
    })
}

/// Decodes a prompt listing; entries without a string `name` are a listing error.
pub(crate) fn decode_prompts(server: &str, items: Vec<Value>) -> Result<Vec<McpPrompt>, String> {
    decode_entries(server, ListKind::Prompts, items, |entry| {
        let name = entry.required_string("name")?;
        let arguments = entry
            .object
            .get("arguments")
            .and_then(Value::as_array)
            .map(|args| {
                args.iter()
                    .filter_map(Value::as_object)
                    .filter_map(|arg| {
                        Some(McpPromptArgument {
                            name: string_field(arg, "name")?,
                            description: string_field(arg, "description"),
                            required: arg.get("required") == Some(&Value::Bool(true)),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(McpPrompt {
            server: server.to_owned(),
            name,
            title: entry.string("title"),
            description: entry.string("description"),
            arguments,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rmcp decodes replies into an untagged union; whatever variant a raw listing
    /// lands in, `result_value` must give the listing back unharmed.
    #[test]
    fn raw_listings_survive_rmcp_decoding() {
        let pages = [
            json!({"tools": [{"name": "no_schema"}], "nextCursor": "c2"}),
            json!({"tools": [{"name": "ok", "inputSchema": {"type": "object"}}]}),
            json!({"tools": []}),
            json!({"resources": [{"uri": "test://a", "name": "a"}]}),
            json!({"prompts": [{"name": "p"}]}),
        ];
        for page in pages {
            let decoded: ServerResult = serde_json::from_value(page.clone()).unwrap();
            let back = result_value(decoded);
            for key in ["tools", "resources", "prompts", "nextCursor"] {
                assert_eq!(back.get(key), page.get(key), "{page} came back as {back}");
            }
        }
    }

    #[test]
    fn a_tool_with_a_bad_name_is_skipped_and_the_others_are_kept() {
        let capture = test_peers::logs::Capture::start();
        let long = "x".repeat(300);
        let tools = decode_tools(
            "srv",
            vec![
                json!({"name": "first"}),
                json!({"name": long}),
                json!({"name": "bell\u{7}"}),
                json!({"name": 7}),
                json!({"description": "no name"}),
                json!("not an object"),
                json!({"name": "last"}),
            ],
        )
        .unwrap();
        let names: Vec<&str> = tools.iter().map(|tool| tool.remote.as_str()).collect();
        assert_eq!(names, ["first", "last"]);
        for index in 1..=5 {
            let entry = format!("tools/list entry {index} is skipped");
            assert_eq!(
                capture.warns_with(&["\"srv\"", &entry]).len(),
                1,
                "{entry}: {:?}",
                capture.all()
            );
        }
        assert_eq!(capture.warns_with(&["entry 3", "not a string"]).len(), 1);
        assert_eq!(capture.warns_with(&["entry 4", "no name"]).len(), 1);
    }

    #[test]
    fn a_schema_less_tool_gets_an_object_schema() {
        let tools = decode_tools(
            "s",
            vec![json!({"name": "t"}), json!({"name": "u", "inputSchema": {}})],
        )
        .unwrap();
        for tool in tools {
            assert_eq!(tool.spec.schema(), Some(&json!({"type": "object"})));
            assert!(!tool.read_only);
        }
    }
}
