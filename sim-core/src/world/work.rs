//! The leader's work in the loop: a node's reconciler writes its child object while the node
//! acts as leader (`reconciler` decides each round), and the server-side evidence of a split
//! brain is counted where the write lands: writes from a non-holder, overwrites, conflicts; with
//! the trace, the child's read/write history (`crate::history`).

use super::event::{Event, Origin};
use super::network::Response;
use super::reconciler::Next;
use super::{World, reconciler};
use crate::api::{ApiError, Kind, Verb};
use crate::sym::Sym;
use crate::time::Nanos;
use crate::trace::TraceKind;

impl World {
    /// The resourceVersion of `node`'s child object (`None`: it does not exist, or the node has
    /// no reconciler). Each reconciler has its own object: two Leases' reconcilers may write two.
    pub(super) fn child_rv(&self, node: usize) -> Option<u64> {
        let r = self.recs[node].as_ref()?.spec();
        self.server.peek_config_map(&r.namespace, &r.object).and_then(|cm| cm.metadata.resource_version.parse().ok())
    }

    /// One reconciler request on the child, as the server just applied it (`crate::history`).
    #[cold]
    #[inline(never)]
    pub(super) fn record_history(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        verb: Verb,
        error: Option<&ApiError>,
        rv_before: Option<u64>,
    ) {
        let Some(r) = self.recs[node].as_ref() else { return };
        if r.in_flight.is_none_or(|(expected, _)| expected != id) {
            return; // an answer to a request the reconciler gave up on is still applied, but
            // its send time is gone; such requests are rare (a timeout shorter than the latency)
        }
        let kind = if verb == Verb::Get { crate::history::OpKind::Read } else { crate::history::OpKind::Write };
        let outcome = match error {
            None => "ok",
            Some(e) if e.code == 409 && e.reason.as_str() == "AlreadyExists" => "already-exists",
            Some(e) if e.code == 409 => "conflict",
            Some(_) => "error",
        };
        let lease = self.procs[node].lease;
        let holder = self.server.lease_spec(lease).and_then(|s| s.holder_identity).unwrap_or(Sym::EMPTY);
        let op = crate::history::HistoryOp {
            node,
            kind,
            verb: verb.name(),
            mode: r.spec().mode.name(),
            sent: r.sent_at,
            applied: now,
            rv_before,
            rv_after: self.child_rv(node),
            object: format!("{}/{}", r.spec().namespace, r.spec().object),
            based_on: (kind == crate::history::OpKind::Write && r.reads_before_writing())
                .then_some(r.read_rv)
                .flatten(),
            token: r.token,
            holder: self.name(holder).to_string(),
            // Its identity now (with an identity per start, the one the Lease would name).
            writer: self.name(self.procs[node].sym).to_string(),
            outcome,
            value: (kind == crate::history::OpKind::Write).then(|| r.spec().value.clone()),
        };
        self.obs.history.push(op);
    }

    /// The field `node`'s reconciler writes, as its child object holds it now.
    pub(super) fn child_value(&self, node: usize) -> Option<String> {
        let r = self.recs[node].as_ref()?.spec();
        self.server.peek_config_map(&r.namespace, &r.object).and_then(|cm| cm.data.get(&r.field).cloned())
    }

    pub(super) fn reconcile(&mut self, now: Nanos, node: usize) {
        let Some(r) = self.recs[node].as_ref() else { return };
        let p = &self.procs[node];
        let Some(send) = r.round(&p.identity, self.server.user(p.user), p.user, p.lease) else { return };
        self.send_reconciler(now, node, send);
    }

    pub(super) fn send_reconciler(&mut self, now: Nanos, node: usize, send: reconciler::Send) {
        let id = self.net.next_id();
        let r = self.recs[node].as_mut().expect("a node with a reconciler");
        r.in_flight = Some((id, send.step));
        r.sent_at = now;
        let timeout = r.spec().timeout;
        self.send(now, node, id, Origin::Reconciler, send.payload, (send.verb, send.kind), Some(timeout));
    }

    pub(super) fn arm_reconcile(&mut self, now: Nanos, node: usize) {
        let incarnation = self.procs[node].incarnation;
        let Some(r) = self.recs[node].as_ref() else { return };
        if !r.active {
            return;
        }
        let at = self.procs[node].timer_fires_at(now, r.spec().period);
        let event = Event::ReconcileTick { node: node as u32, incarnation, generation: r.generation };
        self.queue.schedule(at, event);
    }

