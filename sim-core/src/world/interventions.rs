//! What comes from outside the nodes, in the loop: a fault (from the timeline or a random
//! process, already resolved by `faults`) carried out on a node, its link or the server, and a
//! scripted action (`actions`) sent to the server directly.

use super::event::Event;
use super::process::ProcState;
use super::{FaultDetail, FaultRecord, SpanKind, World, actions, faults};
use crate::api::Kind;
use crate::clock::ClockStep;
use crate::elector::{AfterLost, AfterWorkEnds, WorkEnd};
use crate::model::FaultKind;
use crate::net::{Cut, Partition};
use crate::time::Nanos;
use crate::trace::TraceKind;

impl World {
    pub(super) fn apply_fault(&mut self, now: Nanos, node: Option<usize>, kind: &FaultKind) {
        let server_fault = matches!(kind, FaultKind::ServerOutage { .. } | FaultKind::ServerSlow { .. });
        if node.is_none() && !server_fault {
            return; // e.g. "the holder" when nobody holds the lease
        }
        self.obs.record_fault(FaultRecord { at: now, node, kind: kind.name(), detail: FaultDetail::Of(kind.clone()) });
        if let Some(n) = node
            && faults::hits_leadership(kind)
        {
            self.obs.fault_hit_leader(now, n);
        }
        match *kind {
            FaultKind::Crash => {
                let n = node.expect("node fault");
                if self.procs[n].is_running() {
                    trace!(self, now, Some(n), TraceKind::Crash);
                    self.kill(now, n, ProcState::Crashed);
                }
            }
            FaultKind::Restart { delay } => {
                let n = node.expect("node fault");
                if self.procs[n].is_running() {
                    trace!(self, now, Some(n), TraceKind::Crash);
                    self.kill(now, n, ProcState::Crashed);
                }
                self.queue.schedule(now.saturating_add(delay), Event::Start { node: n as u32 });
            }
            FaultKind::Pause { duration } => {
                let n = node.expect("node fault");
                let p = &mut self.procs[n];
                if !p.is_running() || p.paused_until.is_some() {
                    return;
                }
                let until = now.saturating_add(duration);
                p.paused_until = Some(until);
                let incarnation = p.incarnation;
                self.queue.schedule(until, Event::Resume { node: n as u32, incarnation });
                self.obs.open_span(now, n, SpanKind::Paused);
                trace!(self, now, Some(n), TraceKind::PauseStart { until });
            }
            FaultKind::Stop => {
                let n = node.expect("node fault");
                if !self.procs[n].is_running() {
                    return;
                }
                self.procs[n].stop_requested = true;
                trace!(self, now, Some(n), TraceKind::StopRequested);
                let mut out = self.take_scratch();
                self.procs[n].drive(now, &mut out, |e, clock_now, out| e.stop(clock_now, out));
                self.process_outputs(now, n, out);
            }
            FaultKind::ClockStep { delta_ns } => {
                let n = node.expect("node fault");
                self.procs[n].clock.add_step(ClockStep { at: now, delta_ns });
                trace!(self, now, Some(n), TraceKind::ClockStep { delta_ns });
            }
            FaultKind::Partition { duration, cut, mode } => {
                let n = node.expect("node fault");
                let until = now.saturating_add(duration);
                self.net.link_mut(n).add_partition(Partition { from: now, until, cut, mode });
                self.obs.open_span(now, n, SpanKind::Partitioned);
                let cut_name = match cut {
                    Cut::Up => "up",
                    Cut::Down => "down",
                    Cut::Both => "both",
                };
                trace!(self, now, Some(n), TraceKind::PartitionStart { cut: cut_name, until });
                if until <= self.spec.duration {
                    self.queue.schedule(until, Event::PartitionEnd { node: n as u32 });
                }
            }
            FaultKind::ServerOutage { duration, mode } => {
                let until = now.saturating_add(duration);
                self.net.availability_mut().outages.push((now, until, mode));
                trace!(self, now, None, TraceKind::ServerOutage { until });
            }
            FaultKind::ServerSlow { duration, extra } => {
                let until = now.saturating_add(duration);
                self.net.availability_mut().slowdowns.push((now, until, extra));
                trace!(self, now, None, TraceKind::ServerSlow { until, extra_ns: extra });
            }
            FaultKind::Work { ends } => self.end_work(now, node.expect("node fault"), ends),
            FaultKind::Wedge { duration } => {
                let n = node.expect("node fault");
                if !self.procs[n].is_running() {
                    return;
                }
                let until = duration.map(|d| now.saturating_add(d));
                let p = &mut self.procs[n];
                p.client.get_or_insert_default().wedged_until = until.unwrap_or(Nanos::MAX);
                // Ids of requests already sent are below the next one: they hang too.
                p.hung_below = self.net.peek_next_id().min(u64::from(u32::MAX)) as u32;
                trace!(self, now, Some(n), TraceKind::Wedged { until });
            }
        }
    }

