//! A world driven in real time (`leasesim serve`): the caller says what time it is, the world
//! handles the simulated events due by then, and requests from outside the simulation (real
//! clients over HTTP) are applied to the same API server at that time, the observer, the
//! watchers and the election controller told of a Lease they wrote, as for a scripted action.

use super::{BudgetExceeded, RunResult, World};
use crate::api::{ApiError, ApiServer, Kind, Object, Request};
use crate::time::Nanos;

impl World {
    /// Handles every simulated event due up to true time `now` (at most the spec's duration).
    pub fn advance_to(&mut self, now: Nanos) -> Result<(), BudgetExceeded> {
        self.advance(now.min(self.spec.duration), u64::MAX, &mut |_, _| {})
    }

    /// When the next simulated event is due; `None` when nothing more happens on its own.
    pub fn next_event_at(&self) -> Option<Nanos> {
        self.queue.peek_time().filter(|&t| t <= self.spec.duration)
    }

    /// A request from outside the simulation, applied at `now` (call [`Self::advance_to`]
    /// first, so the events due before it have happened).
    /// The answer says whether the request created its object (HTTP 201). (The error is the
    /// API server's, as large as `ApiServer::handle`'s.)
    #[allow(clippy::result_large_err)]
    pub fn external_request(&mut self, now: Nanos, request: &Request) -> Result<(Object, bool), ApiError> {
        let rv_before = self.server.resource_version();
        let result = self.server.handle_created(now, request);
        if self.server.resource_version() != rv_before
            && request.kind == Kind::Lease
            && let Some(lease) = self.server.find_lease_ref(&request.namespace, &request.name)
        {
            self.lease_written(now, lease);
        }
        result
    }

    /// The API server, to read it or to set it up for outside clients (its change log).
    pub fn server_mut(&mut self) -> &mut ApiServer {
        &mut self.server
    }

    /// Ends a live world at `end`: what it recorded, as a run's result.
    pub fn finish_at(mut self, end: Nanos) -> RunResult {
        let end = end.min(self.spec.duration);
        // A world stuck in a loop is ended where it stands.
        let _ = self.advance_to(end);
        self.finish(end)
    }
}

#[cfg(test)]
mod tests {
    use crate::api::{Body, Kind, Request, User, Verb};
    use crate::elector::Algorithm;
    use crate::model::WorldSpec;
    use crate::time::secs;
    use crate::world::World;
    use std::sync::Arc;

    /// Driven in steps, a world reaches what one `run` reaches; a request from outside lands
    /// on the same server the electors use and the observer sees the Lease change.
    #[test]
    fn a_world_driven_in_steps_is_the_same_world_and_outside_writes_reach_the_observer() {
        let spec = WorldSpec::basic(4, 2, Algorithm::ClientGo, secs(60));
        let whole = World::new(spec.clone()).expect("valid").run();
        let mut live = World::new(spec.clone()).expect("valid");
        for t in (0..=60).map(secs) {
            live.advance_to(t).expect("no budget");
        }
        let stepped = live.finish_at(secs(60));
        assert_eq!(whole.metrics, stepped.metrics);
        assert_eq!(whole.events_processed, stepped.events_processed);

        let mut live = World::new(spec).expect("valid");
        live.advance_to(secs(30)).expect("no budget");
        let patch = Request {
            user: Arc::new(User::admin()),
            verb: Verb::Patch,
            kind: Kind::Lease,
            namespace: "op-leader".into(),
            name: "widget-operator".into(),
            body: Body::Json(serde_json::json!({"spec": {"holderIdentity": "someone-else"}})),
            field_manager: None,
            force: false,
            field_validation: crate::api::FieldValidation::Ignore,
        };
        live.external_request(secs(30), &patch).expect("admin may patch");
        let r = live.finish_at(secs(60));
        assert!(r.metrics.leases["op-leader/widget-operator"].leader_changes >= 1);
    }
}
