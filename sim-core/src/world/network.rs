//! Messages in flight between the nodes and the API server: each node's link, the server's
//! availability windows, request ids, and the slab of messages the events point into.
//!
//! A request keeps one slot from the moment it leaves the node until its answer arrives (or
//! the request or answer is lost). Its timeout is not put on the queue when it is sent: it holds
//! a reserved sequence number and is scheduled only once the request is known to go unanswered
//! in time (lost, server down, answer late or lost), so the queue carries no timeout that could
//! never fire, and a timeout that does fire orders exactly as if scheduled at the send.

use super::event::Origin;
use crate::api::{LeaseOp, LeaseRef, LeaseView, Object, Request, UserId, Verb};
use crate::net::{Delivery, Direction, Link, ServerAvailability};
use crate::time::Nanos;

/// What a request asks of the server.
#[derive(Debug)]
pub(super) enum Payload {
    /// By the typed Lease path (electors, and a fenced reconciler's Lease check).
    Lease { lease: LeaseRef, user: UserId, op: LeaseOp },
    /// Anything else, as a full request.
    Generic(Box<Request>),
}

/// What came back, as far as the requester reads it (the full error went to the trace and the
/// metrics when the server answered).
#[derive(Debug)]
pub(super) enum Response {
    /// A Lease, or the status code of the error.
    Lease(Result<LeaseView, u16>),
    Object(Result<Object, u16>),
    /// An answer whose requester reads nothing of it (an Event's recorder: the code went to
    /// the trace and the metrics).
    Effect,
}

#[derive(Debug)]
pub(super) struct Message {
    pub(super) node: u32,
    pub(super) incarnation: u32,
    pub(super) id: u64,
    pub(super) origin: Origin,
    pub(super) verb: Verb,
    /// Sends so far after a Retry-After (the client's own retries).
    pub(super) attempts: u8,
    /// The request's timeout, not yet scheduled: (true time it fires, reserved sequence).
    pub(super) timeout: Option<(Nanos, u64)>,
    /// The request, or once the server answered, the answer.
    pub(super) stage: Stage,
    /// The status code of the answer (set when the server answers).
    pub(super) code: u16,
    /// `[[server.errors]]` chose this request: what the server answers instead.
    pub(super) injected: Option<Box<super::injection::Injected>>,
}

/// Where a message is: the request on its way to the server (or held there by a slowdown), or
/// the server's answer on its way back. One or the other, never both: the slot is as small as
/// the larger of the two, not their sum.
#[derive(Debug)]
pub(super) enum Stage {
    /// The slot holds no message (it is on the free list).
    Free,
    Request(Payload),
    /// `retry` keeps the request for the client's own retry after a Retry-After, which only an
    /// injected error can ask for.
    Answered {
        response: Response,
        retry: Option<Box<Payload>>,
    },
}

impl Stage {
    /// Whether dropping it frees nothing: a typed request or answer without labels or
    /// annotations (every election's), an error, an empty slot.
    #[inline]
    pub(super) fn holds_nothing(&self) -> bool {
        match self {
            Stage::Free => true,
            Stage::Request(Payload::Lease { op, .. }) => op.holds_nothing(),
            Stage::Answered { response, retry: None } => match response {
                Response::Lease(Ok(view)) => view.holds_nothing(),
                Response::Lease(Err(_)) | Response::Object(Err(_)) | Response::Effect => true,
                Response::Object(Ok(_)) => false,
            },
            _ => false,
        }
    }

    /// Writes `new` over the stage, in place. What held nothing is overwritten without a call
    /// to its drop glue: for these nested enums an out-of-line call (with a jump on each
    /// variant) that did nothing, twice a request.
    #[inline(always)]
    pub(super) fn set(&mut self, new: Stage) {
        if self.holds_nothing() {
            // The old stage owns nothing, so forgetting it leaks nothing.
            std::mem::forget(std::mem::replace(self, new));
        } else {
            *self = new;
        }
    }
}

impl Message {
    /// An empty slot.
    const FREE: Message = Message {
        node: 0,
        incarnation: 0,
        id: 0,
        origin: Origin::Elector,
        verb: Verb::Get,
        attempts: 0,
        timeout: None,
        stage: Stage::Free,
        code: 0,
        injected: None,
    };

    /// The request (a message the server has not answered yet).
    #[inline]
    pub(super) fn payload(&self) -> &Payload {
        match &self.stage {
            Stage::Request(payload) => payload,
            _ => unreachable!("the request of a message the server has not answered"),
        }
    }

