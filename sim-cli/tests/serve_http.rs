//! `leasesim serve` over HTTP: its answers are the simulator's API server's, byte for byte in
//! the body; bad and hostile input gets the real answer or a closed connection, never a panic,
//! never unbounded growth, never a half-written store. Plain HTTP on the same port as TLS (the
//! server tells them apart by the first byte), so the test needs no TLS client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sim_cli::serve::clients::Clients;
use sim_cli::serve::clock::ServeClock;
use sim_cli::serve::core::Core;
use sim_cli::serve::http::Limits;
use sim_cli::serve::{Running, spawn};
use sim_core::api::{self, ApiServer, Body, Kind, Request, User, Verb};
use sim_core::model::WorldSpec;
use sim_core::time::secs;
use sim_core::world::World;

const EPOCH: i64 = 1_767_225_600_000_000_000; // 2026-01-01T00:00:00Z
const NOW: u64 = 5_000_000_000;

fn server(limits: Limits) -> Running {
    let mut spec = WorldSpec::basic(1, 0, sim_core::elector::Algorithm::ClientGo, secs(3600));
    spec.nodes.clear();
    spec.setup_objects = Arc::new(Vec::new());
    spec.epoch = EPOCH;
    let world = World::new(spec).expect("an empty world");
    let core = Core::new(world, ServeClock::Manual(NOW), Clients::new(1, &[], &[]), 1, EPOCH);
    spawn(core, "127.0.0.1:0", 1.0, limits).expect("the server starts")
}

