//! The persistence ports: [`SessionStore`] (snapshots) and [`EventLog`] (events).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::ids::SessionId;
use crate::llm::{Conversation, Message};
use crate::mode::PermissionMode;
use crate::usage::Usage;

/// Everything a session resumes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSnapshot {
    /// The session id (authoritative: stores never derive it from file names).
    pub id: SessionId,
    /// Current mode.
    pub mode: PermissionMode,
    /// The conversation, tool results included.
    pub conversation: Conversation,
    /// Disclosable tools whose full spec `ToolSearch` returned (D3), sorted.
    #[serde(default)]
    pub hydrated: BTreeSet<String>,
    /// The `seq` of the next event.
    pub next_seq: u64,
    /// Session-wide turn count.
    #[serde(default)]
    pub turns: u64,
    /// Session-wide tool-call count.
    #[serde(default)]
    pub tool_calls: u64,
    /// Session-wide usage.
    #[serde(default)]
    pub usage: Usage,
    /// Session-wide usage per model name (the models the session's turns and
    /// compactions ran on), so a cost can be priced per model; empty for a session
    /// saved before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_usage: BTreeMap<String, Usage>,
    /// The model the session runs on, when one was chosen for it (a client's pick,
    /// `mecated run --model`); absent, the session runs on its host's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The system prompt the session got at its first run, sent unchanged on every
    /// later turn (byte-stable, so provider prompt caches stay warm); absent for a
    /// session whose engine had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// What the provider reported about the session's last answer, from which the
    /// next request's size is estimated; absent when it reported nothing or the
    /// conversation was compacted since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ReportedContext>,
    /// The absolute directory the session was opened for (an ACP client's `cwd`),
    /// when its host said; listings use it to offer a session to the project it
    /// belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
}

/// The size of a conversation prefix as the provider counted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ReportedContext {
    /// Prompt plus answer tokens of the last answer.
    pub tokens: u64,
    /// How many conversation messages those tokens cover (the answer included).
    pub messages: u64,
}

impl SessionSnapshot {
    /// A fresh session: empty conversation, nothing hydrated, next `seq` 1.
    pub fn new(id: impl Into<SessionId>, mode: PermissionMode) -> Self {
        Self {
            id: id.into(),
            mode,
            conversation: Conversation::new(),
            hydrated: BTreeSet::new(),
            next_seq: 1,
            turns: 0,
            tool_calls: 0,
            usage: Usage::default(),
            model_usage: BTreeMap::new(),
            model: None,
            system_prompt: None,
            context: None,
            cwd: None,
        }
    }

    /// The prompts of the session as its conversation holds them (after command
    /// expansion), oldest first: every user message that does not directly follow
    /// another one (the context a hook adds follows its prompt directly). The
    /// conversation does not mark prompts, so the notices of background children
    /// and the feedback of `Stop` hooks count as prompts too; what compaction
    /// replaced is gone.
    pub fn prompts(&self) -> Vec<&str> {
        let mut prompts = Vec::new();
        let mut after_user = false;
        for message in &self.conversation {
            let user = matches!(message, Message::User { .. });
            if let Message::User { text } = message
                && !after_user
            {
                prompts.push(text.as_str());
            }
            after_user = user;
        }
        prompts
    }

    /// The session's title, as session pickers and listings show it: the first
    /// non-blank line of its first prompt, trimmed, at most [`SESSION_TITLE_CHARS`]
    /// characters (`…` when cut); `None` before any prompt.
    pub fn title(&self) -> Option<String> {
        let line = self.conversation.iter().find_map(|message| match message {
            Message::User { text } => text.lines().map(str::trim).find(|line| !line.is_empty()),
            _ => None,
        })?;
        Some(crate::text::clip_chars(line, SESSION_TITLE_CHARS).into_owned())
    }
}

/// The longest [`SessionSnapshot::title`], in characters.
pub const SESSION_TITLE_CHARS: usize = 80;

