//! The snapshot envelope: `{"format","id","saved_at","snapshot"}` on one line,
//! its encoder and a one-pass decoder that checks the format before the payload.

use std::fmt;
use std::marker::PhantomData;

use engine_ports::{SessionId, SessionSnapshot, format_rfc3339_nanos};
use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::reader::{VersionGated, decode_version_gated};

/// The envelope version this store writes and reads.
pub(crate) const FORMAT: &str = "mecated-session/1";

#[derive(Serialize)]
struct EnvelopeRef<'a> {
    format: &'static str,
    id: &'a SessionId,
    saved_at: String,
    snapshot: &'a SessionSnapshot,
}

/// The file contents for `snapshot`: one compact JSON object and `\n`.
pub(crate) fn encode(snapshot: &SessionSnapshot) -> serde_json::Result<Vec<u8>> {
    let mut buf = serde_json::to_vec(&EnvelopeRef {
        format: FORMAT,
        id: &snapshot.id,
        saved_at: format_rfc3339_nanos(std::time::SystemTime::now()),
        snapshot,
    })?;
    buf.push(b'\n');
    Ok(buf)
}

/// A decoded envelope; `T` is [`SessionSnapshot`] for Load and [`IgnoredAny`] for
/// List (which only needs the id).
pub(crate) struct Envelope<T> {
    /// The stored id (authoritative).
    pub(crate) id: SessionId,
    /// The payload.
    pub(crate) snapshot: T,
}

/// Decodes an envelope; the error is a reason that never quotes the contents.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<Envelope<T>, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".to_owned());
    }
    decode_version_gated(
        bytes,
        "a session snapshot",
        |deserializer, unknown_format| {
            de::Deserializer::deserialize_map(
                deserializer,
                EnvelopeVisitor::<T> {
                    unknown_format,
                    payload: PhantomData,
                },
            )
        },
        |format| {
            format!(
                "unknown format {format:?} (this store reads {FORMAT:?}; the file was written by a newer version)"
            )
        },
    )
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum EnvelopeField {
    Format,
    Id,
    Snapshot,
    #[serde(other)]
    Other,
}

struct EnvelopeVisitor<'a, T> {
    unknown_format: &'a mut Option<String>,
    payload: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> Visitor<'de> for EnvelopeVisitor<'_, T> {
    type Value = Envelope<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a session snapshot envelope")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<T>, A::Error> {
        let mut id = None;
        let mut snapshot = VersionGated::<T>::default();
        while let Some(field) = map.next_key::<EnvelopeField>()? {
            match field {
                EnvelopeField::Format => {
                    snapshot.read_version(&mut map, FORMAT, self.unknown_format, |format| {
                        format.chars().take(64).collect()
                    })?;
                }
                EnvelopeField::Id => id = Some(map.next_value::<SessionId>()?),
                EnvelopeField::Snapshot => snapshot.read(&mut map)?,
                EnvelopeField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        snapshot.require_version("format")?;
        Ok(Envelope {
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            snapshot: snapshot.finish("snapshot")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine_ports::PermissionMode;

    #[test]
    fn envelope_is_one_line_with_the_fields_in_order() {
        let snapshot = SessionSnapshot::new("team-abc/lead", PermissionMode::Plan);
        let bytes = encode(&snapshot).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.starts_with(r#"{"format":"mecated-session/1","id":"team-abc/lead","saved_at":""#),
            "{text}"
        );
        assert_eq!(text.matches('\n').count(), 1);
        assert!(text.ends_with("}\n"));
        let back: Envelope<SessionSnapshot> = decode(&bytes).unwrap();
        assert_eq!(back.id, "team-abc/lead");
        assert_eq!(back.snapshot, snapshot);
        let listed: Envelope<IgnoredAny> = decode(&bytes).unwrap();
        assert_eq!(listed.id, "team-abc/lead");
    }

    #[test]
    fn unknown_formats_and_junk_are_reasons() {
        let reason = decode::<IgnoredAny>(br#"{"format":"mecated-session/9","id":"x","snapshot":7}"#)
            .err()
            .unwrap();
        assert!(
            reason.contains("\"mecated-session/9\"") && reason.contains("newer"),
            "{reason}"
        );
        for junk in [
            &b""[..],
            b"{not json",
            b"{}",
            br#"{"format":"mecated-session/1","id":"x"}"#,
        ] {
            assert!(decode::<IgnoredAny>(junk).is_err(), "{junk:?}");
        }
    }
}
