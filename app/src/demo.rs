//! The offline demo (`mecated demo`): its embedded mock script, the small workspace it
//! works on, and the config that runs it.

use std::path::{Path, PathBuf};

use adapter_jsonlstore::SyncPolicy;
use adapter_llm::{MockScript, ScriptError};

use crate::config::{AppConfig, ModelConfig, StoreConfig};

/// The files of the demo workspace: a README, a small source tree with a `TODO`.
pub const DEMO_FILES: [(&str, &str); 3] = [
    (
        "README.md",
        "# greeter\n\nA tiny example crate for `mecated demo`.\n\n- `src/main.rs` prints a greeting.\n- `src/greet.rs` builds it (it still has a TODO).\n\nDesign notes live in docs/NOTES.md.\n",
    ),
    (
        "src/main.rs",
        "mod greet;\n\nfn main() {\n    println!(\"{}\", greet::greeting(\"world\"));\n}\n",
    ),
    (
        "src/greet.rs",
        "/// Builds the greeting for `name`.\npub fn greeting(name: &str) -> String {\n    // TODO: greet more warmly\n    format!(\"Hi {name}\")\n}\n",
    ),
];

/// The label script errors name (the script is embedded, not a file).
pub const DEMO_SCRIPT_ORIGIN: &str = "embedded demo script";

const OPENING: &str = r#"
  {"text": "Let me get oriented: I'll read the README first.",
   "tool_calls": [{"id": "read-readme", "name": "Read", "args": {"path": "README.md"}}]},
  {"text": "The README mentions a TODO. I'll list the source files and search for it.",
   "tool_calls": [{"id": "glob-src", "name": "Glob", "args": {"pattern": "src/**/*.rs"}},
                  {"id": "grep-todo", "name": "Grep", "args": {"pattern": "TODO"}}]},
  {"text": "The README also points to design notes; let me read them before changing anything.",
   "tool_calls": [{"id": "read-notes", "name": "Read", "args": {"path": "docs/NOTES.md"}}]},
  {"text": "There is no docs/NOTES.md, so I'll work from the code itself. The TODO in src/greet.rs asks for a warmer greeting; I'll fix it.",
   "tool_calls": [{"id": "edit-greet", "name": "Edit", "args": {
       "path": "src/greet.rs",
       "old_string": "    // TODO: greet more warmly\n    format!(\"Hi {name}\")",
       "new_string": "    format!(\"Hello, {name}! Welcome aboard.\")"}}]}"#;

const CHECK: &str = r#",
  {"text": "Let me check that no TODO is left.",
   "tool_calls": [{"id": "shell-check", "name": "Shell", "args": {
       "command": "grep -rn TODO src || echo 'no TODO left'; wc -l src/main.rs src/greet.rs"}}]}"#;

const SUMMARY_WITH_SHELL: &str = r#",
  {"text": "Done. I read the README, listed the sources, found the TODO in src/greet.rs, noticed that docs/NOTES.md does not exist, replaced the TODO with a warmer greeting and checked that no TODO is left. Every call is in the audit files listed below."}"#;

const SUMMARY_WITHOUT_SHELL: &str = r#",
  {"text": "Done. I read the README, listed the sources, found the TODO in src/greet.rs, noticed that docs/NOTES.md does not exist and replaced the TODO with a warmer greeting (no shell is available here, so I skipped the final check). Every call is in the audit files listed below."}"#;

/// The embedded script's JSON: read the README, glob, grep `TODO`, read a missing file
/// (an error the model recovers from), edit a file, run a short shell command (only
/// `with_shell`), and end with a summary.
pub fn demo_script_json(with_shell: bool) -> String {
    let (check, summary) = if with_shell {
        (CHECK, SUMMARY_WITH_SHELL)
    } else {
        ("", SUMMARY_WITHOUT_SHELL)
    };
    format!("{{\"turns\": [{OPENING}{check}{summary}\n]}}\n")
}

/// The embedded script, parsed and validated like a `--mock-script` file.
///
/// # Errors
/// A [`ScriptError`] naming the embedded script (a bug if it ever happens).
pub fn demo_script(with_shell: bool) -> Result<MockScript, ScriptError> {
    MockScript::from_json(&demo_script_json(with_shell), DEMO_SCRIPT_ORIGIN)
}

/// The prompt the demo session starts with.
pub const DEMO_PROMPT: &str = "Find the TODO in this project and fix it.";

/// Writes the demo workspace under `root` (created when missing); existing files of
/// the same names are replaced.
///
/// # Errors
/// The first file that cannot be written.
pub fn write_demo_workspace(root: &Path) -> std::io::Result<()> {
    for (name, text) in DEMO_FILES {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// The shell the demo uses: `/bin/sh` when it exists.
pub fn demo_shell() -> Option<PathBuf> {
    let shell = Path::new(adapter_fstools::DEFAULT_SHELL);
    shell.exists().then(|| shell.to_path_buf())
}

/// The demo's config: `workspace`, a JSONL store at `store_dir`, the embedded script
/// on the mock provider, the core tools (Shell when `shell` is set), no MCP server and
/// no ToolHive, no skills, and an interactive engine (the demo answers every ask).
pub fn demo_config(
    workspace: &Path,
    store_dir: &Path,
    shell: Option<PathBuf>,
    script: MockScript,
) -> AppConfig {
    let mut cfg = AppConfig::new(workspace);
    cfg.store = StoreConfig::Dir {
        path: store_dir.to_path_buf(),
        sync: SyncPolicy::default(),
    };
    cfg.model = ModelConfig::MockScript(script);
    cfg.shell = shell;
    cfg.mcp.toolhive = None;
    cfg.mcp.servers.clear();
    cfg.engine.interactive = true;
    cfg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_scripts_parse() {
        let with = demo_script(true).unwrap();
        let without = demo_script(false).unwrap();
        assert_eq!(with.turns().len(), without.turns().len() + 1);
        let names: Vec<&str> = with
            .turns()
            .iter()
            .flat_map(|t| t.tool_calls.iter().map(|c| c.name()))
            .collect();
        assert_eq!(names, ["Read", "Glob", "Grep", "Read", "Edit", "Shell"]);
        assert!(with.turns().last().unwrap().tool_calls.is_empty());
    }
}
