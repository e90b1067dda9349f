//! Whole-workload benchmarks, each a ratio against a reference measured in the same process, so
//! the figure holds on a shared, noisy machine (docs/performance.md has the dated results):
//!
//! - `flap`: the flap family (500 one-hour runs of three client-go nodes, one core) against a
//!   bare binary-heap loop firing the same number of events;
//! - `trace`: the same runs with the event trace kept, against trace off;
//! - `scale`: 30 … 100,000 electors (three per Lease; up to `--max-electors`, default 30,000)
//!   for one simulated hour, each against the bare loop at that queue size; writes `scale.csv`
//!   and `scale.svg` (wall microseconds per simulated elector-hour against electors: flat is
//!   linear) to `--out` (default `target/bench`), and says which vector extensions the
//!   processor has (the figures of an AVX-512 host and an AVX2-only one differ).
//!
//! Run: `cargo bench -p leasesim-benches --bench workloads -- [flap|trace|scale|all]
//! [--pairs N] [--seeds N] [--max-electors N] [--out DIR]`. Measurements alternate A B A B …
//! and the median of the per-pair ratios is reported.

use leasesim_benches::{bare_heap_loop, flap_family, run_all, scale_spec};
use std::time::Instant;

struct Options {
    what: String,
    pairs: usize,
    seeds: u64,
    max_electors: usize,
    out: std::path::PathBuf,
}

