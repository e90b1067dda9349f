//! Semantic versions as `github.com/blang/semver/v4` v4.0.0 (af3461a9, `v4/semver.go`) parses
//! and orders them: the library kube-apiserver validates a LeaseCandidate's versions with
//! (`Parse`) and its leader-election controller orders candidates with (`ParseTolerant`,
//! `Compare`). docs/sources/kubernetes.md ("LeaseCandidate versions") has the line numbers.
//!
//! The parse reads the text once, byte by byte, and allocates only for a prerelease (the
//! versions of a coordinated election are validated on every candidate write).

use std::cmp::Ordering;
use std::fmt;

/// A parsed version: build metadata is checked and dropped (it takes no part in `Compare`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    /// The prerelease identifiers as written, dot-separated (each checked); empty when none
    /// (a prerelease is never empty: `1.2.3-` does not parse).
    pre: String,
}

/// Why a text is not a version (`Parse`'s and `ParseTolerant`'s error cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionError {
    /// "Version string empty".
    Empty,
    /// "No Major.Minor.Patch elements found".
    NotThreeParts,
    /// A major, minor or patch number that is empty, has a character other than a digit, a
    /// leading zero, or does not fit 64 bits.
    Number(VersionPart),
    /// A prerelease identifier that is empty, has a character outside `[0-9A-Za-z-]`, or is
    /// numeric with a leading zero or beyond 64 bits.
    Prerelease,
    /// A build identifier that is empty or has a character outside `[0-9A-Za-z-]`.
    Build,
    /// `ParseTolerant`: "Short version cannot contain PreRelease/Build meta data".
    ShortWithSuffix,
}

/// Which number of a version did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionPart {
    Major,
    Minor,
    Patch,
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionError::Empty => f.write_str("Version string empty"),
            VersionError::NotThreeParts => f.write_str("No Major.Minor.Patch elements found"),
            VersionError::Number(part) => write!(f, "invalid {part:?} number"),
            VersionError::Prerelease => f.write_str("invalid prerelease"),
            VersionError::Build => f.write_str("invalid build meta data"),
            VersionError::ShortWithSuffix => f.write_str("Short version cannot contain PreRelease/Build meta data"),
        }
    }
}

impl std::error::Error for VersionError {}

/// `containsOnly(s, numbers)` and not `hasLeadingZeroes`, then `strconv.ParseUint(s, 10, 64)`
/// (which refuses an empty text and an overflow).
fn number(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    if bytes.is_empty() || bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    let mut value: u64 = 0;
    for &b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(value)
}

/// The first place of an ASCII byte in `text` (a loop: versions are a few bytes, shorter than
/// what a `memchr` call pays off for).
fn find(text: &str, byte: u8) -> Option<usize> {
    text.bytes().position(|b| b == byte)
}

/// `containsOnly(s, alphanum)`: ASCII letters, digits and `-` (a byte outside ASCII is never
/// in the set, as none of its runes is).
fn alphanumeric(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `ParseTolerant`'s leading zeros: a part as (a "0" put in front, the part after its leading
/// zeros): `TrimLeft(p, "0")` on a part of two bytes or more, and a "0" in front when nothing is
/// left or what is left does not start with a digit.
fn normal(part: &str) -> (bool, &str) {
    if part.len() <= 1 {
        return (false, part);
    }
    let rest = part.trim_start_matches('0');
    (!rest.as_bytes().first().is_some_and(u8::is_ascii_digit), rest)
}

/// `NewPRVersion`: not empty; numeric without a leading zero and within 64 bits, or alphanumeric.
fn prerelease_identifier(text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return number(text).is_some();
    }
    alphanumeric(text)
}

impl Version {
    /// The zero version, `semver.Version{}`.
    pub const ZERO: Version = Version { major: 0, minor: 0, patch: 0, pre: String::new() };

    /// `semver.Parse`: exactly `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`, no `v`, no spaces,
    /// no leading zeros.
    pub fn parse(text: &str) -> Result<Version, VersionError> {
        if text.is_empty() {
            return Err(VersionError::Empty);
        }
        // `SplitN(s, ".", 3)`, by bytes (a dot is one byte; the pieces cut at ASCII bytes are
        // whole UTF-8).
        let Some(first) = find(text, b'.') else { return Err(VersionError::NotThreeParts) };
        let (major, after) = (&text[..first], &text[first + 1..]);
        let Some(second) = find(after, b'.') else { return Err(VersionError::NotThreeParts) };
        let (minor, rest) = (&after[..second], &after[second + 1..]);
        let major = number(major).ok_or(VersionError::Number(VersionPart::Major))?;
        let minor = number(minor).ok_or(VersionError::Number(VersionPart::Minor))?;
        Version::with_tail(major, minor, false, rest)
    }

