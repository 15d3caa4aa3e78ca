//! [`ChildPolicy`]: a child's calls are decided by its parent's policy.

use std::sync::Arc;

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
/// operator refused it. An `allow_always` answer is learned for the parent's session.
pub struct ChildPolicy {
    parent: Arc<dyn PermissionPolicy>,
    parent_session: SessionId,
    interactive: bool,
    requester: String,
}

impl ChildPolicy {
    /// The policy of a child of `parent_session`, labelled `requester` in
    /// diagnostics (`subagent "find the bug"`, `parallel branch 2`, …).
    pub fn new(
        parent: Arc<dyn PermissionPolicy>,
        parent_session: SessionId,
        interactive: bool,
        requester: impl Into<String>,
    ) -> Self {
        Self {
            parent,
            parent_session,
            interactive,
            requester: requester.into(),
        }
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
        self.parent.learn(&self.parent_session, call);
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
            "parallel branch 1",
        )
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
