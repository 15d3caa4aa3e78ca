//! `ToolSearch` (D4): returns full specs of matching tools so the model can call
//! them correctly. Which of them its result hydrates for the session (D3), and how,
//! is `disclosure.rs`'s: the whole mechanism is told in its module doc.

use std::sync::{Arc, LazyLock, OnceLock};

use async_trait::async_trait;
use engine_ports::{PermissionMode, ToolCall, ToolResult, ToolSpec, WordIndex};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Catalog, available_in, view_of};
use crate::environment::Environment;
use crate::tool::{Tool, ToolError};

/// The reserved name of the search tool.
pub const TOOL_SEARCH_NAME: &str = "ToolSearch";

/// Most tools a keyword query returns when the call gives no `limit`.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

/// The largest `limit` a keyword query honours (larger values are lowered to it).
pub const MAX_SEARCH_LIMIT: usize = 20;

/// In deferred disclosure, the most bytes the names of the deferred tools may take in
/// `ToolSearch`'s description; above it the description lists one line per server.
pub const DEFERRED_NAMES_BUDGET: usize = 4096;

const PURPOSE: &str = "Returns the full specs (name, description, argument schema) of the tools \
matching a query, so they can be called correctly.";

const LIGHT: &str = "Some tools are listed with a short description only; search for them \
before calling them.";

const DEFERRED: &str = "The deferred tools listed below are not in your tool list: load one with \
this tool before calling it.";

const MATCHING: &str = "The query is an exact tool name, `select:NameA,NameB` for several \
names, or words matched against tool names, descriptions and arguments, best match first (at \
most `limit`, default 5, up to 20; when no word matches, a case-insensitive substring of names \
and descriptions). An empty query returns every tool. The result is a JSON array (sorted by \
name, except for words); no match is `[]`. This tool is read-only.";

/// At most this many deferred tools get the compact `ToolSearch` spec: on a small
/// catalog the full matching rules would cost more than the tools they replace.
pub const COMPACT_SEARCH_UP_TO: usize = 50;

const COMPACT: &str = "Loads the full spec of the deferred tools named below so they can be \
called. Query: a tool name, `select:NameA,NameB`, or words (best match first, at most `limit`, \
default 5).";

/// The argument schema of the compact spec: the same arguments, without their prose.
fn compact_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT}
        }
    })
}

fn search_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "A tool name, words describing the task, or `select:NameA,NameB`."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "description": "Most tools a word query returns (default 5)."
            }
        }
    })
}

/// The spec of `ToolSearch` under light disclosure, for hosts that list it (family
/// `meta`).
pub fn tool_search_spec() -> ToolSpec {
    // Built once: every turn under light disclosure advertises it.
    static SPEC: LazyLock<ToolSpec> = LazyLock::new(|| {
        ToolSpec::new(TOOL_SEARCH_NAME, format!("{PURPOSE} {LIGHT} {MATCHING}")).with_schema(search_schema())
    });
    SPEC.clone()
}

/// The spec of `ToolSearch` under deferred disclosure: the text of
/// [`tool_search_spec`] saying that the listed tools are not in the tool list, followed
/// by the deferred tools of `catalog` in `mode` (built once per catalog and mode, so
/// byte-identical across turns). Without deferred tools, no listing and no such
/// sentence. With at most [`COMPACT_SEARCH_UP_TO`] deferred tools the spec is compact
/// (one sentence on the query forms, the schema without prose), so it scales with the
/// catalog: a small catalog never pays more for `ToolSearch` than its tools save.
pub fn deferred_tool_search_spec(catalog: &Catalog, mode: PermissionMode) -> ToolSpec {
    let (listing, count) = catalog.search_cache().deferred_listing(catalog, mode);
    if listing.is_empty() {
        return ToolSpec::new(TOOL_SEARCH_NAME, format!("{PURPOSE} {MATCHING}")).with_schema(search_schema());
    }
    if count <= COMPACT_SEARCH_UP_TO {
        return ToolSpec::new(TOOL_SEARCH_NAME, format!("{COMPACT}{listing}")).with_schema(compact_schema());
    }
    ToolSpec::new(
        TOOL_SEARCH_NAME,
        format!("{PURPOSE} {DEFERRED} {MATCHING}{listing}"),
    )
    .with_schema(search_schema())
}

