//! Plumbing shared by the library electors (fabric8, Java, C#, nestjs, the Rust crates): one
//! request in flight at most, one live timer per kind (a re-armed or cancelled timer's older
//! generation is ignored), and the record a library writes.

use super::Outputs;
use super::record::{Record, micros_of};
use super::{Generation, LockOp, Now, Output, TimerKind};
use crate::sym::Sym;
use crate::time::Nanos;

#[derive(Debug, Default)]
pub struct Io {
    generations: [Generation; TimerKind::COUNT],
    /// A request is in flight.
    pub awaiting: bool,
}

impl Io {
    pub fn send(&mut self, op: LockOp, timeout: Option<Nanos>, out: &mut Outputs) {
        self.awaiting = true;
        out.push(Output::Send { op, timeout });
    }

    /// Forgets the request in flight (its answer, if any, is dropped).
    pub fn abandon(&mut self, out: &mut Outputs) {
        if self.awaiting {
            self.awaiting = false;
            out.push(Output::Abandon);
        }
    }

    pub fn arm(&mut self, kind: TimerKind, after: Nanos, out: &mut Outputs) {
        let g = &mut self.generations[kind.index()];
        *g = g.wrapping_add(1);
        out.push(Output::Timer { kind, after, generation: *g });
    }

    pub fn cancel(&mut self, kind: TimerKind) {
        let g = &mut self.generations[kind.index()];
        *g = g.wrapping_add(1);
    }

    pub fn cancel_all(&mut self) {
        for g in &mut self.generations {
            *g = g.wrapping_add(1);
        }
    }

    /// Is this the live timer of its kind?
    pub fn live(&self, kind: TimerKind, generation: Generation) -> bool {
        self.generations[kind.index()] == generation
    }
}

/// A record naming `me`, both times `now` (wall clock), `lease_duration_seconds` as configured.
pub fn fresh_record(me: Sym, lease_duration_seconds: i32, now: Now, transitions: i32) -> Record {
    Record {
        holder_identity: me,
        lease_duration_seconds,
        acquire_time_micros: Some(micros_of(now.wall)),
        renew_time_micros: Some(micros_of(now.wall)),
        leader_transitions: transitions,
        ..Record::default()
    }
}

/// Milliseconds of the wall clock (`System.currentTimeMillis`, `Date.now()`).
pub fn wall_ms(now: Now) -> i64 {
    now.wall.div_euclid(1_000_000)
}

/// `renewTime + leaseDurationSeconds` in wall nanoseconds, if renewTime is set.
pub fn renew_expiry(record: &Record) -> Option<i64> {
    record.renew_expiry_unix_nanos()
}
