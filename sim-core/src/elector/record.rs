//! The leader-election record, as client-go's `resourcelock.LeaderElectionRecord` holds it, and
//! the "raw record" comparison that decides when a follower refreshes its observedTime.

use crate::sym::Sym;
use crate::time::UnixNanos;

/// What the elector reads from and writes to the Lease spec. Times are Unix microseconds
/// (MicroTime precision) because that is all the Lease can hold; the holder is interned
/// ([`Sym::EMPTY`] for none), so a record is a small copyable value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub holder_identity: Sym,
    pub lease_duration_seconds: i32,
    pub acquire_time_micros: Option<i64>,
    pub renew_time_micros: Option<i64>,
    pub leader_transitions: i32,
    /// `strategy` and `preferredHolder` as read (coordinated leader election; [`Sym::EMPTY`]
    /// for none). client-go's own writes never carry them: a write erases both.
    pub strategy: Sym,
    pub preferred_holder: Sym,
    /// The spec fields that were absent (null) when this record was read. client-go reads an
    /// absent field as its zero value; some libraries (C#, Java, the Rust crates) tell the two
    /// apart. Empty for records an elector builds.
    pub absent: Fields,
}

/// A set of Lease spec fields (a bit each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Fields(pub u8);

impl Fields {
    pub const NONE: Fields = Fields(0);
    pub const HOLDER: Fields = Fields(1);
    pub const DURATION: Fields = Fields(2);
    pub const ACQUIRE: Fields = Fields(4);
    pub const RENEW: Fields = Fields(8);
    pub const TRANSITIONS: Fields = Fields(16);

    pub const fn with(self, other: Fields) -> Fields {
        Fields(self.0 | other.0)
    }

    pub const fn has(self, other: Fields) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// client-go compares `json.Marshal(record)` byte for byte, and the record's times are
/// `metav1.Time`, which marshals with **second** precision. Two records that differ only below
/// the second are the same raw record: a follower does not notice such a renewal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord {
    holder_identity: Sym,
    lease_duration_seconds: i32,
    acquire_time_secs: Option<i64>,
    renew_time_secs: Option<i64>,
    leader_transitions: i32,
    strategy: Sym,
    preferred_holder: Sym,
}

impl RawRecord {
    /// This raw record with the renewTime `renew_time_secs` (whole seconds, [`raw_seconds`])
    /// instead: what [`Record::raw`] gives for a record that differs from this one's in its
    /// renewTime alone.
    #[inline]
    pub fn renewed(self, renew_time_secs: Option<i64>) -> RawRecord {
        RawRecord { renew_time_secs, ..self }
    }
}

/// A time of the record as its raw record holds it: whole seconds, towards the past. (Times
/// after 1970 divide unsigned: a multiplication and a shift, where the signed floor division
/// needs a remainder and a correction.)
#[inline(always)]
pub fn raw_seconds(micros: Option<i64>) -> Option<i64> {
    micros.map(|us| if us >= 0 { (us as u64 / 1_000_000) as i64 } else { us.div_euclid(1_000_000) })
}

/// Whether two renewTimes differ in their whole seconds ([`raw_seconds`]): two a second or
/// more apart do, with no division (a candidate's polls in a quiet stretch read renewals a
/// RetryPeriod apart), equal ones do not.
#[inline(always)]
pub fn seconds_differ(a: Option<i64>, b: Option<i64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if x.abs_diff(y) >= 1_000_000 => true,
        (Some(x), Some(y)) if x == y => false,
        _ => raw_seconds(a) != raw_seconds(b),
    }
}

impl Default for Record {
    fn default() -> Self {
        Record {
            holder_identity: Sym::EMPTY,
            lease_duration_seconds: 0,
            acquire_time_micros: None,
            renew_time_micros: None,
            leader_transitions: 0,
            strategy: Sym::EMPTY,
            preferred_holder: Sym::EMPTY,
            absent: Fields::NONE,
        }
    }
}

impl Record {
    /// No holder (an empty or absent `holderIdentity`).
    pub fn holder_is_empty(&self) -> bool {
        self.holder_identity == Sym::EMPTY
    }

