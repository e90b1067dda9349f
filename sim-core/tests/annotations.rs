//! A Lease's annotations through a run: every elector writes its Lease for a minute (acquire,
//! renewals, a takeover after the leader is killed), and the annotations someone else put on
//! the Lease before the run are still there at its end, as on a real server, where no elector
//! writes annotations and a PUT carries back the cached object's metadata (client-go
//! `resourcelock/leaselock.go` `LeaseLock.Update`: the cached `ll.lease` with its spec
//! replaced; the other libraries as `docs/algorithms.md` "Annotations" lists them).

use sim_core::elector::Algorithm;
use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
use sim_core::time::secs;
use sim_core::world::{SpanKind, World};

#[test]
fn annotations_put_on_a_lease_before_the_run_survive_every_electors_writes() {
    for &algorithm in Algorithm::ALL {
        let mut spec = WorldSpec::basic(7, 2, algorithm, secs(90));
        spec.nodes[1].start_at = secs(1);
        spec.faults.push(TimedFault { at: secs(30), target: Target::Node(0), kind: FaultKind::Crash });
        std::sync::Arc::make_mut(&mut spec.setup_objects).push(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "widget-operator", "namespace": "op-leader",
                         "annotations": {"example.com/owner": "platform-team", "note": "do not delete"}},
            // Held once by someone long gone (kube-leader-election takes no Lease without a
            // holder, renewTime, duration and transitions).
            "spec": {"holderIdentity": "old-owner", "leaseDurationSeconds": 15, "leaseTransitions": 3,
                     "acquireTime": "2025-12-31T22:00:00.000000Z", "renewTime": "2025-12-31T23:00:00.000000Z"},
        }));
        let (result, lease) = World::new(spec).expect("valid").run_and_peek("op-leader", "widget-operator");
        let lease = lease.expect("the Lease exists");
        // Taken from the old owner and written since (which node holds it at the end depends on
        // the library: nestjs's follower, say, hears only its own writes).
        assert!(
            lease.spec.holder_identity.as_deref().is_some_and(|h| h.starts_with("widget-operator-")),
            "{algorithm:?}"
        );
        assert!(result.spans.iter().any(|s| s.kind == SpanKind::Leader), "{algorithm:?}: someone led");
        assert_eq!(
            lease.metadata.annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(),
            [("example.com/owner", "platform-team"), ("note", "do not delete")],
            "{algorithm:?}"
        );
    }
}

/// kube-coordinate applies its cached Lease whole (`src/lib.rs` `try_acquire_or_renew`: the
/// last Lease it read, managedFields cleared, force), so its field manager owns the Lease's
/// labels and annotations beside the spec, each key on its own and no `.` for the maps (an
/// apply's field set: structured-merge-diff `typed/tofieldset.go`). kubert and
/// kube-lease-manager apply a spec alone, and own no metadata.
#[test]
fn kube_coordinates_apply_of_its_cached_lease_owns_its_labels_and_annotations() {
    for (algorithm, owns_metadata) in
        [(Algorithm::KubeCoordinate, true), (Algorithm::Kubert, false), (Algorithm::KubeLeaseManager, false)]
    {
        let mut spec = WorldSpec::basic(3, 1, algorithm, secs(60));
        std::sync::Arc::make_mut(&mut spec.setup_objects).push(serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "widget-operator", "namespace": "op-leader",
                         "labels": {"app": "widget"}, "annotations": {"note": "keep"}},
            "spec": {"holderIdentity": "old-owner", "leaseDurationSeconds": 15, "leaseTransitions": 3,
                     "acquireTime": "2025-12-31T22:00:00.000000Z", "renewTime": "2025-12-31T23:00:00.000000Z"},
        }));
        let (_, lease) = World::new(spec).expect("valid").run_and_peek("op-leader", "widget-operator");
        let lease = lease.expect("the Lease exists");
        assert_eq!(lease.spec.holder_identity.as_deref(), Some("widget-operator-0"), "{algorithm:?}");
        let elector = lease
            .metadata
            .managed_fields
            .iter()
            .find(|e| &*e.operation == "Apply")
            .unwrap_or_else(|| panic!("{algorithm:?}: an Apply entry in {:?}", lease.metadata.managed_fields));
        let metadata = elector.fields_v1.get("f:metadata");
        if owns_metadata {
            assert_eq!(
                metadata,
                Some(&serde_json::json!({"f:annotations": {"f:note": {}}, "f:labels": {"f:app": {}}})),
                "{algorithm:?}"
            );
        } else {
            assert_eq!(metadata, None, "{algorithm:?}");
        }
        assert_eq!(lease.metadata.annotations.get("note").map(String::as_str), Some("keep"), "{algorithm:?}");
        assert_eq!(lease.metadata.labels.get("app").map(String::as_str), Some("widget"), "{algorithm:?}");
    }
}