    /// A `work` fault: the leader's work returns, raises or blocks. Either way no more work is
    /// done; the elector then does what its library does ([`AfterWorkEnds`]). A node with no
    /// work running (not leading, or its work already ended) is not touched.
    fn end_work(&mut self, now: Nanos, n: usize, ends: WorkEnd) {
        if !self.procs[n].is_running() || !self.obs.is_acting(n) {
            return;
        }
        let config = &self.spec.nodes[n].elector;
        let then = (config.algorithm.library().work_ends)(ends, config);
        trace!(self, now, Some(n), TraceKind::WorkEnded { ends: ends.name(), then: then.name() });
        trace!(self, now, Some(n), TraceKind::StoppedLeading);
        self.stop_acting(now, n);
        match then {
            AfterWorkEnds::Unnoticed => {}
            AfterWorkEnds::ProcessDies => {
                trace!(self, now, Some(n), TraceKind::Crash);
                self.kill(now, n, ProcState::Crashed);
                // The kubelet starts the container again, as after any exit.
                let first = match self.spec.nodes[n].elector.after_lost {
                    AfterLost::Restart { delay } => delay,
                    AfterLost::Exit | AfterLost::Rejoin => self.spec.nodes[n].elector.algorithm.library().restart_delay,
                };
                self.kubelet_restart(now, n, first);
            }
            AfterWorkEnds::ElectorStopsNextRound => {
                if let Some(elector) = self.procs[n].elector.as_mut() {
                    elector.work_raised();
                }
            }
            AfterWorkEnds::GracefulStop => {
                // As SIGTERM, but the process then exits with the error: `after_lost` decides
                // what follows (the kubelet restarts it by default).
                let mut out = self.take_scratch();
                self.procs[n].drive(now, &mut out, |e, clock_now, out| e.stop(clock_now, out));
                self.process_outputs(now, n, out);
            }
        }
    }

    pub(super) fn run_action(&mut self, now: Nanos, index: usize) {
        let action = &self.spec.actions[index];
        let outcome = match actions::request_of(action) {
            actions::ActionRequest::CanI { verb, kind, namespace, name, user } => {
                let allowed = self.server.can_i(user, verb, kind, namespace, name);
                actions::can_i_outcome(action, now, allowed)
            }
            actions::ActionRequest::Request(request) => {
                let rv_before = self.server.resource_version();
                let result = self.server.handle(now, &request);
                let outcome = actions::outcome(action, now, request.verb, &result);
                if self.server.resource_version() != rv_before
                    && request.kind == Kind::Lease
                    && let Some(lease) = self.server.find_lease_ref(&request.namespace, &request.name)
                {
                    self.lease_written(now, lease);
                }
                outcome
            }
        };
        let kind =
            TraceKind::Action { name: outcome.name.clone(), code: outcome.code, message: outcome.message.clone() };
        trace!(self, now, None, kind);
        self.obs.record_action(outcome);
    }
}
