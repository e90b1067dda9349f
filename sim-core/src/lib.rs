//! leasesim's library: a deterministic discrete-event simulator of Kubernetes Lease-based leader
//! election. See ARCHITECTURE.md at the repository root for the map.

pub mod api;
pub mod time;
pub mod trace;
pub mod world;
