//! The classroom playground behind the page: a shipped scenario (or a pasted one) with the
//! lesson's settings changed, run in the server and drawn as `timeline.svg` is drawn. Runs
//! read nothing from the server's disk (a pasted `from_cluster` is refused) and are bounded
//! (`MAX_EVENTS` a run, `MAX_SEEDS` seeds), so a browser cannot make the server do more than a
//! classroom asks. No token: the playground only simulates.
//!
//! | method, path | what |
//! |---|---|
//! | `GET /leasesim/v1/scenarios` | the shipped scenarios, grouped as `leasesim list` groups them |
//! | `POST /leasesim/v1/play` | `{"scenario"|"source", "set": ["key=value"…], "seed"}` → the timeline, the numbers, the TOML |
//! | `POST /leasesim/v1/play-seeds` | the same over `seeds` seeds (at most 100): how many overlapped, with a 95 % interval |

use serde::Deserialize;
use serde_json::{Value, json};

use super::http_types::Reply;
use crate::report::{self, PlotMeta};
use crate::scenario_file::LoadedScenario;

/// A run's event budget here: every shipped scenario takes far less (the largest, ~60 k).
pub const MAX_EVENTS: u64 = 2_000_000;
/// The most seeds one "many seeds" request runs.
pub const MAX_SEEDS: u64 = 100;
/// The scenario the page opens on: the renew-deadline lesson.
pub const LESSON: &str = "split-brain";

