//! `mecated policy check`: how the operator's settings decide one call, and which
//! rule (with its file) made the decision. Hooks are not run.

use std::process::ExitCode;

use app::build;
use engine_core::{DefaultPolicy, Resolved};
use engine_ports::{
    Decision, PermissionPolicy, PermissionRequest, PermissionRules, RuleEffect, SessionId, ToolCall,
};
use serde_json::json;

use crate::cli::PolicyCheckArgs;
use crate::out;
use crate::to_config::common_config;
use crate::usage::UsageError;

/// Prints one line, `<allow|ask|deny>: <who decided>`; exit 0 whatever the decision,
/// 2 for a call that cannot be read, 1 when the build (a settings file) fails.
pub(crate) async fn check(args: PolicyCheckArgs) -> ExitCode {
    let cfg = match common_config(&args.common) {
        Ok(cfg) => cfg,
        Err(error) => return error.exit(),
    };
    let call = match parse_call(&args.call) {
        Ok(call) => call,
        Err(error) => return error.exit(),
    };
    let built = match build(cfg).await {
        Ok(built) => built,
        Err(error) => return out::failure(error),
    };
    let line = decide(&built, &args, &call).await;
    out::stdout(&line);
    if !built.policy().hook_commands().is_empty() {
        out::stderr(
            "note: hooks are not run by `policy check`; a PreToolUse hook may still block or allow the call",
        );
    }
    if let Err(error) = built.close().await {
        out::stderr(&format!("warning: {error}"));
    }
    ExitCode::SUCCESS
}

/// The decision in the engine's order: the mode, the deny rules, the ask and allow
/// rules, the approval level.
async fn decide(built: &app::Built, args: &PolicyCheckArgs, call: &ToolCall) -> String {
    let name = call.name();
    let tool = match built.shared_catalog().resolve(name, args.mode) {
        Resolved::Available(tool) => tool.clone(),
        Resolved::NotInMode(_) => {
            return format!("deny: the mode ({name} is not available in {} mode)", args.mode);
        }
        Resolved::Unknown => return format!("deny: the mode (no tool {name:?} in this catalog)"),
    };
    let read_only = tool.read_only() && tool.call_read_only(call);
    if !read_only && args.mode == engine_ports::PermissionMode::Plan {
        return format!("deny: the mode (plan mode runs only read-only calls; this {name} call is not)");
    }
    if let Some(matched) = built.policy().check(call) {
        let effect = match matched.effect {
            RuleEffect::Allow => "allow",
            RuleEffect::Ask => "ask",
            RuleEffect::Deny => "deny",
        };
        return format!("{effect}: rule {} in {}", matched.rule, matched.source);
    }
    let level = DefaultPolicy::new(false, args.approve);
    let request = PermissionRequest {
        session_id: SessionId::from("policy-check"),
        mode: args.mode,
        call: call.clone(),
        read_only,
    };
    let approve = args.approve;
    match level.evaluate(&request).await {
        Decision::Allow => format!("allow: the approval level (--approve {approve}, no rule matches)"),
        Decision::Ask { reason } => format!("ask: the approval level ({reason})"),
        Decision::Deny { reason } => format!("deny: the approval level ({reason})"),
    }
}

/// `Tool(specifier)` or `Tool` as a call: the specifier is the command of `Shell`
/// (`Bash`), the path of the file tools, the agent of `Subagent`.
fn parse_call(text: &str) -> Result<ToolCall, UsageError> {
    let text = text.trim();
    let (name, spec) = match text.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(spec) => (name.trim(), Some(spec)),
            None => {
                return Err(UsageError::value(
                    "CALL",
                    text,
                    "expected Tool or Tool(specifier), closed with `)`",
                ));
            }
        },
        None => (text, None),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(UsageError::value(
            "CALL",
            text,
            "expected a tool name such as Shell, Read or mcp__server__tool",
        ));
    }
    let name = adapter_policy::canonical_tool(name);
    let args = match (name, spec) {
        (_, None) => json!({}),
        ("Shell", Some(spec)) => json!({ "command": spec }),
        ("Read" | "Write" | "Edit" | "Glob" | "Grep" | "ListDir", Some(spec)) => json!({ "path": spec }),
        ("Subagent", Some(spec)) => json!({ "agent": spec, "prompt": "" }),
        (other, Some(_)) => {
            return Err(UsageError::value(
                "CALL",
                text,
                format!(
                    "{other} takes no specifier here (Shell, Read, Write, Edit, Glob, Grep, ListDir and Subagent do)"
                ),
            ));
        }
    };
    Ok(ToolCall::new("policy-check", name, args.to_string()))
}
