//! [`ChildPolicy`]: a child's calls are decided by its parent's policy.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use engine_ports::{Decision, PermissionPolicy, PermissionRequest, SessionId, ToolCall};

/// Decides a child's calls with the parent's policy, as if the parent made them: the
/// parent's session (so what the operator allowed always there applies) and the
/// child's mode, which it inherited.
///
/// What the parent's policy would ask about is asked of the parent's operator when
/// the parent is interactive (the delegation tool relays the ask, labelled with the
/// requester). A headless parent has no operator: such a call, and any call its
/// policy denies, is denied with a text saying it is not permitted for a
/// non-interactive child (and an INFO diagnostic); the child is never told an
/// operator refused it.
///
/// Where an `allow_always` answer is learned depends on where the child works
/// ([`ChildLearning`]): a child on the parent's workspace learns it for the parent's
/// session (the tool acts on the same files either way), a child on a private copy
/// learns it for itself alone, so an answer given for a copy never allows a call on
/// the real workspace.
pub struct ChildPolicy {
    parent: Arc<dyn PermissionPolicy>,
    parent_session: SessionId,
    interactive: bool,
    requester: String,
    learning: ChildLearning,
    /// The tools learned by a child that learns for itself.
    learned: Mutex<HashSet<String>>,
}

/// Where a child's `allow_always` answers are learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildLearning {
    /// For the parent's session: the child works on the parent's workspace, so an
    /// answer means the same there (subagents, read-only team members).
    ForParent,
    /// For this child alone (its policy instance, that is one branch or one team
    /// member): the child works on a private copy, and what the operator allowed
    /// there must not reach the parent's calls on the real workspace.
    WithinChild,
}

impl ChildPolicy {
    /// The policy of a child of `parent_session`, labelled `requester` in
    /// diagnostics (`subagent "find the bug"`, `parallel branch 2`, …), learning
    /// `allow_always` answers as `learning` says.
    pub fn new(
        parent: Arc<dyn PermissionPolicy>,
        parent_session: SessionId,
        interactive: bool,
        requester: impl Into<String>,
        learning: ChildLearning,
    ) -> Self {
        Self {
            parent,
            parent_session,
            interactive,
            requester: requester.into(),
            learning,
            learned: Mutex::default(),
        }
    }

    fn learned_here(&self, tool: &str) -> bool {
        self.learned
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(tool)
    }
}

#[async_trait]
impl PermissionPolicy for ChildPolicy {
    async fn evaluate(&self, request: &PermissionRequest) -> Decision {
        let as_parent = PermissionRequest {
            session_id: self.parent_session.clone(),
            mode: request.mode,
            call: request.call.clone(),
            read_only: request.read_only,
        };
        let decision = self.parent.evaluate(&as_parent).await;
        match decision {
            Decision::Allow => Decision::Allow,
            // What the operator allowed always for this child; never overrides a
            // denial of the parent's policy.
            Decision::Ask { .. } if self.learned_here(request.call.name()) => Decision::Allow,
            decision if self.interactive => decision,
            Decision::Ask { reason } | Decision::Deny { reason } => {
                let name = request.call.name();
                tracing::info!(
                    session_id = %request.session_id,
                    parent_session_id = %self.parent_session,
                    tool = name,
                    requester = %self.requester,
                    parent_reason = %reason,
                    "a child's call was not permitted: the parent run is not interactive"
                );
                Decision::Deny {
                    reason: format!(
                        "{name} is not permitted for a non-interactive child: the delegating run has no operator \
                         to approve it, and its policy does not allow it by itself"
                    ),
                }
            }
        }
    }