/// One HTTP/1.1 exchange on a fresh connection: (status, content type, body).
fn exchange(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("written");
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> (u16, String, Vec<u8>) {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(raw.len().saturating_sub(4));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let content_type = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-type: ").map(str::to_string))
        .unwrap_or_default();
    let mut body = raw.get(split + 4..).unwrap_or_default().to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    (status, content_type, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&data[..end]).unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || data.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
    out
}

struct Client {
    port: u16,
    auth: String,
}

impl Client {
    fn new(s: &Running) -> Client {
        Client { port: s.port, auth: format!("Bearer {}", s.admin_token()) }
    }

    fn send(&self, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
        exchange(self.port, method, path, &[("Authorization", &self.auth), ("Content-Type", content_type)], body)
    }
}

fn admin_request(verb: Verb, kind: Kind, ns: &str, name: &str, body: Body) -> Request {
    Request {
        user: Arc::new(User::admin()),
        verb,
        kind,
        namespace: ns.into(),
        name: name.into(),
        body,
        field_manager: None,
        force: false,
        field_validation: sim_core::api::FieldValidation::Ignore,
    }
}

/// The simulator's answer body: the object's JSON or the Status, as the server writes it.
fn simulator_body(server: &mut ApiServer, request: &Request) -> (u16, Vec<u8>) {
    match server.handle_created(NOW, request) {
        Ok((object, created)) => (if created { 201 } else { 200 }, serde_json::to_vec(&api::to_json(&object)).unwrap()),
        Err(e) => (e.code, serde_json::to_vec(&e.to_status_json()).unwrap()),
    }
}

#[test]
fn an_answer_over_http_is_the_simulators_answer_byte_for_byte() {
    let s = server(Limits::default());
    let c = Client::new(&s);
    let mut sim = ApiServer::new(EPOCH);
    let ns = br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"op-leader"}}"#;
    let lease = br#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"w","namespace":"op-leader"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2026-01-01T00:00:01.000000Z"}}"#;
    let leases = "/apis/coordination.k8s.io/v1/namespaces/op-leader/leases";
    let text = |b: &[u8]| Body::Text(String::from_utf8(b.to_vec()).unwrap());
    let steps: Vec<(&str, String, &str, Vec<u8>, Request)> = vec![
        (
            "POST",
            "/api/v1/namespaces".into(),
            "application/json",
            ns.to_vec(),
            admin_request(Verb::Create, Kind::Namespace, "", "", text(ns)),
        ),
        (
            "POST",
            leases.into(),
            "application/json",
            lease.to_vec(),
            admin_request(Verb::Create, Kind::Lease, "op-leader", "", text(lease)),
        ),
        (
            "GET",
            format!("{leases}/w"),
            "application/json",
            vec![],
            admin_request(Verb::Get, Kind::Lease, "op-leader", "w", Body::None),
        ),
        (
            "PATCH",
            format!("{leases}/w"),
            "application/merge-patch+json",
            br#"{"spec":{"holderIdentity":"b"}}"#.to_vec(),
            admin_request(Verb::Patch, Kind::Lease, "op-leader", "w", text(br#"{"spec":{"holderIdentity":"b"}}"#)),
        ),
        (
            "PUT",
            format!("{leases}/w"),
            "application/json",
            br#"{"metadata":{"name":"w","resourceVersion":"1"},"spec":{}}"#.to_vec(),
            admin_request(
                Verb::Update,
                Kind::Lease,
                "op-leader",
                "w",
                text(br#"{"metadata":{"name":"w","resourceVersion":"1"},"spec":{}}"#),
            ),
        ),
        (
            "GET",
            format!("{leases}/missing"),
            "application/json",
            vec![],
            admin_request(Verb::Get, Kind::Lease, "op-leader", "missing", Body::None),
        ),
        (
            "GET",
            leases.into(),
            "application/json",
            vec![],
            admin_request(Verb::List, Kind::Lease, "op-leader", "", Body::None),
        ),
        (
            "DELETE",
            format!("{leases}/w"),
            "application/json",
            vec![],
            admin_request(Verb::Delete, Kind::Lease, "op-leader", "w", Body::None),
        ),
    ];
    for (method, path, content_type, body, request) in steps {
        let (status, _, got) = c.send(method, &path, content_type, &body);
        let (want_status, want) = simulator_body(&mut sim, &request);
        if method == "DELETE" {
            // The object JSON of a delete is the apiserver's Success Status over HTTP.
            assert_eq!(status, want_status, "{method} {path}");
            continue;
        }
        assert_eq!(
            (status, String::from_utf8_lossy(&got)),
            (want_status, String::from_utf8_lossy(&want)),
            "{method} {path}"
        );
    }
    s.stop();
}

#[test]
fn bad_input_gets_the_apiservers_answer_and_changes_nothing() {
    let s = server(Limits::default());
    let c = Client::new(&s);
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let rv = || -> String {
        let (_, _, body) = c.send("GET", leases, "application/json", b"");
        let list: Value = serde_json::from_slice(&body).unwrap();
        list["metadata"]["resourceVersion"].as_str().unwrap().to_string()
    };
    let before = rv();
    // Malformed JSON, YAML and protobuf bodies.
    let (code, _, body) = c.send("POST", leases, "application/json", b"{\"kind\": ");
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    let (code, _, _) =
        c.send("PATCH", &format!("{leases}/x?fieldManager=m"), "application/apply-patch+yaml", b"a: [b: {");
    assert_eq!(code, 400);
    let (code, _, _) = c.send("POST", leases, "application/vnd.kubernetes.protobuf", b"k8s\0\x0a\xff\xff\xff\xff");
    assert_eq!(code, 400);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let started = Instant::now();
    let (code, _, _) =
        c.send("PATCH", &format!("{leases}/x?fieldManager=m"), "application/apply-patch+yaml", deep.as_bytes());
    assert_eq!(code, 400);
    assert!(started.elapsed() < Duration::from_secs(2), "deep nesting is refused at once");
    // Over 3 MiB: 413.
    let (code, _, body) = c.send("POST", leases, "application/json", &vec![b' '; 3 * 1024 * 1024 + 1]);
    assert_eq!(code, 413);
    assert!(String::from_utf8_lossy(&body).contains("Request entity too large: limit is 3145728"));
    // Unknown paths and kinds.
    let (code, content_type, body) = c.send("GET", "/nope/v1/x", "application/json", b"");
    assert_eq!(
        (code, content_type.as_str(), body.as_slice()),
        (404, "text/plain; charset=utf-8", b"404 page not found\n".as_slice())
    );
    let (code, _, body) =
        c.send("GET", "/apis/coordination.k8s.io/v1/namespaces/default/foos", "application/json", b"");
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((code, status["message"].as_str()), (404, Some("the server could not find the requested resource")));
    // Missing and wrong tokens.
    let (code, _, body) = exchange(s.port, "GET", leases, &[], b"");
    assert_eq!(code, 401, "{}", String::from_utf8_lossy(&body));
    let (code, _, _) = exchange(s.port, "GET", leases, &[("Authorization", "Bearer nope")], b"");
    assert_eq!(code, 401);
    // An unsupported patch type, a method a collection does not take.
    let (code, _, _) = c.send("PATCH", &format!("{leases}/x"), "text/plain", b"{}");
    assert_eq!(code, 415);
    let (code, _, _) = c.send("PUT", leases, "application/json", b"{}");
    assert_eq!(code, 405);
    // Nothing was written.
    assert_eq!(rv(), before);
    s.stop();
}

#[test]
fn idle_connections_floods_and_unread_watches_are_bounded() {
    let limits = Limits { head_timeout: Duration::from_millis(500), max_connections: 64, watch_backlog: 8 };
    let s = server(limits);
    let c = Client::new(&s);
    // A client that connects and sends nothing is closed after the head timeout.
    let mut idle = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 16];
    assert!(matches!(idle.read(&mut buf), Ok(0) | Err(_)));
    assert!(started.elapsed() < Duration::from_secs(4));
    // Two thousand connections at once: those over the limit are closed, the server answers.
    let flood: Vec<TcpStream> = (0..2000).filter_map(|_| TcpStream::connect(("127.0.0.1", s.port)).ok()).collect();
    drop(flood);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(c.send("GET", "/version", "application/json", b"").0, 200);
    // A watch nobody reads: ended once its backlog is full, not buffered for ever.
    let cms = "/api/v1/namespaces/default/configmaps";
    let mut watch = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    let head = format!("GET {cms}?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\r\n", c.auth);
    watch.write_all(head.as_bytes()).unwrap();
    let big = "x".repeat(200_000);
    for i in 0..200 {
        let body =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"d": big}});
        assert_eq!(c.send("POST", cms, "application/json", body.to_string().as_bytes()).0, 201);
    }
    // The server still answers, and the watch's connection was ended (its reader now gets
    // what the socket held, then the end).
    assert_eq!(c.send("GET", "/version", "application/json", b"").0, 200);
    watch.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let _ = watch.read_to_end(&mut got);
    assert!(got.len() < 200 * 200_000, "the unread watch was not kept: {} bytes", got.len());
    s.stop();
}

