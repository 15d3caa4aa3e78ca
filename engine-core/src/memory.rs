//! [`InMemoryStore`]: the in-memory session store, event log and recorder used when no
//! store directory is configured (and by tests).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use engine_ports::{
    Event, EventLog, RecorderError, RunLease, SessionId, SessionListing, SessionSnapshot, SessionStore,
    StoreError, ToolCallLog, ToolCallRecord, ToolCallRecorder,
};

/// Sessions, events and audit records held in memory; nothing survives the process.
/// Run leases are entries of a set shared by the store and its leases.
///
/// [`InMemoryStore::with_record_cap`] bounds the audit records it holds, across
/// sessions, for a long-lived process that has no store of its own (a gateway
/// serving calls for days): past the cap the oldest records are dropped and
/// counted ([`InMemoryStore::dropped_records`]). [`InMemoryStore::new`] keeps them all.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    leased: Arc<Mutex<HashSet<SessionId>>>,
    sessions: Mutex<HashMap<SessionId, (SessionSnapshot, SystemTime)>>,
    events: Mutex<HashMap<SessionId, Vec<Event>>>,
    records: Mutex<Records>,
}

/// The audit records of every session and, with a cap, the session of each record
/// in recording order (so the oldest record of all can be found and dropped).
#[derive(Debug, Default)]
struct Records {
    by_session: HashMap<SessionId, VecDeque<ToolCallRecord>>,
    /// `Some` with a cap: the cap and the recording order.
    capped: Option<(usize, VecDeque<SessionId>)>,
    /// Records dropped so far to stay within the cap.
    dropped: u64,
}

impl Records {
    /// Keeps a copy of `record`; past the cap, drops the oldest record of all.
    /// Whether it dropped one.
    fn push(&mut self, record: &ToolCallRecord) -> bool {
        push_keyed(&mut self.by_session, &record.session_id, record.clone());
        let Some((cap, order)) = &mut self.capped else {
            return false;
        };
        order.push_back(record.session_id.clone());
        if order.len() <= *cap {
            return false;
        }
        let Some(oldest) = order.pop_front() else {
            return false;
        };
        // A session's records are in recording order, so its first is the oldest.
        if let Some(list) = self.by_session.get_mut(&oldest) {
            list.pop_front();
            if list.is_empty() {
                self.by_session.remove(&oldest);
            }
        }
        self.dropped += 1;
        true
    }