fn options() -> Options {
    let mut o = Options {
        what: "all".into(),
        pairs: 5,
        seeds: 100,
        max_electors: 30_000,
        out: std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/bench")),
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--pairs" => o.pairs = value().parse().expect("--pairs N"),
            "--seeds" => o.seeds = value().parse().expect("--seeds N"),
            "--max-electors" => o.max_electors = value().parse().expect("--max-electors N"),
            "--out" => o.out = value().into(),
            other if !other.starts_with('-') => o.what = other.to_string(),
            _ => {}
        }
    }
    o
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Times `a` and `b` alternately `pairs` times; returns (median a, median b, median a/b).
fn paired(pairs: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> (f64, f64, f64) {
    let (mut xa, mut xb, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let ta = a();
        let tb = b();
        xa.push(ta);
        xb.push(tb);
        ratio.push(ta / tb);
    }
    (median(xa), median(xb), median(ratio))
}

fn seconds(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn flap(o: &Options) {
    let events = run_all(flap_family(o.seeds, false));
    let runs = 5 * o.seeds;
    // The queue of a three-node run holds about six events (a timer or a message per node).
    let (sim, bare, ratio) = paired(
        o.pairs,
        || seconds(|| assert_eq!(run_all(flap_family(o.seeds, false)), events)),
        || {
            seconds(|| {
                std::hint::black_box(bare_heap_loop(events, 6));
            })
        },
    );
    // The specs are built inside the timed part above (TOML parse per run, as a sweep does);
    // the per-event figure below counts the simulation alone.
    let specs_only = median((0..o.pairs).map(|_| seconds(|| drop(flap_family(o.seeds, false)))).collect());
    let sim_only = sim - specs_only;
    println!(
        "flap: {runs} runs, {events} events ({:.0} per run); leasesim {sim:.3} s ({:.1} runs/s, {:.1} ns/event \
         without building specs: {:.3} s of it); bare heap loop {bare:.3} s ({:.1} ns/event); \
         ratio per event {:.2} (whole runs incl. spec building {ratio:.2})",
        events as f64 / runs as f64,
        runs as f64 / sim,
        sim_only * 1e9 / events as f64,
        specs_only,
        bare * 1e9 / events as f64,
        sim_only / bare,
    );
}

fn trace(o: &Options) {
    let (on, off, ratio) = paired(
        o.pairs,
        || {
            let specs = flap_family(o.seeds / 5, true);
            seconds(|| {
                std::hint::black_box(run_all(specs));
            })
        },
        || {
            let specs = flap_family(o.seeds / 5, false);
            seconds(|| {
                std::hint::black_box(run_all(specs));
            })
        },
    );
    println!("trace: {} runs; trace on {on:.3} s, off {off:.3} s: on/off {ratio:.2}", 5 * (o.seeds / 5));
}

fn scale(o: &Options) {
    let sizes: Vec<usize> =
        [30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000].into_iter().filter(|&n| n <= o.max_electors).collect();
    println!("scale: {}", machine());
    let mut rows = Vec::new();
    for &n in &sizes {
        let pairs = if n >= 3_000 { 1 } else { o.pairs.min(3) };
        let events = std::cell::Cell::new(0);
        let (sim, bare, ratio) = paired(
            pairs,
            || {
                let spec = scale_spec(n);
                seconds(|| events.set(run_all(vec![spec])))
            },
            || {
                seconds(|| {
                    std::hint::black_box(bare_heap_loop(events.get().max(1), 2 * n));
                })
            },
        );
        let events = events.get();
        println!(
            "scale: {n} electors, {events} events: {sim:.3} s per simulated hour ({:.1} ns/event); bare loop {bare:.3} s \
             ({:.1} ns/event); ratio {ratio:.2}",
            sim * 1e9 / events as f64,
            bare * 1e9 / events as f64
        );
        rows.push((n, events, sim, bare));
    }
    std::fs::create_dir_all(&o.out).expect("--out");
    let mut csv = String::from("electors,events,seconds_per_simulated_hour,bare_loop_seconds\n");
    // Per elector-hour: the cost of a fleet is linear in its size when this is flat.
    for (n, events, sim, bare) in &rows {
        csv.push_str(&format!("{n},{events},{sim:.4},{bare:.4}\n"));
    }
    std::fs::write(o.out.join("scale.csv"), csv).expect("scale.csv");
    plot(&rows, &o.out.join("scale.svg"));
    println!("wrote {}/scale.csv and scale.svg", o.out.display());
}

/// The processor and the vector extensions the ChaCha8 refill can take (its widest is used).
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown processor".into());
    #[cfg(target_arch = "x86_64")]
    let features = format!(
        "AVX2 {}, AVX-512F {}",
        if std::arch::is_x86_feature_detected!("avx2") { "yes" } else { "no" },
        if std::arch::is_x86_feature_detected!("avx512f") { "yes" } else { "no" }
    );
    #[cfg(not(target_arch = "x86_64"))]
    let features = "not x86_64".to_string();
    format!("{model}; {features}")
}

/// Microseconds of wall time per simulated elector-hour against electors (a log axis), leasesim
/// and the bare loop of the same events and queue size: a flat line is a cost linear in the fleet.
fn plot(rows: &[(usize, u64, f64, f64)], path: &std::path::Path) {
    use plotters::prelude::*;
    sim_cli::sweep::plots::ensure_font();
    let per = |seconds: f64, n: usize| seconds * 1e6 / n as f64;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).expect("draw");
    let min_x = rows.iter().map(|r| r.0).min().unwrap_or(1) as f64 / 1.3;
    let max_x = rows.iter().map(|r| r.0).max().unwrap_or(1) as f64 * 1.3;
    let max_y = rows.iter().map(|r| per(r.2, r.0).max(per(r.3, r.0))).fold(0.0, f64::max) * 1.2;
    let mut chart = ChartBuilder::on(&root)
        .caption("leasesim: wall time per simulated elector-hour (3 electors per Lease)", ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((min_x..max_x).log_scale(), 0.0..max_y)
        .expect("chart");
    chart
        .configure_mesh()
        .x_desc("electors (log scale)")
        .y_desc("wall µs per elector-hour")
        .x_label_formatter(&|x| {
            if *x >= 1000.0 { format!("{}k", (x / 1000.0).round()) } else { format!("{x:.0}") }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .expect("mesh");
    let sim: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, per(r.2, r.0))).collect();
    let bare: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, per(r.3, r.0))).collect();
    let blue = RGBColor(31, 119, 180);
    let grey = RGBColor(127, 127, 127);
    chart
        .draw_series(LineSeries::new(sim.clone(), blue.stroke_width(3)))
        .expect("line")
        .label("leasesim, in process (set-up to result)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], blue.stroke_width(3)));
    chart.draw_series(sim.iter().map(|&p| Circle::new(p, 5, blue.filled()))).expect("points");
    chart
        .draw_series(LineSeries::new(bare.clone(), grey.stroke_width(2)))
        .expect("line")
        .label("bare binary-heap loop, same events and queue size")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], grey.stroke_width(2)));
    chart.draw_series(bare.iter().map(|&p| Circle::new(p, 4, grey.filled()))).expect("points");
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(200, 200, 200))
        .draw()
        .expect("legend");
    root.present().expect("write the plot");
}

fn main() {
    let o = options();
    match o.what.as_str() {
        "flap" => flap(&o),
        "trace" => trace(&o),
        "scale" => scale(&o),
        _ => {
            flap(&o);
            trace(&o);
            scale(&o);
        }
    }
}
