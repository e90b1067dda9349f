//! The classroom page's redraw: for every shipped scenario, the time from a slider's request to
//! the timeline it draws (`POST /leasesim/v1/play`: load, run with the trace, draw the SVG,
//! encode the answer), in the server, as the median of five. The page adds the network (loopback)
//! and the browser's SVG layout. Goal (issue 34): ≤ 100 ms for every shipped scenario.
//!
//!   cargo run --release -p leasesim-benches --bin playground-bench

use std::time::Instant;

fn main() {
    let mut worst = (0.0f64, "");
    println!("{:<36} {:>10} {:>10}", "scenario", "median ms", "bytes");
    for (name, _) in sim_cli::shipped::SHIPPED {
        let body = format!(r#"{{"scenario": "{name}", "set": [], "seed": 1}}"#);
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..5 {
            let started = Instant::now();
            let reply = sim_cli::serve::playground::answer("POST", "/leasesim/v1/play", body.as_bytes());
            times.push(started.elapsed().as_secs_f64() * 1e3);
            if let sim_cli::serve::http_types::Reply::Body { body, .. } = reply {
                bytes = body.len();
            }
        }
        times.sort_by(f64::total_cmp);
        let median = times[2];
        if median > worst.0 {
            worst = (median, name);
        }
        println!("{name:<36} {median:>10.1} {bytes:>10}");
    }
    println!("slowest: {} at {:.1} ms (goal: 100 ms)", worst.1, worst.0);
}
