//! Permission rules: `Tool` or `Tool(specifier)` parsed once, and matched against
//! calls. `Bash` reads as `Shell`, `LS` as `ListDir`, `Task` as `Subagent`,
//! `MultiEdit` as `Edit`. Path rules are gitignore-style globs; shell rules are
//! prefix or exact matches on the words of every simple command (see
//! [`crate::shell`]).

use std::path::{Component, Path, PathBuf};

use engine_ports::{RuleEffect, ToolCall};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::shell::{self, Part};

/// Tool names of other agents' settings that have no counterpart here: rules naming
/// them are listed as ignored, not refused.
pub const FOREIGN_TOOLS: &[&str] = &[
    "WebFetch",
    "WebSearch",
    "NotebookEdit",
    "NotebookRead",
    "TodoWrite",
    "BashOutput",
    "KillShell",
    "ExitPlanMode",
    "SlashCommand",
];

/// Tools whose `path` argument `Read(...)` rules cover.
const READ_FAMILY: &[&str] = &["Read", "Glob", "Grep", "ListDir"];
/// Tools whose `path` argument `Edit(...)` rules cover.
const EDIT_FAMILY: &[&str] = &["Edit", "Write"];

/// The canonical name of a tool as rules may spell it.
pub fn canonical_tool(name: &str) -> &str {
    match name {
        "Bash" => "Shell",
        "LS" => "ListDir",
        "Task" => "Subagent",
        "MultiEdit" => "Edit",
        other => other,
    }
}

/// One rule, parsed.
#[derive(Clone, Debug)]
pub struct Rule {
    /// As written.
    pub text: String,
    /// Where it was written.
    pub source: String,
    /// Its list.
    pub effect: RuleEffect,
    tool: ToolPattern,
    spec: Spec,
}

#[derive(Clone, Debug)]
enum ToolPattern {
    Named(String),
    McpServer(String),
}

#[derive(Clone, Debug)]
enum Spec {
    Any,
    Shell(ShellPattern),
    Path(Vec<PathMatcher>),
    Exact(String),
}

#[derive(Clone, Debug)]
enum ShellPattern {
    Prefix(Vec<String>),
    Exact(Vec<String>),
    Wildcard(String),
}

#[derive(Clone, Debug)]
enum PathMatcher {
    Rooted(Box<Gitignore>),
    Absolute(globset::GlobMatcher),
}

/// What went wrong reading a rule (the caller adds the file and JSON path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleError {
    /// Not `Tool` or `Tool(specifier)`.
    Syntax(String),
    /// A tool this harness does not have.
    UnknownTool(String),
    /// A tool of another agent, which this harness ignores.
    Foreign(String),
}

/// Where relative path rules are rooted and `~/` expands.
#[derive(Clone, Debug)]
pub struct Roots {
    /// The workspace.
    pub workspace: PathBuf,
    /// The user's home, if known.
    pub home: Option<PathBuf>,
}

impl Rule {
    /// Parses `text`; `known` says which tool names exist.
    pub fn parse(
        text: &str,
        effect: RuleEffect,
        source: &str,
        roots: &Roots,
        known: &dyn Fn(&str) -> bool,
    ) -> Result<Self, RuleError> {
        let trimmed = text.trim();
        let (name, spec) = match trimmed.split_once('(') {
            Some((name, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return Err(RuleError::Syntax("a specifier must end with `)`".to_owned()));
                };
                (name.trim(), Some(inner.trim()))
            }
            None => (trimmed, None),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '*')
        {
            return Err(RuleError::Syntax(
                "expected `Tool` or `Tool(specifier)` with a tool name of letters, digits and `_`".to_owned(),
            ));
        }
        let spec = spec.filter(|s| !s.is_empty() && *s != "*");
        if let Some(server_part) = name.strip_prefix("mcp__") {
            if spec.is_some() {
                return Err(RuleError::Syntax("MCP rules take no specifier".to_owned()));
            }
            let tool = match server_part.strip_suffix("__*") {
                Some(server) => ToolPattern::McpServer(server.to_owned()),
                None if server_part.contains("__") => ToolPattern::Named(name.to_owned()),
                None => ToolPattern::McpServer(server_part.to_owned()),
            };
            return Ok(Self::new(text, effect, source, tool, Spec::Any));
        }
        if FOREIGN_TOOLS.contains(&name) {
            return Err(RuleError::Foreign(name.to_owned()));
        }
        let tool = canonical_tool(name);
        if !known(tool) {
            return Err(RuleError::UnknownTool(name.to_owned()));
        }
        let spec = match (tool, spec) {
            (_, None) => Spec::Any,
            ("Shell", Some(spec)) => Spec::Shell(ShellPattern::parse(spec)?),
            ("Read" | "Write" | "Edit", Some(spec)) => Spec::Path(path_matchers(spec, roots)?),
            (_, Some(spec)) => Spec::Exact(spec.to_owned()),
        };
        Ok(Self::new(
            text,
            effect,
            source,
            ToolPattern::Named(tool.to_owned()),
            spec,
        ))
    }

