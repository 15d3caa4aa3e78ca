//! The hook points of a run for the session's events other than tool calls — the
//! one place they are fired, whatever surface started the run (`mecated run`, ACP,
//! HTTP, a child of a delegation call):
//!
//! - `SessionStart` (`startup` for a session without a conversation, `resume` for
//!   one that has one) before the first run of a session on this engine, and
//!   (`compact`) right after a compaction; the hooks' context is added to the
//!   model's input;
//! - `UserPromptSubmit` before the prompt is expanded: a block refuses the prompt
//!   (the run ends with the hook's reason for the user; the model never sees the
//!   prompt), context is added after the prompt;
//! - `Stop` (a session's own run) or `SubagentStop` (a child's) once when the run
//!   ends, unless it was cancelled or its prompt refused; after the model answered,
//!   a block makes it go on with the hook's reason, at most
//!   [`MAX_STOP_HOOK_CONTINUATIONS`] times a run (`stop_hook_active` is then true);
//! - `PreCompact` (`trigger: auto`) before each compaction.
//!
//! Whatever a hook did besides going on is reported as a `hook.session` event.

use engine_ports::{
    CompactTrigger, EventAnswer, EventKind, HookEvent, HookText, Message, SessionEvent, SessionHookAction,
    SessionSnapshot, SessionSource, StopReason,
};

use super::turn_loop::{Ending, RunCounters, RunTask};
use crate::emitter::EventEmitter;

/// How many times a `Stop` (or `SubagentStop`) hook may make the model go on in one
/// run; a later block is reported as ignored and the run ends.
pub const MAX_STOP_HOOK_CONTINUATIONS: u32 = 3;

impl RunTask {
    /// Whether this engine runs a session's own conversation (not a child's).
    fn is_conversation(&self) -> bool {
        self.inner.config.purpose.is_conversation()
    }

    /// Fires `event`'s hooks; `None` without hooks.
    async fn fire(&self, event: SessionEvent) -> Option<EventAnswer> {
        let hooks = self.inner.hooks.as_ref()?;
        Some(hooks.session_event(&self.session, &event).await)
    }

    /// Reports what a hook did as a `hook.session` event.
    async fn report(
        &self,
        emitter: &EventEmitter,
        event: HookEvent,
        said: &HookText,
        action: SessionHookAction,
    ) {
        emitter
            .emit(EventKind::SessionHook {
                event,
                hook: said.hook.clone(),
                action,
                message: said.text.clone(),
            })
            .await;
    }

    /// Reports the context hooks of `event` gave and returns it as text for the model.
    async fn take_context(
        &self,
        emitter: &EventEmitter,
        event: HookEvent,
        answer: &EventAnswer,
    ) -> Vec<String> {
        let mut texts = Vec::new();
        for said in &answer.context {
            self.report(emitter, event, said, SessionHookAction::Context)
                .await;
            texts.push(format!("{event} hook additional context:\n{}", said.text.trim()));
        }
        texts
    }

    /// Before the prompt: `SessionStart` on the session's first run here, then
    /// `UserPromptSubmit`. Returns the message of context the hooks added (to follow
    /// the prompt), or the ending of a refused prompt.
    pub(super) async fn before_prompt(
        &self,
        emitter: &EventEmitter,
        snapshot: &SessionSnapshot,
        counters: &mut RunCounters,
    ) -> Result<Option<Message>, Ending> {
        if !self.is_conversation() || self.inner.hooks.is_none() {
            counters.prompt_accepted = true;
            return Ok(None);
        }
        let mut context = Vec::new();
        if self.inner.first_run_here(&self.session) {
            let source = if snapshot.conversation.is_empty() {
                SessionSource::Startup
            } else {
                SessionSource::Resume
            };
            if let Some(answer) = self.fire(SessionEvent::SessionStart { source }).await {
                context.extend(self.take_context(emitter, HookEvent::SessionStart, &answer).await);
                self.cannot_block(emitter, HookEvent::SessionStart, answer.block)
                    .await;
            }
        }
        let submitted = SessionEvent::UserPromptSubmit {
            prompt: self.prompt.clone(),
        };
        if let Some(answer) = self.fire(submitted).await {
            if let Some(block) = &answer.block {
                self.report(
                    emitter,
                    HookEvent::UserPromptSubmit,
                    block,
                    SessionHookAction::Block,
                )
                .await;
                return Err(Ending::error(format!(
                    "the prompt was blocked by the UserPromptSubmit hook `{}`: {}",
                    block.hook, block.text
                )));
            }
            context.extend(
                self.take_context(emitter, HookEvent::UserPromptSubmit, &answer)
                    .await,
            );
        }
        counters.prompt_accepted = true;
        Ok(context_message(context))
    }