    pub(super) fn reconciler_response(&mut self, now: Nanos, node: usize, id: u64, response: Response) {
        let Some(r) = self.recs[node].as_mut() else { return };
        let Some((expected, step)) = r.in_flight else { return };
        if expected != id {
            return;
        }
        r.in_flight = None;
        if !r.active {
            return;
        }
        let p = &self.procs[node];
        let next = r.after(step, response, p.sym, &p.identity, self.server.user(p.user));
        match next {
            Next::Rearm => self.arm_reconcile(now, node),
            Next::Fenced(holder) => {
                self.obs.node_metrics[node].fenced_rejections += 1;
                if self.obs.tracing() {
                    let lease_holder = self.name(holder);
                    trace!(self, now, Some(node), TraceKind::FencedRejection { lease_holder });
                }
                self.arm_reconcile(now, node);
            }
            Next::Send(send) => self.send_reconciler(now, node, send),
        }
    }

    /// Counts a reconciler write at the server, where its effect (and damage) happens.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn account_reconciler_write(
        &mut self,
        now: Nanos,
        node: usize,
        id: u64,
        kind: Kind,
        verb: Verb,
        error: Option<&ApiError>,
        child_before: Option<String>,
    ) {
        if kind != Kind::ConfigMap || verb == Verb::Get {
            return;
        }
        let outcome = match error {
            None => {
                let m = &mut self.obs.node_metrics[node];
                m.writes_accepted += 1;
                let value = self.spec.nodes[node].reconciler.as_ref().map(|r| &r.value);
                let slot = self.child_slot[node] as usize;
                if let Some(prev) = self.child_last_writer[slot]
                    && prev != node
                    && child_before.is_some()
                    && child_before.as_ref() != value
                {
                    m.overwrites += 1;
                }
                self.child_last_writer[slot] = Some(node);
                let lease = self.procs[node].lease;
                let holder = self.server.lease_spec(lease).and_then(|s| s.holder_identity).unwrap_or(Sym::EMPTY);
                if holder != Sym::EMPTY && holder != self.procs[node].sym {
                    self.obs.node_metrics[node].split_brain_writes += 1;
                    if self.obs.tracing() {
                        let lease_holder = self.name(holder);
                        trace!(self, now, Some(node), TraceKind::SplitBrainWrite { id, lease_holder });
                    }
                }
                "accepted"
            }
            Some(e) if e.code == 409 && e.reason.as_str() == "AlreadyExists" => {
                self.obs.node_metrics[node].already_exists += 1;
                "already-exists"
            }
            Some(e) if e.code == 409 => {
                self.obs.node_metrics[node].conflicts += 1;
                "conflict"
            }
            Some(_) => "error",
        };
        if self.obs.tracing() {
            let (code, message, owner) = match error {
                None => (200, String::new(), None),
                Some(e) => {
                    // The owner, when one manager owns what conflicted (several: none).
                    let owner = match e.details.causes.as_slice() {
                        [only] => only.manager.clone(),
                        _ => None,
                    };
                    (e.code, e.message.clone(), owner)
                }
            };
            trace!(self, now, Some(node), TraceKind::ReconcileWrite { id, code, outcome, message, owner });
        }
    }

    /// A burst of the reconciler's reads is due: `requests` GETs of its child at once (a
    /// resync, a relist storm), through the process's rate limiter like every request of its
    /// controllers, while the process runs (paused or down, it sends nothing). Their answers
    /// are not waited for. The next burst is scheduled `every` later.
    #[cold]
    pub(super) fn reconcile_burst(&mut self, now: Nanos, node: usize) {
        let Some(burst) = self.recs[node].as_ref().and_then(|r| r.spec().burst) else { return };
        let p = &self.procs[node];
        if p.is_running() && p.paused_until.is_none() {
            let user = self.server.user(p.user).clone();
            for _ in 0..burst.requests {
                let r = self.recs[node].as_ref().expect("a node with a reconciler");
                let request = r.read_request(&user);
                let timeout = r.spec().timeout;
                let id = self.net.next_id();
                let payload = super::network::Payload::Generic(Box::new(request));
                self.send(now, node, id, Origin::Reconciler, payload, (Verb::Get, Kind::ConfigMap), Some(timeout));
            }
        }
        if let Some(every) = burst.every
            && now.saturating_add(every) <= self.spec.duration
        {
            self.queue.schedule(now + every, Event::ReconcileBurst { node: node as u32 });
        }
    }
}
