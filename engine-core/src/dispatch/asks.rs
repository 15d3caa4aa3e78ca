//! [`AskRegistry`]: what a session's run waits for its host to answer — permission
//! asks and elicitations.

use std::collections::HashMap;
use std::sync::Mutex;

use engine_ports::{ElicitationAction, Verdict};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::elicitation::{ElicitationAnswerError, ElicitationResponse, check_content};

/// The open asks and elicitations of a run. The dispatcher registers one before
/// emitting its event (`permission.ask`, `elicitation.request`), so an answer that
/// arrives right away is kept, then waits; the host answers with
/// [`AskRegistry::answer`] or [`AskRegistry::answer_elicitation`].
#[derive(Debug, Default)]
pub struct AskRegistry {
    open: Mutex<HashMap<String, oneshot::Sender<AskAnswer>>>,
    elicitations: Mutex<HashMap<String, OpenElicitation>>,
}

/// The person's answer to a permission ask: the verdict; with
/// [`Verdict::AllowAlways`], whether to save the rule the ask suggested in the
/// project's settings (only on this explicit choice is anything saved); with
/// [`Verdict::Deny`], what the person tells the model about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskAnswer {
    /// Run the call, and later ones, or not.
    pub verdict: Verdict,
    /// Save the ask's suggested rule (meaningful with `AllowAlways` only).
    pub save_rule: bool,
    /// Why the person denied the call, for the model (meaningful with `Deny` only;
    /// at most [`MAX_DENY_REASON_CHARS`] characters are kept).
    pub reason: Option<String>,
}

/// The longest denial reason kept, in characters: the rest is cut, so a pasted
/// page cannot flood the model's context.
pub const MAX_DENY_REASON_CHARS: usize = 2_000;

impl AskAnswer {
    /// "Allow always" and save the suggested rule for the project.
    pub const ALLOW_ALWAYS_AND_SAVE: Self = Self {
        verdict: Verdict::AllowAlways,
        save_rule: true,
        reason: None,
    };

    /// A denial with what the person tells the model; a blank reason is none, a long
    /// one is cut at [`MAX_DENY_REASON_CHARS`].
    pub fn deny_because(reason: &str) -> Self {
        let reason = reason.trim();
        Self {
            verdict: Verdict::Deny,
            save_rule: false,
            reason: (!reason.is_empty())
                .then(|| engine_ports::clip_chars(reason, MAX_DENY_REASON_CHARS).into_owned()),
        }
    }
}

impl From<Verdict> for AskAnswer {
    /// The verdict alone: nothing is saved, no reason is given.
    fn from(verdict: Verdict) -> Self {
        Self {
            verdict,
            save_rule: false,
            reason: None,
        }
    }
}

#[derive(Debug)]
struct OpenElicitation {
    form: Value,
    answer: oneshot::Sender<ElicitationResponse>,
}

impl AskRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens an ask and returns where its answer arrives.
    pub fn open(&self, ask_id: &str) -> oneshot::Receiver<AskAnswer> {
        let (tx, rx) = oneshot::channel();
        lock(&self.open).insert(ask_id.to_owned(), tx);
        rx
    }

    /// Answers an open ask; `false` for an unknown or already answered ask.
    pub fn answer(&self, ask_id: &str, answer: impl Into<AskAnswer>) -> bool {
        match lock(&self.open).remove(ask_id) {
            Some(tx) => tx.send(answer.into()).is_ok(),
            None => false,
        }
    }

    /// Forgets an ask that will not be waited for any more.
    pub fn close(&self, ask_id: &str) {
        lock(&self.open).remove(ask_id);
    }

    /// The ids of the open asks, sorted.
    pub fn open_ids(&self) -> Vec<String> {
        sorted_ids(&self.open)
    }

    /// Opens an elicitation of `form` and returns where its answer arrives.
    pub fn open_elicitation(&self, id: &str, form: Value) -> oneshot::Receiver<ElicitationResponse> {
        let (answer, rx) = oneshot::channel();
        lock(&self.elicitations).insert(id.to_owned(), OpenElicitation { form, answer });
        rx
    }

    /// Answers an open elicitation. An accept's content must fit the form (a
    /// missing content counts as empty); a decline or cancel carries none.
    ///
    /// # Errors
    /// [`ElicitationAnswerError::NotOpen`] for an unknown or already answered
    /// elicitation; [`ElicitationAnswerError::InvalidContent`] naming the field that
    /// does not fit (the elicitation stays open).
    pub fn answer_elicitation(
        &self,
        id: &str,
        response: ElicitationResponse,
    ) -> Result<(), ElicitationAnswerError> {
        let mut open = lock(&self.elicitations);
        let Some(pending) = open.get(id) else {
            return Err(ElicitationAnswerError::NotOpen(id.to_owned()));
        };
        let response = match response.action {
            ElicitationAction::Accept => {
                let content = response.content.unwrap_or_default();
                check_content(&pending.form, &content).map_err(ElicitationAnswerError::InvalidContent)?;
                ElicitationResponse {
                    content: Some(content),
                    ..response
                }
            }
            ElicitationAction::Decline | ElicitationAction::Cancel => ElicitationResponse {
                content: None,
                ..response
            },
        };
        let Some(pending) = open.remove(id) else {
            return Err(ElicitationAnswerError::NotOpen(id.to_owned()));
        };
        pending
            .answer
            .send(response)
            .map_err(|_| ElicitationAnswerError::NotOpen(id.to_owned()))
    }

    /// Forgets an elicitation that will not be waited for any more.
    pub fn close_elicitation(&self, id: &str) {
        lock(&self.elicitations).remove(id);
    }

    /// The ids of the open elicitations, sorted.
    pub fn open_elicitation_ids(&self) -> Vec<String> {
        sorted_ids(&self.elicitations)
    }
}

/// The keys of `open`, sorted.
fn sorted_ids<V>(open: &Mutex<HashMap<String, V>>) -> Vec<String> {
    let mut ids: Vec<String> = lock(open).keys().cloned().collect();
    ids.sort();
    ids
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
