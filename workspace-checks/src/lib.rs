//! Repository rules checked as ordinary tests: which workspace crate may depend on
//! which (the table in ARCHITECTURE.md's crate map), third-party crates `engine-ports` must never
//! pull, that every declared dependency is used, source-tree conventions, and the
//! container image and Kubernetes example ([`deploy`]). The rules are plain functions over data so the
//! tests can also prove that each rule fails when broken.

pub mod deploy;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How a dependency is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DepKind {
    /// `[dependencies]`.
    Normal,
    /// `[dev-dependencies]`.
    Dev,
    /// `[build-dependencies]`.
    Build,
}

/// One edge between two workspace crates.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// The dependent crate.
    pub from: String,
    /// The dependency.
    pub to: String,
    /// How it is used.
    pub kind: DepKind,
}

/// What `cargo metadata` says about the workspace.
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    /// Workspace member names.
    pub members: BTreeSet<String>,
    /// Edges between members.
    pub edges: Vec<Edge>,
    /// Every package name reachable from each member through normal and build
    /// dependencies (third-party ones included).
    pub closures: BTreeMap<String, BTreeSet<String>>,
    /// Each member's directory and the dependencies its manifest declares.
    pub declared: BTreeMap<String, Declared>,
}

/// What one member's manifest declares.
#[derive(Clone, Debug, Default)]
pub struct Declared {
    /// The directory of its `Cargo.toml`.
    pub dir: PathBuf,
    /// Each dependency as code names it (`serde-jsonlines` → `serde_jsonlines`, or its
    /// rename), with its kind.
    pub deps: Vec<(String, DepKind)>,
    /// Names listed under `[package.metadata.cargo-machete] ignored` (used only
    /// through features or by a build tool, never named in code).
    pub ignored: BTreeSet<String>,
}

/// Crates that exist only for tests and tooling; they may depend on no workspace
/// crate and any crate may use them as a dev-dependency.
pub const DEV_ONLY: &[&str] = &["workspace-checks", "test-peers"];

/// The driving adapters (faces): each reaches the engines through
/// `engine_core::host` only.
pub const FACES: &[&str] = &["adapter-acp", "adapter-http", "adapter-mcp-server", "adapter-tui"];

/// Third-party crates `engine-ports` must never pull, directly or transitively.
pub const BANNED_FROM_PORTS: &[&str] = &["rmcp", "reqwest", "axum", "clap", "agent-client-protocol"];

/// The workspace crates `crate_name` may depend on (the table in ARCHITECTURE.md), or
/// `None` for a crate the table does not know (a rule violation by itself).
pub fn allowed_dependencies(crate_name: &str, members: &BTreeSet<String>) -> Option<BTreeSet<String>> {
    let set = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    match crate_name {
        "engine-ports" => Some(BTreeSet::new()),
        "engine-core" => Some(set(&["engine-ports"])),
        "adapter-skillfs" | "adapter-jsonlstore" | "adapter-pgstore" | "adapter-memoryfs" => {
            Some(set(&["engine-ports", "fs-guard"]))
        }
        // Hook commands are child processes the harness starts: confined by the
        // sandbox crate as `Shell` is.
        "adapter-policy" => Some(set(&["engine-ports", "fs-guard", "sandbox"])),
        // The faces (driving adapters): they drive engines through the host port and
        // never depend on a driven adapter or on each other; a face that keeps a file
        // of its own (the terminal client's input history) opens it by the leaf
        // `fs-guard`'s rule; a face that listens on HTTP admits requests by the leaf
        // `http-guard`'s guard (Host, Origin, credential, body).
        name if FACES.contains(&name) => {
            Some(set(&["engine-ports", "engine-core", "fs-guard", "http-guard"]))
        }
        // The telemetry observes through the ports (an extra event sink, decorated
        // store ports); its tests drive a real engine.
        "adapter-telemetry" => Some(set(&["engine-ports", "engine-core"])),
        name if name.starts_with("adapter-") => {
            Some(set(&["engine-ports", "engine-core", "fs-guard", "sandbox"]))
        }
        // The file-safety rule the adapters that keep files share: a leaf.
        "fs-guard" => Some(BTreeSet::new()),
        // The one guard of the HTTP faces (Host, Origin, credential, body): a leaf.
        "http-guard" => Some(BTreeSet::new()),
        // Confining child processes (Shell, stdio MCP servers): the ports' words only.
        "sandbox" => Some(set(&["engine-ports"])),
        "app" => Some(
            members
                .iter()
                .filter(|m| m.as_str() != "app" && !DEV_ONLY.contains(&m.as_str()))
                .cloned()
                .collect(),
        ),
        name if DEV_ONLY.contains(&name) => Some(BTreeSet::new()),
        _ => None,
    }
}

/// Every breach of the dependency rules, as readable lines (empty when clean).
pub fn arrow_violations(workspace: &Workspace) -> Vec<String> {
    let mut out = Vec::new();
    for member in &workspace.members {
        if allowed_dependencies(member, &workspace.members).is_none() {
            out.push(format!(
                "crate `{member}` is not in the dependency table of workspace-checks; add its allowed arrows"
            ));
        }
    }
    for edge in &workspace.edges {
        let Some(allowed) = allowed_dependencies(&edge.from, &workspace.members) else {
            continue;
        };
        let dev_only_target = DEV_ONLY.contains(&edge.to.as_str());
        let ok = allowed.contains(&edge.to) || (edge.kind == DepKind::Dev && dev_only_target);
        if !ok {
            out.push(format!(
                "`{}` depends on `{}` ({:?}), which points the wrong way; allowed: {:?}",
                edge.from, edge.to, edge.kind, allowed
            ));
        }
    }
    if let Some(closure) = workspace.closures.get("engine-ports") {
        for banned in BANNED_FROM_PORTS {
            if closure.contains(*banned) {
                out.push(format!(
                    "`engine-ports` pulls `{banned}`, which must stay outside the ports crate"
                ));
            }
        }
    }
    out
}

