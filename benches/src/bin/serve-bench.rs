//! `leasesim serve` under load, beside a bare server of the same HTTP stack (hyper 1 on tokio,
//! HTTP/1.1 keep-alive) answering a fixed 200 with the body serve answers a Lease GET (so the
//! clients' own work is the same against both), in the same run on the same machine: N clients, each renewing its own Lease (GET, then PUT with the
//! resourceVersion it read) over one keep-alive connection, for a few seconds per point.
//!
//!   cargo run --release -p leasesim-benches --bin serve-bench [-- SECONDS_PER_POINT [CLIENTS…]]
//!
//! Prints requests/s and p50/p99 latency of both, and their ratio. Plain HTTP for both (TLS
//! costs the same on either side of the ratio). Not a test: figures go to docs/performance.md.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const EPOCH: i64 = 1_767_225_600_000_000_000;

/// One keep-alive connection: request, then read the answer's head and `Content-Length` body.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn request(&mut self, head: &str, body: &[u8]) -> (u16, Vec<u8>) {
        self.stream.write_all(head.as_bytes()).await.expect("write");
        self.stream.write_all(body).await.expect("write");
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let header = String::from_utf8_lossy(&self.buf[..end]).to_ascii_lowercase();
                let status = header[9..12].parse().unwrap_or(0);
                let length: usize = header
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: ").and_then(|v| v.trim().parse().ok()))
                    .unwrap_or(0);
                while self.buf.len() < end + 4 + length {
                    self.fill().await;
                }
                let body = self.buf[end + 4..end + 4 + length].to_vec();
                self.buf.drain(..end + 4 + length);
                return (status, body);
            }
            self.fill().await;
        }
    }

    async fn fill(&mut self) {
        let mut chunk = [0u8; 16384];
        let n = self.stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }
}

/// Each client renews `lease-<i>` for `seconds`: latencies in microseconds.
async fn drive(port: u16, token: &str, clients: usize, seconds: f64) -> (f64, Vec<u32>) {
    let token = Arc::new(token.to_string());
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for i in 0..clients {
        let token = token.clone();
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let mut conn = Conn { stream, buf: Vec::new() };
            let path = format!("/apis/coordination.k8s.io/v1/namespaces/default/leases/lease-{i}");
            let get = format!("GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n");
            let mut latencies = Vec::new();
            let mut n = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                let (_, body) = conn.request(&get, b"").await;
                latencies.push(t.elapsed().as_micros() as u32);
                let mut lease: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                n += 1;
                lease["spec"]["renewTime"] = serde_json::json!(format!("2026-01-01T00:00:{:02}.{:06}Z", n % 60, n % 1_000_000));
                let put_body = serde_json::to_vec(&lease).expect("json");
                let put = format!(
                    "PUT {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    put_body.len()
                );
                let t = Instant::now();
                let (status, _) = conn.request(&put, &put_body).await;
                latencies.push(t.elapsed().as_micros() as u32);
                assert!(status == 200, "a renewal answered {status}");
            }
            latencies
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("a client"));
    }
    let elapsed = started.elapsed().as_secs_f64().max(seconds);
    (all.len() as f64 / elapsed, all)
}

/// CPU seconds (user + system) used so far by this process's threads whose name starts with
/// `prefix` (Linux: `/proc/self/task/*/stat`; 0 elsewhere).
fn cpu_seconds(prefix: &str) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0.0 };
    let mut total = 0u64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        total += fields.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        total += fields.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    }
    total as f64 / ticks
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
}

/// The bare server: a fixed Lease body for a GET, a fixed 200 for anything else.
async fn bare(listener: TcpListener, body: Bytes) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let body = body.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let body = body.clone();
                async move {
                    use http_body_util::BodyExt;
                    let _ = req.into_body().collect().await;
                    Ok::<_, Infallible>(
                        Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(body))
                            .expect("response"),
                    )
                }
            });
            let _ = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// The body serve answers a GET of `lease-0`.
async fn served_lease(port: u16, token: &str) -> Vec<u8> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let mut conn = Conn { stream, buf: Vec::new() };
    let get = format!(
        "GET /apis/coordination.k8s.io/v1/namespaces/default/leases/lease-0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    let (status, body) = conn.request(&get, b"").await;
    assert!(status == 200, "serve answered {status} to a Lease GET");
    body
}