    fn learn(&self, _session: &SessionId, call: &ToolCall) {
        match self.learning {
            ChildLearning::ForParent => self.parent.learn(&self.parent_session, call),
            ChildLearning::WithinChild => {
                self.learned
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(call.name().to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use engine_ports::PermissionMode;

    use super::*;
    use crate::permission::{Approve, DefaultPolicy};

    fn request(tool: &str, read_only: bool) -> PermissionRequest {
        PermissionRequest {
            session_id: SessionId::from("child"),
            mode: PermissionMode::Default,
            call: ToolCall::new("c1", tool, "{}"),
            read_only,
        }
    }

    fn child(parent: Arc<dyn PermissionPolicy>, interactive: bool) -> ChildPolicy {
        ChildPolicy::new(
            parent,
            SessionId::from("parent"),
            interactive,
            "subagent \"look\"",
            ChildLearning::ForParent,
        )
    }

    fn branch(parent: Arc<dyn PermissionPolicy>) -> ChildPolicy {
        ChildPolicy::new(
            parent,
            SessionId::from("parent"),
            true,
            "parallel branch 1",
            ChildLearning::WithinChild,
        )
    }

    #[tokio::test]
    async fn allow_always_for_a_child_on_a_copy_stays_with_that_child() {
        let parent: Arc<dyn PermissionPolicy> = Arc::new(DefaultPolicy::new(true, Approve::ReadOnly));
        let policy = branch(Arc::clone(&parent));
        let parent_request = |tool: &str| PermissionRequest {
            session_id: SessionId::from("parent"),
            ..request(tool, false)
        };
        for tool in ["Shell", "Edit"] {
            assert!(matches!(
                policy.evaluate(&request(tool, false)).await,
                Decision::Ask { .. }
            ));
            policy.learn(&SessionId::from("child"), &ToolCall::new("c2", tool, "{}"));
            assert_eq!(policy.evaluate(&request(tool, false)).await, Decision::Allow);
            assert_eq!(
                parent.evaluate(&parent_request(tool)).await,
                Decision::Ask {
                    reason: format!("{tool} can change the workspace")
                },
                "the parent's own {tool} call still asks"
            );
        }
        // Nor does it reach a sibling branch.
        let sibling = branch(Arc::clone(&parent));
        assert!(matches!(
            sibling.evaluate(&request("Edit", false)).await,
            Decision::Ask { .. }
        ));
    }

    #[tokio::test]
    async fn an_interactive_parent_asks_what_its_policy_asks() {
        let parent: Arc<dyn PermissionPolicy> = Arc::new(DefaultPolicy::new(true, Approve::ReadOnly));
        let policy = child(Arc::clone(&parent), true);
        assert_eq!(policy.evaluate(&request("Read", true)).await, Decision::Allow);
        assert_eq!(
            policy.evaluate(&request("Write", false)).await,
            Decision::Ask {
                reason: "Write can change the workspace".into()
            }
        );
        // allow_always answered for a child is learned for the parent's session.
        policy.learn(&SessionId::from("child"), &ToolCall::new("c2", "Write", "{}"));
        assert_eq!(policy.evaluate(&request("Write", false)).await, Decision::Allow);
        let parent_request = PermissionRequest {
            session_id: SessionId::from("parent"),
            ..request("Write", false)
        };
        assert_eq!(parent.evaluate(&parent_request).await, Decision::Allow);
    }

    #[tokio::test]
    async fn a_headless_parent_denies_what_needs_an_operator_saying_so() {
        let policy = child(Arc::new(DefaultPolicy::new(false, Approve::ReadOnly)), false);
        assert_eq!(policy.evaluate(&request("Grep", true)).await, Decision::Allow);
        let Decision::Deny { reason } = policy.evaluate(&request("Write", false)).await else {
            panic!("expected a denial");
        };
        assert_eq!(
            reason,
            "Write is not permitted for a non-interactive child: the delegating run has no operator to approve \
             it, and its policy does not allow it by itself"
        );
        assert!(!reason.contains("denied by"));
        let all = child(Arc::new(DefaultPolicy::new(false, Approve::All)), false);
        assert_eq!(all.evaluate(&request("Write", false)).await, Decision::Allow);
    }
}