/// One entry of [`SessionStore::list`]: what a session listing shows, without loading
/// the conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionListing {
    /// The id as stored inside the snapshot.
    pub id: SessionId,
    /// When the snapshot was last written.
    pub modified_at: SystemTime,
    /// The session's mode, as saved.
    pub mode: PermissionMode,
    /// Turns so far, as saved.
    pub turns: u64,
    /// Tool calls so far, as saved.
    pub tool_calls: u64,
}

impl SessionListing {
    /// The listing of `snapshot`, last written at `modified_at`.
    pub fn of(snapshot: &SessionSnapshot, modified_at: SystemTime) -> Self {
        Self {
            id: snapshot.id.clone(),
            modified_at,
            mode: snapshot.mode,
            turns: snapshot.turns,
            tool_calls: snapshot.tool_calls,
        }
    }
}

/// Session snapshots.
///
/// # Contract
/// - `create` is an atomic first write: an existing id gives
///   [`StoreError::AlreadyExists`] and changes nothing; of two racing creates exactly
///   one wins.
/// - `save` creates or replaces; the last save wins; once it returns `Ok`, `load`
///   returns an equal value (argument text and binary parts byte for byte), and later
///   changes to the caller's value never show.
/// - `load` is a pure reader; an unknown id is [`StoreError::NotFound`], whose message
///   contains the id Debug-quoted.
/// - `list` returns the exact ids, sorted by id bytes, skipping undecodable entries;
///   each listing's mode, turns and tool calls are those of the last saved snapshot.
/// - `listing` is the listing of one id ([`StoreError::NotFound`] when it is not
///   stored); the provided method searches `list`, stores override it with a lookup.
/// - `delete` is idempotent: an unknown id is `Ok(())`.
/// - An empty id is [`StoreError::InvalidId`] for every operation.
///
/// The run lease (`acquire_run`) makes a session run by one run at a time, across
/// every store value over the same storage and every process sharing it:
/// - `acquire_run` never waits: while a lease on the id is held, it fails at once
///   with [`StoreError::Busy`] naming the id; otherwise it returns a [`RunLease`].
///   The id need not be stored yet (a run may create its session).
/// - Dropping the lease releases it; [`RunLease::release`] returns once it is
///   released for every store over the same storage (a holder awaits it before
///   announcing that its run is over). A lease whose holder died (a killed process,
///   a lost replica) is released too, by the storage, never held forever.
/// - Leases of different ids are independent; the holder may `create`, `save`,
///   `load` and append events of its session as usual.
/// - `delete` of a leased id fails with [`StoreError::Busy`] and changes nothing.
///
/// `probe` is the readiness check of a server: cheap (no session is read), bounded
/// by the store's own time limits, `Ok` when the storage answers (the directory is
/// there, the database answers a trivial query) and an error saying what failed
/// otherwise. A caller that must answer in time bounds it further.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Writes a new session; fails if the id exists.
    async fn create(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError>;
    /// Reads the latest snapshot.
    async fn load(&self, id: &SessionId) -> Result<SessionSnapshot, StoreError>;
    /// Creates or replaces the snapshot.
    async fn save(&self, snapshot: &SessionSnapshot) -> Result<(), StoreError>;
    /// Every stored session.
    async fn list(&self) -> Result<Vec<SessionListing>, StoreError>;
    /// The listing of one stored session.
    async fn listing(&self, id: &SessionId) -> Result<SessionListing, StoreError> {
        if id.is_empty() {
            return Err(StoreError::InvalidId {
                reason: "the session id is empty".to_owned(),
            });
        }
        self.list()
            .await?
            .into_iter()
            .find(|listing| listing.id == *id)
            .ok_or_else(|| StoreError::NotFound { id: id.clone() })
    }
    /// Removes a session with its sidecars.
    async fn delete(&self, id: &SessionId) -> Result<(), StoreError>;
    /// Takes the exclusive right to run the session, released when the lease drops.
    async fn acquire_run(&self, id: &SessionId) -> Result<RunLease, StoreError>;
    /// Whether the storage answers now (a readiness check; reads no session).
    async fn probe(&self) -> Result<(), StoreError>;
}

