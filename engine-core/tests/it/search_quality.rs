//! Keyword-search quality of `ToolSearch`: the committed query set
//! (`tests/data/tool_search_queries.json`) over the tools of three real MCP servers and
//! a synthetic catalog of 1,000 tools; the intended tool must be in the top 3 for at
//! least 90 % of the queries.

use std::sync::Arc;

use engine_core::{Catalog, Tool, ToolSearch};
use engine_ports::PermissionMode;
use serde::Deserialize;

use crate::support::{FakeTool, Probe};

const QUERY_SET: &str = include_str!("../data/tool_search_queries.json");

#[derive(Deserialize)]
struct QuerySet {
    servers: std::collections::BTreeMap<String, Vec<RealTool>>,
    synthetic: Synthetic,
    queries: Vec<Query>,
}

#[derive(Deserialize)]
struct RealTool {
    name: String,
    description: String,
    schema: serde_json::Value,
}

#[derive(Deserialize)]
struct Synthetic {
    verbs: Vec<Verb>,
    servers: Vec<SyntheticServer>,
}

#[derive(Deserialize)]
struct Verb {
    verb: String,
    description: String,
    argument: String,
    argument_description: String,
}

#[derive(Deserialize)]
struct SyntheticServer {
    server: String,
    nouns: Vec<Noun>,
}

#[derive(Deserialize)]
struct Noun {
    noun: String,
    plural: String,
    about: String,
}

#[derive(Deserialize)]
struct Query {
    query: String,
    tool: String,
}

fn disclosable(
    name: &str,
    description: &str,
    schema: serde_json::Value,
    probe: &Arc<Probe>,
) -> Arc<dyn Tool> {
    let first_line = description.lines().next().unwrap_or_default().to_owned();
    FakeTool::new(name, true, probe)
        .described(description)
        .with_schema(schema)
        .disclosable(&first_line)
        .arc()
}

/// The real servers' tools plus every synthetic verb × noun tool.
fn catalog(set: &QuerySet) -> (Catalog, usize) {
    let probe = Probe::new();
    let mut catalog = Catalog::new();
    for (server, tools) in &set.servers {
        for tool in tools {
            let name = format!("mcp__{server}__{}", tool.name);
            catalog.must_register(disclosable(&name, &tool.description, tool.schema.clone(), &probe));
        }
    }
    let real = catalog.len();
    for server in &set.synthetic.servers {
        for noun in &server.nouns {
            for verb in &set.synthetic.verbs {
                let fill = |text: &str| {
                    text.replace("{nouns}", &noun.plural)
                        .replace("{noun}", &noun.noun)
                        .replace("{about}", &noun.about)
                };
                let name = format!("mcp__{}__{}_{}", server.server, verb.verb, noun.noun);
                let schema = serde_json::json!({
                    "type": "object",
                    "properties": {
                        verb.argument.as_str(): {"type": "string", "description": fill(&verb.argument_description)}
                    }
                });
                catalog.must_register(disclosable(&name, &fill(&verb.description), schema, &probe));
            }
        }
    }
    (catalog, real)
}

#[test]
fn keyword_queries_find_the_intended_tool_in_the_top_three() {
    let set: QuerySet = serde_json::from_str(QUERY_SET).unwrap();
    assert!(set.queries.len() >= 50, "at least 50 queries");
    let (catalog, real) = catalog(&set);
    assert_eq!(
        catalog.len() - real,
        1000,
        "the synthetic catalog has 1,000 tools"
    );
    let search = ToolSearch::new(Arc::new(catalog), PermissionMode::Default);

    let mut hits = 0;
    let mut misses = Vec::new();
    for query in &set.queries {
        let top = search.matches_up_to(&query.query, 3);
        if top.contains(&query.tool.as_str()) {
            hits += 1;
        } else {
            misses.push(format!("{:?} → {top:?} (wanted {})", query.query, query.tool));
        }
    }
    let rate = hits as f64 / set.queries.len() as f64;
    println!(
        "ToolSearch keyword quality: {hits}/{} queries ({:.1} %) have the intended tool in the top 3 \
         ({} tools: {real} real, 1000 synthetic)",
        set.queries.len(),
        rate * 100.0,
        real + 1000
    );
    for miss in &misses {
        println!("  miss: {miss}");
    }
    assert!(
        rate >= 0.9,
        "top-3 hit rate {rate:.3} < 0.9; misses:\n{}",
        misses.join("\n")
    );
}
