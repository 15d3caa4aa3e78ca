//! Id normalization: every call of a turn gets a unique, non-empty id.

use std::borrow::Cow;
use std::collections::HashSet;

use engine_ports::ToolCall;

/// Normalizes the ids of one turn's calls, in order.
///
/// An empty id becomes `call-<turn>-<position>` (session-wide turn number, 1-based
/// position). An id equal to an earlier one becomes `<id>#<k>`, with the smallest
/// `k ≥ 2` that no call of the turn uses (a WARN is logged). Ids that are already
/// unique and non-empty are kept, so normalizing twice changes nothing.
pub fn normalize_call_ids(calls: &[ToolCall], turn: u64) -> Vec<ToolCall> {
    normalized(calls, turn).into_owned()
}

/// [`normalize_call_ids`] of calls the caller owns: given back unchanged (no copy)
/// when their ids are already normalized.
pub(crate) fn normalize_owned_call_ids(calls: Vec<ToolCall>, turn: u64) -> Vec<ToolCall> {
    if are_normalized(&calls) {
        calls
    } else {
        renamed(&calls, turn)
    }
}

/// [`normalize_call_ids`] borrowing the calls when their ids are already normalized
/// (the engine's turn loop normalizes before dispatching, so the dispatcher copies
/// nothing).
pub(crate) fn normalized(calls: &[ToolCall], turn: u64) -> Cow<'_, [ToolCall]> {
    if are_normalized(calls) {
        Cow::Borrowed(calls)
    } else {
        Cow::Owned(renamed(calls, turn))
    }
}

/// The common case: every id present and unique; nothing is renamed.
fn are_normalized(calls: &[ToolCall]) -> bool {
    match calls {
        [] => true,
        [only] => !only.id().is_empty(),
        _ => {
            let mut seen: HashSet<&str> = HashSet::with_capacity(calls.len());
            calls
                .iter()
                .all(|c| !c.id().is_empty() && seen.insert(c.id().as_str()))
        }
    }
}

fn renamed(calls: &[ToolCall], turn: u64) -> Vec<ToolCall> {
    let taken: HashSet<&str> = calls
        .iter()
        .filter(|c| !c.id().is_empty())
        .map(|c| c.id().as_str())
        .collect();
    let mut assigned: HashSet<String> = HashSet::with_capacity(calls.len());
    let mut out = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let wanted = if call.id().is_empty() {
            format!("call-{turn}-{}", index + 1)
        } else {
            call.id().to_string()
        };
        let id = if assigned.contains(&wanted) || (call.id().is_empty() && taken.contains(wanted.as_str())) {
            let mut k = 2u64;
            loop {
                let candidate = format!("{wanted}#{k}");
                if !taken.contains(candidate.as_str()) && !assigned.contains(&candidate) {
                    break candidate;
                }
                k += 1;
            }
        } else {
            wanted
        };
        if id != call.id().as_str() && !call.id().is_empty() {
            tracing::warn!(call_id = %call.id(), new_id = %id, tool = call.name(), "duplicate tool call id renamed");
        }
        out.push(if id == call.id().as_str() {
            call.clone()
        } else {
            call.with_id(id.clone())
        });
        assigned.insert(id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(calls: &[ToolCall]) -> Vec<String> {
        calls.iter().map(|c| c.id().to_string()).collect()
    }

    #[test]
    fn empty_and_duplicate_ids_are_renamed() {
        let calls = [
            ToolCall::new("c1", "Read", "{}"),
            ToolCall::new("c1", "Grep", "{}"),
            ToolCall::new("", "Glob", "{}"),
        ];
        assert_eq!(ids(&normalize_call_ids(&calls, 2)), ["c1", "c1#2", "call-2-3"]);
    }

    #[test]
    fn renamed_ids_avoid_ids_used_later_in_the_turn() {
        let calls = [
            ToolCall::new("a", "R", ""),
            ToolCall::new("a", "R", ""),
            ToolCall::new("a#2", "R", ""),
            ToolCall::new("call-1-5", "R", ""),
            ToolCall::new("", "R", ""),
        ];
        assert_eq!(
            ids(&normalize_call_ids(&calls, 1)),
            ["a", "a#3", "a#2", "call-1-5", "call-1-5#2"]
        );
    }

    #[test]
    fn normalizing_twice_changes_nothing() {
        let calls = [
            ToolCall::new("", "R", ""),
            ToolCall::new("", "R", ""),
            ToolCall::new("x", "R", ""),
        ];
        let once = normalize_call_ids(&calls, 4);
        assert_eq!(normalize_call_ids(&once, 4), once);
    }
}
