//! [`ChatSession`]: the one stored session a chat talks to, through the host port —
//! created at its first prompt (in the chosen mode, with the workspace it belongs
//! to), continued from the store, or replaced by a fresh one (`/clear`) — and what
//! the chat reads about it: its mode, tools, tokens and the workspace's past sessions.

use std::sync::Arc;
use std::time::SystemTime;

use engine_core::host::{HostedSession, OpenSession, SessionHost, ToolEntry, new_session_id};
use engine_core::{AskAnswer, ElicitationResponse, EngineError, Run};
use engine_ports::{PermissionMode, SessionId, SessionListing, SessionSnapshot, StoreError, Usage};

/// A stored session of this workspace, as the picker lists it.
#[derive(Clone, Debug)]
pub(crate) struct PastSession {
    /// Its id.
    pub(crate) id: SessionId,
    /// When it was last written.
    pub(crate) modified_at: SystemTime,
    /// Its turns so far.
    pub(crate) turns: u64,
    /// The first line of its first prompt.
    pub(crate) title: String,
}

/// The chat's session and its engine.
pub(crate) struct ChatSession {
    host: Arc<dyn SessionHost>,
    hosted: Box<dyn HostedSession>,
    id: SessionId,
    /// Whether the store holds it (a new session is created at its first prompt).
    stored: bool,
    mode: PermissionMode,
    /// The model chosen with `/model` (or stored with a resumed session); `None`:
    /// the host's default.
    model: Option<String>,
    /// Tokens of the session so far: the stored total plus this process's runs.
    usage: Usage,
}

impl ChatSession {
    /// Opens the session's engine; `resume` names a stored session to continue.
    ///
    /// # Errors
    /// The text the person reads: the engine cannot be opened, or the session to
    /// continue is not stored or not of this workspace.
    pub(crate) async fn open(
        host: Arc<dyn SessionHost>,
        resume: Option<&SessionId>,
        mode: Option<PermissionMode>,
    ) -> Result<(Self, Option<SessionSnapshot>), String> {
        let hosted = host
            .open(OpenSession::default())
            .await
            .map_err(|error| format!("the session's engine cannot be opened: {error}"))?;
        let default_mode = hosted.engine().config().mode;
        let mut session = Self {
            host,
            hosted,
            id: SessionId::from(new_session_id()),
            stored: false,
            mode: mode.unwrap_or(default_mode),
            model: None,
            usage: Usage::default(),
        };
        let snapshot = match resume {
            Some(id) => Some(session.resume(id).await?),
            None => None,
        };
        if let Some(mode) = mode
            && session.stored
        {
            session.set_mode(mode).await?;
        }
        Ok((session, snapshot))
    }

    /// Switches to the stored session `id` and returns it (to show its turns).
    ///
    /// # Errors
    /// It is not stored, cannot be read, or belongs to another workspace.
    pub(crate) async fn resume(&mut self, id: &SessionId) -> Result<SessionSnapshot, String> {
        let snapshot = self
            .host
            .session_store()
            .load(id)
            .await
            .map_err(|error| match error {
                StoreError::NotFound { .. } => {
                    format!("no stored session {:?} (see /resume for the list)", id.as_str())
                }
                other => format!("session {:?} cannot be read: {other}", id.as_str()),
            })?;
        if !self.of_this_workspace(&snapshot) {
            return Err(format!(
                "session {:?} belongs to another workspace than {}",
                id.as_str(),
                self.host.workspace_root().display()
            ));
        }
        self.id = id.clone();
        self.stored = true;
        self.mode = snapshot.mode;
        self.model.clone_from(&snapshot.model);
        self.usage = snapshot.usage;
        Ok(snapshot)
    }

    /// Leaves the current session (it stays stored) for a fresh one.
    pub(crate) fn clear(&mut self) {
        self.id = SessionId::from(new_session_id());
        self.stored = false;
        self.usage = Usage::default();
    }

    /// The session id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The session's mode.
    pub(crate) fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// The model the session runs on.
    pub(crate) fn model(&self) -> String {
        self.model.clone().unwrap_or_else(|| self.host.model().to_owned())
    }

    /// The models the session may switch to, the default first.
    pub(crate) fn models(&self) -> &[String] {
        self.host.models()
    }

    /// Switches the model from the next prompt on: kept for the first prompt of a
    /// new session (and for the next session after `/clear`), saved in the store for
    /// a stored one.
    ///
    /// # Errors
    /// The name is not one of [`models`](Self::models) (the message lists them), or
    /// the engine refused (a run holds the session).
    pub(crate) async fn set_model(&mut self, name: &str) -> Result<(), String> {
        if !self.models().iter().any(|model| model == name) {
            return Err(format!(
                "no model {name:?} here: choose one of {} (start `mecated chat` with --models to offer others)",
                self.models().join(", ")
            ));
        }
        let chosen = (name != self.host.model()).then(|| name.to_owned());
        if self.stored {
            self.hosted
                .engine()
                .set_model(&self.id, chosen.clone())
                .await
                .map_err(|error| format!("the model cannot be changed: {error}"))?;
        }
        self.model = chosen;
        Ok(())
    }

