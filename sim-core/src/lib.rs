//! leasesim's library: a deterministic discrete-event simulator of Kubernetes Lease-based leader
//! election. See ARCHITECTURE.md at the repository root for the map.
//!
//! The API boundary, what `sim-cli`, the benches and the HTTP server build on:
//! - a run: [`scenario::Scenario`] → [`model::WorldSpec`] → [`world::World`] →
//!   [`world::RunResult`] (with [`metrics`], [`trace`], [`history`]);
//! - the API server alone: [`api::ApiServer`] (`handle` for any request, the typed Lease path,
//!   the object types and error texts);
//! - the libraries: [`elector::Algorithm`] and its [`elector::Library`] row,
//!   [`elector::ElectorConfig`];
//! - leaves: [`time`], [`clock`], [`net`], [`rng`], [`sym`], [`digits`], and [`engine`] (the
//!   benches' bare-heap yardstick).
//!
//! The rest is the crate's own: the world's parts and routes are private, and `lock` (an
//! elector's cache of its Lease) is not part of the boundary either, though `pub`: declared
//! `pub(crate)` it is inlined differently and the instruction guard read +0.7 % (2026-12-03).

pub mod api;
pub mod clock;
pub mod digits;
pub mod elector;
pub mod engine;
pub mod history;
#[doc(hidden)]
pub mod lock;
pub mod metrics;
pub mod model;
pub mod net;
pub(crate) mod prefetch;
pub mod rng;
pub mod scenario;
pub mod sym;
pub mod time;
pub mod trace;
pub mod world;

/// A hash map for lookups on the event path (the RBAC decision memo, a candidate's owners):
/// foldhash with a fixed seed, a tenth of SipHash's cost on short keys and the same on every
/// run. Never iterated where the order could reach an output.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
/// A set beside [`FastMap`], on the same terms.
pub(crate) type FastSet<T> = std::collections::HashSet<T, foldhash::fast::FixedState>;
