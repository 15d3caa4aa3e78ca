//! Lazy readers of the JSONL sidecars: newline framing over the committed
//! window, the record decoders (with [`VersionGated`] and [`decode_version_gated`],
//! which the snapshot envelope uses too), and the public [`EventIter`] /
//! [`ToolCallIter`].

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Take};
use std::path::PathBuf;

use engine_ports::{Event, SessionId, StoreError, ToolCallRecord, clip_chars};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The version tag of an `.events.jsonl` line.
pub(crate) const EVENTS_TAG: &str = "mecated-events/1";
/// The `type` of every `.tools.jsonl` line.
const TOOL_CALL_TYPE: &str = "tool_call";
/// Read buffer of the streaming readers.
const READ_BUFFER: usize = 64 * 1024;

/// One `.events.jsonl` line as written: `{"v":"mecated-events/1","ev":{…}}`.
#[derive(Serialize)]
pub(crate) struct EventLine<'a> {
    v: &'static str,
    ev: &'a Event,
}

impl<'a> EventLine<'a> {
    /// The line of `event`.
    pub(crate) fn new(event: &'a Event) -> Self {
        Self {
            v: EVENTS_TAG,
            ev: event,
        }
    }
}

/// Lines of the committed window `[0, C)` of a sidecar, read lazily.
pub(crate) struct LineReader {
    reader: BufReader<Take<File>>,
    max_record_bytes: usize,
    line_no: u64,
    offset: u64,
    buf: Vec<u8>,
}

/// One framed line.
enum RawLine {
    /// A terminated line (without its `\n`), in `LineReader::buf`.
    Line,
    /// A terminated line longer than `max_record_bytes`.
    TooLong,
}

impl LineReader {
    /// Reads `file` from offset 0 up to `window` (exclusive).
    pub(crate) fn new(file: File, window: u64, max_record_bytes: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(READ_BUFFER, file.take(window)),
            max_record_bytes,
            line_no: 0,
            offset: 0,
            buf: Vec::new(),
        }
    }

    /// The next terminated line; `None` at the end of the window (an unterminated
    /// piece there is a torn write and is ignored). Memory stays bounded by
    /// `max_record_bytes`: an over-long line is skipped, not buffered.
    fn next_line(&mut self) -> io::Result<Option<RawLine>> {
        self.buf.clear();
        let mut too_long = false;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                return Ok(None);
            }
            let (take, terminated) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            if !too_long {
                // The record limit counts the terminating newline.
                if self.buf.len() + take + 1 > self.max_record_bytes {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(&available[..take]);
                }
            }
            let consumed = take + usize::from(terminated);
            self.reader.consume(consumed);
            self.offset += consumed as u64;
            if terminated {
                self.line_no += 1;
                return Ok(Some(if too_long { RawLine::TooLong } else { RawLine::Line }));
            }
        }
    }
}

/// Decodes one line; `Err` is the reason, never quoting record contents.
type Decode<T> = fn(&[u8]) -> Result<T, String>;

/// The records of one session's sidecar in append order, read lazily: the events
/// ([`EventIter`], from
/// [`JsonlStore::read_events`](crate::JsonlStore::read_events)) or the audit records
/// ([`ToolCallIter`], from
/// [`JsonlStore::read_tool_calls`](crate::JsonlStore::read_tool_calls)).
///
/// Yields every good record, then at most one `Err` for the first bad line (naming
/// the session, the 1-based line, the byte offset and the reason), then ends. Holds
/// no lock: appends go on while it is paused, and it only sees the records that
/// were committed when it was created. Each `next` may block on file I/O.
pub struct RecordIter<T> {
    lines: Option<LineReader>,
    id: SessionId,
    path: PathBuf,
    decode: Decode<T>,
}

/// A session's events in append order.
pub type EventIter = RecordIter<Event>;

/// A session's audit records in append order.
pub type ToolCallIter = RecordIter<ToolCallRecord>;

impl RecordIter<Event> {
    pub(crate) fn events(lines: Option<LineReader>, id: SessionId, path: PathBuf) -> Self {
        Self {
            lines,
            id,
            path,
            decode: decode_event_line,
        }
    }
}

impl RecordIter<ToolCallRecord> {
    pub(crate) fn tool_calls(lines: Option<LineReader>, id: SessionId, path: PathBuf) -> Self {
        Self {
            lines,
            id,
            path,
            decode: decode_tool_call_line,
        }
    }
}

