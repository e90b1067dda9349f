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

use crate::api::{Body, FieldValidation, FrozenJson, Kind, ObjectMeta, Request, Time, User, Verb};
use crate::elector::LeaderEvent;
use crate::time::UnixNanos;
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

/// The create request for one leader-election Event, as `user`. The body is the Event as the
/// server keeps it ([`Body::Frozen`]): the text [`FrozenJson::of`] would write for the JSON
/// below decoded, field for field and in the same order (`recorded_events_are_the_json_bodies_decoded`
/// pins it), written straight from its parts: no map built (a key hashed per insert), copied,
/// frozen and read back for its shape (four fifths of an Event's cost).
pub(super) fn event_request(source: &EventSource, what: LeaderEvent, user: Arc<User>) -> (Request, String) {
    let name = format!("{}.{:x}", source.lease_name, source.wall);
    let at = Time::from_unix_nanos(source.wall).to_rfc3339();
    let rv = source.lease_resource_version.map(|rv| rv.to_string()).unwrap_or_default();
    let message = format!("{} {}", source.identity, what.text());
    let mut text = Vec::with_capacity(420 + 3 * source.lease_name.len() + message.len());
    for (raw, value) in [
        (r#"{"involvedObject":{"kind":"Lease","namespace":"#, source.namespace),
        (r#","name":"#, source.lease_name),
        (r#","uid":"#, source.lease_uid),
        (r#","apiVersion":"coordination.k8s.io/v1","resourceVersion":"#, &rv),
        (r#"},"reason":"LeaderElection","message":"#, &message),
        (r#","source":{"component":"#, source.lease_name),
        (r#"},"firstTimestamp":"#, &at),
        (r#","lastTimestamp":"#, &at),
        (r#","count":1,"type":"Normal","eventTime":null,"reportingComponent":"#, source.lease_name),
        (r#","reportingInstance":"#, ""),
    ] {
        text.extend_from_slice(raw.as_bytes());
        serde_json::to_writer(&mut text, value).expect("a string serialises");
    }
    text.push(b'}');
    let text = String::from_utf8(text).expect("JSON text of strings is UTF-8");
    let metadata = ObjectMeta { name: name.clone(), namespace: source.namespace.to_string(), ..Default::default() };
    let request = Request {
        user,
        verb: Verb::Create,
        kind: Kind::Event,
        namespace: source.namespace.into(),
        name: "".into(),
        body: Body::Frozen(Kind::Event, Arc::new(FrozenJson::from_text(metadata, text, EVENT_SHAPE))),
        field_manager: Some(source.field_manager.into()),
        force: false,
        field_validation: FieldValidation::Ignore,
    };
    (request, name)
}

/// The shape of every Event [`event_request`] writes (its keys and nesting: see the server's
/// `frozen_shape`, which debug builds check it against at each create).
const EVENT_SHAPE: &str = "#14:involvedObject{4:kindv9:namespacev4:namev3:uidv10:apiVersionv15:resourceVersionv}\
6:reasonv7:messagev6:source{9:componentv}14:firstTimestampv13:lastTimestampv5:countv4:typev9:eventTimen\
18:reportingComponentv17:reportingInstancev";

/// The Event's body as JSON, as `tools/record` sends it: what [`event_request`] builds decoded.
#[cfg(test)]
pub(super) fn event_json(source: &EventSource, what: LeaderEvent) -> serde_json::Value {
    let name = format!("{}.{:x}", source.lease_name, source.wall);
    let at = Time::from_unix_nanos(source.wall);
    serde_json::json!({
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiServer;
    use crate::time::DEFAULT_EPOCH_UNIX_NANOS;

    /// An Event recorded from its typed body is the Event its JSON body would have created:
    /// the stored object (managedFields and all), the server's revision, and every error (a
    /// missing namespace, a name taken, a caller without rights) the same, audited or not.
    #[test]
    fn recorded_events_are_the_json_bodies_decoded() {
        let identities = ["widget-operator-0", "a \"quoted\" one", "ünïcode-ß", ""];
        let mut case = 0u64;
        for (i, identity) in identities.iter().enumerate() {
            for what in [LeaderEvent::BecameLeader, LeaderEvent::StoppedLeading] {
                for (namespace, user, audit) in [
                    ("default", User::admin(), false),
                    ("default", User::admin(), true),
                    ("missing", User::admin(), false),
                    ("default", User::named("nobody"), false),
                ] {
                    case += 1;
                    let uid = if i % 2 == 0 { "" } else { "00000000-0000-4000-8000-000000000007" };
                    let source = EventSource {
                        identity,
                        namespace,
                        lease_name: "widget-operator",
                        lease_uid: uid,
                        lease_resource_version: (i % 3 != 0).then_some(40 + i as u64),
                        wall: DEFAULT_EPOCH_UNIX_NANOS + case as i64 * 1_234_567_891,
                        field_manager: "widget-operator",
                    };
                    let user = Arc::new(user);
                    let (typed, name) = event_request(&source, what, Arc::clone(&user));
                    let mut json = typed.clone();
                    json.body = Body::Json(event_json(&source, what));
                    let outcome = |request: &Request| {
                        let mut server = ApiServer::new(DEFAULT_EPOCH_UNIX_NANOS);
                        server.set_audit(audit);
                        let first = server.handle_for_effect(1_000, request).map_err(|e| e.message);
                        // The same name again: AlreadyExists (or the first error again).
                        let second = server.handle_for_effect(2_000, request).map_err(|e| e.message);
                        let stored = server.peek_json(Kind::Event, namespace, &name);
                        (first, second, stored, server.resource_version(), format!("{:?}", server.audit()))
                    };
                    let typed_outcome = outcome(&typed);
                    assert_eq!(typed_outcome, outcome(&json), "{identity} {namespace} {}", user.name);
                    // Created exactly when the namespace exists and the caller may create Events.
                    let allowed = namespace == "default" && user.is_system_master();
                    assert_eq!(typed_outcome.2.is_some(), allowed, "{typed_outcome:?}");
                    assert!(typed_outcome.1.is_err(), "a second create of the same name fails");
                }
            }
        }
    }
}
