//! The time port: [`Clock`] and the production [`SystemClock`].

use std::time::{Duration, SystemTime};

/// A source of wall-clock time. The core never reads the system clock itself, so
/// tests can fix time with a manual clock.
///
/// # Contract
/// `now` never blocks. Successive reads SHOULD not go backwards; callers compute
/// durations with [`elapsed_between`], which saturates at zero.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// `later - earlier`, or zero when the clock went backwards.
pub fn elapsed_between(earlier: SystemTime, later: SystemTime) -> Duration {
    later.duration_since(earlier).unwrap_or(Duration::ZERO)
}

/// RFC 3339 UTC text with microseconds, as events and audit records carry it.
pub fn format_rfc3339_micros(time: SystemTime) -> String {
    humantime::format_rfc3339_micros(time).to_string()
}

/// RFC 3339 UTC text with nanoseconds.
pub fn format_rfc3339_nanos(time: SystemTime) -> String {
    humantime::format_rfc3339_nanos(time).to_string()
}

/// Parses RFC 3339 UTC text as [`format_rfc3339_micros`] writes it (any fraction).
///
/// # Errors
/// A short reason when the text is not an RFC 3339 UTC time.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    humantime::parse_rfc3339(text).map_err(|error| format!("{text:?} is not an RFC 3339 UTC time: {error}"))
}
