//! Simulated time.
//!
//! True time is an integer count of nanoseconds since the start of a run ([`Nanos`]). It is the
//! only time the engine orders events by; every node's *local* clock is a function of it (see
//! [`crate::clock`]). Wall-clock instants (what gets written into a Lease) are nanoseconds since
//! the Unix epoch ([`UnixNanos`]); a run maps true time 0 to a configurable epoch.

/// True simulated time: nanoseconds since the start of the run.
pub type Nanos = u64;

/// A wall-clock instant: nanoseconds since 1970-01-01T00:00:00Z (may be negative in theory).
pub type UnixNanos = i64;

pub const NANOS_PER_MICRO: u64 = 1_000;
pub const NANOS_PER_MILLI: u64 = 1_000_000;
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// 2026-01-01T00:00:00Z, the default epoch of a run: true time 0 reads as this on a perfect clock.
/// The wall times i64 nanoseconds since 1970 hold, for messages.
pub const WALL_RANGE: &str = "1677-09-21 to 2262-04-11, UTC";

pub const DEFAULT_EPOCH_UNIX_NANOS: UnixNanos = 1_767_225_600 * NANOS_PER_SEC as i64;

pub const fn secs(s: u64) -> Nanos {
    s * NANOS_PER_SEC
}

pub const fn millis(ms: u64) -> Nanos {
    ms * NANOS_PER_MILLI
}

/// Seconds as a float, for metrics and reports only (never for simulation decisions).
pub fn as_secs_f64(ns: Nanos) -> f64 {
    ns as f64 / NANOS_PER_SEC as f64
}

/// Formats a duration the way Go's `time.Duration.String` does for the values users write
/// (`15s`, `1m30s`, `250ms`, `1.5s`), so messages echo the user's own notation.
pub fn format_duration(ns: Nanos) -> String {
    if ns == 0 {
        return "0s".to_string();
    }
    if ns < NANOS_PER_SEC {
        return if ns.is_multiple_of(NANOS_PER_MILLI) {
            format!("{}ms", ns / NANOS_PER_MILLI)
        } else if ns.is_multiple_of(NANOS_PER_MICRO) {
            format!("{}µs", ns / NANOS_PER_MICRO)
        } else {
            format!("{ns}ns")
        };
    }
    let mut out = String::new();
    let hours = ns / (3600 * NANOS_PER_SEC);
    let minutes = (ns / (60 * NANOS_PER_SEC)) % 60;
    let sec_ns = ns % (60 * NANOS_PER_SEC);
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    let whole = sec_ns / NANOS_PER_SEC;
    let frac = sec_ns % NANOS_PER_SEC;
    if frac == 0 {
        out.push_str(&format!("{whole}s"));
    } else {
        let digits = format!("{frac:09}");
        out.push_str(&format!("{whole}.{}s", digits.trim_end_matches('0')));
    }
    out
}

/// Parses a Kubernetes-style duration: a sequence of `<number><unit>` with units `h`, `m`, `s`,
/// `ms`, `us`/`µs`, `ns` (`15s`, `1m30s`, `250ms`, `1.5s`). Returns a message naming what was
/// expected on failure. Negative durations are refused here; zero is allowed (callers that need
/// a positive value check it themselves, with their own wording).
pub fn parse_duration(text: &str) -> Result<Nanos, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration: expected a duration such as \"15s\", \"1m30s\" or \"250ms\"".into());
    }
    if s.starts_with('-') {
        return Err(format!("duration {text:?} is negative: expected a duration of zero or more, such as \"15s\""));
    }
    if s == "0" {
        return Ok(0);
    }
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut total: u128 = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = &s[start..i];
        if number.is_empty() || number.matches('.').count() > 1 {
            return Err(format!("invalid duration {text:?}: expected a number before each unit, as in \"1m30s\""));
        }
        let unit_start = i;
        while i < bytes.len() && !(bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let unit = &s[unit_start..i];
        let scale: u128 = match unit {
            "h" => 3600 * NANOS_PER_SEC as u128,
            "m" => 60 * NANOS_PER_SEC as u128,
            "s" => NANOS_PER_SEC as u128,
            "ms" => NANOS_PER_MILLI as u128,
            "us" | "µs" => NANOS_PER_MICRO as u128,
            "ns" => 1,
            "" => {
                return Err(format!(
                    "missing unit in duration {text:?}: expected one of h, m, s, ms, us, ns (as in \"15s\")"
                ));
            }
            other => {
                return Err(format!(
                    "unknown unit {other:?} in duration {text:?}: expected one of h, m, s, ms, us, ns"
                ));
            }
        };
        let (int_part, frac_part) = match number.split_once('.') {
            Some((a, b)) => (a, b),
            None => (number, ""),
        };
        let int_val: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| format!("duration {text:?} is too large"))?
        };
        let mut value = int_val.checked_mul(scale).ok_or_else(|| format!("duration {text:?} is too large"))?;
        let mut place = scale;
        for digit in frac_part.bytes() {
            place /= 10;
            value += (digit - b'0') as u128 * place;
        }
        total = total.checked_add(value).ok_or_else(|| format!("duration {text:?} is too large"))?;
    }
    u64::try_from(total).map_err(|_| format!("duration {text:?} is too large"))
}

