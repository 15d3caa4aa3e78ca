//! The sessions the server has live: each bound to its engine (the shared one, or a
//! private one with the session's client MCP servers), at most `max_live` at once.
//!
//! A live session on the shared engine holds nothing the store does not: the engine
//! loads the snapshot at each run. So when the registry is full, the least recently
//! used idle one is unloaded to make room, and an idle one is unloaded after
//! `idle_unload` of disuse; its next prompt loads it back from the store (in this
//! process or another replica sharing it). A session is never unloaded while it runs,
//! waits for an answer (an ask or a server's question) or holds a private engine
//! (its client MCP servers live only here); when every live session is one of
//! those, a new one is refused (429).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use engine_core::{Engine, Run};
use engine_ports::{PermissionMode, SessionId};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::error::{ApiError, RETRY_AFTER_SECS};
use engine_core::host::{HostedSession, ToolEntry};

/// How long closing a session waits for its run to finish its bookkeeping.
const RUN_DRAIN: Duration = Duration::from_secs(10);

/// Where a live session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gate {
    /// Takes runs.
    Open,
    /// Unloaded to the store: a request holding it looks it up again.
    Unloaded,
    /// Deleted: no run starts any more.
    Deleted,
}

/// One live session.
pub(crate) struct HttpSession {
    id: SessionId,
    engine: Arc<Engine>,
    /// Whether its engine is private (client MCP servers): never unloaded.
    private: bool,
    session_engine: Mutex<Option<Box<dyn HostedSession>>>,
    /// Held while a run starts, the session is deleted or unloaded.
    gate: tokio::sync::Mutex<Gate>,
    /// The task forwarding the current run's events (at most one at a time).
    runs: TaskTracker,
    /// When a request last used it (the unloading order and the idle timer).
    last_used: Mutex<Instant>,
}

impl HttpSession {
    fn new(id: SessionId, session_engine: Box<dyn HostedSession>) -> Self {
        Self {
            id,
            engine: Arc::clone(session_engine.engine()),
            private: session_engine.is_private(),
            session_engine: Mutex::new(Some(session_engine)),
            gate: tokio::sync::Mutex::new(Gate::Open),
            runs: TaskTracker::new(),
            last_used: Mutex::new(Instant::now()),
        }
    }

    /// The session id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// The engine it runs on.
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// `running`, `awaiting_approval` (a run waits for an ask's verdict),
    /// `awaiting_input` (a run waits for the answer to a server's question) or `idle`.
    pub(crate) fn state(&self) -> &'static str {
        if !self.engine.pending_asks(&self.id).is_empty() {
            "awaiting_approval"
        } else if !self.engine.pending_elicitations(&self.id).is_empty() {
            "awaiting_input"
        } else if self.engine.is_running(&self.id) {
            "running"
        } else {
            "idle"
        }
    }

    /// The tools of its engine in `mode` (empty once closed).
    pub(crate) fn tools(&self, mode: PermissionMode) -> Vec<ToolEntry> {
        lock(&self.session_engine)
            .as_ref()
            .map(|engine| engine.tools(mode))
            .unwrap_or_default()
    }

    /// Marks it used now.
    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    /// Whether it must stay live: a run in progress, an open ask or question, or a
    /// private engine. (A run is over before its `result` goes out: a forwarder
    /// still delivering it pins nothing, since the shared engine's handle holds
    /// nothing to close.)
    fn pinned(&self) -> bool {
        self.private
            || self.engine.is_running(&self.id)
            || !self.engine.pending_asks(&self.id).is_empty()
            || !self.engine.pending_elicitations(&self.id).is_empty()
    }

    /// Unloads it when nothing pins it and no request is starting a run on it
    /// (never waits); `true` when it was unloaded.
    fn try_unload(&self) -> bool {
        let Ok(mut gate) = self.gate.try_lock() else {
            return false;
        };
        if *gate != Gate::Open || self.pinned() {
            return false;
        }
        *gate = Gate::Unloaded;
        // The shared engine's handle closes nothing: dropping it is its close.
        lock(&self.session_engine).take();
        true
    }

    /// Starts a run of `text`; `None` when the session was unloaded meanwhile (look
    /// it up again). The caller hands the run to [`HttpSession::follow`].
    ///
    /// # Errors
    /// 404 once deleted, 409 while a run is in progress (here or in another process
    /// sharing the store), 503 when closed.
    pub(crate) async fn start_run(&self, text: &str) -> Result<Option<Run>, ApiError> {
        let gate = self.gate.lock().await;
        match *gate {
            Gate::Deleted => return Err(ApiError::unknown_session(self.id.as_str())),
            Gate::Unloaded => return Ok(None),
            Gate::Open => {}
        }
        self.touch();
        let run = self.engine.run(&self.id, text)?.started().await?;
        Ok(Some(run))
    }

    /// Runs `forward` (the run's forwarder) as a task tracked by the session and by
    /// the server's `all_runs`; the session counts as used again when it ends.
    pub(crate) fn follow(
        self: &Arc<Self>,
        all_runs: &TaskTracker,
        forward: impl Future<Output = ()> + Send + 'static,
    ) {
        let session = Arc::clone(self);
        self.runs.spawn(all_runs.track_future(async move {
            forward.await;
            session.touch();
        }));
    }

    /// Cancels the run, waits (bounded) until its events are all out, then closes the
    /// session's engine: a private engine closes its client MCP servers, the shared
    /// engine is left alone. No run starts afterwards.
    pub(crate) async fn close(&self) {
        *self.gate.lock().await = Gate::Deleted;
        self.engine.cancel(&self.id);
        self.runs.close();
        if tokio::time::timeout(RUN_DRAIN, self.runs.wait()).await.is_err() {
            tracing::warn!(session_id = %self.id, "the run did not finish within {RUN_DRAIN:?} of its cancellation");
        }
        let session_engine = lock(&self.session_engine).take();
        if let Some(session_engine) = session_engine
            && let Err(error) = session_engine.close().await
        {
            tracing::warn!(session_id = %self.id, %error, "closing the session's engine failed");
        }
    }
}