    fn new(text: &str, effect: RuleEffect, source: &str, tool: ToolPattern, spec: Spec) -> Self {
        Self {
            text: text.to_owned(),
            source: source.to_owned(),
            effect,
            tool,
            spec,
        }
    }

    /// Whether this is a bare rule of the whole tool `name` (or its MCP server).
    pub fn covers_whole_tool(&self, name: &str) -> bool {
        matches!(self.spec, Spec::Any) && self.names(name)
    }

    fn names(&self, name: &str) -> bool {
        match &self.tool {
            ToolPattern::Named(tool) => tool == name,
            ToolPattern::McpServer(server) => name
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server.as_str()))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("__")),
        }
    }

    /// Whether the rule applies to the call's tool at all.
    fn applies_to(&self, name: &str) -> bool {
        match (&self.tool, &self.spec) {
            (ToolPattern::Named(tool), Spec::Path(_)) if tool == "Read" => READ_FAMILY.contains(&name),
            (ToolPattern::Named(tool), Spec::Path(_)) if tool == "Edit" => EDIT_FAMILY.contains(&name),
            _ => self.names(name),
        }
    }

    /// Whether the rule matches the call; for shell rules, whether it matches the
    /// whole command (`all`: every simple command) or any part of it.
    pub(crate) fn matches(&self, call: &CallView<'_>, all: bool) -> bool {
        if !self.applies_to(call.name) {
            return false;
        }
        match &self.spec {
            Spec::Any => true,
            Spec::Exact(value) => call.agent.as_ref().is_some_and(|agent| agent == value),
            Spec::Path(matchers) => {
                let Some(paths) = &call.paths else {
                    return false;
                };
                let hit = |p: &PathBuf| matchers.iter().any(|m| m.matches(p));
                // A directory a search or listing reads is refused when a rule covers
                // what is inside it.
                let inside = |p: &PathBuf| call.directory && hit(&p.join("x"));
                if all {
                    paths.iter().all(hit)
                } else {
                    paths.iter().any(|p| hit(p) || inside(p))
                }
            }
            Spec::Shell(pattern) => match (&call.shell, all) {
                (Some(Ok(parts)), true) => !parts.is_empty() && parts.iter().all(|p| pattern.allows(p)),
                (Some(Ok(parts)), false) => parts.iter().any(|p| pattern.matches(&p.words)),
                (Some(Err(lenient)), false) => lenient.iter().any(|words| pattern.matches(words)),
                _ => false,
            },
        }
    }

    /// Whether this rule, an `allow`, covers one simple command of a compound one.
    pub(crate) fn allows_part(&self, part: &Part) -> bool {
        match &self.spec {
            Spec::Any => true,
            Spec::Shell(pattern) => pattern.allows(part),
            _ => false,
        }
    }

    /// Whether this is a shell rule (of the `Shell` tool).
    pub(crate) fn is_shell(&self) -> bool {
        matches!(&self.tool, ToolPattern::Named(tool) if tool == "Shell")
    }
}

impl ShellPattern {
    fn parse(spec: &str) -> Result<Self, RuleError> {
        let words = |text: &str| -> Result<Vec<String>, RuleError> {
            match shell::split(text) {
                Some(parts) if parts.len() == 1 && !parts[0].assigns && !parts[0].writes_file => {
                    Ok(parts.into_iter().next().map(|p| p.words).unwrap_or_default())
                }
                _ => Err(RuleError::Syntax(format!(
                    "the shell specifier {text:?} must be one simple command (prefix rules end with `:*` or ` *`)"
                ))),
            }
        };
        if let Some(prefix) = spec.strip_suffix(":*").or_else(|| spec.strip_suffix(" *"))
            && !prefix.contains('*')
        {
            return Ok(Self::Prefix(words(prefix)?));
        }
        if !spec.contains('*') {
            return Ok(Self::Exact(words(spec)?));
        }
        Ok(Self::Wildcard(spec.to_owned()))
    }

    fn matches(&self, words: &[String]) -> bool {
        match self {
            Self::Prefix(prefix) => words.len() >= prefix.len() && words[..prefix.len()] == prefix[..],
            Self::Exact(exact) => words == exact.as_slice(),
            Self::Wildcard(pattern) => wildcard(pattern, &words.join(" ")),
        }
    }