/// What `ToolSearch` derives from one catalog, built on first use and shared by every
/// search over it (a registration replaces it with an empty one).
#[derive(Clone, Default)]
pub(crate) struct SearchCache {
    index: OnceLock<Arc<KeywordIndex>>,
    /// The deferred listing and how many tools it covers: `[0]` for the default
    /// modes, `[1]` for plan mode.
    deferred: [OnceLock<(Arc<str>, usize)>; 2],
    /// The bytes of the Disclosable tools' full specs (name, description, schema).
    disclosable_bytes: OnceLock<u64>,
}

impl SearchCache {
    /// The bytes of the full specs of `catalog`'s Disclosable tools, computed once.
    pub(crate) fn disclosable_bytes(&self, catalog: &Catalog) -> u64 {
        *self.disclosable_bytes.get_or_init(|| {
            catalog
                .entries()
                .filter(|(_, tool)| tool.advertised_spec().is_some())
                .map(|(_, tool)| {
                    let spec = tool.spec();
                    let schema = spec
                        .schema()
                        .and_then(|schema| serde_json::to_string(schema).ok())
                        .map_or(0, |text| text.len());
                    (spec.name().len() + spec.description().len() + schema) as u64
                })
                .sum()
        })
    }

    fn index(&self, catalog: &Catalog) -> &KeywordIndex {
        self.index.get_or_init(|| Arc::new(KeywordIndex::build(catalog)))
    }

    fn deferred_listing(&self, catalog: &Catalog, mode: PermissionMode) -> (&str, usize) {
        let (listing, count) = self.deferred[view_of(mode)].get_or_init(|| {
            let (listing, count) = deferred_listing(catalog, mode);
            (Arc::from(listing), count)
        });
        (listing, *count)
    }
}

/// The deferred-tools part of `ToolSearch`'s description: the Disclosable tools
/// available in `mode`, grouped by MCP server (`mcp__<server>__*`, then `other`), as
/// names while they fit [`DEFERRED_NAMES_BUDGET`], else one line per group with its
/// tool count; with the number of tools it covers. Empty when nothing is Disclosable.
fn deferred_listing(catalog: &Catalog, mode: PermissionMode) -> (String, usize) {
    let mut servers: std::collections::BTreeMap<&str, Vec<&str>> = std::collections::BTreeMap::new();
    let mut other: Vec<&str> = Vec::new();
    for (name, tool) in catalog.entries() {
        if name == TOOL_SEARCH_NAME || !available_in(tool.as_ref(), mode) || tool.advertised_spec().is_none()
        {
            continue;
        }
        match mcp_prefix(name) {
            Some(prefix) => servers.entry(prefix).or_default().push(&name[prefix.len()..]),
            None => other.push(name),
        }
    }
    let count = servers.values().map(Vec::len).sum::<usize>() + other.len();
    if count == 0 {
        return (String::new(), 0);
    }
    let groups: Vec<(String, &[&str])> = servers
        .iter()
        .map(|(prefix, names)| (format!("{prefix}*"), names.as_slice()))
        .chain((!other.is_empty()).then(|| ("other".to_owned(), other.as_slice())))
        .collect();
    let names: String = groups
        .iter()
        .map(|(group, names)| format!("\n- {group}: {}", names.join(", ")))
        .collect();
    if names.len() <= DEFERRED_NAMES_BUDGET {
        return (
            format!("\n\nDeferred tools (full name = prefix + listed name):{names}"),
            count,
        );
    }
    let lines: String = groups
        .iter()
        .map(|(group, names)| {
            let count = names.len();
            let unit = if count == 1 { "tool" } else { "tools" };
            format!("\n- {group} ({count} {unit})")
        })
        .collect();
    let listing = format!(
        "\n\nDeferred tools, too many to name (search by words; a server's tools share its \
         prefix):{lines}"
    );
    (listing, count)
}

