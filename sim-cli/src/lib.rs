//! The `leasesim` command line: everything that touches files, TOML, terminals and pictures.
//! `sim-core` does the simulating; this crate reads scenarios, runs them and writes outputs.

pub mod envelope;
pub mod expect;
pub mod hunt;
pub mod lab;
pub mod lease_tools;
pub mod output;
pub mod progress;
pub mod report;
pub mod reports;
pub mod run;
pub mod scenario_file;
pub mod shipped;
pub mod sweep;
pub mod terminal;
