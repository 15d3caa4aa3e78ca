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

/// RFC 3339 UTC text with microseconds, as events and audit records carry it
/// (`2026-12-04T09:56:00.123456Z`).
///
/// Every logged event carries one, so this writes the 27 bytes directly instead of
/// going through `fmt` (a tenth of the cost); the text is the same as
/// `humantime::format_rfc3339_micros`. RFC 3339 has no text for a time before 1970
/// or after 9999 (a clock can still say one): such a time is written as the nearest
/// one it has, where humantime would panic.
pub fn format_rfc3339_micros(time: SystemTime) -> String {
    /// The last microsecond of the year 9999.
    const LAST: Duration = Duration::from_micros(253_402_300_799_999_999);
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .min(LAST);
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days(secs / 86_400);
    let of_day = secs % 86_400;
    let mut text = [0_u8; 27];
    put_digits(&mut text[0..4], u64::from(year));
    text[4] = b'-';
    put_digits(&mut text[5..7], u64::from(month));
    text[7] = b'-';
    put_digits(&mut text[8..10], u64::from(day));
    text[10] = b'T';
    put_digits(&mut text[11..13], of_day / 3600);
    text[13] = b':';
    put_digits(&mut text[14..16], of_day / 60 % 60);
    text[16] = b':';
    put_digits(&mut text[17..19], of_day % 60);
    text[19] = b'.';
    put_digits(&mut text[20..26], u64::from(since.subsec_micros()));
    text[26] = b'Z';
    // Digits and separators only: always ASCII.
    std::str::from_utf8(&text).map(str::to_owned).unwrap_or_default()
}

/// Writes `value`'s last `into.len()` decimal digits, zero-padded.
fn put_digits(into: &mut [u8], mut value: u64) {
    for digit in into.iter_mut().rev() {
        // `value % 10` is below 10.
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// The proleptic Gregorian date of day `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u32, u32, u32) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    // Years below 10000, months and days: all fit.
    (year as u32, month as u32, day as u32)
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::format_rfc3339_micros;

    fn at(secs: u64, micros: u32) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(u64::from(micros))
    }

    #[test]
    fn the_written_text_is_humantimes_on_every_day_from_1970_to_2600() {
        // Each day at a second and a fraction that move through the day, so every
        // month length, leap day and century rule is crossed.
        for day in 0..230_000_u64 {
            let time = at(
                day * 86_400 + (day * 7_919) % 86_400,
                (day as u32).wrapping_mul(104_729) % 1_000_000,
            );
            assert_eq!(
                format_rfc3339_micros(time),
                humantime::format_rfc3339_micros(time).to_string(),
                "day {day}"
            );
        }
    }

    #[test]
    fn edges_of_days_years_and_the_range_are_written_like_humantime() {
        let last = 253_402_300_799; // 9999-12-31T23:59:59
        for time in [
            at(0, 0),
            at(86_399, 999_999),
            at(951_782_400, 0),         // 2000-02-29
            at(4_107_542_399, 999_999), // 2100-02-28T23:59:59
            at(4_107_542_400, 0),       // 2100-03-01
            at(last, 999_999),
            SystemTime::UNIX_EPOCH + Duration::from_nanos(1_999), // nanoseconds are cut
        ] {
            assert_eq!(
                format_rfc3339_micros(time),
                humantime::format_rfc3339_micros(time).to_string()
            );
        }
        assert_eq!(
            format_rfc3339_micros(at(951_782_400, 42)),
            "2000-02-29T00:00:00.000042Z"
        );
    }

    #[test]
    fn times_rfc_3339_cannot_write_are_written_as_the_nearest_it_can() {
        assert_eq!(
            format_rfc3339_micros(SystemTime::UNIX_EPOCH - Duration::from_secs(1)),
            "1970-01-01T00:00:00.000000Z"
        );
        assert_eq!(
            format_rfc3339_micros(at(253_402_300_800 * 2, 0)),
            "9999-12-31T23:59:59.999999Z"
        );
    }
}