/// `mcp__<server>__` when `name` is an MCP tool name.
fn mcp_prefix(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    let end = rest.find("__")?;
    (end > 0 && rest.len() > end + 2).then(|| &name[..5 + end + 2])
}

/// The BM25 index over every tool of a catalog (all modes; a search filters by its view).
struct KeywordIndex {
    /// Document id → catalog key (ids follow the catalog's order).
    names: Vec<Arc<str>>,
    index: WordIndex,
}

impl KeywordIndex {
    fn build(catalog: &Catalog) -> Self {
        let names: Vec<Arc<str>> = catalog.names().map(Arc::from).collect();
        let documents: Vec<String> = catalog
            .entries()
            .map(|(name, tool)| document(name, &tool.spec()))
            .collect();
        Self {
            names,
            index: WordIndex::build(&documents),
        }
    }

    /// The keys of the tools matching `query`'s words, best first (ties in catalog order).
    fn rank(&self, query: &str) -> Vec<&str> {
        self.index
            .rank(query)
            .into_iter()
            .filter_map(|(id, _)| self.names.get(id))
            .map(|name| &**name)
            .collect()
    }
}

/// The text indexed for one tool: its name's words (twice: a name word weighs more),
/// its description, and the names and descriptions of its schema's top-level properties.
fn document(name: &str, spec: &ToolSpec) -> String {
    let mut text = format!("{name} {name} {}", spec.description());
    let properties = spec
        .schema()
        .and_then(|schema| schema.get("properties"))
        .and_then(serde_json::Value::as_object);
    for (property, body) in properties.into_iter().flatten() {
        text.push(' ');
        text.push_str(property);
        if let Some(description) = body.get("description").and_then(serde_json::Value::as_str) {
            text.push(' ');
            text.push_str(description);
        }
    }
    text
}

/// `ToolSearch` bound to one turn's view: the tools available in the session's
/// current mode (plan mode never hydrates a tool it cannot call).
pub struct ToolSearch {
    catalog: Arc<Catalog>,
    mode: PermissionMode,
}

impl ToolSearch {
    /// The search over `catalog` in `mode`.
    pub fn new(catalog: Arc<Catalog>, mode: PermissionMode) -> Self {
        Self { catalog, mode }
    }

    /// [`ToolSearch::matches_up_to`] with the default limit.
    pub fn matches(&self, query: &str) -> Vec<&str> {
        self.matches_up_to(query, DEFAULT_SEARCH_LIMIT)
    }

    /// The names of the tools matching `query` (the search view never holds
    /// `ToolSearch` itself): `select:A,B` → the named tools, sorted; an exact name →
    /// that tool; empty → every tool, sorted; otherwise the best `limit` tools for the
    /// query's words (BM25 over names, descriptions and argument names), best first,
    /// or, when no word matches, up to `limit` tools whose name or description contains
    /// the query (case-insensitive), sorted.
    pub fn matches_up_to(&self, query: &str, limit: usize) -> Vec<&str> {
        let in_view = |name: &str, tool: &Arc<dyn Tool>| {
            name != TOOL_SEARCH_NAME && available_in(tool.as_ref(), self.mode)
        };
        let view = || self.catalog.entries().filter(|(name, tool)| in_view(name, tool));
        let q = query.trim();
        if let Some(list) = q.strip_prefix("select:") {
            let wanted: std::collections::BTreeSet<&str> =
                list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            return view()
                .map(|(name, _)| name)
                .filter(|name| wanted.contains(name))
                .collect();
        }
        if let Some(tool) = self.catalog.lookup(q)
            && in_view(q, tool)
        {
            return self.catalog.names().filter(|name| *name == q).collect();
        }
        if q.is_empty() {
            return view().map(|(name, _)| name).collect();
        }
        let ranked: Vec<&str> = self
            .catalog
            .search_cache()
            .index(&self.catalog)
            .rank(q)
            .into_iter()
            .filter(|name| self.catalog.lookup(name).is_some_and(|tool| in_view(name, tool)))
            .take(limit)
            .collect();
        if !ranked.is_empty() {
            return ranked;
        }
        let needle = q.to_lowercase();
        view()
            .filter(|(name, tool)| {
                name.to_lowercase().contains(&needle)
                    || tool.spec().description().to_lowercase().contains(&needle)
            })
            .map(|(name, _)| name)
            .take(limit)
            .collect()
    }
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    limit: Option<u64>,
}

