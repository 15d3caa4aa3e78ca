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
/// 2. interactive with `none` → allow a tool learned through `allow_always`, ask
///    for any other call (read-only ones included);
/// 3. read-only tool → allow;
/// 4. `acceptEdits` and an edit tool (default `Edit`, `Write`) → allow;
/// 5. a tool learned through `allow_always` in this session → allow;
/// 6. `all` → allow (interactive or not: the level the operator chose);
/// 7. interactive → ask;
/// 8. headless `read-only` → deny, saying the run approves only read-only tools.
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
        if self.approve == Approve::None {
            // Interactive (the headless case denied above): the person decides all.
            if self.learned(&request.session_id, name) {
                return Decision::Allow;
            }
            return Decision::Ask {
                reason: format!(
                    "{name} needs approval: this session approves no call by itself (--approve none)"
                ),
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
        if self.approve == Approve::All {
            return Decision::Allow;
        }
        if self.interactive {
            return Decision::Ask {
                reason: format!("{name} can change the workspace"),
            };
        }
        Decision::Deny {
            reason: format!(
                "this run approves only read-only tools and {name} is not read-only; \
                 rerun with --approve all to allow it"
            ),
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

    fn request(name: &str, read_only: bool) -> PermissionRequest {
        PermissionRequest {
            session_id: SessionId::from("s"),
            mode: PermissionMode::Default,
            call: ToolCall::new("c1", name, "{}"),
            read_only,
        }
    }

    #[tokio::test]
    async fn an_interactive_session_keeps_its_approval_level() {
        let all = DefaultPolicy::new(true, Approve::All);
        assert_eq!(all.evaluate(&request("Write", false)).await, Decision::Allow);

        let read_only = DefaultPolicy::new(true, Approve::ReadOnly);
        assert_eq!(read_only.evaluate(&request("Read", true)).await, Decision::Allow);
        assert!(matches!(
            read_only.evaluate(&request("Write", false)).await,
            Decision::Ask { .. }
        ));

        let none = DefaultPolicy::new(true, Approve::None);
        let Decision::Ask { reason } = none.evaluate(&request("Read", true)).await else {
            panic!("with --approve none an interactive session asks even for a read");
        };
        assert!(reason.contains("--approve none"), "{reason}");
        none.learn(&SessionId::from("s"), &ToolCall::new("c1", "Read", "{}"));
        assert_eq!(none.evaluate(&request("Read", true)).await, Decision::Allow);
    }
}
