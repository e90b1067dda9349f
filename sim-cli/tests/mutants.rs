//! `validate` = `run`: scenario files mutated at random (lines dropped, doubled or swapped,
//! numbers, durations and names replaced) either fail `validate` — with exit 2 and a message —
//! or run to an end (exit 0 or 1). None may pass `validate` and then fail or panic in `run`.
//! The default suite tries a few hundred mutants; `cargo test -- --ignored` tries thousands.

use sim_cli::run::{self, Budget};
use sim_cli::scenario_file;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const NUMBERS: [&str; 12] =
    ["0", "-1", "1", "2", "1e12", "-1e12", "999999999", "0.001", "9223372036854775807", "3.5", "-0.5", "1e18"];
const DURATIONS: [&str; 12] = [
    "\"0s\"",
    "\"1ns\"",
    "\"876000h\"",
    "\"1ms\"",
    "\"10h\"",
    "\"500h\"",
    "\"30s\"",
    "\"1s\"",
    "\"15s\"",
    "\"2m\"",
    "\"100ms\"",
    "\"8760h\"",
];
const NAMES: [&str; 10] = [
    "\"\"",
    "\"Bad_Name\"",
    "\"x\"",
    "\"holder\"",
    "\"random\"",
    "\"server\"",
    "\"a.b\"",
    "\"-x\"",
    "\"kube-system\"",
    "\"exit\"",
];

/// One random edit of `text`.
fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    for _ in 0..1 + rng.below(3) {
        let i = rng.below(lines.len());
        match rng.below(6) {
            0 => {
                lines.remove(i);
                if lines.is_empty() {
                    break;
                }
            }
            1 => {
                let copy = lines[i].clone();
                lines.insert(i, copy);
            }
            2 => {
                let j = rng.below(lines.len());
                lines.swap(i, j);
            }
            kind => {
                // Replace the value after the first `=` with another of a likely kind.
                if let Some(eq) = lines[i].find('=') {
                    let value = match kind {
                        3 => rng.pick(&NUMBERS),
                        4 => rng.pick(&DURATIONS),
                        _ => rng.pick(&NAMES),
                    };
                    lines[i] = format!("{}= {value}", &lines[i][..eq]);
                }
            }
        }
    }
    lines.join("\n") + "\n"
}

/// Mutants of every shipped scenario; panics naming the first that passes validation but fails
/// to run. Returns (tried, passed validation).
fn check(mutants_per_scenario: usize, seed: u64) -> (usize, usize) {
    const BUDGET: u64 = 3_000_000;
    let mut rng = Rng(seed);
    let (mut tried, mut valid) = (0, 0);
    for (name, source) in sim_cli::shipped::SHIPPED {
        for _ in 0..mutants_per_scenario {
            let text = mutate(source, &mut rng);
            tried += 1;
            let Ok(loaded) = scenario_file::load(name, &text, &[]) else { continue };
            if run::prepare(&loaded, None, false, BUDGET).is_err() {
                continue;
            }
            valid += 1;
            let outcome = run::run_budgeted(&loaded, None, false, Budget { max_events: BUDGET, progress: None });
            if let Err(e) = outcome {
                panic!("a mutant of {name} passes validate but fails in run:\n{e}\n--- mutant ---\n{text}");
            }
        }
    }
    (tried, valid)
}

#[test]
fn mutants_that_validate_run_to_an_end() {
    let (tried, valid) = check(25, 0x5eed);
    assert!(valid * 10 >= tried, "too few mutants validate ({valid} of {tried}): the test would prove little");
}

#[test]
#[ignore = "thousands of mutants: run with cargo test --release -- --ignored"]
fn many_mutants_that_validate_run_to_an_end() {
    let (tried, valid) = check(2_000, 0xfeed);
    eprintln!("{valid} of {tried} mutants validated and ran");
}
