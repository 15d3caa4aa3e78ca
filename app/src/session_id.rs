//! [`new_session_id`]: fresh session ids (32 lowercase hex digits).

/// A fresh random session id: 32 lowercase hex digits (128 bits).
pub fn new_session_id() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_32_hex_and_distinct() {
        let a = super::new_session_id();
        let b = super::new_session_id();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