    /// Tokens so far.
    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    /// The tools the model sees in the session's mode.
    pub(crate) fn tools(&self) -> Vec<ToolEntry> {
        self.hosted.tools(self.mode)
    }

    /// Changes the mode: kept for the first prompt of a new session, saved in the
    /// store for a stored one.
    ///
    /// # Errors
    /// The engine refused (a run holds the session).
    pub(crate) async fn set_mode(&mut self, mode: PermissionMode) -> Result<(), String> {
        if self.stored {
            self.hosted
                .engine()
                .set_mode(&self.id, mode)
                .await
                .map_err(|error| format!("the mode cannot be changed: {error}"))?;
        }
        self.mode = mode;
        Ok(())
    }

    /// Starts a run of `prompt`: creates the session at its first prompt and waits
    /// until the run holds the session. The engine's run fires the operator's
    /// session hooks (SessionStart, UserPromptSubmit, Stop), as for every surface.
    ///
    /// # Errors
    /// The text the person reads (a hook blocked the prompt, the session is busy).
    pub(crate) async fn start(&mut self, prompt: &str) -> Result<Run, String> {
        let engine = Arc::clone(self.hosted.engine());
        if !self.stored {
            match engine
                .create_session_in(&self.id, self.mode, self.host.workspace_root())
                .await
            {
                Ok(()) | Err(EngineError::Store(StoreError::AlreadyExists { .. })) => {}
                Err(error) => return Err(format!("the session cannot be created: {error}")),
            }
            if self.model.is_some() {
                engine
                    .set_model(&self.id, self.model.clone())
                    .await
                    .map_err(|error| format!("the session's model cannot be set: {error}"))?;
            }
            self.stored = true;
        }
        let run = engine.run(&self.id, prompt).map_err(|error| error.to_string())?;
        run.started().await.map_err(|error| error.to_string())
    }

    /// Counts a finished run's tokens.
    pub(crate) fn finished(&mut self, usage: Usage) {
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.usage.cache_read_tokens += usage.cache_read_tokens;
        self.usage.cache_write_tokens += usage.cache_write_tokens;
    }

    /// Answers a permission ask; `false` when it is no longer open.
    pub(crate) fn approve(&self, ask_id: &str, answer: impl Into<AskAnswer>) -> bool {
        self.hosted.engine().approve(&self.id, ask_id, answer)
    }

    /// Answers a tool's question.
    ///
    /// # Errors
    /// The engine's reason (the content does not fit the form, it is closed).
    pub(crate) fn answer(&self, elicitation_id: &str, response: ElicitationResponse) -> Result<(), String> {
        self.hosted
            .engine()
            .answer_elicitation(&self.id, elicitation_id, response)
            .map_err(|error| error.to_string())
    }

    /// The stored sessions of this workspace, newest first.
    ///
    /// # Errors
    /// The store cannot be listed.
    pub(crate) async fn past_sessions(&self) -> Result<Vec<PastSession>, String> {
        let store = self.host.session_store();
        let mut listings: Vec<SessionListing> = store
            .list()
            .await
            .map_err(|error| format!("the stored sessions cannot be listed: {error}"))?;
        listings.sort_by(|a, b| b.modified_at.cmp(&a.modified_at).then_with(|| a.id.cmp(&b.id)));
        let mut sessions = Vec::new();
        for listing in listings {
            let Ok(snapshot) = store.load(&listing.id).await else {
                continue;
            };
            if !self.of_this_workspace(&snapshot) {
                continue;
            }
            sessions.push(PastSession {
                title: title(&snapshot),
                id: listing.id,
                modified_at: listing.modified_at,
                turns: listing.turns,
            });
        }
        Ok(sessions)
    }

    /// Deletes a stored session (never the current one).
    ///
    /// # Errors
    /// It is the current session, or the store failed.
    pub(crate) async fn delete(&self, id: &SessionId) -> Result<(), String> {
        if *id == self.id {
            return Err("the current session cannot be deleted (use /clear first)".to_owned());
        }
        self.host
            .session_store()
            .delete(id)
            .await
            .map_err(|error| format!("session {:?} cannot be deleted: {error}", id.as_str()))
    }

    /// Whether a stored session was opened in this workspace (or below it).
    fn of_this_workspace(&self, snapshot: &SessionSnapshot) -> bool {
        snapshot
            .cwd
            .as_deref()
            .is_some_and(|cwd| cwd.is_absolute() && cwd.starts_with(self.host.workspace_root()))
    }

    /// Ends the session's engine (the stored session stays).
    pub(crate) async fn close(self) {
        if let Err(error) = self.hosted.close().await {
            tracing::warn!(%error, "the chat's engine did not close cleanly");
        }
    }
}

/// The session's title (the one rule, [`SessionSnapshot::title`]), printable.
fn title(snapshot: &SessionSnapshot) -> String {
    crate::style::printable(&snapshot.title().unwrap_or_else(|| "(no prompt)".to_owned()))
}
