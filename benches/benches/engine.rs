//! Baselines: the event queue against a plain binary-heap loop, the API server's verbs, and a
//! whole three-node run. Figures live in docs/performance.md.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use sim_core::api::{ApiServer, Body, Kind, Lease, LeaseSpec, MicroTime, Object, ObjectMeta, Request, User, Verb};
use sim_core::engine::EventQueue;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::sync::Arc;

const TIMERS: u64 = 1024;
const EVENTS: u64 = 100_000;

/// `TIMERS` periodic timers, each re-arming itself with a small state update, until `EVENTS`
/// have fired: the shape of a simulation's hot loop.
fn engine_timers() -> u64 {
    let mut q: EventQueue<(u32, u64)> = EventQueue::with_capacity(TIMERS as usize);
    let mut state = vec![0u64; TIMERS as usize];
    for i in 0..TIMERS {
        q.schedule(i * 7, (i as u32, 1_000 + i * 13));
    }
    let mut fired = 0;
    while let Some((now, (id, period))) = q.pop() {
        state[id as usize] = state[id as usize].wrapping_add(now);
        fired += 1;
        if fired == EVENTS {
            break;
        }
        q.schedule(now + period, (id, period));
    }
    black_box(state[0]) + fired
}

/// The same workload on a bare `BinaryHeap<Reverse<(time, seq, id, period)>>`.
fn plain_heap_timers() -> u64 {
    let mut heap = BinaryHeap::with_capacity(TIMERS as usize);
    let mut seq = 0u64;
    let mut state = vec![0u64; TIMERS as usize];
    for i in 0..TIMERS {
        heap.push(Reverse((i * 7, seq, i as u32, 1_000 + i * 13)));
        seq += 1;
    }
    let mut fired = 0;
    while let Some(Reverse((now, _, id, period))) = heap.pop() {
        state[id as usize] = state[id as usize].wrapping_add(now);
        fired += 1;
        if fired == EVENTS {
            break;
        }
        heap.push(Reverse((now + period, seq, id, period)));
        seq += 1;
    }
    black_box(state[0]) + fired
}

fn bench_engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(EVENTS));
    g.bench_function("event_queue_timers", |b| b.iter(engine_timers));
    g.bench_function("plain_binary_heap_timers", |b| b.iter(plain_heap_timers));
    g.finish();
}

fn server_with_lease() -> (ApiServer, Arc<Lease>) {
    let mut server = ApiServer::new(sim_core::time::DEFAULT_EPOCH_UNIX_NANOS);
    let lease = Lease {
        metadata: ObjectMeta { name: "l".into(), namespace: "default".into(), ..Default::default() },
        spec: LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime::from_unix_micros(0)),
            ..Default::default()
        },
    };
    let created = match server.handle(0, &request(Verb::Create, Body::Lease(Arc::new(lease)))) {
        Ok(Object::Lease(l)) => l,
        _ => unreachable!(),
    };
    (server, created)
}

fn request(verb: Verb, body: Body) -> Request {
    Request {
        user: Arc::new(User::admin()),
        verb,
        kind: Kind::Lease,
        namespace: "default".into(),
        name: "l".into(),
        body,
        field_manager: Some("bench".into()),
        force: false,
        field_validation: sim_core::api::FieldValidation::Ignore,
    }
}

fn bench_api(c: &mut Criterion) {
    let mut g = c.benchmark_group("api_server");
    g.throughput(Throughput::Elements(1));
    let (mut server, _) = server_with_lease();
    let get = request(Verb::Get, Body::None);
    g.bench_function("get_lease", |b| b.iter(|| black_box(server.handle(1, &get).is_ok())));
    let (mut server, mut current) = server_with_lease();
    let mut t = 0i64;
    g.bench_function("update_lease_renewal", |b| {
        b.iter(|| {
            t += 1;
            let mut next = Lease::clone(&current);
            next.spec.renew_time = Some(MicroTime::from_unix_micros(t));
            match server.handle(t as u64, &request(Verb::Update, Body::Lease(Arc::new(next)))) {
                Ok(Object::Lease(l)) => current = l,
                other => panic!("{:?}", other.err()),
            }
        })
    });
    let (mut server, _) = server_with_lease();
    let mut n = 0u64;
    g.bench_function("apply_configmap", |b| {
        b.iter(|| {
            n += 1;
            let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"phase": (n % 2).to_string()}});
            let req = Request { kind: Kind::ConfigMap, name: "c".into(), ..request(Verb::Apply, Body::Json(body)) };
            black_box(server.handle(n, &req).is_ok())
        })
    });
    g.finish();
}

fn bench_world(c: &mut Criterion) {
    use sim_core::elector::Algorithm;
    use sim_core::model::WorldSpec;
    let mut g = c.benchmark_group("world");
    g.sample_size(20);
    g.bench_function("three_nodes_one_simulated_hour", |b| {
        b.iter_batched(
            || WorldSpec::basic(1, 3, Algorithm::ClientGo, sim_core::time::secs(3600)),
            |spec| black_box(sim_core::world::World::new(spec).unwrap().run().events_processed),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_engine, bench_api, bench_world);
criterion_main!(benches);
