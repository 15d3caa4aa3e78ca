//! Named agent definitions: `<dir>/<file>.md` with frontmatter (`name`,
//! `description`, `tools`, `model`, `max_turns`) whose body is the agent's system
//! prompt. Read and parsed like `SKILL.md` (the same confined reader, frontmatter
//! splitter, YAML decoder, name grammar and caps), with the same kind of operator
//! diagnostics for what is skipped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use engine_ports::{truncate_with_ellipsis, valid_skill_name};

use crate::confined::{MAX_DEFINITION_FILE_BYTES, read_definition_file};
use crate::discovery::SkipDiagnostic;
use crate::frontmatter;
use crate::skill_md::{
    ALLOWED_TOOL_NAME_CAP, ALLOWED_TOOLS_MAX, DESCRIPTION_CAP, FRONTMATTER_MAX_KEYS, SKILL_NAME_GRAMMAR,
};
use crate::tiers::{HostEnv, ProjectTrust, non_empty};
use crate::yaml::{self, Node};

/// The most a definition's `max_turns` may say (a child's own limit).
pub const AGENT_MAX_TURNS_CAP: u64 = 100;

/// Most agent files read per directory (the rest are skipped with one diagnostic).
pub const MAX_AGENT_FILES_PER_DIR: usize = 256;

/// A parsed, valid agent definition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedAgent {
    /// The trimmed name (the skill-name grammar).
    pub name: String,
    /// The trimmed description, capped at [`DESCRIPTION_CAP`] bytes.
    pub description: String,
    /// The tool names it may use, when it lists any.
    pub tools: Option<Vec<String>>,
    /// Its provider model, unless absent or `inherit`.
    pub model: Option<String>,
    /// Its turn limit (1 to [`AGENT_MAX_TURNS_CAP`]).
    pub max_turns: Option<u64>,
    /// The trimmed body: the agent's system prompt.
    pub body: String,
}

/// Why an agent file was skipped. Texts never echo frontmatter content other than
/// the name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentFileError {
    /// The file could not be read (a symlink, not a regular file, too large, I/O).
    #[error("the file was not read: {0}")]
    Unreadable(String),
    /// Not UTF-8.
    #[error("the file is not valid UTF-8")]
    NotUtf8,
    /// No frontmatter block.
    #[error(
        "no frontmatter: a leading `---` block is expected (the file must start with a line `---`, and a later line `---` closes the block)"
    )]
    NoFrontmatter,
    /// The frontmatter is not a YAML mapping of the expected shape.
    #[error("malformed frontmatter (YAML){}", .line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    Malformed {
        /// 1-based line in the file, when known.
        line: Option<usize>,
    },
    /// Too many top-level keys.
    #[error("frontmatter has {count} top-level keys, over the cap of {cap}")]
    TooManyKeys {
        /// How many.
        count: usize,
        /// The cap.
        cap: usize,
    },
    /// `name` is missing or empty.
    #[error("frontmatter `name` is missing or empty")]
    NameMissing,
    /// `name` breaks the grammar.
    #[error("name {name:?} is invalid: an agent name must match {SKILL_NAME_GRAMMAR}")]
    NameInvalid {
        /// The name (shortened when long).
        name: String,
    },
    /// `description` is missing or empty.
    #[error("frontmatter `description` is missing or empty")]
    DescriptionMissing,
    /// `max_turns` is not a whole number in range.
    #[error("frontmatter `max_turns` must be a whole number from 1 to {AGENT_MAX_TURNS_CAP}")]
    MaxTurns,
    /// The body (the system prompt) is empty.
    #[error("the body, which is the agent's system prompt, is empty")]
    EmptyBody,
}

impl From<yaml::Refused> for AgentFileError {
    fn from(refused: yaml::Refused) -> Self {
        match refused {
            yaml::Refused::Malformed { position } => Self::Malformed {
                line: position.map(|p| p.line),
            },
            yaml::Refused::TooManyKeys { count, cap } => Self::TooManyKeys { count, cap },
        }
    }
}