/// Random requests, mutated from valid ones, for a bounded time: every one gets an answer or a
/// closed connection, and the server goes on answering.
#[test]
fn fuzzed_requests_never_stop_the_server() {
    let s = server(Limits { head_timeout: Duration::from_millis(300), ..Limits::default() });
    let token = s.admin_token();
    let seeds = [
        format!(
            "GET /apis/coordination.k8s.io/v1/namespaces/default/leases?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
        ),
        format!(
            "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"a\"}}}}"
        ),
        format!(
            "PATCH /apis/coordination.k8s.io/v1/namespaces/default/leases/a?fieldManager=m HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/apply-patch+yaml\r\nContent-Length: 20\r\n\r\nspec: {{a: [1, {{b: 2}}]}}"
        ),
        format!(
            "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nImpersonate-User: system:serviceaccount:a:b\r\nContent-Type: application/vnd.kubernetes.protobuf\r\nContent-Length: 12\r\n\r\nk8s\0\x0a\x02\x0a\x00\x12\x02\x12\x00"
        ),
    ];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let mut bytes = seeds[(next() % seeds.len() as u64) as usize].clone().into_bytes();
        for _ in 0..(next() % 6) {
            let i = (next() % bytes.len() as u64) as usize;
            match next() % 3 {
                0 => bytes[i] = next() as u8,
                1 => bytes.truncate(i.max(1)),
                _ => bytes.insert(i, next() as u8),
            }
        }
        if let Ok(mut conn) = TcpStream::connect(("127.0.0.1", s.port)) {
            conn.set_read_timeout(Some(Duration::from_millis(400))).unwrap();
            let _ = conn.write_all(&bytes);
            let _ = conn.shutdown(std::net::Shutdown::Write);
            let mut sink = [0u8; 4096];
            let _ = conn.read(&mut sink);
        }
        sent += 1;
    }
    assert!(sent > 20);
    let c = Client::new(&s);
    assert_eq!(c.send("GET", "/version", "application/json", b"").0, 200);
    s.stop();
}

/// serve's session folder is named after `--out` and removed when the session ends: a folder
/// of that name serve did not make is refused and left as it was, and so is an `--out` that
/// holds someone else's files (the report could not be written there at the end).
#[test]
fn serve_never_takes_a_folder_it_did_not_make() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    let session = tmp.path().join("mine.session");
    std::fs::create_dir_all(&session).unwrap();
    std::fs::write(session.join("notes.txt"), "my notes").unwrap();
    let serve = |out: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_leasesim"))
            .args(["serve", "--listen", "127.0.0.1:0", "--out"])
            .arg(out)
            .output()
            .unwrap()
    };
    let o = serve(&out);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("was not made by leasesim serve"));
    assert_eq!(std::fs::read_to_string(session.join("notes.txt")).unwrap(), "my notes");
    let foreign = tmp.path().join("theirs");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("data.csv"), "1,2").unwrap();
    let o = serve(&foreign);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!tmp.path().join("theirs.session").exists());
    assert_eq!(std::fs::read_to_string(foreign.join("data.csv")).unwrap(), "1,2");
}