/// The exclusive right to run one session, from [`SessionStore::acquire_run`].
/// Dropping it releases the session; [`RunLease::release`] also waits until the
/// storage has released it.
///
/// A store builds it from whatever releases its exclusivity on drop (a held file
/// lock, an entry in a shared set) with [`RunLease::new`], or, when releasing takes
/// I/O (a database row), from a [`LeaseRelease`] with [`RunLease::with_release`].
pub struct RunLease {
    session: SessionId,
    release: Box<dyn LeaseRelease>,
}

/// What gives a leased session back, for stores whose release takes I/O.
///
/// # Contract
/// - Dropping the value releases the session (in the background when that takes
///   I/O), so a lease is never kept by a holder that forgot it.
/// - [`LeaseRelease::release`] returns once the session is free for every store over
///   the same storage, so whatever the holder does next (announcing the end of its
///   run) cannot make another process's `acquire_run` fail; if it cannot release (the
///   storage is unreachable), it returns anyway and the storage frees the session as
///   it frees a dead holder's.
/// - `testkit::session_store` checks both through [`RunLease`].
#[async_trait]
pub trait LeaseRelease: Send + Sync {
    /// Releases the session and returns once it is free for every store over the
    /// same storage. If this future is dropped before it finishes, the value's drop
    /// still releases the session.
    async fn release(self: Box<Self>);
}

/// A guard whose drop is the release.
struct DropRelease<T>(T);

#[async_trait]
impl<T: Send + Sync> LeaseRelease for DropRelease<T> {
    async fn release(self: Box<Self>) {
        drop(self);
    }
}

impl RunLease {
    /// A lease on `session` that lasts as long as `release` lives: dropping the lease
    /// drops `release`, whose `Drop` gives the session back at once.
    pub fn new(session: SessionId, release: impl Send + Sync + 'static) -> Self {
        Self::with_release(session, DropRelease(release))
    }

    /// A lease on `session` given back by `release` (awaited by
    /// [`RunLease::release`], dropped by a plain drop).
    pub fn with_release(session: SessionId, release: impl LeaseRelease + 'static) -> Self {
        Self {
            session,
            release: Box::new(release),
        }
    }

    /// The leased session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Gives the session back and returns once the storage has released it.
    pub async fn release(self) {
        self.release.release().await;
    }
}

impl std::fmt::Debug for RunLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLease")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// The durable event stream of each session.
///
/// # Contract
/// - `read` returns events in append order (not sorted by `seq`); an unknown id gives
///   an empty list.
/// - A corrupt record gives [`StoreError::Corrupt`] whose `prefix` holds every good
///   event before it.
/// - Appends to different sessions never mix; appends to one session keep their order.
/// - A log may buffer (`append` then succeeds before the write). `flush` writes what
///   the session still buffers and reports, once, any of its events lost since the
///   last `flush` (the default: nothing is buffered, nothing to report). Engines that
///   require audit call it at every turn boundary.
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Appends one event.
    async fn append(&self, session: &SessionId, event: &Event) -> Result<(), StoreError>;
    /// Every event of the session, in append order.
    async fn read(&self, session: &SessionId) -> Result<Vec<Event>, StoreError>;
    /// Writes the session's buffered events; reports events lost since the last flush.
    async fn flush(&self, session: &SessionId) -> Result<(), StoreError> {
        let _ = session;
        Ok(())
    }
}