/// Parses one agent file's bytes.
///
/// # Errors
/// The first failing check, in the order of [`AgentFileError`].
pub fn parse_agent_md(bytes: &[u8]) -> Result<ParsedAgent, AgentFileError> {
    let text = std::str::from_utf8(bytes).map_err(|_| AgentFileError::NotUtf8)?;
    let normalized = frontmatter::normalize(text);
    let split = frontmatter::split(&normalized).ok_or(AgentFileError::NoFrontmatter)?;
    let entries = yaml::decode_mapping(split.frontmatter, 2, FRONTMATTER_MAX_KEYS)?;
    let mut name = None;
    let mut description = None;
    let mut tools = None;
    let mut model = None;
    let mut max_turns = None;
    for entry in &entries {
        let malformed = || AgentFileError::Malformed {
            line: Some(entry.position.line),
        };
        match entry.key.as_str() {
            "name" => name = Some(scalar(&entry.value).ok_or_else(malformed)?),
            "description" => description = Some(scalar(&entry.value).ok_or_else(malformed)?),
            "model" => model = Some(scalar(&entry.value).ok_or_else(malformed)?),
            "max_turns" => max_turns = Some(scalar(&entry.value).ok_or_else(malformed)?),
            "tools" => tools = Some(tool_names(&entry.value).ok_or_else(malformed)?),
            _ => {}
        }
    }
    let name = name.map(str::trim).unwrap_or_default();
    if name.is_empty() {
        return Err(AgentFileError::NameMissing);
    }
    if !valid_skill_name(name) {
        return Err(AgentFileError::NameInvalid {
            name: truncate_with_ellipsis(name, 128).into_owned(),
        });
    }
    let description = description.map(str::trim).unwrap_or_default();
    if description.is_empty() {
        return Err(AgentFileError::DescriptionMissing);
    }
    let max_turns = match max_turns.map(str::trim).filter(|t| !t.is_empty()) {
        None => None,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=AGENT_MAX_TURNS_CAP).contains(&n) => Some(n),
            _ => return Err(AgentFileError::MaxTurns),
        },
    };
    let body = split.body.trim();
    if body.is_empty() {
        return Err(AgentFileError::EmptyBody);
    }
    let model = model
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "inherit")
        .map(str::to_owned);
    let tools = tools.map(|names| {
        names
            .into_iter()
            .take(ALLOWED_TOOLS_MAX)
            .map(|n| {
                truncate_with_ellipsis(if n == "Bash" { "Shell" } else { n }, ALLOWED_TOOL_NAME_CAP)
                    .into_owned()
            })
            .collect()
    });
    Ok(ParsedAgent {
        name: name.to_owned(),
        description: truncate_with_ellipsis(description, DESCRIPTION_CAP).into_owned(),
        tools,
        model,
        max_turns,
        body: body.to_owned(),
    })
}

fn scalar(node: &Node) -> Option<&str> {
    match node {
        Node::Scalar(text) => Some(text),
        _ => None,
    }
}

/// Tool names: a sequence of scalars, or one scalar of names separated by commas or
/// whitespace (`Bash` is read as `Shell`, as in skills).
fn tool_names(node: &Node) -> Option<Vec<&str>> {
    fn split(text: &str) -> Vec<&str> {
        text.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|piece| !piece.is_empty())
            .collect()
    }
    match node {
        Node::Scalar(text) => Some(split(text)),
        Node::Seq(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Node::Scalar(text) => out.extend(split(text)),
                    _ => return None,
                }
            }
            Some(out)
        }
        Node::Map(_) => None,
    }
}

/// The workspace's agent directory, used only when it is trusted.
pub fn project_agent_dir(workspace: &Path) -> PathBuf {
    workspace.join(".mecatl/agents")
}

/// What loading agent definitions found.
#[derive(Clone, Debug, Default)]
pub struct AgentsLoad {
    /// The definitions, sorted by name (the first directory wins a name).
    pub agents: Vec<ParsedAgent>,
    /// Skipped files and withheld directories.
    pub diagnostics: Vec<SkipDiagnostic>,
}