impl<T> RecordIter<T> {
    fn next_record(&mut self) -> Option<Result<T, StoreError>> {
        let lines = self.lines.as_mut()?;
        let start = lines.offset;
        let failure = match lines.next_line() {
            Ok(None) => None,
            Ok(Some(RawLine::Line)) => match (self.decode)(&lines.buf) {
                Ok(record) => return Some(Ok(record)),
                Err(reason) => Some(Failure::Corrupt(lines.line_no, reason)),
            },
            Ok(Some(RawLine::TooLong)) => Some(Failure::Corrupt(
                lines.line_no,
                format!("the line is longer than {} bytes", lines.max_record_bytes),
            )),
            Err(source) => Some(Failure::Io(source)),
        };
        // After the end or the first error the iterator is done.
        self.lines = None;
        let error = match failure? {
            Failure::Corrupt(line, reason) => StoreError::Corrupt {
                id: self.id.clone(),
                file: self.path.display().to_string(),
                line: Some(line),
                reason: format!("byte offset {start}: {reason}"),
                prefix: Vec::new(),
            },
            Failure::Io(source) => StoreError::Io {
                id: self.id.clone(),
                op: "read",
                path: self.path.clone(),
                source,
            },
        };
        Some(Err(error))
    }
}

impl<T> Iterator for RecordIter<T> {
    type Item = Result<T, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}

impl<T> fmt::Debug for RecordIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordIter")
            .field("session", &self.id)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

enum Failure {
    Corrupt(u64, String),
    Io(io::Error),
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

fn decode_event_line(bytes: &[u8]) -> Result<Event, String> {
    if is_blank(bytes) {
        return Err("blank line".to_owned());
    }
    decode_version_gated(
        bytes,
        "an event record",
        |deserializer, unknown_tag| EventLineSeed { unknown_tag }.deserialize(deserializer),
        |tag| {
            format!("unknown record version {tag:?} (expected {EVENTS_TAG:?}; written by a newer version?)")
        },
    )
}

fn decode_tool_call_line(bytes: &[u8]) -> Result<ToolCallRecord, String> {
    if is_blank(bytes) {
        return Err("blank line".to_owned());
    }
    let record: ToolCallRecord =
        serde_json::from_slice(bytes).map_err(|e| describe_json_error(&e, "a tool-call record"))?;
    if record.record_type != TOOL_CALL_TYPE {
        return Err(format!(
            "unknown record type {:?} (expected {TOOL_CALL_TYPE:?})",
            clip_chars(&record.record_type, 64).into_owned()
        ));
    }
    Ok(record)
}

/// Decodes `bytes` as one whole JSON record with `decode`, which gets the
/// deserializer and a slot where it notes a version it does not read (failing
/// then). The reason for a failure is `unknown` of that version when one was noted,
/// else [`describe_json_error`] of the JSON error with `what`.
pub(crate) fn decode_version_gated<T>(
    bytes: &[u8],
    what: &str,
    decode: impl FnOnce(
        &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>,
        &mut Option<String>,
    ) -> serde_json::Result<T>,
    unknown: impl FnOnce(String) -> String,
) -> Result<T, String> {
    let mut unknown_version = None;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let decoded = decode(&mut deserializer, &mut unknown_version)
        .and_then(|record| deserializer.end().map(|()| record));
    match (decoded, unknown_version) {
        (Ok(record), _) => Ok(record),
        (Err(_), Some(version)) => Err(unknown(version)),
        (Err(error), None) => Err(describe_json_error(&error, what)),
    }
}

/// Why a line does not decode, without quoting its contents (serde's data errors
/// can embed values, so only schema-level messages are kept).
pub(crate) fn describe_json_error(error: &serde_json::Error, what: &str) -> String {
    match error.classify() {
        serde_json::error::Category::Syntax => format!("not valid JSON (column {})", error.column()),
        serde_json::error::Category::Eof => "not valid JSON (ends early)".to_owned(),
        serde_json::error::Category::Io => format!("read failed: {error}"),
        serde_json::error::Category::Data => {
            let text = error.to_string();
            let schema_level = ["missing field", "unknown variant", "duplicate field"]
                .iter()
                .any(|p| text.starts_with(p));
            if schema_level {
                let message = text.split(" at line ").next().unwrap_or(&text);
                format!("not {what}: {}", clip_chars(message, 160))
            } else {
                format!("not {what} (column {})", error.column())
            }
        }
    }
}

/// Decodes `{"v","ev"}` in one pass, checking the tag before the event (so an
/// unknown version is reported as such even when its event would not decode).
struct EventLineSeed<'a> {
    unknown_tag: &'a mut Option<String>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum EventLineField {
    V,
    Ev,
    #[serde(other)]
    Other,
}