    /// The server's answer replaces the request (kept aside if an injected error may have the
    /// client send it again).
    #[inline]
    pub(super) fn answer(&mut self, response: Response) {
        if self.injected.is_none() {
            self.stage.set(Stage::Answered { response, retry: None });
            return;
        }
        let request = std::mem::replace(&mut self.stage, Stage::Answered { response, retry: None });
        if let (Stage::Request(payload), Stage::Answered { retry, .. }) = (request, &mut self.stage) {
            *retry = Some(Box::new(payload));
        }
    }

    /// The client sends the request again (after a Retry-After): its answer is dropped.
    pub(super) fn unanswer(&mut self) {
        if let Stage::Answered { retry, .. } = &mut self.stage {
            let payload = retry.take().expect("a retried message kept its request");
            self.stage = Stage::Request(*payload);
        }
    }
}

pub(super) struct Network {
    links: Vec<Link>,
    availability: ServerAvailability,
    next_request_id: u64,
    /// Live messages and free ones (`Stage::Free`, their slots on `free`). Not `Option`s: a
    /// message is written into its slot field by field, where an `Option` was built whole on the
    /// stack and copied in (176 bytes through `memcpy` on every request).
    slots: Vec<Message>,
    free: Vec<u32>,
}

impl Network {
    pub(super) fn new(links: Vec<Link>, availability: ServerAvailability) -> Network {
        Network { links, availability, next_request_id: 0, slots: Vec::new(), free: Vec::new() }
    }

    #[inline]
    /// The id the next request will get.
    pub(super) fn peek_next_id(&self) -> u64 {
        self.next_request_id + 1
    }

    pub(super) fn next_id(&mut self) -> u64 {
        self.next_request_id += 1;
        self.next_request_id
    }

    /// See `World::prefetch_next`.
    pub(super) fn prefetch_link(&self, node: usize) {
        crate::prefetch::prefetch(&self.links[node]);
    }

    pub(super) fn link(&self, node: usize) -> &Link {
        &self.links[node]
    }

    /// Counts `n` requests sent without a message (a quiet stretch's): the ids they took.
    pub(super) fn take_ids(&mut self, n: u64) {
        self.next_request_id += n;
    }

    pub(super) fn link_mut(&mut self, node: usize) -> &mut Link {
        &mut self.links[node]
    }

    /// Sends one message from (Up) or to (Down) `node` at `now`.
    #[inline]
    pub(super) fn send(&mut self, node: usize, dir: Direction, now: Nanos) -> Delivery {
        self.links[node].send(now, dir)
    }

    /// Is `node`'s link cut in either direction at `now`?
    pub(super) fn is_cut(&self, node: usize, now: Nanos) -> bool {
        self.links[node].is_cut(Direction::Up, now) || self.links[node].is_cut(Direction::Down, now)
    }

    pub(super) fn availability(&self) -> &ServerAvailability {
        &self.availability
    }

    pub(super) fn availability_mut(&mut self) -> &mut ServerAvailability {
        &mut self.availability
    }