#[async_trait]
impl Tool for ToolSearch {
    fn spec(&self) -> ToolSpec {
        tool_search_spec()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _cancel: &CancellationToken,
        call: &ToolCall,
        env: &Environment,
    ) -> Result<ToolResult, ToolError> {
        let args: Args = match call.parse_args() {
            Ok(args) => args,
            Err(error) => return Ok(error.into_result(call)),
        };
        let limit = match args.limit {
            None => DEFAULT_SEARCH_LIMIT,
            Some(0) => {
                return Ok(ToolResult::error(
                    call.id().clone(),
                    format!("invalid arguments for tool {TOOL_SEARCH_NAME}: `limit` must be at least 1."),
                ));
            }
            Some(n) => usize::try_from(n)
                .unwrap_or(MAX_SEARCH_LIMIT)
                .min(MAX_SEARCH_LIMIT),
        };
        let names = self.matches_up_to(args.query.as_deref().unwrap_or(""), limit);
        let items: Vec<serde_json::Value> = names
            .iter()
            .filter_map(|name| self.catalog.lookup(name).map(|tool| (name, tool)))
            .map(|(name, tool)| {
                let spec = tool.spec();
                let mut item = serde_json::Map::new();
                item.insert("name".into(), serde_json::Value::from(*name));
                item.insert("description".into(), serde_json::Value::from(spec.description()));
                if let Some(schema) = spec.schema() {
                    item.insert("schema".into(), schema.clone());
                }
                serde_json::Value::Object(item)
            })
            .collect();
        let text = serde_json::Value::Array(items).to_string();
        let cap = env.output_cap();
        if !cap.fits(&text) {
            return Ok(ToolResult::error(
                call.id().clone(),
                format!(
                    "ToolSearch matched {} tools, whose specs exceed the {}-byte output cap. \
                     Use a narrower query, or `select:NameA,NameB` with exact names.",
                    names.len(),
                    cap.max_bytes()
                ),
            ));
        }
        Ok(ToolResult::text(call.id().clone(), text))
    }
}

/// The names of the tools whose full specs a (non-error) `ToolSearch` result returned.
pub fn returned_names(result: &ToolResult) -> Vec<String> {
    if result.is_error() {
        return Vec::new();
    }
    #[derive(Deserialize)]
    struct Item {
        name: String,
    }
    serde_json::from_str::<Vec<Item>>(result.content())
        .map(|items| items.into_iter().map(|item| item.name).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::mcp_prefix;

    #[test]
    fn mcp_names_group_by_server_prefix() {
        assert_eq!(mcp_prefix("mcp__git__git_log"), Some("mcp__git__"));
        assert_eq!(mcp_prefix("mcp__a__b__c"), Some("mcp__a__"));
        assert_eq!(mcp_prefix("mcp____x"), None);
        assert_eq!(mcp_prefix("mcp__git__"), None);
        assert_eq!(mcp_prefix("Read"), None);
    }
}