pub fn is_path(path: &str) -> bool {
    matches!(path, "/leasesim/v1/scenarios" | "/leasesim/v1/play" | "/leasesim/v1/play-seeds")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlayRequest {
    /// A shipped scenario's name.
    #[serde(default)]
    scenario: Option<String>,
    /// A pasted scenario file (instead of `scenario`).
    #[serde(default)]
    source: Option<String>,
    /// `--set` overrides, `key=value`.
    #[serde(default)]
    set: Vec<String>,
    #[serde(default)]
    seed: Option<u64>,
    /// For play-seeds: how many seeds, from `seed` on.
    #[serde(default)]
    seeds: Option<u64>,
}

fn json_reply(status: u16, value: &Value) -> Reply {
    Reply::Body {
        status,
        content_type: "application/json".into(),
        body: serde_json::to_vec(value).unwrap_or_default(),
        headers: vec![("cache-control".into(), "no-store".into())],
    }
}

/// An input the playground refuses: the message (located, as `validate` says it) and the key
/// it is about, when one can be told, so the page can show it beside its field.
fn refused(message: &str) -> Reply {
    let key = message
        .split_once("--set ")
        .and_then(|(_, rest)| rest.split(['=', ':', ' ']).next())
        .map(str::to_string)
        .or_else(|| {
            // `file:line:col: a.b.c: message` from scenario errors.
            message.split(": ").nth(1).filter(|k| !k.contains(' ') && k.contains('.')).map(str::to_string)
        });
    json_reply(200, &json!({"ok": false, "error": message, "key": key}))
}

pub fn answer(method: &str, path: &str, body: &[u8]) -> Reply {
    match (method, path) {
        ("GET", "/leasesim/v1/scenarios") => scenarios(),
        ("POST", "/leasesim/v1/play") => match serde_json::from_slice::<PlayRequest>(body) {
            Ok(r) => play(&r),
            Err(e) => refused(&format!("the request: {e}")),
        },
        ("POST", "/leasesim/v1/play-seeds") => match serde_json::from_slice::<PlayRequest>(body) {
            Ok(r) => play_seeds(&r),
            Err(e) => refused(&format!("the request: {e}")),
        },
        _ => json_reply(405, &json!({"ok": false, "error": format!("{method} {path}: not here")})),
    }
}

fn scenarios() -> Reply {
    let list: Vec<Value> = crate::shipped::SHIPPED
        .iter()
        .map(|(name, text)| {
            let description = toml::from_str::<toml::Table>(text)
                .ok()
                .and_then(|t| t.get("description").and_then(|d| d.as_str()).map(crate::format::first_sentence))
                .unwrap_or_default();
            let group = if crate::shipped::INCIDENTS.contains(name) { "incidents" } else { "scenarios" };
            json!({"name": name, "group": group, "description": description})
        })
        .collect();
    json_reply(200, &json!({"lesson": LESSON, "scenarios": list}))
}

/// The scenario a request names, with its overrides: shipped scenarios by name only (never a
/// path on the server), or pasted text.
fn load(r: &PlayRequest) -> Result<LoadedScenario, String> {
    let loaded = match (&r.source, &r.scenario) {
        (Some(source), _) => crate::scenario_file::load("pasted.toml", source, &r.set),
        (None, Some(name)) => match crate::shipped::find(name) {
            Some(source) => crate::scenario_file::load(name, source, &r.set),
            None => return Err(format!("{name:?}: no shipped scenario has that name")),
        },
        (None, None) => crate::scenario_file::load(LESSON, crate::shipped::find(LESSON).unwrap_or(""), &r.set),
    }
    .map_err(|e| e.message)?;
    if loaded.scenario.from_cluster.is_some() {
        return Err(format!("{}: from_cluster reads a file on the server; not in the playground", loaded.path));
    }
    Ok(loaded)
}

/// The scenario as one TOML file with the overrides written in: `leasesim run` of it replays
/// what the page shows.
fn effective_toml(loaded: &LoadedScenario, seed: u64) -> Result<String, String> {
    let mut table: toml::Table = toml::from_str(&loaded.source).map_err(|e| e.to_string())?;
    for o in &loaded.overrides {
        crate::scenario_file::apply_override(&mut table, o)?;
    }
    table.insert("seed".into(), toml::Value::Integer(seed as i64));
    toml::to_string(&table).map_err(|e| e.to_string())
}

fn play(r: &PlayRequest) -> Reply {
    let started = std::time::Instant::now();
    let loaded = match load(r) {
        Ok(l) => l,
        Err(m) => return refused(&m),
    };
    let budget = crate::run::Budget { max_events: MAX_EVENTS, progress: None };
    let out = match crate::run::run_budgeted(&loaded, r.seed, true, budget) {
        Ok(out) => out,
        Err(e) => return refused(&e.message),
    };
    let meta = PlotMeta {
        scenario: out.scenario_name.clone(),
        subtitle: out.subtitle.clone(),
        unsafe_mode: out.unsafe_mode,
        leases: out.lease_groups.clone(),
    };
    let svg = match report::timeline_svg(&out.result, &meta) {
        Ok(svg) => svg,
        Err(m) => return refused(&m),
    };
    let svg = report::inline_svg(&svg).to_string();
    let m = &out.result.metrics;
    let leases: Vec<Value> = out
        .lease_groups
        .iter()
        .map(|g| {
            let lm = m.leases.get(&g.key);
            json!({
                "lease": g.key,
                "label": g.label,
                "can_overlap": g.unsafe_settings,
                "closed_form": g.closed_form,
                "dual_leader_seconds": lm.map_or(0.0, |l| l.dual_leader_seconds),
                "dual_leader_windows": lm.map_or(0, |l| l.dual_leader_windows),
            })
        })
        .collect();
    let toml = effective_toml(&loaded, out.seed).unwrap_or_default();
    let controls = controls(&loaded.scenario);
    let expectations: Vec<Value> =
        out.expectations.iter().map(|e| json!({"text": e.text, "passed": e.passed, "seen": e.seen})).collect();
    json_reply(
        200,
        &json!({
            "ok": true,
            "scenario": out.scenario_name,
            "subtitle": out.subtitle,
            "seed": out.seed,
            "svg": svg,
            "dual_leader_seconds": m.dual_leader_seconds,
            "dual_leader_windows": m.dual_leader_windows,
            "leaderless_seconds": m.leaderless_seconds,
            "leader_changes": m.leader_changes,
            "events": out.result.events_processed,
            "leases": leases,
            "expectations": expectations,
            "toml": toml,
            "controls": controls,
            "replay": out.replay,
            "elapsed_ms": started.elapsed().as_secs_f64() * 1e3,
        }),
    )
}

/// What the page's controls show for this scenario: the first node's durations and library
/// (its own keys, else `[defaults]`, else the library's defaults) and the first fault, in
/// seconds.
fn controls(s: &sim_core::scenario::Scenario) -> Value {
    use sim_core::scenario::NodeDoc;
    let node0 = s.nodes.first();
    let algorithm = node0
        .and_then(|n| n.algorithm.clone())
        .or_else(|| s.defaults.algorithm.clone())
        .unwrap_or_else(|| "client-go".into());
    let library = sim_core::elector::Algorithm::parse(&algorithm).map(|a| a.library());
    let secs = |f: fn(&NodeDoc) -> Option<sim_core::scenario::Duration>, i: usize| {
        node0
            .and_then(f)
            .or_else(|| f(&s.defaults))
            .map(|d| d.0)
            .or_else(|| library.map(|l| l.durations[i]))
            .map(|n| n as f64 / 1e9)
    };
    let fault = s
        .faults
        .first()
        .map(|f| json!({"kind": f.kind, "at": f.at.0 as f64 / 1e9, "duration": f.duration.map(|d| d.0 as f64 / 1e9)}));
    json!({
        "algorithm": algorithm,
        "lease_duration": secs(|n| n.lease_duration, 0),
        "renew_deadline": secs(|n| n.renew_deadline, 1),
        "retry_period": secs(|n| n.retry_period, 2),
        "fault": fault,
        "algorithms": sim_core::elector::Algorithm::ALL.iter().map(|a| a.name()).collect::<Vec<_>>(),
        "nodes": s.identities(),
    })
}

/// Wilson's 95 % interval for `k` of `n`.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p, z) = (n as f64, k as f64 / n as f64, 1.959_963_984_540_054_f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

fn play_seeds(r: &PlayRequest) -> Reply {
    let started = std::time::Instant::now();
    let loaded = match load(r) {
        Ok(l) => l,
        Err(m) => return refused(&m),
    };
    let n = r.seeds.unwrap_or(MAX_SEEDS).clamp(1, MAX_SEEDS);
    let first = r.seed.unwrap_or(1);
    let mut overlapped = 0u64;
    let mut dual_total = 0.0f64;
    for seed in first..first.saturating_add(n) {
        let budget = crate::run::Budget { max_events: MAX_EVENTS, progress: None };
        match crate::run::run_budgeted(&loaded, Some(seed), false, budget) {
            Ok(out) => {
                let d = out.result.metrics.dual_leader_seconds;
                overlapped += u64::from(d > 0.0);
                dual_total += d;
            }
            Err(e) => return refused(&format!("seed {seed}: {}", e.message)),
        }
    }
    let (low, high) = wilson(overlapped, n);
    json_reply(
        200,
        &json!({
            "ok": true,
            "seeds": n,
            "first_seed": first,
            "overlapped": overlapped,
            "fraction": overlapped as f64 / n as f64,
            "interval95": [low, high],
            "mean_dual_leader_seconds": dual_total / n as f64,
            "elapsed_ms": started.elapsed().as_secs_f64() * 1e3,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(reply: Reply) -> Value {
        match reply {
            Reply::Body { body, .. } => serde_json::from_slice(&body).unwrap(),
            _ => panic!("a body"),
        }
    }

    /// The lesson: RD past LD − RP opens a dual-leader window; below it, none.
    #[test]
    fn the_renew_deadline_lesson_opens_a_window_past_the_boundary() {
        let play = |rd: &str| {
            let req =
                json!({"scenario": "split-brain", "set": [format!("defaults.renew_deadline=\"{rd}\"")], "seed": 1});
            body(answer("POST", "/leasesim/v1/play", req.to_string().as_bytes()))
        };
        let unsafe_ = play("25s");
        assert_eq!(unsafe_["ok"], true, "{unsafe_}");
        assert!(unsafe_["dual_leader_seconds"].as_f64().unwrap() > 0.0, "RD 25 s + RP 2 s ≥ LD 15 s");
        assert!(unsafe_["svg"].as_str().unwrap().starts_with("<svg"));
        let safe = play("10s");
        assert_eq!(safe["dual_leader_seconds"].as_f64(), Some(0.0));
        // The TOML it offers replays the same run.
        let toml = safe["toml"].as_str().unwrap();
        let replay = crate::scenario_file::load("d.toml", toml, &[]).unwrap();
        let out = crate::run::run(&replay, None, false).unwrap();
        assert_eq!(out.result.metrics.dual_leader_seconds, 0.0);
        assert_eq!(out.result.events_processed, safe["events"].as_u64().unwrap());
    }

    /// Every control of the page writes an override the scenario accepts.
    #[test]
    fn every_control_of_the_page_is_a_valid_override() {
        let set = [
            "defaults.lease_duration=\"20s\"",
            "defaults.renew_deadline=\"12s\"",
            "defaults.retry_period=\"2.5s\"",
            "defaults.algorithm=\"client-go\"",
            "defaults.request_timeout=\"3s\"",
            "defaults.network.latency=\"50ms\"",
            "nodes.0.clock.offset=\"-2.5s\"",
            "nodes.0.clock.drift_ppm=100000",
            "defaults.client_go=\"v0.30\"",
            "faults.0.at=\"25s\"",
            "faults.0.duration=\"16s\"",
        ];
        let req = json!({"scenario": "split-brain", "set": set, "seed": 3});
        let r = body(answer("POST", "/leasesim/v1/play", req.to_string().as_bytes()));
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["controls"]["lease_duration"].as_f64(), Some(20.0));
        assert_eq!(r["controls"]["fault"]["duration"].as_f64(), Some(16.0));
    }

    #[test]
    fn bad_values_and_server_files_are_refused_with_the_key() {
        let req = json!({"scenario": "split-brain", "set": ["defaults.renew_deadline=\"ten\""]});
        let r = body(answer("POST", "/leasesim/v1/play", req.to_string().as_bytes()));
        assert_eq!(r["ok"], false);
        assert_eq!(r["key"], "defaults.renew_deadline", "{r}");
        let req = json!({"source": "name = \"x\"\ndescription = \"x\"\nduration = \"10s\"\nfrom_cluster = \"/etc/passwd\"\n[[nodes]]\n"});
        let r = body(answer("POST", "/leasesim/v1/play", req.to_string().as_bytes()));
        assert!(r["error"].as_str().unwrap().contains("not in the playground"), "{r}");
        let req = json!({"scenario": "../../etc/passwd"});
        let r = body(answer("POST", "/leasesim/v1/play", req.to_string().as_bytes()));
        assert!(r["error"].as_str().unwrap().contains("no shipped scenario"), "{r}");
        let req = json!({"source": "name = \"x\"\n[[nodes]]\nlease_duration = 3\n"});
        let r = body(answer("POST", "/leasesim/v1/play", req.to_string().as_bytes()));
        assert!(r["error"].as_str().unwrap().starts_with("pasted.toml:"), "located: {r}");
    }

    #[test]
    fn many_seeds_give_a_fraction_with_its_interval() {
        let req = json!({"scenario": "split-brain", "seeds": 5});
        let r = body(answer("POST", "/leasesim/v1/play-seeds", req.to_string().as_bytes()));
        assert_eq!((r["ok"].as_bool(), r["seeds"].as_u64()), (Some(true), Some(5)), "{r}");
        let (low, high) = wilson(0, 100);
        assert!(low < 1e-12 && (0.036..0.038).contains(&high), "{low} {high}");
    }
}