    /// An allow covers a part with no assignments and no file redirections.
    fn allows(&self, part: &Part) -> bool {
        !part.assigns && !part.writes_file && self.matches(&part.words)
    }
}

/// `*` matches any text (spaces included); everything else literally.
fn wildcard(pattern: &str, text: &str) -> bool {
    let pieces: Vec<&str> = pattern.split('*').collect();
    let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
        return false;
    };
    if pieces.len() == 1 {
        return pattern == text;
    }
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

fn path_matchers(spec: &str, roots: &Roots) -> Result<Vec<PathMatcher>, RuleError> {
    let bad = |e: &dyn std::fmt::Display| RuleError::Syntax(format!("bad path pattern {spec:?}: {e}"));
    let absolute = if let Some(rest) = spec.strip_prefix("~/") {
        let home = roots.home.as_ref().ok_or_else(|| {
            RuleError::Syntax(format!("{spec:?} names the home directory and HOME is not set"))
        })?;
        Some(home.join(rest))
    } else if spec.starts_with('/') {
        Some(PathBuf::from(format!("/{}", spec.trim_start_matches('/'))))
    } else {
        None
    };
    if let Some(absolute) = absolute {
        let text = absolute.to_string_lossy().trim_end_matches('/').to_owned();
        let mut matchers = Vec::new();
        for pattern in [text.clone(), format!("{text}/**")] {
            let glob = globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| bad(&e))?;
            matchers.push(PathMatcher::Absolute(glob.compile_matcher()));
        }
        return Ok(matchers);
    }
    let relative = spec.strip_prefix("./").unwrap_or(spec);
    let mut builder = GitignoreBuilder::new(&roots.workspace);
    builder.add_line(None, relative).map_err(|e| bad(&e))?;
    let matcher = builder.build().map_err(|e| bad(&e))?;
    Ok(vec![PathMatcher::Rooted(Box::new(matcher))])
}

impl PathMatcher {
    fn matches(&self, path: &Path) -> bool {
        match self {
            Self::Absolute(glob) => glob.is_match(path),
            Self::Rooted(gitignore) => {
                path.starts_with(gitignore.path())
                    && path != gitignore.path()
                    && gitignore.matched_path_or_any_parents(path, false).is_ignore()
            }
        }
    }
}

/// A call as the rules see it: its tool, the shell command split into parts (or,
/// unparsed, its lenient reading), the paths it names, the agent it names.
pub(crate) struct CallView<'a> {
    pub(crate) name: &'a str,
    pub(crate) shell: Option<Result<Vec<Part>, Vec<Vec<String>>>>,
    pub(crate) paths: Option<Vec<PathBuf>>,
    /// Whether the path is a directory the tool reads into (`Glob`, `Grep`,
    /// `ListDir`).
    pub(crate) directory: bool,
    pub(crate) agent: Option<String>,
}

impl<'a> CallView<'a> {
    pub(crate) fn new(call: &'a ToolCall, roots: &Roots) -> Self {
        let args = call.args_value();
        let text = |key: &str| {
            args.get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let name = call.name();
        let shell = (name == "Shell").then(|| {
            let command = text("command").unwrap_or_default();
            shell::split(&command).ok_or_else(|| shell::lenient_parts(&command))
        });
        let paths = (READ_FAMILY.contains(&name) || EDIT_FAMILY.contains(&name)).then(|| {
            let raw = text("path").unwrap_or_else(|| ".".to_owned());
            resolved_paths(&raw, roots)
        });
        let agent = (name == "Subagent").then(|| text("agent")).flatten();
        Self {
            name,
            shell,
            paths,
            directory: matches!(name, "Glob" | "Grep" | "ListDir"),
            agent,
        }
    }
}

/// A path argument as the tool would resolve it, lexically, and (when it exists)
/// through its symbolic links: rules must hold for both.
fn resolved_paths(raw: &str, roots: &Roots) -> Vec<PathBuf> {
    let joined = if let Some(rest) = raw.strip_prefix("~/")
        && let Some(home) = &roots.home
    {
        home.join(rest)
    } else {
        roots.workspace.join(raw)
    };
    let mut lexical = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut paths = vec![lexical.clone()];
    if let Ok(real) = std::fs::canonicalize(&lexical)
        && real != lexical
    {
        paths.push(real);
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_across_words() {
        assert!(wildcard("git * main", "git push origin main"));
        assert!(!wildcard("git * main", "git push origin dev"));
        assert!(wildcard("npm run *", "npm run build"));
    }
}
