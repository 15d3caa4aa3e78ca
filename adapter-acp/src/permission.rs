//! Permission asks ↔ `session/request_permission`: the request for an ask (the tool
//! call and three options, four when an "allow always" can be saved as a project
//! rule) and the answer the client's choice gives.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, ToolCallUpdate,
};
use engine_core::AskAnswer;
use engine_ports::Verdict;
use serde_json::{Value, json};

use super::updates::tool_call;

/// Option id of "allow this call".
pub(crate) const ALLOW_ONCE: &str = "allow_once";
/// Option id of "allow this tool for the rest of the session".
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
/// Option id of "allow always, and save the suggested rule for this project".
pub(crate) const ALLOW_ALWAYS_SAVE: &str = "allow_always_save";
/// Option id of "deny this call".
pub(crate) const REJECT_ONCE: &str = "reject_once";

/// The `session/request_permission` of one ask: the call as a pending tool call
/// (same id, title, kind and `rawInput` as its `tool_call` update) and the options
/// `allow_once`, `allow_always` (this session), `reject_once`, and, when the ask
/// suggests a rule, `allow_always_save` (kind `allow_always`), which names the rule
/// it saves in the project's `.mecatl/settings.local.json` and carries it in
/// `_meta.mecatl.suggestedRule`.
pub(crate) fn permission_request(
    session: &str,
    call_id: &str,
    name: &str,
    args: &Value,
    suggested_rule: Option<&str>,
) -> RequestPermissionRequest {
    let mut options = vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow {name} in this session"),
            PermissionOptionKind::AllowAlways,
        ),
    ];
    if let Some(rule) = suggested_rule {
        let meta = json!({"mecatl": {"suggestedRule": rule, "savesTo": ".mecatl/settings.local.json"}});
        options.push(
            PermissionOption::new(
                ALLOW_ALWAYS_SAVE,
                format!("Always allow {rule} in this project (saved to .mecatl/settings.local.json)"),
                PermissionOptionKind::AllowAlways,
            )
            .meta(meta.as_object().cloned()),
        );
    }
    options.push(PermissionOption::new(
        REJECT_ONCE,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    RequestPermissionRequest::new(
        session.to_owned(),
        ToolCallUpdate::from(tool_call(call_id, name, args)),
        options,
    )
}

/// The answer of the client's choice: the selected option decides (only
/// `allow_always_save` saves a rule); a cancelled outcome, an unknown option or a
/// failed request is a deny.
pub(crate) fn verdict(answer: Option<&RequestPermissionResponse>) -> AskAnswer {
    let Some(RequestPermissionOutcome::Selected(selected)) = answer.map(|a| &a.outcome) else {
        return Verdict::Deny.into();
    };
    match &*selected.option_id.0 {
        ALLOW_ONCE => Verdict::AllowOnce.into(),
        ALLOW_ALWAYS => Verdict::AllowAlways.into(),
        ALLOW_ALWAYS_SAVE => AskAnswer::ALLOW_ALWAYS_AND_SAVE,
        _ => Verdict::Deny.into(),
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
        let request = permission_request(
            "s1",
            "w1",
            "Write",
            &json!({"path": "a.txt", "content": "x"}),
            None,
        );
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
    fn a_suggested_rule_adds_a_saving_option_that_names_the_rule() {
        let request = permission_request(
            "s1",
            "c1",
            "Shell",
            &json!({"command": "git commit -m x"}),
            Some("Shell(git commit:*)"),
        );
        let wire = serde_json::to_value(&request).unwrap();
        let ids = crate::field_of_each(&wire["options"], "optionId");
        assert_eq!(
            ids,
            ["allow_once", "allow_always", "allow_always_save", "reject_once"]
        );
        let save = &wire["options"][2];
        assert_eq!(save["kind"], "allow_always");
        assert!(
            save["name"].as_str().unwrap().contains("Shell(git commit:*)"),
            "{save}"
        );
        assert_eq!(save["_meta"]["mecatl"]["suggestedRule"], "Shell(git commit:*)");
    }

    #[test]
    fn answers_map_to_verdicts_and_only_the_saving_option_saves() {
        let plain = |verdict: Verdict| AskAnswer::from(verdict);
        assert_eq!(verdict(Some(&selected(ALLOW_ONCE))), plain(Verdict::AllowOnce));
        assert_eq!(
            verdict(Some(&selected(ALLOW_ALWAYS))),
            plain(Verdict::AllowAlways)
        );
        assert_eq!(
            verdict(Some(&selected(ALLOW_ALWAYS_SAVE))),
            AskAnswer::ALLOW_ALWAYS_AND_SAVE
        );
        assert_eq!(verdict(Some(&selected(REJECT_ONCE))), plain(Verdict::Deny));
        assert_eq!(verdict(Some(&selected("something-else"))), plain(Verdict::Deny));
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        assert_eq!(verdict(Some(&cancelled)), plain(Verdict::Deny));
        assert_eq!(verdict(None), plain(Verdict::Deny));
    }
}