/// Civil date from days since the Unix epoch (proleptic Gregorian), for RFC 3339 rendering.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since the Unix epoch of a civil date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-01-01T00:00:00` (no fraction, no zone) for a Unix-seconds value.
pub fn format_civil_seconds(unix_secs: i64) -> String {
    match civil_seconds_digits(unix_secs) {
        Some(digits) => String::from_utf8(digits.to_vec()).expect("ascii digits"),
        None => {
            let days = unix_secs.div_euclid(86_400);
            let rem = unix_secs.rem_euclid(86_400);
            let (y, mo, d) = civil_from_days(days);
            format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}", rem / 3600, (rem / 60) % 60, rem % 60)
        }
    }
}

/// [`format_civil_seconds`] as 19 bytes, for a year of four digits (0–9999: every timestamp
/// a run writes); `None` for any other year. Every managedFields entry of an object the
/// server renders carries a time, and `format!` was a third of that rendering.
pub fn civil_seconds_digits(unix_secs: i64) -> Option<[u8; 19]> {
    let days = unix_secs.div_euclid(86_400);
    let rem = unix_secs.rem_euclid(86_400) as u32;
    let (y, mo, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    let mut out = *b"0000-00-00T00:00:00";
    let mut put = |at: usize, width: usize, mut value: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, y as u32);
    put(5, 2, mo);
    put(8, 2, d);
    put(11, 2, rem / 3600);
    put(14, 2, (rem / 60) % 60);
    put(17, 2, rem % 60);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digit writer is `format!`'s text for every year it takes, and declines the rest.
    #[test]
    fn civil_seconds_digits_are_the_formatted_text() {
        let formatted = |unix_secs: i64| {
            let days = unix_secs.div_euclid(86_400);
            let rem = unix_secs.rem_euclid(86_400);
            let (y, mo, d) = civil_from_days(days);
            format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}", rem / 3600, (rem / 60) % 60, rem % 60)
        };
        let first = days_from_civil(0, 1, 1) * 86_400;
        let last = days_from_civil(9999, 12, 31) * 86_400 + 86_399;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut cases = vec![first, last, 0, -1, 1_767_225_600, 951_782_400, 4_107_542_399];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(first + (x % (last - first + 1) as u64) as i64);
        }
        for s in cases {
            let digits = civil_seconds_digits(s).expect("a four-digit year");
            assert_eq!(std::str::from_utf8(&digits).unwrap(), formatted(s), "{s}");
            assert_eq!(format_civil_seconds(s), formatted(s));
        }
        for s in [first - 1, last + 1, i64::MIN / 2, i64::MAX / 2] {
            assert_eq!(civil_seconds_digits(s), None, "{s}");
            assert_eq!(format_civil_seconds(s), formatted(s));
        }
    }

    #[test]
    fn kubernetes_style_durations_parse() {
        assert_eq!(parse_duration("15s"), Ok(secs(15)));
        assert_eq!(parse_duration("1m30s"), Ok(secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(millis(1500)));
        assert_eq!(parse_duration("2h"), Ok(secs(7200)));
        assert_eq!(parse_duration("10us"), Ok(10_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("15").unwrap_err().contains("missing unit"));
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("3d").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn durations_format_as_go_does() {
        for text in ["15s", "1m30s", "250ms", "1.5s", "2h0m0s", "10µs", "0s"] {
            let ns = parse_duration(text).unwrap();
            assert_eq!(format_duration(ns), text);
        }
    }

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(format_civil_seconds(DEFAULT_EPOCH_UNIX_NANOS / NANOS_PER_SEC as i64), "2026-01-01T00:00:00");
        for days in [-800_000, -1, 0, 59, 60, 11_016, 20_454, 1_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