    /// The raw record as a client marshals it: with `strategy` and `preferredHolder` from
    /// client-go v0.31 (`LeaderElectionRecord` gained both, without omitempty), without them
    /// before (an older client never decodes them).
    pub fn raw(&self, with_strategy: bool) -> RawRecord {
        RawRecord {
            holder_identity: self.holder_identity,
            lease_duration_seconds: self.lease_duration_seconds,
            acquire_time_secs: raw_seconds(self.acquire_time_micros),
            renew_time_secs: raw_seconds(self.renew_time_micros),
            leader_transitions: self.leader_transitions,
            strategy: if with_strategy { self.strategy } else { Sym::EMPTY },
            preferred_holder: if with_strategy { self.preferred_holder } else { Sym::EMPTY },
        }
    }

    /// `renewTime + leaseDurationSeconds` as a Unix instant in nanoseconds, if renewTime is set.
    pub fn renew_expiry_unix_nanos(&self) -> Option<UnixNanos> {
        self.renew_time_micros.map(|us| us * 1_000 + self.lease_duration_seconds as i64 * 1_000_000_000)
    }
}

/// MicroTime truncation as the client writes it (Go's formatter truncates toward the past).
pub fn micros_of(wall: UnixNanos) -> i64 {
    wall.div_euclid(1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_seconds_floor_towards_the_past_on_both_sides_of_1970() {
        for us in
            [i64::MIN, -1_000_001, -1_000_000, -999_999, -1, 0, 1, 999_999, 1_000_000, 1_764_979_200_123_456, i64::MAX]
        {
            assert_eq!(raw_seconds(Some(us)), Some(us.div_euclid(1_000_000)), "{us}");
        }
        assert_eq!(raw_seconds(None), None);
    }

    #[test]
    fn seconds_differ_is_the_comparison_of_raw_seconds() {
        let times = [None, Some(i64::MIN), Some(-1_000_001), Some(-1), Some(0), Some(999_999), Some(1_000_000)];
        let near = [0, 1, 999_999, 1_000_000, 1_000_001, 2_500_000];
        for a in times {
            for b in times.iter().copied().chain(near.iter().map(|d| a.map(|x| x.saturating_add(*d)))) {
                assert_eq!(seconds_differ(a, b), raw_seconds(a) != raw_seconds(b), "{a:?} {b:?}");
                assert_eq!(seconds_differ(b, a), raw_seconds(a) != raw_seconds(b), "{b:?} {a:?}");
            }
        }
    }

    #[test]
    fn sub_second_renewals_are_invisible_in_the_raw_record() {
        let a = Record { holder_identity: Sym(1), renew_time_micros: Some(1_000_000_100), ..Default::default() };
        let b = Record { renew_time_micros: Some(1_000_900_000), ..a };
        let c = Record { renew_time_micros: Some(1_001_000_000), ..a };
        assert_ne!(a, b);
        assert_eq!(a.raw(true), b.raw(true));
        assert_ne!(a.raw(true), c.raw(true));
    }

    /// client-go v0.31 (20993758b) added `strategy` and `preferredHolder` to the record: a
    /// change of only those restarts a v0.31+ follower's expiry timer, not an older one's.
    #[test]
    fn strategy_and_preferred_holder_count_in_the_raw_record_from_v0_31() {
        let a = Record { holder_identity: Sym(1), renew_time_micros: Some(1_000_000_000), ..Default::default() };
        let b = Record { preferred_holder: Sym(2), ..a };
        let c = Record { strategy: Sym(3), ..a };
        assert_ne!(a.raw(true), b.raw(true));
        assert_ne!(a.raw(true), c.raw(true));
        assert_eq!(a.raw(false), b.raw(false));
        assert_eq!(a.raw(false), c.raw(false));
    }

    #[test]
    fn micro_time_truncates_toward_the_past() {
        assert_eq!(micros_of(1_999), 1);
        assert_eq!(micros_of(-1), -1);
    }
}
