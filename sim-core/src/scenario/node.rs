//! One node's table (with `[defaults]` under it) turned into a `NodeSpec`, and one scripted
//! action into a `ScriptedAction`: every key checked, with the path of the key at fault.

use super::doc::{ActionDoc, DirectionDoc, Duration, DurationDistDoc, DurationShape, NodeDoc, NumberDist};
use super::keys::unknown_word;
use super::{MAX_DRIFT_PPM, MIN_DRIFT_PPM, Scenario, ScenarioError, check_name, err};
use crate::api::{Kind, User};
use crate::clock::{ClockSpec, ClockStep, Wander};
use crate::elector::library::ClientGoRelease;
use crate::elector::{AfterLost, Algorithm, ElectorConfig, default_request_timeout_for};
use crate::model::{ActionOp, FieldManager, NodeSpec, ReconcileMode, ReconcilerSpec, ScriptedAction};
use crate::net::{DirectionSpec, LinkSpec};
use crate::rng::ComponentRng;
use crate::time::Nanos;

impl Scenario {
    /// A node's clock: `[defaults]` overridden key by key, its offset and drift drawn from the
    /// node's own stream of the seed where a distribution gives them, every key checked.
    pub(super) fn node_clock(&self, i: usize, doc: &NodeDoc, identity: &str) -> Result<ClockSpec, ScenarioError> {
        let d = &self.defaults;
        let idx = i.to_string();
        let perr = |k: &'static str, m: String| ScenarioError {
            path: vec!["nodes".into(), idx.clone(), k.into()],
            message: m,
        };
        let dc = d.clock.clone().unwrap_or_default();
        let nc = doc.clock.clone().unwrap_or_default();
        let mut rng = ComponentRng::of_parts(self.seed, &["node/", identity, "/clock"]);
        let offset_ns =
            match (nc.offset.or(dc.offset), nc.offset_seconds_dist.as_ref().or(dc.offset_seconds_dist.as_ref())) {
                (Some(o), _) => o.0,
                (None, Some(dist)) => (dist.sample(&mut rng) * 1e9).round() as i64,
                (None, None) => 0,
            };
        for dist in [
            nc.offset_seconds_dist.as_ref().or(dc.offset_seconds_dist.as_ref()),
            nc.drift_ppm_dist.as_ref().or(dc.drift_ppm_dist.as_ref()),
        ]
        .into_iter()
        .flatten()
        {
            match *dist {
                NumberDist::Normal([_, std]) if !(std >= 0.0 && std.is_finite()) => {
                    return Err(perr(
                        "clock",
                        format!("normal distribution standard deviation {std} must be a finite number >= 0"),
                    ));
                }
                NumberDist::Uniform([a, b]) if !(a <= b && a.is_finite() && b.is_finite()) => {
                    return Err(perr(
                        "clock",
                        format!("uniform distribution [{a}, {b}] needs finite bounds with the first <= the second"),
                    ));
                }
                _ => {}
            }
        }
        let drift_ppm = match (nc.drift_ppm.or(dc.drift_ppm), nc.drift_ppm_dist.as_ref().or(dc.drift_ppm_dist.as_ref()))
        {
            (Some(v), _) => v,
            (None, Some(dist)) => dist.sample(&mut rng),
            (None, None) => 0.0,
        };
        // A drawn drift is kept within the bounds (a normal distribution's far tail would
        // otherwise make a rare seed fail); a given one must be within them.
        let drawn = nc.drift_ppm.or(dc.drift_ppm).is_none();
        let drift_ppm = if drawn { drift_ppm.clamp(MIN_DRIFT_PPM, MAX_DRIFT_PPM) } else { drift_ppm };
        if !drift_ppm.is_finite() || !(MIN_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&drift_ppm) {
            return Err(perr(
                "clock",
                format!(
                    "drift_ppm {drift_ppm} is outside {MIN_DRIFT_PPM} to {MAX_DRIFT_PPM}: a clock's rate must stay \
                     between 0.1× and 10× true time (a clock cannot stop, and a faster one multiplies every \
                     timer's events)"
                ),
            ));
        }
        let steps = nc.steps.or(dc.steps).unwrap_or_default();
        for (k, s) in steps.iter().enumerate() {
            if s.at.0 > self.duration.0 {
                return Err(ScenarioError {
                    path: vec!["nodes".into(), idx.clone(), "clock".into(), "steps".into(), k.to_string(), "at".into()],
                    message: "is beyond the run's duration".into(),
                });
            }
        }
        let clock = ClockSpec {
            offset_ns,
            drift_ppb: (drift_ppm * 1000.0).round() as i64,
            steps: steps.iter().map(|s| ClockStep { at: s.at.0, delta_ns: s.delta.0 }).collect(),
            wander: nc.wander.or(dc.wander).map(|w| Wander {
                amplitude_ns: w.amplitude.0 as i64,
                period_ns: w.period.0,
                phase_rad: w.phase,
            }),
        };
        crate::clock::NodeClock::new(clock.clone(), 0).map_err(|m| perr("clock", m))?;
        Ok(clock)
    }

    /// When a node starts: given, or drawn from the node's own stream of the seed.
    pub(super) fn node_start_at(&self, i: usize, doc: &NodeDoc, identity: &str) -> Result<Nanos, ScenarioError> {
        let perr = |k: &'static str, m: String| ScenarioError {
            path: vec!["nodes".into(), i.to_string(), k.into()],
            message: m,
        };
        Ok(match doc.start_at.clone().or_else(|| self.defaults.start_at.clone()) {
            None => 0,
            Some(DurationDistDoc::Fixed(d)) => {
                if d.0 > self.duration.0 {
                    return Err(perr("start_at", "is beyond the run's duration".into()));
                }
                d.0
            }
            // Drawn per seed from the node's own stream; a draw past the end means the node
            // never starts in this run.
            Some(dist) => {
                if let DurationDistDoc::Shaped(DurationShape::Uniform([a, b])) = &dist
                    && a.0 > b.0
                {
                    return Err(perr("start_at", "uniform bounds must be in order (the first ≤ the second)".into()));
                }
                let mut rng = ComponentRng::of_parts(self.seed, &["node/", identity, "/start_at"]);
                dist.to_dist().sample(&mut rng)
            }
        })
    }

    pub(super) fn node_spec(
        &self,
        i: usize,
        doc: &NodeDoc,
        identity: &str,
        namespace: &str,
        lease_name: &str,
    ) -> Result<NodeSpec, ScenarioError> {
        let d = &self.defaults;
        let idx = i.to_string();
        let p = |k: &'static str| -> Vec<String> { vec!["nodes".into(), idx.clone(), k.into()] };
        let perr = |k: &'static str, m: String| ScenarioError { path: p(k), message: m };
        macro_rules! pick {
            ($field:ident) => {
                doc.$field.clone().or_else(|| d.$field.clone())
            };
        }
        let algorithm_name = pick!(algorithm).unwrap_or_else(|| "client-go".into());
        let algorithm = Algorithm::parse(&algorithm_name).ok_or_else(|| {
            let names: Vec<&str> = Algorithm::ALL.iter().map(|a| a.name()).collect();
            perr("algorithm", unknown_word("algorithm", &algorithm_name, &names))
        })?;
        let library = algorithm.library();
        let mut elector = ElectorConfig::new(identity, algorithm);
        // Version, expiry and fast path: a node's own key must fit its algorithm; a default
        // applies only to the nodes it fits.
        let is_client_go = matches!(library.client_go, ClientGoRelease::Chosen(_));
        if let Some(v) = &doc.client_go
            && !is_client_go
        {
            return Err(perr(
                "client_go",
                format!(
                    "{v:?} names a client-go release, but this node runs {algorithm_name:?}{}",
                    match library.client_go {
                        ClientGoRelease::Fixed(fixed) => format!(
                            " ({algorithm_name} is client-go {}: write algorithm = \"client-go\" with client_go instead)",
                            fixed.name()
                        ),
                        _ => String::new(),
                    }
                ),
            ));
        }
        if let Some(v) = pick!(client_go).filter(|_| is_client_go) {
            elector.client_go = crate::elector::ClientGoVersion::parse(&v).map_err(|m| perr("client_go", m))?;
        }
        // Another library's release: a node's own key must name one its library has; from
        // `[defaults]` it applies to the nodes whose library has that release.
        if let Some(v) = &doc.version {
            let called = library.called;
            if library.versions.is_empty() {
                let how = if is_client_go { " (client-go's releases are chosen with `client_go`)" } else { "" };
                return Err(perr(
                    "version",
                    format!(
                        "{v:?}: leasesim models one release of {called}, {}{how}; see docs/algorithms.md",
                        library.source.version
                    ),
                ));
            }
            if !library.versions.contains(&v.as_str()) {
                return Err(perr("version", unknown_word(&format!("release of {called}"), v, library.versions)));
            }
        }
        if let Some(v) = pick!(version)
            && let Some(i) = library.versions.iter().position(|r| *r == v)
        {
            elector.version = i as u8;
        }
        if !library.keys.client_go_loop {
            for (key, set) in [("expiry", doc.expiry.is_some()), ("fast_path", doc.fast_path.is_some())] {
                if set {
                    let who = library.called;
                    return Err(perr(
                        if key == "expiry" { "expiry" } else { "fast_path" },
                        format!("{who} has its own loop; `{key}` applies to the client-go and renew-time algorithms"),
                    ));
                }
            }
        } else {
            if let Some(e) = pick!(expiry) {
                elector.expiry = Some(crate::elector::ExpiryRule::parse(&e).ok_or_else(|| {
                    perr("expiry", format!("unknown expiry rule {e:?}; expected observed-time or renew-time"))
                })?);
            }
            elector.fast_path = pick!(fast_path);
        }
        if let Some(labels) = pick!(labels) {
            if elector.client_go_version().is_none_or(|v| v.minor < 34) {
                return Err(perr(
                    "labels",
                    "Lease labels need client-go v0.34 or later (resourcelock.NewWithLabels arrived in v0.34.0)".into(),
                ));
            }
            for (k, v) in &labels {
                crate::api::check_label(k, v).map_err(|m| perr("labels", m))?;
            }
            elector.labels = labels.into_iter().collect();
        }
        if elector.client_go_version().is_some() {
            elector.record_events = pick!(events).unwrap_or(true);
        } else if doc.events == Some(true) {
            return Err(perr(
                "events",
                format!("{algorithm_name} records no leader-election Events; `events` applies to client-go"),
            ));
        }
        elector.lease_namespace = namespace.into();
        elector.lease_name = pick!(lease_name).unwrap_or_else(|| lease_name.into());
        if let Some(v) = pick!(lease_duration) {
            elector.lease_duration = v.0;
        }
        if let Some(v) = pick!(renew_deadline) {
            elector.renew_deadline = v.0;
        }
        if let Some(v) = pick!(retry_period) {
            elector.retry_period = v.0;
        }
        if let Some(v) = pick!(jitter_factor) {
            elector.jitter_factor = v;
        }
        if let Some(v) = pick!(release_on_cancel) {
            elector.release_on_cancel = v;
        }
        elector.request_timeout = match pick!(request_timeout) {
            Some(t) => Some(t.0),
            None => default_request_timeout_for(algorithm, elector.renew_deadline),
        };
        let restart_delay = pick!(restart_delay).map(|d| d.0).unwrap_or(library.restart_delay);
        elector.after_lost = match pick!(after_lost).as_deref().unwrap_or(library.after_lost.name()) {
            "restart" => AfterLost::Restart { delay: restart_delay },
            "exit" => AfterLost::Exit,
            "rejoin" => AfterLost::Rejoin,
            other => {
                return Err(perr("after_lost", format!("unknown value {other:?}; expected restart, exit or rejoin")));
            }
        };
        if let Some(drain) = pick!(drain) {
            if !library.keys.drain {
                if doc.drain.is_some() {
                    return Err(perr(
                        "drain",
                        format!(
                            "`drain` is controller-runtime's runnables draining; this node runs {algorithm_name:?}"
                        ),
                    ));
                }
            } else {
                elector.drain = drain.0;
            }
        }
        if let Some(grace) = pick!(grace) {
            if library.keys.grace {
                elector.grace = grace.0;
            } else if doc.grace.is_some() {
                return Err(perr(
                    "grace",
                    format!(
                        "`grace` is kube-lease-manager's and kubert's renew grace; this node runs {algorithm_name:?}"
                    ),
                ));
            }
        }
        if elector.retry_period == 0 {
            return Err(perr("retry_period", "must be greater than zero".into()));
        }
        if identity.is_empty() {
            return Err(perr("identity", "must not be empty (client-go: \"Lock identity is empty\")".into()));
        }
        if self.rbac.auto.unwrap_or(true) && doc.user.is_none() && d.user.is_none() {
            check_name(
                Kind::ServiceAccount,
                identity,
                "a ServiceAccount name (rbac.auto creates one per node; set `user` to run as someone else)",
            )
            .map_err(|m| perr("identity", m))?;
        }
        // `unsafe` waives client-go's checks for the whole file or for one Lease; whether the
        // run *is* unsafe (a waived check fails) is decided per node and shown only then.
        // The main Lease may be named in [leases."name"] too: either place waives it.
        let lease_unsafe = if elector.lease_name == lease_name {
            self.lease.unsafe_mode.unwrap_or(false)
                || self.leases.get(&elector.lease_name).and_then(|l| l.unsafe_mode).unwrap_or(false)
        } else {
            self.leases.get(&elector.lease_name).and_then(|l| l.unsafe_mode).unwrap_or(false)
        };
        if !self.unsafe_mode && !lease_unsafe {
            elector.validate().map_err(|e| {
                let advice = if e.ordering {
                    " (set `unsafe = true` at the top of the file, or for this Lease only in [lease] or \
                     [leases.\"<name>\"], to run it anyway, for teaching)"
                } else {
                    ""
                };
                // The library's own words, quoted, after the key they are about.
                perr(e.key.name(), format!("{} refuses this configuration: \"{}\"{advice}", library.refuser, e.message))
            })?;
        }
        let clock = self.node_clock(i, doc, identity)?;
        // Network.
        let dn = d.network.clone().unwrap_or_default();
        let nn = doc.network.clone().unwrap_or_default();
        let both_latency = nn.latency.clone().or(dn.latency.clone());
        let both_loss = nn.loss.or(dn.loss);
        let direction = |n: &Option<DirectionDoc>, dd: &Option<DirectionDoc>| DirectionSpec {
            latency: n
                .as_ref()
                .and_then(|x| x.latency.clone())
                .or_else(|| dd.as_ref().and_then(|x| x.latency.clone()))
                .or(both_latency.clone())
                .map(|l| l.to_latency())
                .unwrap_or_default(),
            loss: n
                .as_ref()
                .and_then(|x| x.loss)
                .or_else(|| dd.as_ref().and_then(|x| x.loss))
                .or(both_loss)
                .unwrap_or(0.0),
        };
        let link = LinkSpec { up: direction(&nn.up, &dn.up), down: direction(&nn.down, &dn.down) };
        for (dir, spec) in [("up", &link.up), ("down", &link.down)] {
            spec.latency.validate().map_err(|m| perr("network", format!("{dir}: {m}")))?;
            if !(0.0..=1.0).contains(&spec.loss) {
                return Err(perr("network", format!("{dir} loss {} must be between 0 and 1", spec.loss)));
            }
        }
        // Reconciler.
        let reconciler = match (doc.reconciler.clone(), d.reconciler.clone()) {
            (None, None) => None,
            (n, dd) => {
                let n = n.unwrap_or_default();
                let dd = dd.unwrap_or_default();
                let mode_name = n.mode.or(dd.mode).unwrap_or_else(|| "apply".into());
                let mode = match mode_name.as_str() {
                    "apply" => ReconcileMode::Apply { force: false },
                    "apply-force" => ReconcileMode::Apply { force: true },
                    "create" => ReconcileMode::CreateIfAbsent,
                    "fenced-update" => ReconcileMode::FencedUpdate,
                    "update" => ReconcileMode::Update,
                    other => {
                        return Err(perr(
                            "reconciler",
                            format!(
                                "unknown reconciler mode {other:?}; expected apply, apply-force, create, update or fenced-update"
                            ),
                        ));
                    }
                };
                let manager = n.field_manager.or(dd.field_manager).unwrap_or_else(|| "identity".into());
                Some(ReconcilerSpec {
                    period: n.period.or(dd.period).map(|p| p.0).unwrap_or(1_000_000_000),
                    mode,
                    namespace: namespace.into(),
                    object: n.object.or(dd.object).unwrap_or_else(|| "order-1".into()),
                    field: n.field.or(dd.field).unwrap_or_else(|| "phase".into()),
                    value: doc.value.clone().unwrap_or_else(|| ((b'A' + (i % 26) as u8) as char).to_string()),
                    field_manager: if manager == "identity" {
                        FieldManager::Identity
                    } else {
                        FieldManager::Shared(manager)
                    },
                    timeout: n.timeout.or(dd.timeout).map(|t| t.0).unwrap_or(2_000_000_000),
                    burst: match n.burst.or(dd.burst) {
                        None => None,
                        Some(b)
                            if !(1..=MAX_BURST).contains(&b.requests)
                                || b.every.is_some_and(|e| e.0 == 0)
                                || b.at.0 >= self.duration.0 =>
                        {
                            return Err(perr(
                                "reconciler",
                                format!(
                                    "a burst needs 1 to {MAX_BURST} requests, `at` before the run's end ({}) and, if \
                                     it repeats, `every` > 0",
                                    crate::time::format_duration(self.duration.0)
                                ),
                            ));
                        }
                        Some(b) => Some(crate::model::ReconcileBurst {
                            at: b.at.0,
                            requests: b.requests,
                            every: b.every.map(|e| e.0),
                        }),
                    },
                })
            }
        };
        if reconciler.as_ref().is_some_and(|r| r.period == 0) {
            return Err(perr("reconciler", "period must be greater than zero".into()));
        }
        let user = std::sync::Arc::new(match pick!(user) {
            Some(u) => user_named(self, &u, &self.identities(), namespace),
            None => User::service_account(namespace, identity),
        });
        let start_at = self.node_start_at(i, doc, identity)?;
        let healthz = match pick!(healthz) {
            None => None,
            Some(h) => {
                let dh = d.healthz.clone().unwrap_or_default();
                let check = match h.check.as_deref().or(dh.check.as_deref()).unwrap_or("leader-election") {
                    "leader-election" => crate::model::HealthCheck::LeaderElection,
                    "ping" => crate::model::HealthCheck::Ping,
                    other => {
                        return Err(perr("healthz", unknown_word("health check", other, &["leader-election", "ping"])));
                    }
                };
                if check == crate::model::HealthCheck::LeaderElection && elector.client_go_version().is_none() {
                    return Err(perr(
                        "healthz",
                        format!(
                            "the leader-election health check is client-go's (HealthzAdaptor); {algorithm_name} has \
                             none (`check = \"ping\"` probes a plain liveness endpoint)"
                        ),
                    ));
                }
                let secs = |v: Option<Duration>, dv: Option<Duration>, default: u64| {
                    v.or(dv).map(|d| d.0).unwrap_or(default * 1_000_000_000)
                };
                let spec = crate::model::HealthzSpec {
                    tolerance: secs(h.tolerance, dh.tolerance, 20),
                    initial_delay: secs(h.initial_delay, dh.initial_delay, 10),
                    period: secs(h.period, dh.period, 10),
                    timeout: secs(h.timeout, dh.timeout, 15),
                    failure_threshold: h.failure_threshold.or(dh.failure_threshold).unwrap_or(8),
                    restart_delay: secs(h.restart_delay, dh.restart_delay, 10),
                    check,
                };
                if spec.period == 0 || spec.timeout == 0 {
                    return Err(perr("healthz", "period and timeout must be greater than zero".into()));
                }
                if spec.failure_threshold == 0 {
                    return Err(perr("healthz", "failure_threshold must be at least 1".into()));
                }
                Some(spec)
            }
        };
        let stop_acting = match pick!(stop_acting) {
            None => crate::model::StopActing::AtOnce,
            Some(text) => crate::model::StopActing::parse(&text).map_err(|m| perr("stop_acting", m))?,
        };
        let candidacy = if pick!(coordinated).unwrap_or(false) {
            if elector
                .client_go_version()
                .is_none_or(|v| v < crate::elector::ClientGoVersion::parse("v0.31").expect("a version"))
            {
                return Err(perr(
                    "coordinated",
                    "coordinated leader election needs client-go v0.31 or later (algorithm client-go or controller-runtime)"
                        .into(),
                ));
            }
            let emulation_given = pick!(emulation_version).is_some();
            let binary_version = pick!(binary_version).unwrap_or_else(|| "1.33.0".into());
            let emulation_version = pick!(emulation_version).unwrap_or_else(|| binary_version.clone());
            let spec = crate::api::LeaseCandidateSpec {
                lease_name: elector.lease_name.as_str().into(),
                binary_version: binary_version.as_str().into(),
                emulation_version: emulation_version.as_str().into(),
                strategy: "OldestEmulationVersion".into(),
                ..Default::default()
            };
            let errors = crate::api::validate_lease_candidate_spec(&spec);
            // Blame the key the user wrote: the binary version's errors first (an unset
            // emulation_version copies it), then the emulation version's.
            let on_binary = errors.iter().find(|e| e.field == "spec.binaryVersion");
            let on_emulation = errors.iter().find(|e| e.field == "spec.emulationVersion" && emulation_given);
            if let Some((key, e)) = on_binary
                .map(|e| ("binary_version", e))
                .or(on_emulation.map(|e| ("emulation_version", e)))
                .or(errors.first().map(|e| ("binary_version", e)))
            {
                let default = if pick!(binary_version).is_none() { " (binary_version unset: 1.33.0)" } else { "" };
                return Err(perr(
                    key,
                    format!(
                        "the API server would refuse this node's LeaseCandidate: {}: {}{default}; versions are \
                         MAJOR.MINOR.PATCH without a leading v, like 1.34.0",
                        e.field, e.body
                    ),
                ));
            }
            elector.coordinated = true;
            Some(crate::model::Candidacy { binary_version, emulation_version })
        } else {
            if pick!(binary_version).is_some() || pick!(emulation_version).is_some() {
                return Err(perr(
                    if pick!(binary_version).is_some() { "binary_version" } else { "emulation_version" },
                    "versions are for coordinated nodes (set coordinated = true)".into(),
                ));
            }
            None
        };
        let runs_client_go = elector.client_go_version().is_some();
        Ok(NodeSpec {
            elector: std::sync::Arc::new(elector),
            clock: std::sync::Arc::new(clock),
            link: std::sync::Arc::new(link),
            reconciler: reconciler.map(Box::new),
            user,
            lease_field_manager: pick!(lease_field_manager)
                .unwrap_or_else(|| library.field_manager.for_identity(identity)),
            start_at,
            healthz: healthz.map(Box::new),
            stop_acting,
            candidacy: candidacy.map(Box::new),
            identity_per_start: pick!(identity_per_start).unwrap_or(false),
            restart_backoff: match pick!(restart_backoff) {
                None => crate::model::RestartBackoff::Fixed,
                Some(text) => crate::model::RestartBackoff::parse(&text).map_err(|m| perr("restart_backoff", m))?,
            },
            client_limiter: match (&doc.client_limiter, &d.client_limiter) {
                (None, None) => None,
                (Some(_), _) if !runs_client_go => {
                    return Err(perr(
                        "client_limiter",
                        format!(
                            "the client-side rate limiter modelled is client-go's (rest.Config QPS and Burst); \
                             {algorithm_name} has none here"
                        ),
                    ));
                }
                // From `[defaults]`: the client-go nodes only.
                (None, Some(_)) if !runs_client_go => None,
                (n, dd) => {
                    let (n, dd) = (n.clone().unwrap_or_default(), dd.clone().unwrap_or_default());
                    let spec = crate::model::ClientLimiterSpec {
                        qps: n.qps.or(dd.qps).unwrap_or(5.0),
                        burst: n.burst.or(dd.burst).unwrap_or(10),
                        shared: n.shared.or(dd.shared).unwrap_or(false),
                    };
                    if !(spec.qps.is_finite() && spec.qps > 0.0) || spec.burst == 0 {
                        return Err(perr(
                            "client_limiter",
                            format!(
                                "qps {} and burst {} must be greater than zero (client-go makes no limiter for a \
                                 negative QPS: leave client_limiter out)",
                                spec.qps, spec.burst
                            ),
                        ));
                    }
                    Some(spec)
                }
            },
        })
    }

    pub(super) fn action(
        &self,
        i: usize,
        a: &ActionDoc,
        identities: &[String],
        namespace: &str,
        lease_name: &str,
    ) -> Result<ScriptedAction, ScenarioError> {
        let idx = i.to_string();
        let p = |k: &'static str| -> Vec<&str> { vec!["actions", idx.as_str(), k] };
        if a.at.0 > self.duration.0 {
            return Err(err(&p("at"), "is beyond the run's duration"));
        }
        let user = user_named(self, a.as_user.as_deref().unwrap_or("admin"), identities, namespace);
        let kind = |a: &ActionDoc| -> Result<Kind, ScenarioError> {
            let r = a.resource.as_deref().unwrap_or("lease");
            Kind::parse(r).ok_or_else(|| err(&p("resource"), format!("unknown resource {r:?}; expected leases, configmaps, namespaces, serviceaccounts, roles, rolebindings, events or leasecandidates")))
        };
        let ns = a.namespace.clone().unwrap_or_else(|| namespace.into());
        let object = a.object.clone().unwrap_or_else(|| lease_name.into());
        let body = || a.body.clone().ok_or_else(|| err(&p("verb"), format!("a {} action needs a `body`", a.verb)));
        let op = match a.verb.as_str() {
            "get" => ActionOp::Get { kind: kind(a)?, namespace: ns, name: object },
            "list" => ActionOp::List { kind: kind(a)?, namespace: ns },
            "delete" => ActionOp::Delete { kind: kind(a)?, namespace: ns, name: object },
            "create" => ActionOp::Create { body: body()? },
            "update" => ActionOp::Update { body: body()? },
            "merge-patch" => ActionOp::MergePatch {
                kind: kind(a)?,
                namespace: ns,
                name: object,
                patch: a.patch.clone().ok_or_else(|| err(&p("verb"), "a merge-patch action needs a `patch`"))?,
            },
            "apply" => ActionOp::Apply {
                body: body()?,
                field_manager: a.field_manager.clone().unwrap_or_else(|| "kubectl".into()),
                force: a.force.unwrap_or(false),
            },
            "can-i" => ActionOp::CanI {
                verb: a.can_i_verb.clone().ok_or_else(|| err(&p("verb"), "a can-i action needs `can_i_verb`"))?,
                kind: kind(a)?,
                namespace: ns,
                name: a.object.clone(),
                user: user.clone(),
            },
            other => {
                return Err(err(&p("verb"), unknown_word("verb", other, &ACTION_VERBS)));
            }
        };
        Ok(ScriptedAction {
            name: a.name.clone(),
            at: a.at.0,
            user: if a.verb == "can-i" { User::admin() } else { user },
            op,
        })
    }
}

/// The most requests one reconciler burst sends (each is a message in flight).
const MAX_BURST: u32 = 100_000;

/// A user a scenario names: `admin`, a node identity (that node's ServiceAccount, in its
/// Lease's namespace), `system:serviceaccount:ns:name`, or any other user name.
fn user_named(s: &Scenario, name: &str, identities: &[String], namespace: &str) -> User {
    if name == "admin" {
        User::admin()
    } else if let Some(k) = identities.iter().position(|i| i == name) {
        User::service_account(&s.lease_of(&s.nodes[k]).0, name)
    } else if let Some(rest) = name.strip_prefix("system:serviceaccount:") {
        let (ns, sa) = rest.split_once(':').unwrap_or((namespace, rest));
        User::service_account(ns, sa)
    } else {
        User::named(name)
    }
}

const ACTION_VERBS: [&str; 8] = ["get", "list", "create", "update", "merge-patch", "apply", "delete", "can-i"];