    /// `semver.ParseTolerant`: spaces trimmed, one leading `v` removed, leading zeros removed
    /// from each of the first three dot-separated parts, a missing minor or patch taken as 0
    /// (not when the last part given has a `-` or `+`), then `Parse`.
    pub fn parse_tolerant(text: &str) -> Result<Version, VersionError> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts = text.splitn(3, '.');
        let given: [Option<&str>; 3] = [parts.next(), parts.next(), parts.next()];
        let count = given.iter().flatten().count();
        if count < 3 && given[count - 1].is_some_and(|last| last.contains(['+', '-'])) {
            return Err(VersionError::ShortWithSuffix);
        }
        // The joined text is split again by `Parse`: the first two parts have no dot, so the
        // parts are these.
        let numeric = |part: Option<&str>, which| match part.map(normal) {
            None => Ok(0),                                       // filled in as "0"
            Some((true, "")) => Ok(0),                           // "0"
            Some((true, _)) => Err(VersionError::Number(which)), // "0" then a non-digit
            Some((false, digits)) => number(digits).ok_or(VersionError::Number(which)),
        };
        let major = numeric(given[0], VersionPart::Major)?;
        let minor = numeric(given[1], VersionPart::Minor)?;
        match given[2].map(normal) {
            None => Ok(Version { major, minor, ..Version::ZERO }),
            Some((zero, rest)) => Version::with_tail(major, minor, zero, rest),
        }
    }

    /// The third part: the patch number (`zero`: a "0" in front of `rest`), then `-PRERELEASE`
    /// and `+BUILD` (the build is cut at the first `+`, the prerelease at the first `-` before it).
    fn with_tail(major: u64, minor: u64, zero: bool, rest: &str) -> Result<Version, VersionError> {
        let (main, build) = match find(rest, b'+') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let (digits, pre) = match find(main, b'-') {
            Some(i) => (&main[..i], Some(&main[i + 1..])),
            None => (main, None),
        };
        let patch = match (zero, digits) {
            (true, "") => Some(0),
            // "0" and then a byte that is not a digit (`rest` starts with one when `zero`).
            (true, _) => None,
            (false, digits) => number(digits),
        }
        .ok_or(VersionError::Number(VersionPart::Patch))?;
        if let Some(pre) = pre
            && !pre.split('.').all(prerelease_identifier)
        {
            return Err(VersionError::Prerelease);
        }
        if let Some(build) = build
            && !build.split('.').all(|b| !b.is_empty() && alphanumeric(b))
        {
            return Err(VersionError::Build);
        }
        Ok(Version { major, minor, patch, pre: pre.unwrap_or("").to_string() })
    }

    /// `v.EQ(semver.Version{})`.
    pub fn is_zero(&self) -> bool {
        *self == Version::ZERO
    }
}

