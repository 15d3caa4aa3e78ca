//! Permission asks ↔ `session/request_permission`: the request for an ask (the tool
//! call and three options) and the verdict of the client's answer.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallUpdate,
};
use engine_ports::Verdict;
use serde_json::Value;

use super::updates::tool_call;

/// Option id of "allow this call".
pub(crate) const ALLOW_ONCE: &str = "allow_once";
/// Option id of "allow this tool for the rest of the session".
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
/// Option id of "deny this call".
pub(crate) const REJECT_ONCE: &str = "reject_once";

/// The `session/request_permission` of one ask: the call as a pending tool call
/// (same id, title, kind and `rawInput` as its `tool_call` update) and the options
/// `allow_once`, `allow_always`, `reject_once`.
pub(crate) fn permission_request(
    session: &str,
    call_id: &str,
    name: &str,
    args: &Value,
) -> RequestPermissionRequest {
    let options = vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow {name} in this session"),
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
    ];
    RequestPermissionRequest::new(
        session.to_owned(),
        ToolCallUpdate::from(tool_call(call_id, name, args)),
        options,
    )
}

/// The verdict of the client's answer: the selected option's kind decides; a
/// cancelled outcome, an unknown option or a failed request is a deny.
pub(crate) fn verdict(answer: Option<&RequestPermissionResponse>) -> Verdict {
    let Some(RequestPermissionOutcome::Selected(selected)) = answer.map(|a| &a.outcome) else {
        return Verdict::Deny;
    };
    match &*selected.option_id.0 {
        ALLOW_ONCE => Verdict::AllowOnce,
        ALLOW_ALWAYS => Verdict::AllowAlways,
        _ => Verdict::Deny,
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;
    use serde_json::json;

    use super::*;

    fn selected(id: &str) -> RequestPermissionResponse {
        RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new(id.to_owned()),
        ))
    }

    #[test]
    fn the_request_carries_the_call_and_three_options() {
        let request = permission_request("s1", "w1", "Write", &json!({"path": "a.txt", "content": "x"}));
        let wire = serde_json::to_value(&request).unwrap();
        assert_eq!(wire["sessionId"], "s1");
        assert_eq!(wire["toolCall"]["toolCallId"], "w1");
        assert_eq!(wire["toolCall"]["title"], "Write a.txt");
        assert_eq!(wire["toolCall"]["kind"], "edit");
        assert_eq!(
            wire["toolCall"]["rawInput"],
            json!({"path": "a.txt", "content": "x"})
        );
        let kinds = crate::field_of_each(&wire["options"], "kind");
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    }

    #[test]
    fn answers_map_to_verdicts() {
        assert_eq!(verdict(Some(&selected(ALLOW_ONCE))), Verdict::AllowOnce);
        assert_eq!(verdict(Some(&selected(ALLOW_ALWAYS))), Verdict::AllowAlways);
        assert_eq!(verdict(Some(&selected(REJECT_ONCE))), Verdict::Deny);
        assert_eq!(verdict(Some(&selected("something-else"))), Verdict::Deny);
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        assert_eq!(verdict(Some(&cancelled)), Verdict::Deny);
        assert_eq!(verdict(None), Verdict::Deny);
    }
}