/// The live sessions and the cap on them.
pub(crate) struct Sessions {
    registry: Mutex<Registry>,
    limit: usize,
}

#[derive(Default)]
struct Registry {
    live: HashMap<SessionId, Arc<HttpSession>>,
    reserved: usize,
    /// Sessions whose deletion is under way (with the number of deletions): no
    /// request may revive them.
    deleting: HashMap<SessionId, usize>,
}

/// A reserved place under the cap; given back on drop unless filled.
pub(crate) struct Slot<'a> {
    sessions: &'a Sessions,
    armed: bool,
}

impl Slot<'_> {
    /// Registers `session_engine` as the live session `id`; when `id` became live
    /// meanwhile (two requests adopting one stored session), that one wins.
    ///
    /// # Errors
    /// 404 while `id` is being deleted; `session_engine` is handed back to be closed.
    pub(crate) fn fill(
        mut self,
        id: SessionId,
        session_engine: Box<dyn HostedSession>,
    ) -> Result<Arc<HttpSession>, (ApiError, Box<dyn HostedSession>)> {
        let mut registry = self.sessions.registry();
        registry.reserved = registry.reserved.saturating_sub(1);
        self.armed = false;
        if registry.deleting.contains_key(&id) {
            return Err((ApiError::unknown_session(id.as_str()), session_engine));
        }
        let session = registry
            .live
            .entry(id.clone())
            .or_insert_with(|| Arc::new(HttpSession::new(id, session_engine)));
        Ok(Arc::clone(session))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut registry = self.sessions.registry();
            registry.reserved = registry.reserved.saturating_sub(1);
        }
    }
}

