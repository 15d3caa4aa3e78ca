//! A session's config options as the editor shows them (`configOptions`: the mode and
//! the model pickers, kept in step with `modes`), and its usage as `usage_update`s.

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::{
    Cost, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, SessionMode,
    SessionModeState, SessionUpdate, UsageUpdate,
};
use engine_core::Engine;
use engine_core::host::SessionHost;
use engine_ports::{PermissionMode, Usage};

/// The id of the mode option (its values are the modes' ids).
pub(crate) const MODE_OPTION: &str = "mode";

/// The id of the model option (its values are model names).
pub(crate) const MODEL_OPTION: &str = "model";

/// The name and description the editor shows for `mode`.
fn mode_label(mode: PermissionMode) -> (&'static str, &'static str) {
    match mode {
        PermissionMode::Default => ("Default", "Every tool; changes ask for approval"),
        PermissionMode::Plan => ("Plan", "Read-only tools only: explore and plan, change nothing"),
        PermissionMode::AcceptEdits => ("Accept edits", "As default, with Write and Edit approved"),
    }
}

/// The three modes, `current` selected.
pub(crate) fn mode_state(current: PermissionMode) -> SessionModeState {
    let modes = PermissionMode::ALL
        .into_iter()
        .map(|mode| {
            let (name, description) = mode_label(mode);
            SessionMode::new(mode.as_str(), name).description(description)
        })
        .collect();
    SessionModeState::new(current.as_str(), modes)
}

/// The session's config options: the mode (`current_mode`) and the model
/// (`current_model` among the host's models; a stored session's model the host no
/// longer offers is listed too, so the picker shows what the session runs on).
pub(crate) fn config_options(
    host: &dyn SessionHost,
    current_mode: PermissionMode,
    current_model: &str,
) -> Vec<SessionConfigOption> {
    let modes: Vec<SessionConfigSelectOption> = PermissionMode::ALL
        .into_iter()
        .map(|mode| {
            let (name, description) = mode_label(mode);
            SessionConfigSelectOption::new(mode.as_str(), name).description(description)
        })
        .collect();
    let mut names: Vec<&str> = host.models().iter().map(String::as_str).collect();
    if !names.contains(&current_model) {
        names.push(current_model);
    }
    let models: Vec<SessionConfigSelectOption> = names
        .into_iter()
        .map(|name| SessionConfigSelectOption::new(name.to_owned(), name))
        .collect();
    vec![
        SessionConfigOption::select(MODE_OPTION, "Mode", current_mode.as_str(), modes)
            .description("What the agent may do without asking")
            .category(SessionConfigOptionCategory::Mode),
        SessionConfigOption::select(MODEL_OPTION, "Model", current_model.to_owned(), models)
            .description("The model the session's next turns run on")
            .category(SessionConfigOptionCategory::Model),
    ]
}

/// A `usage_update`: `used` tokens of `model`'s context window, and the session's
/// estimated cost in US dollars when the host knows the price of every model in
/// `spent` (the session's tokens per model).
pub(crate) fn usage_update(
    host: &dyn SessionHost,
    engine: &Engine,
    model: &str,
    used: u64,
    spent: &BTreeMap<String, Usage>,
) -> SessionUpdate {
    let update = UsageUpdate::new(used, engine.context_window_of(model));
    let update = match host.cost(spent) {
        Some(dollars) => update.cost(Cost::new(dollars, "USD")),
        None => update,
    };
    SessionUpdate::UsageUpdate(update)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_list_all_three() {
        let state = serde_json::to_value(mode_state(PermissionMode::Default)).unwrap();
        assert_eq!(state["currentModeId"], "default");
        let ids = crate::field_of_each(&state["availableModes"], "id");
        assert_eq!(ids, ["default", "plan", "acceptEdits"]);
    }
}
