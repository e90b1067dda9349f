//! The `leasesim` command line: everything that touches files, TOML, terminals and pictures.
//! `sim-core` does the simulating; this crate reads scenarios, runs them and writes outputs.

pub mod commands;
pub mod envelope;
pub mod error;
pub mod expect;
pub mod format;
pub mod hunt;
pub mod jobs;
pub mod lab;
pub mod lease_tools;
pub mod output;
pub mod outputs;
pub mod progress;
pub mod report;
pub mod reports;
pub mod run;
pub mod scenario_file;
pub mod serve;
pub mod shipped;
pub mod sweep;
pub mod terminal;
pub mod yaml;

/// mimalloc, not glibc's malloc, for `leasesim` and every program built on this crate (the
/// benches measure what ships): the API server's generic path (JSON bodies, managedFields,
/// merge patches, server-side applies, the Events electors record) allocates and frees small
/// blocks by the dozen per request, and glibc's `free` alone was 18 % of a reconciler sweep's
/// instructions. sim-core allocates nothing per event on the election path, so the choice
/// changes no output: only how fast the generic path runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hands the pages that freed memory left empty back to the system now (mimalloc's
/// `mi_collect(true)`), rather than after its purge delay, which a process busy in one long
/// run may not reach: a fleet's setup frees as much as its world then holds (the scenario's
/// text parsed, the setup objects as JSON, the node tables), and its peak resident memory was
/// that freed memory kept beside the world.
pub fn release_freed_memory() {
    unsafe extern "C" {
        // mimalloc.h: `void mi_collect(bool force)`. Part of the library the `mimalloc` crate
        // builds and links (the global allocator above), declared here because the crate's
        // `extended` bindings need a dependency this build does not have. Declared safe: it
        // has no precondition (any thread, any time; it only frees what no one holds).
        safe fn mi_collect(force: bool);
    }
    mi_collect(true);
}
