//! Compaction inside a run: the `PreCompact` hooks are told, one tool-less summary
//! request on the session's model replaces the older messages, the
//! `context.compacted` event reports it, the `SessionStart` hooks are told (`source:
//! compact`), and the compacted conversation is saved before the run goes on.
//!
//! A failure changes nothing: the conversation stays as it was (and is saved so by
//! the run's end), and the run ends with an error saying so.

use engine_ports::{
    CompactionTrigger, EventKind, LlmError, LlmRequest, Message, RequestPurpose, SessionSnapshot, StopReason,
    Usage,
};

use super::turn_loop::{Ending, RunCounters, RunTask};
use crate::context;
use crate::emitter::EventEmitter;
use crate::text_reply::{ReplyError, read_text_reply};

/// What a compaction did.
pub(super) enum Compacted {
    /// The conversation was compacted and saved.
    Yes,
    /// Nothing but an earlier summary could have been replaced; nothing changed.
    NothingToCompact,
}

impl RunTask {
    /// Compacts the session's conversation: asks the model for a summary of the
    /// messages before the cut, puts it in their place, emits `context.compacted`
    /// (`tokens_before` is the estimate that made the engine compact; `fixed_bytes`
    /// the system prompt and tool specs of the next request) and saves.
    ///
    /// # Errors
    /// The run's ending when the summary request fails or is cancelled (the
    /// conversation is unchanged) or the save fails.
    pub(super) async fn compact(
        &self,
        emitter: &EventEmitter,
        snapshot: &mut SessionSnapshot,
        counters: &mut RunCounters,
        trigger: CompactionTrigger,
        tokens_before: u64,
        fixed_bytes: u64,
    ) -> Result<Compacted, Ending> {
        // The run's model (a session's model changes only between runs).
        let model = self.inner.session_model(snapshot);
        let window = model.context_window;
        let messages = snapshot.conversation.to_vec();
        let Some(cut) = context::choose_cut(&messages, window) else {
            return Ok(Compacted::NothingToCompact);
        };
        self.pre_compact(emitter).await;
        let replaced = &messages[..cut];
        let request = LlmRequest {
            model: model.name.clone(),
            system: String::new(),
            messages: vec![Message::User {
                text: context::summary_request_text(replaced, window),
            }]
            .into(),
            tools: Vec::new(),
            purpose: RequestPurpose::Compaction,
            max_tokens: Some(model.output_limits.default),
        };
        let replaced_turns = replaced.iter().map(Message::model_turns).sum();
        let (summary, usage) = self.summarize(request).await?;
        counters.usage += usage;
        super::turn_loop::add_usage(snapshot, &model.name, usage);
        let kept = snapshot.conversation.split_off(cut);
        let messages_kept = kept.len() as u64;
        snapshot.conversation = std::iter::once(Message::Summary {
            text: context::summary_text(&summary, window),
            replaced_turns,
        })
        .chain(kept)
        .collect();
        snapshot.context = None;
        let tokens_after = context::estimate(
            &mut context::ConversationSizes::default(),
            &snapshot.conversation,
            None,
            fixed_bytes,
        );
        emitter
            .emit(EventKind::ContextCompacted {
                trigger,
                tokens_before,
                tokens_after,
                context_window: window,
                messages_replaced: cut as u64,
                messages_kept,
                usage,
            })
            .await;
        self.after_compact(emitter, snapshot).await;
        snapshot.next_seq = emitter.next_seq();
        if let Err(error) = self.inner.store.save(snapshot).await {
            return Err(Ending::error(format!("saving the session failed: {error}")));
        }
        Ok(Compacted::Yes)
    }

    /// Streams the summary request to its end: its text and usage. Nothing of it is
    /// streamed to the run's consumers.
    async fn summarize(&self, request: LlmRequest) -> Result<(String, Usage), Ending> {
        let cancel = &self.live.cancel;
        let failed = |error: LlmError| {
            if cancel.is_cancelled() || matches!(error, LlmError::Cancelled) {
                Ending::stop(StopReason::Cancelled)
            } else {
                Ending::error(format!(
                    "compacting the conversation failed: the summary request failed: {error}; the conversation was kept as it was"
                ))
            }
        };
        let stream = self
            .inner
            .llm
            .stream(request, cancel.child_token())
            .await
            .map_err(failed)?;
        // A longer summary is cut at the reply's cap, and cut again to the window's
        // keep share when framed.
        let (text, usage) = read_text_reply(stream, cancel)
            .await
            .map_err(|error| match error {
                ReplyError::Cancelled => Ending::stop(StopReason::Cancelled),
                ReplyError::Failed(error) => failed(error),
            })?;
        if text.trim().is_empty() {
            return Err(Ending::error(
                "compacting the conversation failed: the model answered the summary request without text; the conversation was kept as it was",
            ));
        }
        Ok((text, usage))
    }
}