fn lease_json(i: usize) -> serde_json::Value {
    serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": format!("lease-{i}"), "namespace": "default"},
        "spec": {"holderIdentity": format!("client-{i}"), "leaseDurationSeconds": 15,
                 "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": 0}})
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let seconds: f64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let points: Vec<usize> =
        if args.len() > 1 { args[1..].iter().filter_map(|a| a.parse().ok()).collect() } else { vec![1, 100, 1000] };
    let max_clients = *points.iter().max().unwrap_or(&1);
    // The served world: empty, its Leases created through the API server before the clock runs.
    let mut spec =
        sim_core::model::WorldSpec::basic(1, 0, sim_core::elector::Algorithm::ClientGo, 3600 * 1_000_000_000);
    spec.nodes.clear();
    spec.setup_objects = Arc::new((0..max_clients).map(lease_json).collect());
    spec.epoch = EPOCH;
    let world = sim_core::world::World::new(spec).expect("a world");
    let mut core = sim_cli::serve::core::Core::new(
        world,
        sim_cli::serve::clock::ServeClock::running(sim_cli::serve::clock::ClockMode::Wall),
        sim_cli::serve::clients::Clients::new(1, &[], &[]),
        1,
        EPOCH,
    );
    // Every exchange recorded to a file, as `leasesim serve` does.
    let record = std::env::temp_dir().join(format!("serve-bench-record-{}.jsonl", std::process::id()));
    core.record_to(&record).expect("the record file");
    let limits = sim_cli::serve::http::Limits { max_connections: 8192, ..Default::default() };
    let served = sim_cli::serve::spawn(core, "127.0.0.1:0", 1.0, limits).expect("the server starts");
    let token = served.admin_token();
    // The clients on a runtime of their own, the bare server on another of two worker threads
    // (as serve's), so a profile tells the three apart by thread name.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bench-clients")
        .enable_all()
        .build()
        .expect("runtime");
    let bare_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("bare-server")
        .enable_all()
        .build()
        .expect("runtime");
    let bare_listener = bare_rt.block_on(TcpListener::bind("127.0.0.1:0")).expect("bind");
    let bare_port = bare_listener.local_addr().expect("addr").port();
    // The bare server answers with the very body serve answers a renewal's GET (its
    // managedFields included), so the clients do the same work against both.
    let fixed = Bytes::from(rt.block_on(served_lease(served.port, &token)));
    bare_rt.spawn(bare(bare_listener, fixed));
    println!(
        "clients  serve req/s  bare req/s  ratio  serve p50/p99 ms  bare p50/p99 ms  CPU µs/request: serve bare clients(serve) clients(bare)"
    );
    for clients in points {
        let (serve_cpu, clients_cpu) = (cpu_seconds("leasesim-serve"), cpu_seconds("bench-clients"));
        let (serve_rate, mut serve_lat) = rt.block_on(drive(served.port, &token, clients, seconds));
        let (serve_cpu, clients_cpu_serve) =
            (cpu_seconds("leasesim-serve") - serve_cpu, cpu_seconds("bench-clients") - clients_cpu);
        let (bare_cpu, clients_cpu) = (cpu_seconds("bare-server"), cpu_seconds("bench-clients"));
        let (bare_rate, mut bare_lat) = rt.block_on(drive(bare_port, &token, clients, seconds));
        let (bare_cpu, clients_cpu_bare) =
            (cpu_seconds("bare-server") - bare_cpu, cpu_seconds("bench-clients") - clients_cpu);
        serve_lat.sort_unstable();
        bare_lat.sort_unstable();
        let per = |cpu: f64, n: usize| cpu * 1e6 / n.max(1) as f64;
        println!(
            "{clients:>7}  {serve_rate:>11.0}  {bare_rate:>10.0}  {:>5.2}  {:>7.2} / {:<7.2}  {:>6.2} / {:<6.2}  {:>6.1} {:>5.1} {:>6.1} {:>6.1}",
            serve_rate / bare_rate,
            percentile(&serve_lat, 0.5),
            percentile(&serve_lat, 0.99),
            percentile(&bare_lat, 0.5),
            percentile(&bare_lat, 0.99),
            per(serve_cpu, serve_lat.len()),
            per(bare_cpu, bare_lat.len()),
            per(clients_cpu_serve, serve_lat.len()),
            per(clients_cpu_bare, bare_lat.len()),
        );
    }
    served.stop();
    let _ = std::fs::remove_file(&record);
    bare_rt.shutdown_background();
}