    /// Forgets a session's records and their places in the recording order.
    fn remove(&mut self, session: &SessionId) {
        if self.by_session.remove(session).is_some()
            && let Some((_, order)) = &mut self.capped
        {
            order.retain(|id| id != session);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Appends `item` to `session`'s list, cloning the id only for a session's first
/// item (an append is frequent; `entry` would copy the id every time).
fn push_keyed<T, L: Default + Extend<T>>(lists: &mut HashMap<SessionId, L>, session: &SessionId, item: T) {
    match lists.get_mut(session) {
        Some(list) => list.extend([item]),
        None => {
            let mut list = L::default();
            list.extend([item]);
            lists.insert(session.clone(), list);
        }
    }
}

fn check_id(id: &SessionId) -> Result<(), StoreError> {
    if id.is_empty() {
        return Err(StoreError::InvalidId {
            reason: "the session id is empty".to_owned(),
        });
    }
    Ok(())
}

impl InMemoryStore {
    /// An empty store that keeps every audit record.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store that keeps at most `cap` audit records of all sessions
    /// together, dropping the oldest first (a cap of 0 keeps none).
    pub fn with_record_cap(cap: usize) -> Self {
        Self {
            records: Mutex::new(Records {
                capped: Some((cap, VecDeque::new())),
                ..Records::default()
            }),
            ..Self::default()
        }
    }

    /// The audit records of a session still held, in recording order.
    pub fn records(&self, session: &SessionId) -> Vec<ToolCallRecord> {
        lock(&self.records)
            .by_session
            .get(session)
            .map(|list| list.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Audit records dropped so far to stay within the cap.
    pub fn dropped_records(&self) -> u64 {
        lock(&self.records).dropped
    }
}

/// Removes its session from the leased set when dropped.
struct LeaseEntry {
    leased: Arc<Mutex<HashSet<SessionId>>>,
    id: SessionId,
}

impl Drop for LeaseEntry {
    fn drop(&mut self) {
        lock(&self.leased).remove(&self.id);
    }
}

#[async_trait]
impl SessionStore for InMemoryStore {
    async fn create(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        check_id(&snapshot.id)?;
        let mut sessions = lock(&self.sessions);
        if sessions.contains_key(&snapshot.id) {
            return Err(StoreError::AlreadyExists {
                id: snapshot.id.clone(),
            });
        }
        sessions.insert(snapshot.id.clone(), (snapshot.clone(), SystemTime::now()));
        Ok(())
    }

    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError> {
        check_id(id)?;
        lock(&self.sessions)
            .get(id)
            .map(|(snapshot, _)| snapshot.clone())
            .ok_or_else(|| StoreError::NotFound { id: id.clone() })
    }

    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError> {
        check_id(&snapshot.id)?;
        lock(&self.sessions).insert(snapshot.id.clone(), (snapshot.clone(), SystemTime::now()));
        Ok(())
    }

    async fn listing(&self, id: &SessionId) -> Result<SessionListing, StoreError> {
        check_id(id)?;
        lock(&self.sessions)
            .get(id)
            .map(|(snapshot, modified_at)| SessionListing::of(snapshot, *modified_at))
            .ok_or_else(|| StoreError::NotFound { id: id.clone() })
    }

    async fn list(&self) -> Result<Vec<SessionListing>, StoreError> {
        let mut out: Vec<SessionListing> = lock(&self.sessions)
            .iter()
            .map(|(_, (snapshot, modified_at))| SessionListing::of(snapshot, *modified_at))
            .collect();
        out.sort_by(|a, b| a.id.as_str().as_bytes().cmp(b.id.as_str().as_bytes()));
        Ok(out)
    }

    async fn delete(&self, id: &SessionId) -> Result<(), StoreError> {
        check_id(id)?;
        // Held across the removal, so no lease starts in between.
        let leased = lock(&self.leased);
        if leased.contains(id) {
            return Err(StoreError::Busy { id: id.clone() });
        }
        lock(&self.records).remove(id);
        lock(&self.events).remove(id);
        lock(&self.sessions).remove(id);
        drop(leased);
        Ok(())
    }

    async fn acquire_run(&self, id: &SessionId) -> Result<RunLease, StoreError> {
        check_id(id)?;
        if !lock(&self.leased).insert(id.clone()) {
            return Err(StoreError::Busy { id: id.clone() });
        }
        let entry = LeaseEntry {
            leased: Arc::clone(&self.leased),
            id: id.clone(),
        };
        Ok(RunLease::new(id.clone(), entry))
    }

    /// Memory always answers.
    async fn probe(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[async_trait]
impl EventLog for InMemoryStore {
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError> {
        check_id(session)?;
        push_keyed(&mut lock(&self.events), session, event.clone());
        Ok(())
    }

    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError> {
        Ok(lock(&self.events).get(session).cloned().unwrap_or_default())
    }
}

#[async_trait]
impl ToolCallRecorder for InMemoryStore {
    async fn record(&self, record: &ToolCallRecord) -> Result<(), RecorderError> {
        if record.session_id.is_empty() {
            return Err(RecorderError::failed(record, "the session id is empty"));
        }
        let first_drop = {
            let mut records = lock(&self.records);
            records.push(record) && records.dropped == 1
        };
        if first_drop {
            tracing::warn!(
                "the in-memory audit is full: its oldest records are dropped from now on \
                 (configure a store directory or database for a durable audit)"
            );
        }
        Ok(())
    }
}

#[async_trait]
impl ToolCallLog for InMemoryStore {
    async fn read(&self, session: &SessionId) -> Result<Vec<ToolCallRecord>, StoreError> {
        Ok(self.records(session))
    }
}
