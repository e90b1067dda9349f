//! The Events an elector records (client-go `LeaseLock.RecordEvent` through an
//! `EventRecorder`): "<identity> became leader" and "<identity> stopped leading", created in the
//! Lease's namespace as core/v1 Events, the way `tools/record` builds them.
//!
//! What an Event carries (`record/event.go` `makeEvent`, `reference.GetReference`): its name is
//! the Lease's name and the recorder's clock in hex nanoseconds; `involvedObject` names the
//! Lease with the uid and resourceVersion of the lock's cached copy; reason `LeaderElection`,
//! type `Normal`, count 1, first and last timestamps the recorder's now (whole seconds), source
//! component the Lease's name (kube-controller-manager and kube-scheduler name their Lease after
//! themselves), `eventTime` null. The real broadcaster sends asynchronously and may drop or
//! aggregate; here each Event is one create on the node's link, lost with it when the link is.

use crate::api::{Body, Kind, Request, Time, User, Verb};
use crate::elector::LeaderEvent;
use crate::time::UnixNanos;
use serde_json::json;
use std::sync::Arc;

/// What an Event needs to know about where it is recorded.
pub(super) struct EventSource<'a> {
    pub(super) identity: &'a str,
    pub(super) namespace: &'a str,
    pub(super) lease_name: &'a str,
    pub(super) lease_uid: &'a str,
    pub(super) lease_resource_version: Option<u64>,
    /// The recorder's wall clock.
    pub(super) wall: UnixNanos,
    /// The field manager of its writes (the client's user agent: the component).
    pub(super) field_manager: &'a str,
}

/// The create request for one leader-election Event, as `user`.
pub(super) fn event_request(source: &EventSource, what: LeaderEvent, user: Arc<User>) -> (Request, String) {
    let name = format!("{}.{:x}", source.lease_name, source.wall);
    let at = Time::from_unix_nanos(source.wall);
    let body = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": source.namespace},
        "involvedObject": {
            "kind": "Lease",
            "namespace": source.namespace,
            "name": source.lease_name,
            "uid": source.lease_uid,
            "apiVersion": "coordination.k8s.io/v1",
            "resourceVersion": source.lease_resource_version.map(|rv| rv.to_string()).unwrap_or_default(),
        },
        "reason": "LeaderElection",
        "message": format!("{} {}", source.identity, what.text()),
        "source": {"component": source.lease_name},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "type": "Normal",
        "eventTime": null,
        "reportingComponent": source.lease_name,
        "reportingInstance": "",
    });
    let request = Request {
        user,
        verb: Verb::Create,
        kind: Kind::Event,
        namespace: source.namespace.into(),
        name: "".into(),
        body: Body::Json(body),
        field_manager: Some(source.field_manager.into()),
        force: false,
    };
    (request, name)
}
