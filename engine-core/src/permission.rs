//! [`DefaultPolicy`]: the built-in permission policy (`--approve`, interactive asks).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;
use engine_ports::{
    Decision, Keyword, PermissionMode, PermissionPolicy, PermissionRequest, SessionId, ToolCall,
};

/// What a headless run approves (`--approve`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Approve {
    /// Every call.
    All,
    /// Read-only tools (and, in `acceptEdits` mode, the edit tools).
    #[default]
    ReadOnly,
    /// Nothing.
    None,
}

engine_ports::keyword_words! {
    Approve {
        All => "all",
        ReadOnly => "read-only",
        None => "none",
    }
    parse_error: ParseApproveError { value }
}

/// A string that is not `all`, `read-only` or `none`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid approval {value:?}: expected one of {}", Approve::expected())]
pub struct ParseApproveError {
    /// The rejected text.
    pub value: String,
}

/// The default policy. First match wins:
/// 1. headless with `none` → deny every call;
/// 2. read-only tool → allow;
/// 3. `acceptEdits` and an edit tool (default `Edit`, `Write`) → allow;
/// 4. a tool learned through `allow_always` in this session → allow;
/// 5. interactive → ask;
/// 6. headless `all` → allow; `read-only` → deny, saying the run approves only
///    read-only tools.
#[derive(Debug)]
pub struct DefaultPolicy {
    interactive: bool,
    approve: Approve,
    edit_tools: HashSet<String>,
    learned: Mutex<HashMap<SessionId, HashSet<String>>>,
}

impl DefaultPolicy {
    /// A policy for an interactive or headless engine.
    pub fn new(interactive: bool, approve: Approve) -> Self {
        Self {
            interactive,
            approve,
            edit_tools: ["Edit", "Write"].into_iter().map(String::from).collect(),
            learned: Mutex::default(),
        }
    }

    /// The same policy with other edit tools for `acceptEdits`.
    #[must_use]
    pub fn with_edit_tools(mut self, tools: impl IntoIterator<Item = String>) -> Self {
        self.edit_tools = tools.into_iter().collect();
        self
    }

    fn learned(&self, session: &SessionId, tool: &str) -> bool {
        self.learned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(session)
            .is_some_and(|tools| tools.contains(tool))
    }
}

#[async_trait]
impl PermissionPolicy for DefaultPolicy {
    async fn evaluate(&self, request: &PermissionRequest) -> Decision {
        let name = request.call.name();
        if !self.interactive && self.approve == Approve::None {
            return Decision::Deny {
                reason: "this run approves no tool calls (--approve none)".to_owned(),
            };
        }
        if request.read_only {
            return Decision::Allow;
        }
        if request.mode == PermissionMode::AcceptEdits && self.edit_tools.contains(name) {
            return Decision::Allow;
        }
        if self.learned(&request.session_id, name) {
            return Decision::Allow;
        }
        if self.interactive {
            return Decision::Ask {
                reason: format!("{name} can change the workspace"),
            };
        }
        match self.approve {
            Approve::All => Decision::Allow,
            Approve::ReadOnly | Approve::None => Decision::Deny {
                reason: format!(
                    "this run approves only read-only tools and {name} is not read-only; \
                     rerun with --approve all to allow it"
                ),
            },
        }
    }

    fn learn(&self, session: &SessionId, call: &ToolCall) {
        self.learned
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(session.clone())
            .or_default()
            .insert(call.name().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_parse_their_words_and_a_bad_one_lists_them() {
        for approve in [Approve::All, Approve::ReadOnly, Approve::None] {
            assert_eq!(approve.as_str().parse::<Approve>(), Ok(approve));
        }
        let error = "some".parse::<Approve>().unwrap_err().to_string();
        assert_eq!(
            error,
            "invalid approval \"some\": expected one of all, read-only, none"
        );
    }
}
