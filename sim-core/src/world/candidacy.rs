//! A coordinated node's candidacy: the LeaseCandidate it keeps (its informer's copy, its
//! `ensureLease` rate limiter and queue), and the apiserver's side of coordinated election (its
//! clock and controller). The routes that move them are `coordination`'s.

use super::election::Controller;
use crate::api::LeaseCandidate;
use crate::clock::NodeClock;
use std::sync::Arc;

/// One node's candidacy.
#[derive(Debug)]
pub(super) struct Candidacy {
    /// Shared with each request it sends.
    pub(super) namespace: Arc<str>,
    pub(super) lease: String,
    pub(super) binary_version: String,
    pub(super) emulation_version: String,
    /// The informer's copy of the node's LeaseCandidate: the server's answer to a write, or the
    /// stored object a watch event delivered, as the server keeps it (shared, never rendered to
    /// JSON: `ensureLease` sends it back typed, `Body::LeaseCandidate`; rendering and decoding
    /// it at every write was most of a coordinated run's time).
    pub(super) cache: Option<Arc<LeaseCandidate>>,
    /// Failures ever (the rate limiter's count for key 0).
    pub(super) failures: u32,
    /// The queued `ensureLease`: a newer one replaces it.
    pub(super) generation: u32,
    pub(super) in_flight: Option<u64>,
    /// An `Add` arrived while `ensureLease` ran: the workqueue processes the key again after
    /// `Done`, at once.
    pub(super) dirty: bool,
}

impl Candidacy {
    pub(super) fn in_flight_id(&self) -> Option<u64> {
        self.in_flight
    }

    pub(super) fn new(spec: &crate::model::Candidacy, namespace: &str, lease: &str) -> Candidacy {
        Candidacy {
            namespace: namespace.into(),
            lease: lease.to_string(),
            binary_version: spec.binary_version.clone(),
            emulation_version: spec.emulation_version.clone(),
            cache: None,
            failures: 0,
            generation: 0,
            in_flight: None,
            dirty: false,
        }
    }
}

/// The apiserver's side: its clock and the controller.
pub(super) struct Cle {
    pub(super) clock: NodeClock,
    pub(super) controller: Controller,
    pub(super) candidates: Vec<Option<Candidacy>>,
    /// The coordinated nodes by identity (a LeaseCandidate's name), in node order: a write to a
    /// candidate finds the informers to notify without a pass over the fleet. (Identities are
    /// fixed; `identity_per_start` renames the holder, not the candidate.)
    pub(super) owners: crate::FastMap<Arc<str>, Arc<[usize]>>,
}
