//! The operator-rules port: [`PermissionRules`] says which `allow`, `ask` or `deny`
//! rule of the operator's settings matches a call, and names it for the audit.

use serde::{Deserialize, Serialize};

use crate::call::ToolCall;

/// What a matching rule says about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleEffect {
    /// Run the call without asking (beats an approval level that would ask).
    Allow,
    /// Ask the person (a headless run refuses).
    Ask,
    /// Never run the call (beats every allow and every approval level).
    Deny,
}

/// The rule that decided a call: its effect, its text as the operator wrote it and
/// the file (or other source) it came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RuleMatch {
    /// What the rule says.
    pub effect: RuleEffect,
    /// The rule, verbatim (`Bash(git:*)`).
    pub rule: String,
    /// Where it was written (a settings file's path, `--settings`, an embedder's name).
    pub source: String,
}

/// Operator permission rules (settings files, or whatever an embedder supplies).
///
/// # Contract
/// - `check` returns the strongest rule matching the call: a `deny` if any matches,
///   else an `ask`, else an `allow`; `None` when none matches. It never blocks.
/// - An `allow` is returned only when the rule matches the whole call with
///   confidence (a compound shell command: every part; a command that cannot be
///   parsed: never).
/// - `hides` names the rule that removes a whole tool from what the model sees (a
///   bare `deny` of the tool), if any.
/// - `learn` saves only what `suggest` offered for the same call, and only when the
///   person chose to save it; a rule it saved matches from then on.
pub trait PermissionRules: Send + Sync {
    /// The strongest rule matching the call.
    fn check(&self, call: &ToolCall) -> Option<RuleMatch>;
    /// The `deny` rule that hides the whole tool `name`, if any.
    fn hides(&self, name: &str) -> Option<RuleMatch>;
    /// The `allow` rule [`learn`](Self::learn) would save for `call`, shown to the
    /// person before they choose to save it; `None` when nothing can be saved. The
    /// default saves nothing.
    fn suggest(&self, call: &ToolCall) -> Option<String> {
        let _ = call;
        None
    }
    /// The person answered "allow always" to `call` and chose to save it: rules that
    /// can keep the answer (saved as an `allow` rule, the one
    /// [`suggest`](Self::suggest) offered) do, and return the rule with where it was
    /// saved. The default keeps nothing.
    fn learn(&self, call: &ToolCall) -> Option<RuleMatch> {
        let _ = call;
        None
    }
}

/// The detail of who decided a call, beside its [`Approval`](crate::Approval) in the
/// audit record: the rule and its file, the hook's command and reason, the mode's or
/// the approval level's reason. Every field is optional (absent in older records).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The rule, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The file (or source) the rule came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The hook's command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// Why: the hook's reason, the mode's refusal, the approval level's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Provenance {
    /// The provenance of a rule's decision.
    pub fn rule(matched: &RuleMatch) -> Self {
        Self {
            rule: Some(matched.rule.clone()),
            source: Some(matched.source.clone()),
            ..Self::default()
        }
    }

    /// A reason alone.
    pub fn reason(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
            ..Self::default()
        }
    }
}