/// `PRVersion.Compare`: a numeric identifier is below an alphanumeric one; numbers by value,
/// the others byte by byte.
fn compare_identifiers(a: &str, b: &str) -> Ordering {
    let numeric = |s: &str| s.bytes().all(|c| c.is_ascii_digit()).then(|| number(s)).flatten();
    match (numeric(a), numeric(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.as_bytes().cmp(b.as_bytes()),
    }
}

/// `Version.Compare`: major, minor, patch; then a version without a prerelease is above one
/// with; then identifier by identifier, and when one list is a prefix of the other, the longer
/// is above.
impl Ord for Version {
    fn cmp(&self, other: &Version) -> Ordering {
        let numbers = (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let (mut a, mut b) = (self.pre.split('.'), other.pre.split('.'));
                loop {
                    match (a.next(), b.next()) {
                        (None, None) => return Ordering::Equal,
                        (None, Some(_)) => return Ordering::Less,
                        (Some(_), None) => return Ordering::Greater,
                        (Some(x), Some(y)) => match compare_identifiers(x, y) {
                            Ordering::Equal => continue,
                            unequal => return unequal,
                        },
                    }
                }
            }
        }
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u64, minor: u64, patch: u64, pre: &str) -> Version {
        Version { major, minor, patch, pre: pre.to_string() }
    }

    /// `semver.Parse` at v4.0.0 (`v4/semver.go:271-357`): each text with what the library
    /// returns, worked through its code by hand.
    #[test]
    fn parse_is_blang_semvers_parse() {
        let ok = [
            ("1.33.0", v(1, 33, 0, "")),
            ("0.0.0", Version::ZERO),
            ("1.34.0-alpha.1", v(1, 34, 0, "alpha.1")),
            ("1.2.3-rc-1.0+build.007", v(1, 2, 3, "rc-1.0")),
            ("1.2.3+b-1", v(1, 2, 3, "")),
            ("1.2.3-x+y", v(1, 2, 3, "x")),
            ("1.2.3-0a", v(1, 2, 3, "0a")),
            ("18446744073709551615.0.0", v(u64::MAX, 0, 0, "")),
        ];
        for (text, want) in ok {
            assert_eq!(Version::parse(text), Ok(want), "{text:?}");
        }
        let number = VersionError::Number;
        let bad = [
            ("", VersionError::Empty),
            ("1.33", VersionError::NotThreeParts),
            ("v1.33.0", number(VersionPart::Major)),
            (" 1.33.0", number(VersionPart::Major)),
            ("01.2.3", number(VersionPart::Major)),
            ("1.02.3", number(VersionPart::Minor)),
            ("1.2.03", number(VersionPart::Patch)),
            ("1..3", number(VersionPart::Minor)),
            ("1.2.3.4", number(VersionPart::Patch)),
            ("1.2.", number(VersionPart::Patch)),
            ("1.+2.3", number(VersionPart::Minor)),
            ("1.2.-3", number(VersionPart::Patch)),
            ("18446744073709551616.0.0", number(VersionPart::Major)),
            ("1.2.3-", VersionError::Prerelease),
            ("1.2.3-01", VersionError::Prerelease),
            ("1.2.3-a..b", VersionError::Prerelease),
            ("1.2.3-a_b", VersionError::Prerelease),
            ("1.2.3-é", VersionError::Prerelease),
            ("1.2.3+", VersionError::Build),
            ("1.2.3+a..b", VersionError::Build),
            ("1.2.3 ", number(VersionPart::Patch)),
        ];
        for (text, want) in bad {
            assert_eq!(Version::parse(text), Err(want), "{text:?}");
        }
    }

    /// `semver.ParseTolerant` at v4.0.0 (`v4/semver.go:240-268`).
    #[test]
    fn parse_tolerant_is_blang_semvers_parse_tolerant() {
        let ok = [
            ("v1.33", v(1, 33, 0, "")),
            (" v1.33.0 ", v(1, 33, 0, "")),
            ("1", v(1, 0, 0, "")),
            ("01.002.0003", v(1, 2, 3, "")),
            ("00.00.00", Version::ZERO),
            ("1.34.0-alpha.1", v(1, 34, 0, "alpha.1")),
            ("1.2.00-rc", v(1, 2, 0, "rc")),
            // "-rc" is three bytes: no zero to trim, and it does not start with a digit, so "0"
            // goes in front: "1.2.0-rc".
            ("1.2.-rc", v(1, 2, 0, "rc")),
            ("1.2.+b", v(1, 2, 0, "")),
        ];
        for (text, want) in ok {
            assert_eq!(Version::parse_tolerant(text), Ok(want), "{text:?}");
        }
        let number = VersionError::Number;
        let bad = [
            ("", number(VersionPart::Major)),
            ("vv1.2.3", number(VersionPart::Major)),
            ("1.2-rc", VersionError::ShortWithSuffix),
            ("1+b", VersionError::ShortWithSuffix),
            ("1.x", number(VersionPart::Minor)),
            ("1.2.-", number(VersionPart::Patch)),
            ("1.2.ab", number(VersionPart::Patch)),
            ("1.2.00.5", number(VersionPart::Patch)),
            ("1..3", number(VersionPart::Minor)),
            ("1.2.3-01", VersionError::Prerelease),
        ];
        for (text, want) in bad {
            assert_eq!(Version::parse_tolerant(text), Err(want), "{text:?}");
        }
    }

    /// `Version.Compare` (`v4/semver.go:125-174`) and `PRVersion.Compare` (`:411-441`), with
    /// semver.org's precedence example.
    #[test]
    fn versions_order_as_blang_semvers_compare() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1-0",
            "1.0.1",
            "1.10.0",
            "2.0.0",
        ];
        let parsed: Vec<Version> = ordered.iter().map(|t| Version::parse(t).unwrap()).collect();
        for (i, a) in parsed.iter().enumerate() {
            for (j, b) in parsed.iter().enumerate() {
                assert_eq!(a.cmp(b), i.cmp(&j), "{} against {}", ordered[i], ordered[j]);
            }
        }
        assert_eq!(Version::parse("1.2.3+a").unwrap().cmp(&Version::parse("1.2.3+b").unwrap()), Ordering::Equal);
        assert!(Version::parse("0.0.0").unwrap().is_zero());
        assert!(!Version::parse("0.0.0-a").unwrap().is_zero(), "a prerelease is not the zero version");
        assert!(Version::parse("0.0.0-a").unwrap() < Version::ZERO);
    }
}