    /// A free slot for a new message.
    #[inline(always)]
    fn free_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Message::FREE);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 messages in flight")
            }
        }
    }

    /// Puts a request of `node` in a free slot, written in place: no timeout yet (see
    /// `World::dispatch`), no answer, nothing injected.
    #[inline(always)]
    pub(super) fn insert(
        &mut self,
        node: usize,
        incarnation: u32,
        id: u64,
        origin: Origin,
        verb: Verb,
        payload: Payload,
    ) -> u32 {
        let slot = self.free_slot();
        let m = self.header(slot, node, incarnation, id, origin, verb);
        // The slot's `Free` has nothing to drop: forgetting it skips the call of the generic drop.
        std::mem::forget(std::mem::replace(&mut m.stage, Stage::Request(payload)));
        slot
    }

    /// [`Self::insert`] of an elector's typed Lease request, its operation a placeholder the
    /// lock overwrites in place (`LeaseLock::write_typed`). The payload is written here from
    /// its two numbers: built by the caller and passed in, it went through the stack, and the
    /// copy into the slot waited for the narrow stores that had built it (a fifth of
    /// `process_outputs`' samples).
    #[inline(always)]
    pub(super) fn insert_lease(&mut self, node: usize, incarnation: u32, lease: LeaseRef, user: UserId) -> u32 {
        let slot = self.free_slot();
        let m = self.header(slot, node, incarnation, 0, Origin::Elector, Verb::Get);
        let request = Stage::Request(Payload::Lease { lease, user, op: LeaseOp::Get });
        std::mem::forget(std::mem::replace(&mut m.stage, request));
        slot
    }

    /// Writes the fields of a new message but its stage into free `slot`.
    #[inline(always)]
    fn header(
        &mut self,
        slot: u32,
        node: usize,
        incarnation: u32,
        id: u64,
        origin: Origin,
        verb: Verb,
    ) -> &mut Message {
        let m = &mut self.slots[slot as usize];
        debug_assert!(matches!(m.stage, Stage::Free) && m.injected.is_none());
        m.node = node as u32;
        m.incarnation = incarnation;
        m.id = id;
        m.origin = origin;
        m.verb = verb;
        m.attempts = 0;
        m.timeout = None;
        m.code = 0;
        m
    }

    // A freed slot read through a stale event would be a bug in the loop's bookkeeping, which
    // every test run checks; release builds read a dozen slots a request and skip the check.
    #[inline]
    pub(super) fn get(&self, slot: u32) -> &Message {
        let m = &self.slots[slot as usize];
        debug_assert!(!matches!(m.stage, Stage::Free), "a live message slot");
        m
    }

    #[inline]
    pub(super) fn get_mut(&mut self, slot: u32) -> &mut Message {
        let m = &mut self.slots[slot as usize];
        debug_assert!(!matches!(m.stage, Stage::Free), "a live message slot");
        m
    }

    /// Frees the slot and hands the message back.
    pub(super) fn remove(&mut self, slot: u32) -> Message {
        let m = std::mem::replace(self.get_mut(slot), Message::FREE);
        self.free.push(slot);
        m
    }

    /// Frees the slot of an answered message, handing back who sent it and the answer.
    #[inline]
    pub(super) fn take_answer(&mut self, slot: u32) -> (u32, u64, Origin, u16, Response) {
        let m = self.remove(slot);
        match m.stage {
            Stage::Answered { response, .. } => (m.node, m.id, m.origin, m.code, response),
            _ => unreachable!("answered before the answer arrives"),
        }
    }

    /// Frees the slot of a message that will not be answered (or whose answer was read in
    /// place).
    #[inline(always)]
    pub(super) fn discard(&mut self, slot: u32) {
        let m = self.get_mut(slot);
        m.stage.set(Stage::Free);
        if m.injected.is_some() {
            m.injected = None;
        }
        self.free.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Labels, LeaseSpecC};
    use std::sync::Arc;

    /// A stage that holds an Arc says so (it is dropped, not written over), and writing over
    /// stages leaks nothing: every Arc handed in is back to one owner at the end.
    #[test]
    fn stages_written_over_drop_what_they_hold() {
        let labels = Arc::new(Labels::new());
        let annotations = Arc::new(Labels::new());
        let spec = LeaseSpecC::default();
        let update = |labels: Option<Arc<Labels>>, annotations: Option<Arc<Labels>>| LeaseOp::Update {
            resource_version: 7,
            spec,
            labels,
            annotations,
        };
        let request = |op| Stage::Request(Payload::Lease { lease: LeaseRef(0), user: UserId(0), op });
        let view =
            |labels: Option<Arc<Labels>>, annotations| LeaseView { resource_version: 7, spec, labels, annotations };
        let answered = |response| Stage::Answered { response, retry: None };
        let empty = [
            Stage::Free,
            request(LeaseOp::Get),
            request(update(None, None)),
            answered(Response::Lease(Ok(view(None, None)))),
            answered(Response::Lease(Err(409))),
            answered(Response::Effect),
        ];
        assert!(empty.iter().all(Stage::holds_nothing));
        let holding = || {
            [
                request(update(Some(labels.clone()), None)),
                request(update(None, Some(annotations.clone()))),
                request(LeaseOp::Create { spec, labels: Some(labels.clone()) }),
                answered(Response::Lease(Ok(view(Some(labels.clone()), None)))),
                answered(Response::Lease(Ok(view(None, Some(annotations.clone()))))),
            ]
        };
        assert!(holding().iter().all(|s| !s.holds_nothing()));
        let mut slot = Stage::Free;
        for _ in 0..3 {
            for stage in holding().into_iter().chain(empty.iter().map(|_| Stage::Free)) {
                slot.set(stage);
            }
            slot.set(request(update(Some(labels.clone()), Some(annotations.clone()))));
        }
        slot.set(Stage::Free);
        assert_eq!((Arc::strong_count(&labels), Arc::strong_count(&annotations)), (1, 1));
        let mut op = LeaseOp::Get;
        op.overwrite(update(Some(labels.clone()), None));
        op.overwrite(LeaseOp::Get);
        assert_eq!(Arc::strong_count(&labels), 1);
    }
}
