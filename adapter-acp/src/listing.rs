//! `session/list`: the stored sessions this agent can load, most recently active
//! first, filtered by `cwd`, one page at a time behind an opaque cursor.

use std::path::{Component, Path};
use std::time::{Duration, SystemTime};

use agent_client_protocol::v1::schema::{ListSessionsRequest, ListSessionsResponse, SessionInfo};
use agent_client_protocol::{Error, ErrorCode};
use engine_ports::{SessionListing, SessionSnapshot, SessionStore, format_rfc3339_micros};

/// Sessions per page.
pub const LIST_PAGE: usize = 50;

/// Most snapshots one `session/list` call reads (entries the filter drops count
/// too); past it the page ends early with a cursor.
pub const LIST_READS: usize = 500;

/// One page of sessions whose recorded directory lies inside `workspace` (and equals
/// the request's `cwd`, when given); see [`cwd_inside`].
///
/// # Errors
/// `invalid_params` for a relative `cwd` or a cursor this agent did not give;
/// `internal_error` when the store cannot be listed.
pub(crate) async fn list_sessions(
    store: &dyn SessionStore,
    workspace: &Path,
    request: &ListSessionsRequest,
) -> Result<ListSessionsResponse, Error> {
    let filter = match &request.cwd {
        Some(cwd) if !cwd.is_absolute() => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("cwd {:?} is not an absolute path", cwd.display()),
            ));
        }
        Some(cwd) => Some(std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.clone())),
        None => None,
    };
    let after = request.cursor.as_deref().map(Cursor::decode).transpose()?;
    let mut listings = store.list().await.map_err(|error| {
        Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the stored sessions cannot be listed: {error}"),
        )
    })?;
    listings.sort_by(|a, b| Cursor::of(a).cmp(&Cursor::of(b)));
    let start = after.map_or(0, |after| listings.partition_point(|l| Cursor::of(l) <= after));
    let pending = &listings[start..];

    let mut sessions = Vec::new();
    let mut last = None;
    let mut reads = 0;
    for listing in pending {
        if sessions.len() == LIST_PAGE || reads == LIST_READS {
            break;
        }
        reads += 1;
        last = Some(Cursor::of(listing));
        let snapshot = match store.load(&listing.id).await {
            Ok(snapshot) => snapshot,
            Err(error) if error.is_not_found() => continue,
            Err(error) => {
                tracing::warn!(session_id = %listing.id, %error, "a stored session cannot be listed");
                continue;
            }
        };
        let Some(cwd) = cwd_inside(&snapshot, workspace) else {
            continue;
        };
        if filter.as_ref().is_some_and(|filter| filter != cwd) {
            continue;
        }
        sessions.push(
            SessionInfo::new(listing.id.as_str().to_owned(), cwd.to_path_buf())
                .title(snapshot.title())
                .updated_at(format_rfc3339_micros(listing.modified_at)),
        );
    }
    let more = start + reads < listings.len();
    let next = last.filter(|_| more).map(|cursor| cursor.encode());
    Ok(ListSessionsResponse::new(sessions).next_cursor(next))
}

/// The directory a stored session was opened for, when it lies inside `workspace`:
/// an absolute path without `..` under the workspace root. `None` for a session of
/// another workspace and for one stored without a directory (older sessions of
/// `mecated run` and HTTP): which workspace it belongs to is unknown, so this agent
/// neither lists nor loads it.
pub(crate) fn cwd_inside<'s>(snapshot: &'s SessionSnapshot, workspace: &Path) -> Option<&'s Path> {
    let cwd = snapshot.cwd.as_deref()?;
    let plain = cwd.is_absolute() && !cwd.components().any(|c| c == Component::ParentDir);
    (plain && cwd.starts_with(workspace)).then_some(cwd)
}

/// A position in the listing order (most recently modified first, then by id):
/// `<nanoseconds since the epoch, inverted>:<hex of the id>` on the wire.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cursor {
    /// `u128::MAX - modified` so that ascending order is newest first.
    age: u128,
    id: String,
}

impl Cursor {
    fn of(listing: &SessionListing) -> Self {
        let modified = listing
            .modified_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_nanos();
        Self {
            age: u128::MAX - modified,
            id: listing.id.as_str().to_owned(),
        }
    }

    fn encode(&self) -> String {
        let hex: String = self.id.bytes().map(|b| format!("{b:02x}")).collect();
        format!("{}:{hex}", self.age)
    }

