//! [`FileCommandSource`]: slash-command templates from `*.md` files, re-read on every
//! call.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use engine_ports::{
    CommandBody, CommandError, CommandInfo, CommandSource, Diagnostic, Diagnostics, valid_command_name,
};

use crate::confined::{MAX_DEFINITION_FILE_BYTES, Refusal, read_definition_file};
use crate::discovery::SkipDiagnostic;
use crate::tiers::{HostEnv, ProjectTrust, non_empty};

/// Longest listed description, in chars (`…` included).
pub const COMMAND_DESCRIPTION_CHARS: usize = 80;

/// What the operator asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandDirsOptions {
    /// `--commands-dir` (used whatever the trust decision).
    pub commands_dir: Option<PathBuf>,
    /// The workspace root; empty means none.
    pub workspace: PathBuf,
    /// The trust decision (gates the project command directories).
    pub trust: ProjectTrust,
}

/// The workspace's project command directories: `<ws>/.mecatl/commands`, then
/// `<ws>/.claude/commands`.
pub fn project_command_dirs(workspace: &Path) -> [PathBuf; 2] {
    [
        workspace.join(".mecatl/commands"),
        workspace.join(".claude/commands"),
    ]
}

/// Command templates from files: `/name` reads `<dir>/<name>.md` from the first
/// directory that has it. Directories, in order: `--commands-dir`, then (only when
/// the workspace is trusted) `<ws>/.mecatl/commands` and `<ws>/.claude/commands`.
///
/// Nothing is cached: every expansion and every listing reads the files again.
/// Bodies are the files' text, verbatim (frontmatter included: the expander strips
/// it), so a file template expands byte-identically to the same template from any
/// other source. Reads run on Tokio's blocking pool (a Tokio runtime is needed).
///
/// A command file is read only when it is a regular file of at most
/// [`MAX_DEFINITION_FILE_BYTES`](crate::MAX_DEFINITION_FILE_BYTES), never through a
/// symlink at its name and never blocking on a FIFO. A listing skips any other file
/// with a WARN diagnostic naming it and the reason; expanding one is an error (its
/// reason names no path) and a WARN naming the file.
#[derive(Clone, Debug, Default)]
pub struct FileCommandSource {
    dirs: Vec<PathBuf>,
}

impl FileCommandSource {
    /// The source for `options`, with the diagnostics of its construction (a WARN,
    /// already logged, for each withheld project directory that exists).
    pub fn new(options: &CommandDirsOptions, env: &HostEnv) -> (Self, Vec<Diagnostic>) {
        let mut dirs = Vec::new();
        let mut diagnostics = Diagnostics::new();
        if let Some(dir) = options.commands_dir.as_deref().and_then(non_empty) {
            dirs.push(env.absolute(&dir));
        }
        if let Some(workspace) = non_empty(&options.workspace) {
            let project = project_command_dirs(&env.absolute(&workspace));
            if options.trust.is_trusted() {
                dirs.extend(project);
            } else {
                for dir in project.iter().filter(|dir| dir.exists()) {
                    diagnostics.warn(format!(
                        "project command directory {} withheld: the workspace is not trusted (pass --trust-project to use it)",
                        dir.display()
                    ));
                }
            }
        }
        (Self { dirs }, diagnostics.into_entries())
    }

    /// A source over exactly `dirs`, first winning.
    pub fn from_dirs(dirs: Vec<PathBuf>) -> Self {
        Self { dirs }
    }

    /// The directories consulted, in order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The commands of every directory (first winning, sorted by name), with a
    /// diagnostic for every `*.md` file with a valid command name that was skipped:
    /// a symlink, not a regular file, over the size limit, unreadable or not UTF-8.
    /// Blocking; [`list_commands`](CommandSource::list_commands) runs it on the
    /// blocking pool and logs the diagnostics at WARN.
    pub fn list_with_diagnostics(&self) -> (Vec<CommandInfo>, Vec<SkipDiagnostic>) {
        list(&self.dirs)
    }
}

#[async_trait]
impl CommandSource for FileCommandSource {
    async fn list_commands(&self) -> Result<Vec<CommandInfo>, CommandError> {
        let dirs = self.dirs.clone();
        let (commands, skipped) = tokio::task::spawn_blocking(move || list(&dirs))
            .await
            .map_err(|_| CommandError::List {
                reason: "listing command files was interrupted".into(),
            })?;
        let mut diagnostics = Diagnostics::new();
        for skip in skipped {
            diagnostics.warn(skip.to_string());
        }
        Ok(commands)
    }

    async fn command_body(&self, name: &str) -> Result<Option<CommandBody>, CommandError> {
        if !valid_command_name(name) {
            return Ok(None);
        }
        let dirs = self.dirs.clone();
        let command = name.to_owned();
        let failed = |reason: String| CommandError::Expand {
            command: name.to_owned(),
            reason,
        };
        let read = tokio::task::spawn_blocking(move || lookup(&dirs, &command))
            .await
            .map_err(|_| failed("reading the command file was interrupted".into()))?;
        match read {
            Ok(None) => Ok(None),
            Ok(Some(bytes)) => match String::from_utf8(bytes) {
                Ok(body) => Ok(Some(CommandBody {
                    body,
                    post: String::new(),
                })),
                Err(_) => Err(failed("the command file is not valid UTF-8".into())),
            },
            Err((path, refusal)) => {
                Diagnostics::new().warn(skip_reason(&path, &refusal).to_string());
                Err(failed(format!("the command file was not read: {refusal}")))
            }
        }
    }
}

