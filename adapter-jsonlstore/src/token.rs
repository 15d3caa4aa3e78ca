//! The file-name token of a session id: path-safe, bounded, collision-resistant.

use sha2::{Digest, Sha256};

/// Characters of the id kept in the readable prefix.
const PREFIX_CHARS: usize = 40;
/// Hex digits of SHA-256 kept (128 bits).
const HASH_HEX_DIGITS: usize = 32;

/// `sid-v1-` + the first 40 characters of `id` with everything outside
/// `[A-Za-z0-9_-]` replaced by `_` (or `id` when that leaves nothing) + `-` + the first
/// 32 lowercase hex digits of SHA-256 of the id's UTF-8 bytes. Total, pure, no I/O;
/// nothing ever parses a token back.
pub(crate) fn token(id: &str) -> String {
    let mut prefix: String = id
        .chars()
        .take(PREFIX_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if prefix.is_empty() {
        prefix.push_str("id");
    }
    let digest = hex::encode(Sha256::digest(id.as_bytes()));
    let hash = digest.get(..HASH_HEX_DIGITS).unwrap_or(&digest);
    format!("sid-v1-{prefix}-{hash}")
}

#[cfg(test)]
mod tests {
    use super::token;

    #[test]
    fn pinned_test_vectors() {
        let vectors = [
            ("sess-1", "sid-v1-sess-1-abe633f3a47a2758174eabe9160daf36"),
            (
                "team-abc/lead",
                "sid-v1-team-abc_lead-a43a00e7688a55331efbe5ec1547443d",
            ),
            (
                "../escape/../x",
                "sid-v1-___escape____x-df4f080b07b9e8bf9e4574c708c80d62",
            ),
            ("ééé", "sid-v1-___-355b7226e20cb564774ef99442e77ac0"),
            ("", "sid-v1-id-e3b0c44298fc1c149afbf4c8996fb924"),
        ];
        for (id, expected) in vectors {
            assert_eq!(token(id), expected, "token of {id:?}");
        }
    }

    #[test]
    fn bounded_and_path_safe() {
        let long = "ü/".repeat(600);
        let t = token(&long);
        assert!(t.len() <= 80, "{t}");
        assert!(
            t.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{t}"
        );
        assert_eq!(t.len(), "sid-v1-".len() + 40 + 1 + 32);
    }

    #[test]
    fn ids_differing_only_after_the_prefix_get_different_tokens() {
        let a = format!("{}a", "x".repeat(100));
        let b = format!("{}b", "x".repeat(100));
        assert_ne!(token(&a), token(&b));
    }
}