/// Reads the workspace graph with `cargo metadata`.
///
/// # Errors
/// When cargo cannot run or its output does not parse.
pub fn load_workspace(root: &Path) -> Result<Workspace, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata output: {e}"))?;
    parse_metadata(&json)
}

/// Builds a [`Workspace`] from `cargo metadata --format-version 1` JSON.
///
/// # Errors
/// When the JSON lacks the expected fields.
pub fn parse_metadata(json: &serde_json::Value) -> Result<Workspace, String> {
    let packages = json["packages"].as_array().ok_or("no packages")?;
    let member_ids: BTreeSet<&str> = json["workspace_members"]
        .as_array()
        .ok_or("no workspace_members")?
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let name_of: BTreeMap<&str, &str> = packages
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let members: BTreeSet<String> = member_ids
        .iter()
        .filter_map(|id| name_of.get(id).map(|n| (*n).to_owned()))
        .collect();

    let mut edges = Vec::new();
    let mut declared = BTreeMap::new();
    for package in packages {
        let Some(from) = package["name"].as_str() else {
            continue;
        };
        if !members.contains(from) || !member_ids.contains(package["id"].as_str().unwrap_or_default()) {
            continue;
        }
        let mut mine = Declared {
            dir: package["manifest_path"]
                .as_str()
                .and_then(|p| Path::new(p).parent())
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            deps: Vec::new(),
            ignored: package["metadata"]["cargo-machete"]["ignored"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(to) = dep["name"].as_str() else { continue };
            let kind = match dep["kind"].as_str() {
                Some("dev") => DepKind::Dev,
                Some("build") => DepKind::Build,
                _ => DepKind::Normal,
            };
            let ident = dep["rename"].as_str().unwrap_or(to).replace('-', "_");
            if !mine.ignored.contains(to) {
                mine.deps.push((ident, kind));
            }
            if !members.contains(to) || dep["path"].is_null() {
                continue;
            }
            edges.push(Edge {
                from: from.to_owned(),
                to: to.to_owned(),
                kind,
            });
        }
        declared.insert(from.to_owned(), mine);
    }
    edges.sort();
    edges.dedup();

    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for node in json["resolve"]["nodes"].as_array().into_iter().flatten() {
        let Some(id) = node["id"].as_str() else { continue };
        let deps = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].as_str() != Some("dev"))
            })
            .filter_map(|d| d["pkg"].as_str())
            .collect();
        graph.insert(id, deps);
    }
    let mut closures = BTreeMap::new();
    for id in &member_ids {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut stack: Vec<&str> = graph.get(id).cloned().unwrap_or_default();
        while let Some(next) = stack.pop() {
            if seen.insert(next) {
                stack.extend(graph.get(next).cloned().unwrap_or_default());
            }
        }
        let names = seen
            .iter()
            .filter_map(|pid| name_of.get(pid).map(|n| (*n).to_owned()))
            .collect();
        if let Some(name) = name_of.get(id) {
            closures.insert((*name).to_owned(), names);
        }
    }
    Ok(Workspace {
        members,
        edges,
        closures,
        declared,
    })
}

/// The repository root (the parent of this crate's directory).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Rust files of the workspace (members' `src`, `tests`, `benches`, `examples`),
/// sorted, skipping build outputs and installed peers.
pub fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Whether a Rust source opens with a `//!` module doc line (blank lines and
/// `#![...]` attributes may precede it).
pub fn opens_with_module_doc(source: &str) -> bool {
    source
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("#!["))
        .is_some_and(|line| line.starts_with("//!"))
}

/// Whether `source` names the crate `ident` in code: `ident::…` (a path, `use`,
/// an attribute such as `#[tokio::test]`), `use ident;`/`use ident as …` or
/// `extern crate ident`, with no identifier character right before it.
pub fn names_crate(source: &str, ident: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(found) = source[from..].find(ident) {
        let start = from + found;
        let end = start + ident.len();
        from = end;
        if source[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let after = &source[end..];
        if after.starts_with("::") {
            return true;
        }
        if after.chars().next().is_some_and(is_ident) {
            continue;
        }
        let before = source[..start].trim_end();
        if before.ends_with("extern crate") || before.ends_with("use") {
            return true;
        }
    }
    false
}

/// Every declared dependency that no Rust file of its crate names (see
/// [`names_crate`]), as readable lines; `sources` are the crate's files' contents.
pub fn unused_dependencies(member: &str, declared: &Declared, sources: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    declared
        .deps
        .iter()
        .filter(|(ident, _)| seen.insert(ident.clone()))
        .filter(|(ident, _)| !sources.iter().any(|source| names_crate(source, ident)))
        .map(|(ident, kind)| {
            format!(
                "`{member}` declares `{ident}` ({kind:?}) but no Rust file of it names the crate; remove it, or list it under [package.metadata.cargo-machete] ignored when it is used only through features"
            )
        })
        .collect()
}
