//! leasesim's library: a deterministic discrete-event simulator of Kubernetes Lease-based leader
//! election. See ARCHITECTURE.md at the repository root for the map.

pub mod api;
pub mod clock;
pub mod digits;
pub mod elector;
pub mod engine;
pub mod history;
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
