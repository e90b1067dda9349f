//! `metav1.MicroTime` and `metav1.Time` as the API server puts them on the wire (apiserver.md §2).
//!
//! Parsing emulates Go's `time.Parse` for the two layouts involved, element by element, because
//! the server's error text quotes Go's parse error verbatim (apiserver.md §2.1) and clients and the
//! lab print it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::time::{civil_seconds_digits, days_from_civil, format_civil_seconds};

/// Go layout of `metav1.MicroTime` (`RFC3339Micro`).
pub const MICRO_TIME_LAYOUT: &str = "2006-01-02T15:04:05.000000Z07:00";
/// Go layout of `metav1.Time` (`time.RFC3339`).
pub const TIME_LAYOUT: &str = "2006-01-02T15:04:05Z07:00";

/// A `metav1.MicroTime`: an instant with microsecond precision, always emitted in UTC with six
/// fractional digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime {
    unix_micros: i64,
}

impl MicroTime {
    /// Truncates to whole microseconds towards negative infinity, as Go's formatter and the
    /// protobuf encoding do (apiserver.md §2: truncated, not rounded).
    pub fn from_unix_nanos(ns: i64) -> Self {
        MicroTime { unix_micros: ns.div_euclid(1_000) }
    }

    pub fn from_unix_micros(unix_micros: i64) -> Self {
        MicroTime { unix_micros }
    }

    /// Saturates beyond year 2262, where nanoseconds leave i64.
    pub fn unix_nanos(self) -> i64 {
        self.unix_micros.saturating_mul(1_000)
    }

    pub fn unix_micros(self) -> i64 {
        self.unix_micros
    }