    fn decode(text: &str) -> Result<Self, Error> {
        let bad = || {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "cursor {:?} is not one this agent gave: pass the nextCursor of an earlier session/list answer",
                    text.chars().take(100).collect::<String>()
                ),
            )
        };
        let (age, hex) = text.split_once(':').ok_or_else(bad)?;
        let age = age.parse::<u128>().map_err(|_| bad())?;
        if hex.len() % 2 != 0 || hex.len() > 4096 {
            return Err(bad());
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16).map_err(|_| bad()))
            .collect::<Result<Vec<u8>, Error>>()?;
        let id = String::from_utf8(bytes).map_err(|_| bad())?;
        Ok(Self { age, id })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use engine_core::InMemoryStore;
    use engine_ports::{Message, PermissionMode, SessionId};

    use super::*;

    async fn stored(store: &InMemoryStore, id: &str, cwd: Option<&Path>, first: &str) {
        let mut snapshot = SessionSnapshot::new(SessionId::from(id), PermissionMode::Default);
        snapshot.cwd = cwd.map(Path::to_path_buf);
        if !first.is_empty() {
            snapshot.conversation.push(Message::User { text: first.into() });
        }
        store.save(&snapshot).await.unwrap();
    }

    #[test]
    fn cursors_round_trip_and_refuse_what_was_not_given() {
        let cursor = Cursor {
            age: 42,
            id: "sess/ü".into(),
        };
        assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
        for bad in ["", "x", "1:zz", "1:abc", "-1:00", "1:ff"] {
            let error = Cursor::decode(bad).unwrap_err();
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{bad}");
            assert!(error.message.contains("nextCursor"), "{}", error.message);
        }
    }

    #[tokio::test]
    async fn pages_filter_by_cwd_and_follow_the_cursor() {
        let store = Arc::new(InMemoryStore::new());
        for i in 0..(LIST_PAGE + 3) {
            stored(
                &store,
                &format!("s{i:03}"),
                Some(Path::new("/ws")),
                &format!("task {i}\nmore"),
            )
            .await;
        }
        stored(&store, "sub", Some(Path::new("/ws/sub")), "in a subdirectory").await;
        stored(&store, "elsewhere", Some(Path::new("/other")), "another project").await;
        stored(
            &store,
            "sibling",
            Some(Path::new("/ws-old")),
            "a sibling directory",
        )
        .await;
        stored(
            &store,
            "climbing",
            Some(Path::new("/ws/../other")),
            "out through ..",
        )
        .await;
        stored(&store, "nowhere", None, "no directory recorded").await;
        let list = async |request: ListSessionsRequest| {
            list_sessions(store.as_ref(), Path::new("/ws"), &request).await
        };

        let first = list(ListSessionsRequest::new()).await.unwrap();
        assert_eq!(first.sessions.len(), LIST_PAGE);
        let cursor = first.next_cursor.clone().expect("a second page");
        let second = list(ListSessionsRequest::new().cursor(cursor)).await.unwrap();
        assert!(second.next_cursor.is_none());
        let mut ids: Vec<String> = first
            .sessions
            .iter()
            .chain(&second.sessions)
            .map(|s| s.session_id.0.to_string())
            .collect();
        assert_eq!(ids.len(), LIST_PAGE + 4, "every session of the workspace, once");
        for foreign in ["elsewhere", "sibling", "climbing", "nowhere"] {
            assert!(
                !ids.contains(&foreign.to_owned()),
                "{foreign}: only sessions recorded inside the workspace are offered"
            );
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), LIST_PAGE + 4);

        let sub = list(ListSessionsRequest::new().cwd(PathBuf::from("/ws/sub")))
            .await
            .unwrap();
        let info = serde_json::to_value(&sub.sessions).unwrap();
        assert_eq!(info[0]["sessionId"], "sub");
        assert_eq!(info[0]["cwd"], "/ws/sub");
        assert_eq!(info[0]["title"], "in a subdirectory");
        assert!(info[0]["updatedAt"].as_str().unwrap().ends_with('Z'));
        assert_eq!(sub.sessions.len(), 1);

        let root = list(ListSessionsRequest::new().cwd(PathBuf::from("/ws")))
            .await
            .unwrap();
        let titled = root.sessions.iter().find(|s| *s.session_id.0 == *"s007").unwrap();
        assert_eq!(titled.title.as_deref(), Some("task 7"));
        assert_eq!(titled.cwd, Path::new("/ws"));

        let relative = list(ListSessionsRequest::new().cwd(PathBuf::from("ws")))
            .await
            .unwrap_err();
        assert_eq!(relative.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn long_titles_are_cut() {
        let mut snapshot = SessionSnapshot::new(SessionId::from("s"), PermissionMode::Default);
        snapshot.conversation.push(Message::User {
            text: format!("\n  {}", "é".repeat(200)),
        });
        let title = snapshot.title().unwrap();
        assert_eq!(title.chars().count(), engine_ports::SESSION_TITLE_CHARS);
        assert!(title.ends_with('…'));
    }
}