impl Sessions {
    /// At most `limit` live sessions (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            registry: Mutex::default(),
            limit: limit.max(1),
        }
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        lock(&self.registry)
    }

    /// A place for one more session, unloading the least recently used idle one
    /// when `limit` sessions are live.
    ///
    /// # Errors
    /// 429 (with `Retry-After`) when `limit` sessions are live (or being created)
    /// and none of them can be unloaded.
    pub(crate) fn reserve(&self) -> Result<Slot<'_>, ApiError> {
        let mut registry = self.registry();
        if registry.live.len() + registry.reserved >= self.limit && !unload_lru(&mut registry) {
            return Err(ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "too many sessions: all {} live sessions are busy (running, waiting for an answer, \
                     or holding client MCP servers); retry later, or delete one (DELETE /v1/sessions/{{id}})",
                    self.limit
                ),
            )
            .retry_after(RETRY_AFTER_SECS));
        }
        registry.reserved += 1;
        Ok(Slot {
            sessions: self,
            armed: true,
        })
    }

    /// The live session `id`, marked used.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<HttpSession>> {
        let session = self.registry().live.get(id).cloned();
        if let Some(session) = &session {
            session.touch();
        }
        session
    }

    /// Unloads every session unused for `idle` or longer that nothing pins; how many.
    pub(crate) fn unload_idle(&self, idle: Duration) -> usize {
        let now = Instant::now();
        let mut registry = self.registry();
        let idle_ids: Vec<SessionId> = registry
            .live
            .iter()
            .filter(|(_, session)| now.saturating_duration_since(session.last_used()) >= idle)
            .filter(|(_, session)| session.try_unload())
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle_ids {
            registry.live.remove(id);
            tracing::debug!(session_id = %id, "unloaded an idle session");
        }
        idle_ids.len()
    }

    /// How many sessions are live.
    pub(crate) fn live_count(&self) -> usize {
        self.registry().live.len()
    }

    /// Starts deleting `id`: takes the live session out (it gets no new requests)
    /// and keeps `id` from being revived until the [`Deletion`] is dropped.
    pub(crate) fn begin_delete(&self, id: &SessionId) -> (Option<Arc<HttpSession>>, Deletion<'_>) {
        let mut registry = self.registry();
        *registry.deleting.entry(id.clone()).or_default() += 1;
        let live = registry.live.remove(id);
        let deletion = Deletion {
            sessions: self,
            id: id.clone(),
        };
        (live, deletion)
    }

    /// Whether `id` is being deleted.
    pub(crate) fn is_deleting(&self, id: &SessionId) -> bool {
        self.registry().deleting.contains_key(id)
    }

    /// Takes every live session out.
    pub(crate) fn drain(&self) -> Vec<Arc<HttpSession>> {
        self.registry().live.drain().map(|(_, session)| session).collect()
    }

    /// Every live session.
    pub(crate) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.registry().live.values().cloned().collect()
    }
}

/// Unloads the least recently used session nothing pins; `false` when none could be.
fn unload_lru(registry: &mut Registry) -> bool {
    let mut candidates: Vec<(Instant, &SessionId, &Arc<HttpSession>)> = registry
        .live
        .iter()
        .filter(|(_, session)| !session.private)
        .map(|(id, session)| (session.last_used(), id, session))
        .collect();
    candidates.sort_by_key(|(used, _, _)| *used);
    let unloaded = candidates
        .into_iter()
        .find(|(_, _, session)| session.try_unload())
        .map(|(_, id, _)| id.clone());
    let Some(id) = unloaded else {
        return false;
    };
    registry.live.remove(&id);
    tracing::debug!(session_id = %id, "unloaded the least recently used session to make room");
    true
}

/// Unloads idle sessions every `idle / 4` (at least every second, at most every
/// minute) for as long as it is polled.
pub(crate) async fn unload_idle_sessions(sessions: &Sessions, idle: Duration) {
    let period = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let unloaded = sessions.unload_idle(idle);
        if unloaded > 0 {
            tracing::debug!(unloaded, live = sessions.live_count(), "unloaded idle sessions");
        }
    }
}

/// A deletion under way; dropping it lets the id be used again.
pub(crate) struct Deletion<'a> {
    sessions: &'a Sessions,
    id: SessionId,
}