    /// Go's `time.Parse(RFC3339Micro, s)`: exactly six fractional digits, zone `Z` or `±hh:mm`.
    /// The error is Go's text, e.g. `parsing time "…Z" as "2006-01-02T15:04:05.000000Z07:00":
    /// cannot parse "Z" as ".000000"`.
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Some(parsed) = Self::parse_canonical(s) {
            if cfg!(debug_assertions) {
                let (unix_secs, nanos) = go_time_parse(MICRO_TIME_LAYOUT, s).expect("a canonical MicroTime parses");
                assert_eq!(parsed.unix_micros, unix_secs * 1_000_000 + nanos / 1_000, "{s}");
            }
            return Ok(parsed);
        }
        let (unix_secs, nanos) = go_time_parse(MICRO_TIME_LAYOUT, s)?;
        Ok(MicroTime { unix_micros: unix_secs * 1_000_000 + nanos / 1_000 })
    }

    /// The form every writer here and client-go send, `2026-01-01T00:00:00.000000Z`, read
    /// without the general layout parser (a coordinated election reads two of them per
    /// candidate event); `None` for anything else, day 29–31 included, which then takes
    /// [`go_time_parse`] and its errors. Debug builds check each against it.
    fn parse_canonical(s: &str) -> Option<MicroTime> {
        let b: &[u8; 27] = s.as_bytes().try_into().ok()?;
        let punctuation = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.'), (26, b'Z')];
        if punctuation.iter().any(|&(i, c)| b[i] != c) {
            return None;
        }
        let number = |from: usize, to: usize| -> Option<i64> {
            b[from..to].iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
        };
        let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
        let (hour, minute, second, micros) = (number(11, 13)?, number(14, 16)?, number(17, 19)?, number(20, 26)?);
        let plain = year >= 1000 && (1..=12).contains(&month) && (1..=28).contains(&day);
        if !plain || hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let days = days_from_civil(year, month as u32, day as u32);
        let unix_secs = days * 86_400 + hour * 3_600 + minute * 60 + second;
        Some(MicroTime { unix_micros: unix_secs * 1_000_000 + micros })
    }

    /// `2026-01-01T00:00:00.000000Z`.
    pub fn to_rfc3339(self) -> String {
        match self.canonical_text() {
            Some(text) => std::str::from_utf8(&text).expect("ascii digits").to_string(),
            None => {
                let secs = self.unix_micros.div_euclid(1_000_000);
                let micros = self.unix_micros.rem_euclid(1_000_000);
                format!("{}.{micros:06}Z", format_civil_seconds(secs))
            }
        }
    }

    /// [`Self::to_rfc3339`]'s text on the stack, for years 0–9999 (`None` beyond: those take
    /// Go's formatting of a wider year). Every LeaseCandidate renewal writes one.
    fn canonical_text(self) -> Option<[u8; 27]> {
        let secs = self.unix_micros.div_euclid(1_000_000);
        let digits = civil_seconds_digits(secs)?;
        let mut text = [0u8; 27];
        text[..19].copy_from_slice(&digits);
        text[19] = b'.';
        let mut micros = self.unix_micros.rem_euclid(1_000_000) as u32;
        for i in (20..26).rev() {
            text[i] = b'0' + (micros % 10) as u8;
            micros /= 10;
        }
        text[26] = b'Z';
        Some(text)
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Written on the stack: `to_rfc3339`'s text without its allocation.
        match self.canonical_text() {
            Some(text) => serializer.serialize_str(std::str::from_utf8(&text).expect("ascii digits")),
            None => serializer.serialize_str(&self.to_rfc3339()),
        }
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        MicroTime::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A `metav1.Time`: whole seconds, emitted as RFC 3339 `2026-01-01T00:00:00Z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    unix_secs: i64,
}

impl Time {
    pub fn from_unix_secs(unix_secs: i64) -> Self {
        Time { unix_secs }
    }

    /// Floors to whole seconds (the wire format has no fraction).
    pub fn from_unix_nanos(ns: i64) -> Self {
        Time { unix_secs: ns.div_euclid(1_000_000_000) }
    }

    pub fn unix_secs(self) -> i64 {
        self.unix_secs
    }

    /// Go's `time.Parse(time.RFC3339, s)`: accepts an optional fraction (dropped on output).
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(Time { unix_secs: go_time_parse(TIME_LAYOUT, s)?.0 })
    }

    pub fn to_rfc3339(self) -> String {
        format!("{}Z", format_civil_seconds(self.unix_secs))
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Written on the stack: `to_rfc3339`'s text without its two allocations.
        match civil_seconds_digits(self.unix_secs) {
            Some(digits) => {
                let mut text = [b'Z'; 20];
                text[..19].copy_from_slice(&digits);
                serializer.serialize_str(std::str::from_utf8(&text).expect("ascii digits"))
            }
            None => serializer.serialize_str(&self.to_rfc3339()),
        }
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Time::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// One element of a Go layout: a literal prefix followed by a standard element.
#[derive(Clone, Copy)]
enum LayoutElement {
    LongYear,
    ZeroMonth,
    ZeroDay,
    Hour,
    ZeroMinute,
    ZeroSecond,
    /// `.000000`: exactly this many digits after the separator.
    FracSecond0(usize),
    Iso8601ColonTz,
}

/// The two layouts split the way Go's `nextStdChunk` splits them: (prefix, element, element text).
fn layout_chunks(layout: &str) -> &'static [(&'static str, LayoutElement, &'static str)] {
    use LayoutElement::*;
    const MICRO: &[(&str, LayoutElement, &str)] = &[
        ("", LongYear, "2006"),
        ("-", ZeroMonth, "01"),
        ("-", ZeroDay, "02"),
        ("T", Hour, "15"),
        (":", ZeroMinute, "04"),
        (":", ZeroSecond, "05"),
        ("", FracSecond0(6), ".000000"),
        ("", Iso8601ColonTz, "Z07:00"),
    ];
    const SECONDS: &[(&str, LayoutElement, &str)] = &[
        ("", LongYear, "2006"),
        ("-", ZeroMonth, "01"),
        ("-", ZeroDay, "02"),
        ("T", Hour, "15"),
        (":", ZeroMinute, "04"),
        (":", ZeroSecond, "05"),
        ("", Iso8601ColonTz, "Z07:00"),
    ];
    if layout == MICRO_TIME_LAYOUT { MICRO } else { SECONDS }
}

/// Go's `time` package `quote`: ASCII printable kept (with `"` and `\` escaped), every byte of
/// anything else written as `\xHH`.
pub(crate) fn go_time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if (c as u32) < 0x20 || (c as u32) >= 0x80 {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

fn cannot_parse(layout: &str, value: &str, value_elem: &str, layout_elem: &str) -> String {
    format!(
        "parsing time {} as {}: cannot parse {} as {}",
        go_time_quote(value),
        go_time_quote(layout),
        go_time_quote(value_elem),
        go_time_quote(layout_elem)
    )
}

fn is_digit(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

/// Go's `getnum`: one or two digits (`fixed` demands two).
fn getnum(s: &[u8], fixed: bool) -> Option<(i64, &[u8])> {
    if !is_digit(s, 0) {
        return None;
    }
    if !is_digit(s, 1) {
        if fixed {
            return None;
        }
        return Some(((s[0] - b'0') as i64, &s[1..]));
    }
    Some((((s[0] - b'0') * 10 + (s[1] - b'0')) as i64, &s[2..]))
}

/// Go's `atoi`: optional sign, then only digits (an empty digit run is 0).
fn go_atoi(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut x: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        x = x.checked_mul(10)?.checked_add((b - b'0') as i64)?;
    }
    Some(if neg { -x } else { x })
}

/// Go's `parseNanoseconds(value, nbytes)`: `value[0]` must be `.` or `,`.
fn parse_nanoseconds(value: &[u8], nbytes: usize) -> Result<i64, &'static str> {
    if !matches!(value[0], b'.' | b',') {
        return Err("");
    }
    let nbytes = nbytes.min(10);
    let mut ns = go_atoi(&value[1..nbytes]).ok_or("")?;
    if ns < 0 {
        return Err("fractional second");
    }
    for _ in 0..(10 - nbytes) {
        ns *= 10;
    }
    Ok(ns)
}

fn days_in_month(month: i64, year: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `time.Parse(layout, value)` for [`MICRO_TIME_LAYOUT`] and [`TIME_LAYOUT`], returning Unix
/// seconds and the nanosecond fraction, or Go's exact error text.
pub(crate) fn go_time_parse(layout: &str, value_text: &str) -> Result<(i64, i64), String> {
    let mut value = value_text.as_bytes();
    let (mut year, mut month, mut day, mut hour, mut minute, mut second, mut nsec) = (0, 1, 1, 0, 0, 0, 0i64);
    let mut zone_offset_secs: i64 = 0;
    let as_str = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let range_error = |what: &str| format!("parsing time {}: {what} out of range", go_time_quote(value_text));
    let chunks = layout_chunks(layout);
    for (index, &(prefix, element, element_text)) in chunks.iter().enumerate() {
        // Go's `skip`: the literal prefix must match byte for byte.
        for &p in prefix.as_bytes() {
            if value.first() != Some(&p) {
                return Err(cannot_parse(layout, value_text, &as_str(value), prefix));
            }
            value = &value[1..];
        }
        let hold = value;
        let bad = || cannot_parse(layout, value_text, &as_str(hold), element_text);
        match element {
            LayoutElement::LongYear => {
                if value.len() < 4 || !is_digit(value, 0) {
                    return Err(bad());
                }
                year = go_atoi(&value[..4]).ok_or_else(bad)?;
                value = &value[4..];
            }
            LayoutElement::ZeroMonth => {
                let (n, rest) = getnum(value, true).ok_or_else(bad)?;
                value = rest;
                if !(1..=12).contains(&n) {
                    return Err(range_error("month"));
                }
                month = n;
            }
            LayoutElement::ZeroDay => {
                // Any one- or two-digit day; checked against the month after parsing, as Go does.
                let (n, rest) = getnum(value, true).ok_or_else(bad)?;
                value = rest;
                day = n;
            }
            LayoutElement::Hour => {
                let (n, rest) = getnum(value, false).ok_or_else(bad)?;
                value = rest;
                if n >= 24 {
                    return Err(range_error("hour"));
                }
                hour = n;
            }
            LayoutElement::ZeroMinute => {
                let (n, rest) = getnum(value, true).ok_or_else(bad)?;
                value = rest;
                if n >= 60 {
                    return Err(range_error("minute"));
                }
                minute = n;
            }
            LayoutElement::ZeroSecond => {
                let (n, rest) = getnum(value, true).ok_or_else(bad)?;
                value = rest;
                if n >= 60 {
                    return Err(range_error("second"));
                }
                second = n;
                // Go's special case: a fraction in the input although the layout has none.
                let layout_has_fraction = matches!(chunks.get(index + 1), Some((_, LayoutElement::FracSecond0(_), _)));
                if !layout_has_fraction && value.len() >= 2 && matches!(value[0], b'.' | b',') && is_digit(value, 1) {
                    let mut n = 2;
                    while n < value.len() && is_digit(value, n) {
                        n += 1;
                    }
                    nsec = parse_nanoseconds(value, n)
                        .map_err(|what| if what.is_empty() { bad() } else { range_error(what) })?;
                    value = &value[n..];
                }
            }
            LayoutElement::FracSecond0(digits) => {
                let ndigit = 1 + digits;
                if value.len() < ndigit {
                    return Err(bad());
                }
                nsec = parse_nanoseconds(value, ndigit)
                    .map_err(|what| if what.is_empty() { bad() } else { range_error(what) })?;
                value = &value[ndigit..];
            }
            LayoutElement::Iso8601ColonTz => {
                if value.first() == Some(&b'Z') {
                    value = &value[1..];
                    zone_offset_secs = 0;
                } else {
                    if value.len() < 6 || value[3] != b':' {
                        return Err(bad());
                    }
                    let (sign, hh, mm) = (value[0], &value[1..3], &value[4..6]);
                    value = &value[6..];
                    let (hr, _) = getnum(hh, true).ok_or_else(bad)?;
                    let (min, _) = getnum(mm, true).ok_or_else(bad)?;
                    if hr > 24 {
                        return Err(range_error("time zone offset hour"));
                    }
                    if min > 60 {
                        return Err(range_error("time zone offset minute"));
                    }
                    zone_offset_secs = (hr * 60 + min) * 60;
                    match sign {
                        b'+' => {}
                        b'-' => zone_offset_secs = -zone_offset_secs,
                        _ => return Err(bad()),
                    }
                }
            }
        }
    }
    if !value.is_empty() {
        return Err(format!(
            "parsing time {}: extra text: {}",
            go_time_quote(value_text),
            go_time_quote(&as_str(value))
        ));
    }
    if day < 1 || day > days_in_month(month, year) {
        return Err(range_error("day"));
    }
    let days = days_from_civil(year, month as u32, day as u32);
    let local_secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Ok((local_secs - zone_offset_secs, nsec))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH_2026_NS: i64 = 1_767_225_600 * 1_000_000_000;

    /// The canonical form read without the layout parser gives what the parser gives, and
    /// anything else (the 29th and later, leap days, bad digits, other zones, other lengths)
    /// goes to the parser: random times and their text, then edits of it.
    #[test]
    fn canonical_micro_times_read_as_the_parser_reads_them() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let micros = (x % 253_402_300_799_000_000) as i64 - 30_000_000_000_000_000;
            let text = MicroTime { unix_micros: micros }.to_rfc3339();
            let general = go_time_parse(MICRO_TIME_LAYOUT, &text).map(|(s, n)| s * 1_000_000 + n / 1_000);
            assert_eq!(MicroTime::parse(&text).map(|m| m.unix_micros), general, "{text}");
            assert_eq!(general, Ok(micros), "{text}");
        }
        for text in [
            "2024-02-29T12:00:00.000000Z",
            "2026-02-29T12:00:00.000000Z",
            "2026-04-31T00:00:00.000000Z",
            "2026-13-01T00:00:00.000000Z",
            "2026-01-01T24:00:00.000000Z",
            "2026-01-01T00:60:00.000000Z",
            "2026-01-01T00:00:60.000000Z",
            "2026-01-01T00:00:00.00000aZ",
            "2026-01-01T00:00:00.000000+00:00",
            "2026-01-01T00:00:00Z",
            "0999-01-01T00:00:00.000000Z",
            "+026-01-01T00:00:00.000000Z",
        ] {
            let general = go_time_parse(MICRO_TIME_LAYOUT, text).map(|(s, n)| s * 1_000_000 + n / 1_000);
            assert_eq!(MicroTime::parse(text).map(|m| m.unix_micros), general, "{text}");
        }
    }

    /// The stack-written serialisation is `to_rfc3339`'s text (quoted), in and out of the years
    /// it writes itself.
    #[test]
    fn serialised_times_are_their_rfc3339_text() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut cases =
            vec![0i64, -1, 1_767_225_600, 253_402_300_799, 253_402_300_800, -62_167_219_200, -62_167_219_201];
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push((x % 300_000_000_000) as i64 - 10_000_000_000);
        }
        for secs in cases {
            let t = Time::from_unix_secs(secs);
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{}\"", t.to_rfc3339()));
            for micros in [0, 1, 999_999, (x % 1_000_000) as i64] {
                let m = MicroTime::from_unix_micros(secs * 1_000_000 + micros);
                // Both are written on the stack in the years 0-9999: against Go's formatting.
                let formatted = format!("{}.{:06}Z", format_civil_seconds(secs), micros);
                assert_eq!(m.to_rfc3339(), formatted);
                assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{formatted}\""));
            }
        }
    }

    #[test]
    fn microtime_truncates_sub_microsecond_digits_like_go() {
        let t = MicroTime::from_unix_nanos(EPOCH_2026_NS + 123_456_999);
        assert_eq!(t.to_rfc3339(), "2026-01-01T00:00:00.123456Z");
        assert_eq!(t.unix_nanos(), EPOCH_2026_NS + 123_456_000);
        assert_eq!(MicroTime::from_unix_nanos(-1).unix_micros(), -1, "floor, not toward zero");
    }

    #[test]
    fn microtime_accepts_z_and_numeric_offsets_and_emits_utc() {
        let t = MicroTime::parse("2026-01-01T09:00:00.123456+09:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-01-01T00:00:00.123456Z");
        let z = MicroTime::parse("2026-01-01T00:00:00.000000Z").unwrap();
        assert_eq!(z.unix_nanos(), EPOCH_2026_NS);
    }

    #[test]
    fn microtime_without_fraction_fails_with_gos_exact_text() {
        assert_eq!(
            MicroTime::parse("2026-01-01T00:00:00Z").unwrap_err(),
            r#"parsing time "2026-01-01T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
    }

    #[test]
    fn microtime_short_and_long_fractions_fail_at_the_element_go_names() {
        assert!(
            MicroTime::parse("2026-01-01T00:00:05.491Z").unwrap_err().ends_with(r#"cannot parse ".491Z" as ".000000""#)
        );
        assert!(
            MicroTime::parse("2026-01-01T00:00:05.4912345Z").unwrap_err().ends_with(r#"cannot parse "5Z" as "Z07:00""#)
        );
        assert!(MicroTime::parse("2026-13-01T00:00:05.491234Z").unwrap_err().ends_with(": month out of range"));
        assert!(MicroTime::parse("2026-02-30T00:00:05.491234Z").unwrap_err().ends_with(": day out of range"));
        assert!(MicroTime::parse("2026-01-01T00:00:05.491234Zjunk").unwrap_err().ends_with(r#": extra text: "junk""#));
        assert!(MicroTime::parse("26-01-01").unwrap_err().ends_with(r#"cannot parse "26-01-01" as "2006""#));
    }

    #[test]
    fn far_future_times_parse_without_overflow() {
        let t = MicroTime::parse("9999-12-31T23:59:59.999999Z").unwrap();
        assert_eq!(t.to_rfc3339(), "9999-12-31T23:59:59.999999Z");
    }

    #[test]
    fn metav1_time_accepts_a_fraction_and_emits_seconds() {
        assert_eq!(Time::parse("2026-01-01T00:00:00.5Z").unwrap().to_rfc3339(), "2026-01-01T00:00:00Z");
        assert_eq!(Time::parse("2026-01-01T01:00:00+01:00").unwrap().unix_secs(), 1_767_225_600);
    }
}