impl<'de> DeserializeSeed<'de> for EventLineSeed<'_> {
    type Value = Event;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Event, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventLineSeed<'_> {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event record {\"v\", \"ev\"}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut event = VersionGated::<Event>::default();
        while let Some(field) = map.next_key::<EventLineField>()? {
            match field {
                EventLineField::V => event.read_version(&mut map, EVENTS_TAG, self.unknown_tag, |tag| {
                    clip_chars(tag, 64).into_owned()
                })?,
                EventLineField::Ev => event.read(&mut map)?,
                EventLineField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        event.require_version("v")?;
        event.finish("ev")
    }
}

/// The payload of a one-line record whose version field gates it: decoded only once
/// the version is known to be ours, so an unknown version is reported as such even
/// when its payload would not decode. A payload met before the version (not our
/// field order) is kept as JSON until then.
pub(crate) struct VersionGated<T> {
    version_seen: bool,
    payload: Option<T>,
    early: Option<serde_json::Value>,
}

impl<T> Default for VersionGated<T> {
    fn default() -> Self {
        Self {
            version_seen: false,
            payload: None,
            early: None,
        }
    }
}

impl<T: de::DeserializeOwned> VersionGated<T> {
    /// Reads the version field's value from `map`. Ours is accepted, and a payload
    /// kept from before it is decoded; another is noted in `unknown`, as `shown`
    /// renders it, and fails the decode.
    pub(crate) fn read_version<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        ours: &str,
        unknown: &mut Option<String>,
        shown: impl FnOnce(&str) -> String,
    ) -> Result<(), A::Error> {
        let version: String = map.next_value()?;
        if version != ours {
            *unknown = Some(shown(&version));
            return Err(de::Error::custom("unknown version"));
        }
        self.version_seen = true;
        if let Some(value) = self.early.take() {
            self.payload = Some(T::deserialize(value).map_err(de::Error::custom)?);
        }
        Ok(())
    }

    /// Reads the payload field's value from `map`.
    pub(crate) fn read<'de, A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<(), A::Error> {
        if self.version_seen {
            self.payload = Some(map.next_value()?);
        } else {
            self.early = Some(map.next_value()?);
        }
        Ok(())
    }

    /// Once the whole record was read: the error for a missing `version` field.
    pub(crate) fn require_version<E: de::Error>(&self, version: &'static str) -> Result<(), E> {
        if self.version_seen {
            Ok(())
        } else {
            Err(E::missing_field(version))
        }
    }

    /// The payload, once the whole record was read and the version required; the
    /// error for a missing `payload` field.
    pub(crate) fn finish<E: de::Error>(self, payload: &'static str) -> Result<T, E> {
        self.payload.ok_or_else(|| E::missing_field(payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine_ports::testkit::event_log::delta;

    #[test]
    fn event_lines_round_trip() {
        let line = serde_json::to_vec(&EventLine::new(&delta(3, "hi"))).unwrap();
        assert!(line.starts_with(br#"{"v":"mecated-events/1","ev":{"seq":3"#));
        assert_eq!(decode_event_line(&line).unwrap(), delta(3, "hi"));
    }

    #[test]
    fn the_tag_is_checked_before_the_event() {
        let reason = decode_event_line(br#"{"v":"mecated-events/999","ev":{"nope":1}}"#).unwrap_err();
        assert!(reason.contains("\"mecated-events/999\""), "{reason}");
        let reason = decode_event_line(br#"{"ev":{"seq":1,"type":"message.delta","text":"x"},"v":"x/2"}"#)
            .unwrap_err();
        assert!(reason.contains("\"x/2\""), "{reason}");
        let early = br#"{"ev":{"seq":1,"type":"message.delta","text":"hi"},"v":"mecated-events/1"}"#;
        assert_eq!(decode_event_line(early).unwrap(), delta(1, "hi"));
    }

    #[test]
    fn reasons_never_quote_contents() {
        let reason = decode_event_line(br#"{"v":"mecated-events/1","ev":{"seq":"SECRET"}}"#).unwrap_err();
        assert!(!reason.contains("SECRET"), "{reason}");
        for bad in [
            &b"{not-json"[..],
            b"   ",
            b"",
            b"42",
            br#"{"v":"mecated-events/1"}"#,
        ] {
            assert!(decode_event_line(bad).is_err(), "{bad:?}");
        }
    }
}
