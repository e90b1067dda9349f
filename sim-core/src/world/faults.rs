//! Faults: the scenario's timeline and its random fault processes, turned into concrete faults
//! (a kind, its drawn parameters, and the node it hits) for the loop to carry out.
//!
//! Each random process draws everything — its occurrence times up front, then each occurrence's
//! target and parameters — from its own stream, so adding a process shifts no other draw.

use crate::model::{FaultKind, RandomFault, RandomFaultKind, Target};
use crate::rng::ComponentRng;
use crate::time::Nanos;

pub(super) struct Faults {
    /// One stream per random process.
    rngs: Vec<ComponentRng>,
    /// Draws the random targets of timeline faults (`target = "random"`).
    timeline_rng: ComponentRng,
}

impl Faults {
    /// Draws every random process's occurrence times, in process order, into `occurrences`
    /// (`(time, process)`); each process's stream then goes on to its targets and parameters.
    pub(super) fn new(
        seed: u64,
        random: &[RandomFault],
        duration: Nanos,
        occurrences: &mut Vec<(Nanos, u32)>,
    ) -> Faults {
        let mut rngs = Vec::with_capacity(random.len());
        for (process, rf) in random.iter().enumerate() {
            let mut rng = ComponentRng::new(seed, &format!("fault/{}", rf.key));
            let mut t = rf.from as f64;
            loop {
                t += rng.exponential(rf.mean_interval as f64);
                let at = t.round() as Nanos;
                if at >= rf.until || at > duration {
                    break;
                }
                occurrences.push((at, process as u32));
            }
            rngs.push(rng);
        }
        Faults { rngs, timeline_rng: ComponentRng::new(seed, "fault/timeline") }
    }

    /// The node `target` names now. `holder` is the node the first Lease names (if any);
    /// `process` the random process whose stream draws a random target (`None`: the timeline's).
    pub(super) fn resolve(
        &mut self,
        target: &Target,
        holder: Option<usize>,
        nodes: usize,
        process: Option<usize>,
    ) -> Option<usize> {
        match target {
            Target::Node(i) => Some(*i),
            Target::Holder => holder,
            Target::Server => None,
            Target::Random | Target::NonHolder => {
                // A uniform pick among the candidates (every node, or every node but the
                // holder), without listing them.
                let skip = if *target == Target::NonHolder { holder } else { None };
                let count = nodes - usize::from(skip.is_some());
                if count == 0 {
                    return None;
                }
                let rng = match process {
                    Some(p) => &mut self.rngs[p],
                    None => &mut self.timeline_rng,
                };
                let k = rng.uniform_u64(0, count as u64 - 1) as usize;
                Some(match skip {
                    Some(h) if k >= h => k + 1,
                    _ => k,
                })
            }
        }
    }

    /// One occurrence of random process `process`: its parameters, drawn from its stream (after
    /// its target).
    pub(super) fn draw(&mut self, process: usize, rf: &RandomFault) -> FaultKind {
        draw_with(&mut self.rngs[process], rf)
    }

    /// A copy of `process`'s stream as it stands (a quiet stretch draws its next occurrences'
    /// parameters on it, with [`draw_with`], before it decides to carry them out).
    pub(super) fn stream(&self, process: usize) -> ComponentRng {
        self.rngs[process].clone()
    }
}

/// One occurrence's parameters, drawn from its process's stream.
pub(super) fn draw_with(rng: &mut ComponentRng, rf: &RandomFault) -> FaultKind {
    match &rf.kind {
        RandomFaultKind::Crash => FaultKind::Crash,
        RandomFaultKind::CrashRestart { restart_after } => FaultKind::Restart { delay: restart_after.sample(rng) },
        RandomFaultKind::Pause { duration } => FaultKind::Pause { duration: duration.sample(rng) },
        RandomFaultKind::Stop => FaultKind::Stop,
        RandomFaultKind::Partition { duration, cut, mode } => {
            FaultKind::Partition { duration: duration.sample(rng), cut: *cut, mode: *mode }
        }
        RandomFaultKind::ClockStep { delta, backwards } => {
            let d = delta.sample(rng) as i64;
            FaultKind::ClockStep { delta_ns: if *backwards { -d } else { d } }
        }
        RandomFaultKind::ServerOutage { duration, mode } => {
            FaultKind::ServerOutage { duration: duration.sample(rng), mode: *mode }
        }
    }
}

/// Does this fault, hitting an acting leader, start the failover clock?
pub(super) fn hits_leadership(kind: &FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::Crash
            | FaultKind::Restart { .. }
            | FaultKind::Pause { .. }
            | FaultKind::Stop
            | FaultKind::Partition { .. }
            | FaultKind::Work { .. }
            | FaultKind::Wedge { .. }
    )
}