/// The operator diagnostic for a command file that was not read.
fn skip_reason(path: &Path, refusal: &Refusal) -> SkipDiagnostic {
    SkipDiagnostic::new(path, format!("command file skipped: {refusal}"))
}

/// The bytes of `<dir>/<name>.md` from the first directory that has the file; a file
/// that is there but refused stops the lookup, with its path.
fn lookup(dirs: &[PathBuf], name: &str) -> Result<Option<Vec<u8>>, (PathBuf, Refusal)> {
    let file = format!("{name}.md");
    for dir in dirs {
        let path = dir.join(&file);
        match read_definition_file(&path, MAX_DEFINITION_FILE_BYTES) {
            Ok(bytes) => return Ok(Some(bytes)),
            Err(Refusal::Missing) => {}
            Err(refusal) => return Err((path, refusal)),
        }
    }
    Ok(None)
}

/// Lists the commands of `dirs`. A skipped file still takes its name, as in
/// [`lookup`]: a later directory's file of that name is not listed, since expanding
/// the name would hit the skipped one first.
fn list(dirs: &[PathBuf]) -> (Vec<CommandInfo>, Vec<SkipDiagnostic>) {
    // Name → description, `None` for a skipped file.
    let mut found: std::collections::BTreeMap<String, Option<String>> = std::collections::BTreeMap::new();
    let mut skipped = Vec::new();
    for dir in dirs {
        let Ok(reader) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = reader.flatten().map(|entry| entry.path()).collect();
        paths.sort();
        for path in paths {
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".md"))
            else {
                continue;
            };
            if !valid_command_name(name) || found.contains_key(name) {
                continue;
            }
            let description = match read_definition_file(&path, MAX_DEFINITION_FILE_BYTES) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => Some(describe(&text)),
                    Err(_) => {
                        skipped.push(SkipDiagnostic::new(
                            &path,
                            "command file skipped: it is not valid UTF-8",
                        ));
                        None
                    }
                },
                // Gone since the directory was listed.
                Err(Refusal::Missing) => continue,
                Err(refusal) => {
                    skipped.push(skip_reason(&path, &refusal));
                    None
                }
            };
            found.insert(name.to_owned(), description);
        }
    }
    let commands = found
        .into_iter()
        .filter_map(|(name, description)| {
            Some(CommandInfo {
                name,
                description: description?,
            })
        })
        .collect();
    (commands, skipped)
}

/// The listed description of a template: the frontmatter `description:` line's value
/// (found by a line scan, surrounding quotes removed), or else the first non-blank
/// body line; trimmed and cut to 80 chars, `…` included.
pub fn describe(template: &str) -> String {
    let text = template.strip_prefix('\u{FEFF}').unwrap_or(template);
    let (frontmatter, body) = split_template(text);
    let from_frontmatter = frontmatter.and_then(|block| {
        block.lines().find_map(|line| {
            let value = unquote(line.strip_prefix("description:")?.trim());
            (!value.is_empty()).then_some(value)
        })
    });
    let line = from_frontmatter.or_else(|| body.lines().map(str::trim).find(|l| !l.is_empty()));
    engine_ports::clip_chars(line.unwrap_or_default().trim(), COMMAND_DESCRIPTION_CHARS).into_owned()
}

/// The frontmatter block and body of a command template, under the command-template
/// rules (the same the expander strips by): a block opens with `---\n`, `---\r\n` or
/// is exactly `---`, and the next line equal to `---` (one trailing `\r` ignored)
/// closes it. Without a closing line there is no block.
fn split_template(text: &str) -> (Option<&str>, &str) {
    let rest = if let Some(rest) = text.strip_prefix("---\n") {
        rest
    } else if let Some(rest) = text.strip_prefix("---\r\n") {
        rest
    } else {
        return (None, text);
    };
    let mut start = 0;
    loop {
        let end = rest[start..].find('\n').map(|i| start + i);
        let line = &rest[start..end.unwrap_or(rest.len())];
        if line.strip_suffix('\r').unwrap_or(line) == "---" {
            let body = end.map_or("", |e| &rest[e + 1..]);
            return (Some(&rest[..start]), body);
        }
        match end {
            Some(e) => start = e + 1,
            None => return (None, text),
        }
    }
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if value.len() >= 2
            && let Some(inner) = value.strip_prefix(quote).and_then(|v| v.strip_suffix(quote))
        {
            return inner.trim();
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_come_from_frontmatter_or_the_first_line() {
        assert_eq!(
            describe("---\ndescription: Review a pull request\n---\nx"),
            "Review a pull request"
        );
        assert_eq!(describe("---\ndescription: \"Quoted\"\n---\nx"), "Quoted");
        assert_eq!(
            describe("---\ntitle: t\n---\n\n  first line  \nsecond"),
            "first line"
        );
        assert_eq!(
            describe("\n\nFix the failing test in $1\n"),
            "Fix the failing test in $1"
        );
        assert_eq!(describe("---\r\ndescription: crlf\r\n---\r\nx"), "crlf");
        assert_eq!(describe(""), "");
        let long = describe(&"é".repeat(100));
        assert_eq!(long.chars().count(), 80);
        assert!(long.ends_with('\u{2026}'));
    }
}
