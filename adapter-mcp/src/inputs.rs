//! VS Code's `inputs` of an `mcp.json`: values a person types (an API key, a
//! choice) that servers use as `${input:ID}` in `command`, `args`, `env`, `url`,
//! `headers` and `oauth`.
//!
//! ```json
//! {"inputs": [{"type": "promptString", "id": "api-key", "description": "Docs API key", "password": true}],
//!  "servers": {"docs": {"url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${input:api-key}"}}}}
//! ```
//!
//! An input's value comes from the environment variable `MCP_INPUT_<ID>` (the id
//! upper-cased, every other character than `[A-Z0-9]` as `_`) when set, else from the
//! [`InputPrompter`] the composition root supplies (a terminal prompt), else the
//! servers using it are skipped. Each input of a file is resolved at most once per
//! process ([`McpInputs`] keeps the answers in memory only; nothing is written to
//! disk), and its value is a secret of the config (redacted like an expanded
//! variable).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What kind of value an input asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpInputKind {
    /// `promptString`: free text.
    PromptString,
    /// `pickString`: one of `options`.
    PickString {
        /// The choices, in the file's order.
        options: Vec<String>,
    },
    /// A type this client does not support (VS Code's `command`, say): a server
    /// using it is skipped, naming the type.
    Unsupported(String),
}

/// One entry of a config file's `inputs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpInput {
    /// The id a server names in `${input:ID}`.
    pub id: String,
    /// What to ask.
    pub kind: McpInputKind,
    /// What the value is for, shown to the person asked.
    pub description: Option<String>,
    /// The value when the person gives none (shown, unless `password`).
    pub default: Option<String>,
    /// `password: true`: the value is typed without echo.
    pub password: bool,
}

/// Asks a person for an input's value: the composition root's part (a terminal
/// prompt), since this crate never talks to a person itself.
pub trait InputPrompter: Send + Sync {
    /// The value of `input`, declared in `file`.
    ///
    /// # Errors
    /// Why there is no value (no terminal to ask on, the person cancelled), shown
    /// with the server that is skipped for it.
    fn prompt(&self, input: &McpInput, file: &Path) -> Result<String, String>;
}

/// The environment variable that supplies `${input:ID}`: `MCP_INPUT_` and the id
/// upper-cased, each character other than `[A-Z0-9]` replaced by `_`
/// (`api-key` → `MCP_INPUT_API_KEY`).
pub fn input_env_var(id: &str) -> String {
    let mut name = String::with_capacity("MCP_INPUT_".len() + id.len());
    name.push_str("MCP_INPUT_");
    name.extend(id.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// The inputs' values for the process: each input of a file resolved once (the
/// environment, then the prompter), answers kept in memory only.
#[derive(Default)]
pub struct McpInputs {
    prompter: Option<Box<dyn InputPrompter>>,
    /// By file and id: a workspace file's `api-key` is not the user's own file's.
    answers: Mutex<HashMap<(PathBuf, String), Result<String, String>>>,
}

impl std::fmt::Debug for McpInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpInputs")
            .field("prompter", &self.prompter.is_some())
            .finish_non_exhaustive()
    }
}

impl McpInputs {
    /// Inputs answered from the environment, else by `prompter`.
    pub fn with_prompter(prompter: impl InputPrompter + 'static) -> Self {
        Self {
            prompter: Some(Box::new(prompter)),
            answers: Mutex::new(HashMap::new()),
        }
    }

    /// The value of `input` of `file`: the cached answer, else `MCP_INPUT_<ID>` from
    /// `env`, else the prompter's answer; the reason there is none, naming the
    /// variable to set.
    pub(crate) fn value(
        &self,
        input: &McpInput,
        file: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let key = (file.to_path_buf(), input.id.clone());
        let mut answers = self
            .answers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(answer) = answers.get(&key) {
            return answer.clone();
        }
        let variable = input_env_var(&input.id);
        let answer = if let McpInputKind::Unsupported(kind) = &input.kind {
            Err(format!(
                "input {:?} has type {kind:?}, which is not supported (expected \"promptString\" or \"pickString\")",
                input.id
            ))
        } else if let Some(value) = env(&variable) {
            Ok(value)
        } else {
            match &self.prompter {
                Some(prompter) => prompter.prompt(input, file),
                None => Err("nobody to ask".to_owned()),
            }
            .map_err(|reason| format!("input {:?} has no value ({reason}): set {variable}", input.id))
        };
        answers.insert(key, answer.clone());
        answer
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn the_variable_of_an_input_is_its_id_upper_cased_with_underscores() {
        assert_eq!(input_env_var("api-key"), "MCP_INPUT_API_KEY");
        assert_eq!(input_env_var("token"), "MCP_INPUT_TOKEN");
        assert_eq!(input_env_var("a.b c9"), "MCP_INPUT_A_B_C9");
    }

    struct Counting(AtomicUsize);

    impl InputPrompter for &'static Counting {
        fn prompt(&self, input: &McpInput, _file: &Path) -> Result<String, String> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(format!("typed-{}", input.id))
        }
    }

    fn input(id: &str) -> McpInput {
        McpInput {
            id: id.to_owned(),
            kind: McpInputKind::PromptString,
            description: None,
            default: None,
            password: true,
        }
    }

    #[test]
    fn each_input_of_a_file_is_asked_once_and_the_environment_comes_first() {
        static ASKED: Counting = Counting(AtomicUsize::new(0));
        let inputs = McpInputs::with_prompter(&ASKED);
        let none = |_: &str| None;
        let file = Path::new("/ws/.vscode/mcp.json");
        assert_eq!(inputs.value(&input("key"), file, &none).unwrap(), "typed-key");
        assert_eq!(inputs.value(&input("key"), file, &none).unwrap(), "typed-key");
        assert_eq!(ASKED.0.load(Ordering::SeqCst), 1);
        // Another file's input of the same id is its own.
        let other = Path::new("/home/u/mcp.json");
        inputs.value(&input("key"), other, &none).unwrap();
        assert_eq!(ASKED.0.load(Ordering::SeqCst), 2);
        let set = |name: &str| (name == "MCP_INPUT_FROM_ENV").then(|| "env-value".to_owned());
        assert_eq!(inputs.value(&input("from-env"), file, &set).unwrap(), "env-value");
        assert_eq!(ASKED.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn without_a_prompter_a_missing_value_names_the_variable_to_set() {
        let inputs = McpInputs::default();
        let reason = inputs
            .value(&input("api-key"), Path::new("mcp.json"), &|_: &str| None)
            .unwrap_err();
        assert!(reason.contains("\"api-key\""), "{reason}");
        assert!(reason.contains("MCP_INPUT_API_KEY"), "{reason}");
    }
}