impl Drop for Deletion<'_> {
    fn drop(&mut self) {
        let mut registry = self.sessions.registry();
        if let Some(count) = registry.deleting.get_mut(&self.id) {
            *count -= 1;
            if *count == 0 {
                registry.deleting.remove(&self.id);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use async_trait::async_trait;
    use engine_core::host::HostError;
    use engine_core::{Catalog, Deps, Environment};
    use engine_ports::testkit::{ScriptedLlm, ScriptedTurn};
    use futures::StreamExt as _;

    /// A session's engine as the host hands it out.
    struct Hosted {
        engine: Arc<Engine>,
        private: bool,
    }

    impl std::fmt::Debug for Hosted {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Hosted").field("private", &self.private).finish()
        }
    }

    #[async_trait]
    impl HostedSession for Hosted {
        fn engine(&self) -> &Arc<Engine> {
            &self.engine
        }
        fn is_private(&self) -> bool {
            self.private
        }
        fn client_tool_names(&self) -> &[String] {
            &[]
        }
        fn tools(&self, _mode: PermissionMode) -> Vec<ToolEntry> {
            Vec::new()
        }
        async fn close(self: Box<Self>) -> Result<(), HostError> {
            Ok(())
        }
    }

    /// An engine whose model plays `turns`.
    fn engine(turns: Vec<ScriptedTurn>) -> Arc<Engine> {
        let deps = Deps::new(
            Arc::new(ScriptedLlm::new(turns)),
            Arc::new(Catalog::new()),
            Environment::new(std::env::temp_dir()).unwrap(),
        );
        Arc::new(Engine::new(deps).unwrap())
    }

    fn fill(sessions: &Sessions, id: &str, engine: &Arc<Engine>, private: bool) -> Arc<HttpSession> {
        let hosted = Box::new(Hosted {
            engine: Arc::clone(engine),
            private,
        });
        let Ok(session) = sessions.reserve().unwrap().fill(SessionId::from(id), hosted) else {
            panic!("{id} is not being deleted");
        };
        session
    }

    fn live_ids(sessions: &Sessions) -> Vec<String> {
        let mut ids: Vec<String> = sessions
            .all()
            .iter()
            .map(|session| session.id().as_str().to_owned())
            .collect();
        ids.sort();
        ids
    }

    #[tokio::test(start_paused = true)]
    async fn idle_sessions_are_unloaded_after_the_idle_time_and_a_used_one_stays_until_its_own() {
        let sessions = Arc::new(Sessions::new(8));
        let engine = engine(Vec::new());
        fill(&sessions, "a", &engine, false);
        fill(&sessions, "b", &engine, false);
        let sweeper = {
            let sessions = Arc::clone(&sessions);
            tokio::spawn(async move { unload_idle_sessions(&sessions, Duration::from_secs(600)).await })
        };
        // Paused time: each sleep jumps the clock, the sweeps due meanwhile run.
        tokio::time::sleep(Duration::from_secs(400)).await;
        assert!(sessions.get(&SessionId::from("b")).is_some());
        tokio::time::sleep(Duration::from_secs(250)).await;
        assert_eq!(live_ids(&sessions), ["b"], "a, unused for 600 s, is unloaded");
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert_eq!(live_ids(&sessions), ["b"], "b was used 550 s ago");
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert!(live_ids(&sessions).is_empty(), "{:?}", live_ids(&sessions));
        sweeper.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_least_recently_used_idle_session_makes_room_and_busy_ones_never_do() {
        let sessions = Sessions::new(3);
        let idle = engine(Vec::new());
        let hanging = engine(vec![ScriptedTurn::new().hanging(), ScriptedTurn::new().hanging()]);
        let running = fill(&sessions, "running", &hanging, false);
        let mut run = running.start_run("go").await.unwrap().expect("open");
        tokio::time::advance(Duration::from_secs(1)).await;
        fill(&sessions, "private", &idle, true);
        tokio::time::advance(Duration::from_secs(1)).await;
        let old = fill(&sessions, "old", &idle, false);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(sessions.get(&SessionId::from("private")).is_some());

        // "running" is the least recently used, but runs; "private" holds client
        // servers: "old" goes.
        let slot = sessions.reserve().unwrap();
        assert_eq!(live_ids(&sessions), ["private", "running"]);
        assert!(
            old.start_run("again").await.unwrap().is_none(),
            "a request holding the unloaded session looks it up again"
        );
        let Ok(newer) = slot.fill(
            SessionId::from("newer"),
            Box::new(Hosted {
                engine: Arc::clone(&hanging),
                private: false,
            }),
        ) else {
            panic!("not deleted");
        };
        let mut newer_run = newer.start_run("go").await.unwrap().expect("open");

        // Every live session is busy: 429, to be retried.
        let Err(refused) = sessions.reserve() else {
            panic!("every live session is busy");
        };
        assert_eq!(refused.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
        assert!(
            refused.message().contains("all 3 live sessions are busy"),
            "{}",
            refused.message()
        );

        // Once its run ended, "running" may go.
        run.cancel();
        while run.next().await.is_some() {}
        let _slot = sessions.reserve().unwrap();
        assert_eq!(live_ids(&sessions), ["newer", "private"]);
        newer_run.cancel();
        while newer_run.next().await.is_some() {}
    }
}