/// A store operation that failed. Messages name the session id and, for I/O, the
/// path; they never include record contents.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session with this id.
    #[error("session {id:?} not found")]
    NotFound {
        /// The requested id.
        id: SessionId,
    },
    /// `create` of an id that exists.
    #[error("session {id:?} already exists")]
    AlreadyExists {
        /// The id.
        id: SessionId,
    },
    /// The id cannot be stored.
    #[error("invalid session id: {reason}")]
    InvalidId {
        /// Why.
        reason: String,
    },
    /// Stored data does not decode.
    #[error("session {id:?}: corrupt {file}{}: {reason}", line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    Corrupt {
        /// The session.
        id: SessionId,
        /// Which file (or logical part) is corrupt.
        file: String,
        /// 1-based line, for line-oriented files.
        line: Option<u64>,
        /// What is wrong.
        reason: String,
        /// Good events before the bad record (event reads only).
        prefix: Vec<Event>,
    },
    /// A record or snapshot over a size limit.
    #[error("session {id:?}: {bytes} bytes exceed the {limit}-byte limit")]
    TooLarge {
        /// The session.
        id: SessionId,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The session lock was not acquired in time.
    #[error("session {id:?}: lock not acquired within {waited:?}")]
    LockTimeout {
        /// The session.
        id: SessionId,
        /// How long we waited.
        waited: Duration,
    },
    /// Another run holds the session's run lease (in this process or another).
    #[error("session {:?} already has a run in progress", id.as_str())]
    Busy {
        /// The session.
        id: SessionId,
    },
    /// An I/O operation failed.
    #[error("session {id:?}: {op} {} failed: {source}", path.display())]
    Io {
        /// The session.
        id: SessionId,
        /// The operation.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The store directory itself is unusable (opening the store, listing it); no
    /// session is involved.
    #[error("store directory {path:?}: {reason}")]
    StoreDir {
        /// The directory (empty when none was given).
        path: PathBuf,
        /// What is wrong.
        reason: String,
        /// The OS error, when there is one.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The storage service (a database server) failed the operation or did not
    /// answer in time. The reason names the service (host and database, never a
    /// credential) and what went wrong.
    #[error("{}{op} failed: {reason}", id.as_ref().map(|id| format!("session {:?}: ", id.as_str())).unwrap_or_default())]
    Backend {
        /// The session, when the operation concerned one.
        id: Option<SessionId>,
        /// The operation (`save`, `append`, `acquire_run`, …).
        op: &'static str,
        /// What went wrong.
        reason: String,
    },
}

impl StoreError {
    /// Whether this is [`StoreError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// Whether this is [`StoreError::Busy`].
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::Busy { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolCall, ToolResult};

    fn user(text: &str) -> Message {
        Message::User {
            text: text.to_owned(),
        }
    }

    fn snapshot(messages: Vec<Message>) -> SessionSnapshot {
        let mut snapshot = SessionSnapshot::new("s", PermissionMode::Default);
        snapshot.conversation = messages.into_iter().collect();
        snapshot
    }

    #[test]
    fn the_title_is_the_first_non_blank_line_of_the_first_prompt_bounded() {
        assert_eq!(snapshot(vec![]).title(), None);
        let long = "x".repeat(SESSION_TITLE_CHARS + 10);
        let session = snapshot(vec![user(&format!("\n  {long}  \nsecond line")), user("later")]);
        let title = session.title().unwrap();
        assert_eq!(title.chars().count(), SESSION_TITLE_CHARS);
        assert!(title.ends_with('…'), "{title}");
        assert_eq!(
            snapshot(vec![user(" fix the build \nplease")]).title().as_deref(),
            Some("fix the build")
        );
    }

    #[test]
    fn prompts_are_the_user_messages_not_following_another_one() {
        let call = ToolCall::new("c1", "Read", "{}");
        let session = snapshot(vec![
            user("first"),
            user("hook context"),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![call],
            },
            Message::Tool {
                result: ToolResult::text("c1", "text"),
            },
            Message::Assistant {
                text: "done".to_owned(),
                tool_calls: Vec::new(),
            },
            user("second"),
        ]);
        assert_eq!(session.prompts(), vec!["first", "second"]);
    }
}