/// Loads the agent definitions of `dirs` (`--agents-dir`, in order) and, only when
/// the workspace is trusted, of [`project_agent_dir`]; an untrusted project agent
/// directory that exists is withheld with a diagnostic. Every `*.md` file of a
/// directory (sorted, at most [`MAX_AGENT_FILES_PER_DIR`]) is read through the
/// confined reader; a file that fails is skipped with a diagnostic naming it and why,
/// as is a later definition of a name already taken. Each diagnostic is logged at
/// WARN too.
pub fn load_agents(dirs: &[PathBuf], workspace: &Path, trust: ProjectTrust, env: &HostEnv) -> AgentsLoad {
    let mut dirs: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|dir| non_empty(dir))
        .map(|dir| env.absolute(&dir))
        .collect();
    let mut load = AgentsLoad::default();
    let project = project_agent_dir(&env.absolute(workspace));
    if trust.is_trusted() {
        dirs.push(project);
    } else if project.exists() {
        load.diagnostics.push(SkipDiagnostic::new(
            &project,
            "project agent directory withheld: the workspace is not trusted (pass --trust-project to use it)",
        ));
    }
    let mut names = BTreeSet::new();
    for dir in &dirs {
        load_dir(dir, &mut names, &mut load);
    }
    load.agents.sort_by(|a, b| a.name.cmp(&b.name));
    for diagnostic in &load.diagnostics {
        tracing::warn!(path = %diagnostic.path.display(), "{}", diagnostic.reason);
    }
    load
}

fn load_dir(dir: &Path, names: &mut BTreeSet<String>, load: &mut AgentsLoad) {
    let reader = match std::fs::read_dir(dir) {
        Ok(reader) => reader,
        Err(error) => {
            load.diagnostics.push(SkipDiagnostic::new(
                dir,
                format!("agent directory cannot be read: {}", error.kind()),
            ));
            return;
        }
    };
    let mut paths: Vec<PathBuf> = reader
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    paths.sort();
    if paths.len() > MAX_AGENT_FILES_PER_DIR {
        load.diagnostics.push(SkipDiagnostic::new(
            dir,
            format!(
                "only the first {MAX_AGENT_FILES_PER_DIR} of {} agent files are read",
                paths.len()
            ),
        ));
        paths.truncate(MAX_AGENT_FILES_PER_DIR);
    }
    for path in paths {
        let parsed = read_definition_file(&path, MAX_DEFINITION_FILE_BYTES)
            .map_err(|refusal| AgentFileError::Unreadable(refusal.to_string()))
            .and_then(|bytes| parse_agent_md(&bytes));
        match parsed {
            Ok(agent) if names.contains(&agent.name) => load.diagnostics.push(SkipDiagnostic::new(
                &path,
                format!(
                    "agent skipped: the name {:?} is already defined by an earlier file",
                    agent.name
                ),
            )),
            Ok(agent) => {
                names.insert(agent.name.clone());
                load.agents.push(agent);
            }
            Err(error) => load
                .diagnostics
                .push(SkipDiagnostic::new(&path, format!("agent skipped: {error}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_gives_its_fields_and_body() {
        let agent = parse_agent_md(
            b"---\nname: reviewer\ndescription: Reviews diffs.\ntools: Read, Grep Bash\nmodel: small-model\nmax_turns: 12\n---\nYou review code.\n",
        )
        .unwrap();
        assert_eq!(
            agent,
            ParsedAgent {
                name: "reviewer".into(),
                description: "Reviews diffs.".into(),
                tools: Some(vec!["Read".into(), "Grep".into(), "Shell".into()]),
                model: Some("small-model".into()),
                max_turns: Some(12),
                body: "You review code.".into(),
            }
        );
        let listed = parse_agent_md(
            b"---\nname: a\ndescription: d\ntools:\n  - Read\n  - Glob\nmodel: inherit\n---\nbody",
        )
        .unwrap();
        assert_eq!(listed.tools, Some(vec!["Read".into(), "Glob".into()]));
        assert_eq!(listed.model, None);
    }

    #[test]
    fn bad_definitions_say_why() {
        let cases: [(&[u8], &str); 7] = [
            (b"no frontmatter", "no frontmatter"),
            (b"---\ndescription: d\n---\nbody", "`name` is missing"),
            (
                b"---\nname: Bad Name\ndescription: d\n---\nbody",
                "an agent name must match",
            ),
            (b"---\nname: a\n---\nbody", "`description` is missing"),
            (
                b"---\nname: a\ndescription: d\nmax_turns: 500\n---\nbody",
                "`max_turns` must be a whole number",
            ),
            (
                b"---\nname: a\ndescription: d\n---\n  \n",
                "system prompt, is empty",
            ),
            (
                b"---\nname: [a\n---\nbody",
                "malformed frontmatter (YAML) at line",
            ),
        ];
        for (bytes, expected) in cases {
            let error = parse_agent_md(bytes).unwrap_err().to_string();
            assert!(error.contains(expected), "{error} does not contain {expected}");
        }
    }
}