    /// Reports a block of an event that cannot block as ignored.
    async fn cannot_block(&self, emitter: &EventEmitter, event: HookEvent, block: Option<HookText>) {
        if let Some(mut block) = block {
            block.text = format!("a {event} hook cannot block; ignored: {}", block.text);
            self.report(emitter, event, &block, SessionHookAction::Ignored)
                .await;
        }
    }

    /// The run stops with `stop`: fires `Stop` (or `SubagentStop` for a child). When
    /// `can_go_on` (the model answered) and a hook blocks within the limit, returns
    /// the input that makes the model go on.
    pub(super) async fn stop_hooks(
        &self,
        emitter: &EventEmitter,
        counters: &mut RunCounters,
        stop: StopReason,
        can_go_on: bool,
    ) -> Option<Message> {
        counters.stop_fired = true;
        let stop_hook_active = counters.stop_continuations > 0;
        let (event, answer) = if self.is_conversation() {
            let answer = self
                .fire(SessionEvent::Stop {
                    stop_hook_active,
                    stop_reason: stop,
                })
                .await;
            (HookEvent::Stop, answer)
        } else {
            let answer = self
                .fire(SessionEvent::SubagentStop {
                    stop_hook_active,
                    stop_reason: stop,
                })
                .await;
            (HookEvent::SubagentStop, answer)
        };
        let mut block = answer?.block?;
        if !can_go_on {
            block.text = format!(
                "the run ended with {} and cannot go on; ignored: {}",
                stop.as_str(),
                block.text
            );
            self.report(emitter, event, &block, SessionHookAction::Ignored)
                .await;
            return None;
        }
        if counters.stop_continuations >= MAX_STOP_HOOK_CONTINUATIONS {
            block.text = format!(
                "the model already went on {MAX_STOP_HOOK_CONTINUATIONS} times for {event} hooks in this run; ignored: {}",
                block.text
            );
            self.report(emitter, event, &block, SessionHookAction::Ignored)
                .await;
            return None;
        }
        counters.stop_continuations += 1;
        counters.stop_fired = false;
        self.report(emitter, event, &block, SessionHookAction::Continue)
            .await;
        Some(Message::User {
            text: format!("{event} hook feedback:\n{}", block.text.trim()),
        })
    }

    /// At the end of a run whose `Stop` did not fire yet: fires it (it cannot make
    /// the run go on), unless the run was cancelled or its prompt refused.
    pub(super) async fn final_stop_hooks(
        &self,
        emitter: &EventEmitter,
        counters: &mut RunCounters,
        stop: StopReason,
    ) {
        if counters.prompt_accepted && !counters.stop_fired && stop != StopReason::Cancelled {
            self.stop_hooks(emitter, counters, stop, false).await;
        }
    }

    /// Before a compaction: `PreCompact`.
    pub(super) async fn pre_compact(&self, emitter: &EventEmitter) {
        let event = SessionEvent::PreCompact {
            trigger: CompactTrigger::Auto,
            custom_instructions: String::new(),
        };
        if let Some(answer) = self.fire(event).await {
            self.cannot_block(emitter, HookEvent::PreCompact, answer.block)
                .await;
        }
    }

    /// After a compaction of a session's own conversation: `SessionStart` with
    /// `source: compact`; the context its hooks give is added to the conversation.
    pub(super) async fn after_compact(&self, emitter: &EventEmitter, snapshot: &mut SessionSnapshot) {
        if !self.is_conversation() {
            return;
        }
        let event = SessionEvent::SessionStart {
            source: SessionSource::Compact,
        };
        if let Some(answer) = self.fire(event).await {
            let context = self.take_context(emitter, HookEvent::SessionStart, &answer).await;
            self.cannot_block(emitter, HookEvent::SessionStart, answer.block)
                .await;
            if let Some(message) = context_message(context) {
                snapshot.conversation.push(message);
            }
        }
    }
}

/// One user message holding every hook's context, or nothing.
fn context_message(context: Vec<String>) -> Option<Message> {
    (!context.is_empty()).then(|| Message::User {
        text: context.join("\n\n"),
    })
}
