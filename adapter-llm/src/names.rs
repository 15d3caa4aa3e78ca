//! D6: reversible wire names for providers that limit tool names to `[A-Za-z0-9_-]{1,64}`.

use std::borrow::Cow;
use std::collections::HashMap;

use engine_ports::{LlmRequest, Message};
use sha2::{Digest as _, Sha256};

/// Longest tool name the providers accept.
pub const MAX_WIRE_NAME_LEN: usize = 64;

/// Characters of the sanitized name kept before the hash suffix (55 + `_` + 8 hex = 64).
const KEPT_CHARS: usize = 55;

/// Hex digits of SHA-256(name) appended to an encoded name.
const HASH_HEX_DIGITS: usize = 8;

/// Whether `name` can go on the wire unchanged: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_wire_safe(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_WIRE_NAME_LEN && name.bytes().all(is_wire_byte)
}

fn is_wire_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// The wire form of a real tool name.
///
/// A wire-safe name is returned unchanged. Any other name has every character outside
/// `[A-Za-z0-9_-]` replaced by `_`, is cut to 55 characters and gets `_` plus the first
/// 8 hex digits of SHA-256 of the real name appended, so the result always matches
/// `^[A-Za-z0-9_-]{1,64}$` and differs for names that sanitize alike.
///
/// ```
/// use adapter_llm::wire_name;
/// assert_eq!(wire_name("Read"), "Read");
/// let wire = wire_name("mcp__files__read.file/v2");
/// assert!(wire.starts_with("mcp__files__read_file_v2_"));
/// assert_eq!(wire.len(), "mcp__files__read_file_v2_".len() + 8);
/// ```
pub fn wire_name(name: &str) -> Cow<'_, str> {
    if is_wire_safe(name) {
        return Cow::Borrowed(name);
    }
    let mut wire: String = name
        .chars()
        .take(KEPT_CHARS)
        .map(|c| {
            if c.is_ascii() && is_wire_byte(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = Sha256::digest(name.as_bytes());
    let hex = hex::encode(digest);
    wire.push('_');
    wire.push_str(&hex[..HASH_HEX_DIGITS]);
    Cow::Owned(wire)
}

/// Two real tool names that would share one wire name in a request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tool names {first:?} and {second:?} both map to the wire name {wire:?}; rename one of them")]
pub struct NameCollision {
    /// One real name.
    pub first: String,
    /// The other real name.
    pub second: String,
    /// The wire name they share.
    pub wire: String,
}

/// The per-request mapping between real and wire names (D6).
///
/// Built from the request's advertised tools and the tool calls of earlier assistant
/// messages, so history is re-encoded with the same function. Decoding a wire name
/// that is not in the map returns it unchanged (the dispatcher then reports an unknown
/// tool).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameMap {
    wire_to_real: HashMap<String, String>,
}

impl NameMap {
    /// The map of one request.
    ///
    /// # Errors
    /// [`NameCollision`] when two different real names share a wire name.
    pub fn for_request(request: &LlmRequest) -> Result<Self, NameCollision> {
        let tools = request.tools.iter().map(|spec| spec.name());
        let history = request.messages.iter().flat_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.iter().map(|call| call.name()).collect(),
            _ => Vec::new(),
        });
        Self::from_names(tools.chain(history))
    }

    /// The map of a set of real names.
    ///
    /// # Errors
    /// [`NameCollision`] when two different real names share a wire name.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, NameCollision> {
        let mut wire_to_real: HashMap<String, String> = HashMap::new();
        for real in names {
            let wire = wire_name(real).into_owned();
            match wire_to_real.get(&wire) {
                Some(existing) if existing != real => {
                    return Err(NameCollision {
                        first: existing.clone(),
                        second: real.to_owned(),
                        wire,
                    });
                }
                Some(_) => {}
                None => {
                    wire_to_real.insert(wire, real.to_owned());
                }
            }
        }
        Ok(Self { wire_to_real })
    }

    /// The wire name of a real name (the same function for tools and history).
    pub fn encode<'a>(&self, real: &'a str) -> Cow<'a, str> {
        wire_name(real)
    }

    /// The real name of a wire name; unknown wire names pass through unchanged.
    pub fn decode(&self, wire: &str) -> String {
        self.wire_to_real
            .get(wire)
            .cloned()
            .unwrap_or_else(|| wire.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches_wire_regex(name: &str) -> bool {
        (1..=64).contains(&name.len()) && name.bytes().all(is_wire_byte)
    }

    #[test]
    fn safe_names_pass_unchanged() {
        for name in ["Read", "mcp__ev__get-tiny-image", "a", &"x".repeat(64)] {
            assert_eq!(wire_name(name), name);
        }
    }

    #[test]
    fn unsafe_names_are_sanitized_cut_and_hashed() {
        let long = "y".repeat(100);
        for name in [
            "mcp__files__read.file/v2",
            long.as_str(),
            &"x".repeat(65),
            "",
            "héllo wörld",
            "名前",
        ] {
            let wire = wire_name(name);
            assert!(matches_wire_regex(&wire), "{name:?} -> {wire:?}");
            assert_ne!(wire, name);
            let suffix = &hex::encode(Sha256::digest(name.as_bytes()))[..8];
            assert!(wire.ends_with(&format!("_{suffix}")), "{wire}");
        }
        assert_eq!(wire_name(&long).len(), 64);
        assert_eq!(&wire_name(&long)[..55], &long[..55]);
        assert!(wire_name("名前").starts_with("___"));
        // Characters, not bytes, are replaced and counted.
        assert!(wire_name("héllo").starts_with("h_llo_"));
    }

    #[test]
    fn names_that_sanitize_alike_stay_distinct() {
        assert_ne!(wire_name("a.b"), wire_name("a/b"));
        let map = NameMap::from_names(["a.b", "a/b"]).unwrap();
        assert_eq!(map.decode(&wire_name("a.b")), "a.b");
        assert_eq!(map.decode(&wire_name("a/b")), "a/b");
    }

    #[test]
    fn decode_round_trips_and_passes_unknown_names() {
        let map = NameMap::from_names(["Read", "mcp__files__read.file/v2"]).unwrap();
        assert_eq!(map.decode("Read"), "Read");
        assert_eq!(
            map.decode(&wire_name("mcp__files__read.file/v2")),
            "mcp__files__read.file/v2"
        );
        assert_eq!(map.decode("Nope"), "Nope");
    }

    #[test]
    fn a_collision_names_both_real_names() {
        let encoded = wire_name("a.b").into_owned();
        let error = NameMap::from_names(["a.b", encoded.as_str()]).unwrap_err();
        assert_eq!(error.first, "a.b");
        assert_eq!(error.second, encoded);
        let text = error.to_string();
        assert!(text.contains("\"a.b\"") && text.contains(&encoded), "{text}");
        // The same name twice is no collision.
        assert!(NameMap::from_names(["a.b", "a.b"]).is_ok());
    }
}
