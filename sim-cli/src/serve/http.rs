//! The HTTP/1.1 server around [`Core`]: hyper on tokio, keep-alive, chunked watch bodies.
//! Bounds on everything a client controls: a request head must arrive within 30 s, a body is
//! read up to 3 MiB (then 413), at most 4,096 connections are open (more are closed at once),
//! a watch nobody reads is dropped once 256 events wait for it, every hang ends ([`Limits`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, broadcast, mpsc, watch};

use super::admin;
use super::core::{Core, classify};
use super::faults::Action;
use super::http_types::{HttpRequest, Reply};
use super::kube::{self, MAX_BODY_BYTES};

/// The bounds on what clients can make the server hold.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// A request head (or a TLS handshake) must arrive within this.
    pub head_timeout: Duration,
    /// Connections open at once; more are closed as they come.
    pub max_connections: usize,
    /// Events waiting for a watch's reader; a watch whose reader falls this far behind is ended.
    pub watch_backlog: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { head_timeout: Duration::from_secs(30), max_connections: 4096, watch_backlog: 256 }
    }
}

/// What every connection shares.
pub struct Shared {
    pub core: Mutex<Core>,
    pub revision: watch::Receiver<u64>,
    pub live: broadcast::Sender<String>,
    pub shutdown: watch::Receiver<bool>,
    /// Seconds of real time per second of the server's clock (1 / K for `scaled:K`).
    pub real_per_true: f64,
    pub limits: Limits,
}

impl Shared {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Core> {
        // A panic while holding the lock would poison it; the core's state is still whole
        // (every method finishes its writes before it can fail), so go on with it.
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// Why a connection ends without an answer.
#[derive(Debug)]
pub struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by a fault")
    }
}

impl std::error::Error for Dropped {}

/// A connection, plain or TLS, that resets (RST, `SO_LINGER` 0) instead of closing when a
/// fault asks.
struct Conn {
    stream: Stream,
    reset: Arc<AtomicBool>,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.reset.load(Ordering::Relaxed) {
            let tcp = match &self.stream {
                Stream::Plain(s) => s,
                Stream::Tls(s) => s.get_ref().0,
            };
            let _ = tcp.set_zero_linger();
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    /// Vectored, as the streams are: hyper then writes an answer's head and body in one
    /// `writev` instead of copying them together first.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.stream {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.stream {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// TLS if the client opens with a TLS handshake (its first byte 0x16), plain HTTP otherwise:
/// one port serves the API over HTTPS and the page over HTTP. A client that sends nothing, or
/// whose handshake does not finish, is dropped after the head timeout.
async fn open(tcp: TcpStream, tls: &tokio_rustls::TlsAcceptor, head_timeout: Duration) -> Option<Stream> {
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(head_timeout, tcp.peek(&mut first)).await;
    match peeked {
        Ok(Ok(1)) if first[0] == 0x16 => match tokio::time::timeout(head_timeout, tls.accept(tcp)).await {
            Ok(Ok(stream)) => Some(Stream::Tls(Box::new(stream))),
            _ => None,
        },
        Ok(Ok(1)) => Some(Stream::Plain(tcp)),
        _ => None,
    }
}

/// Accepts connections until shutdown.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, tls: Arc<rustls::ServerConfig>) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let limits = shared.limits;
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut shutdown = shared.shutdown.clone();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(_) => {
                    // Out of descriptors, say: wait a moment rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            drop(stream); // over the limit: closed at once
            continue;
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Some(stream) = open(stream, &acceptor, limits.head_timeout).await else { return };
            let reset = Arc::new(AtomicBool::new(false));
            let io = TokioIo::new(Conn { stream, reset: reset.clone() });
            let service = service_fn(move |req| handle(shared.clone(), reset.clone(), req));
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.head_timeout)
                .keep_alive(true)
                .serve_connection(io, service);
            let _ = conn.await;
            drop(permit);
        });
    }
}

fn full(reply: Reply) -> Response<Body> {
    match reply {
        Reply::Body { status, content_type, body, headers } => {
            let mut response = Response::builder().status(status).header("content-type", content_type);
            for (k, v) in headers {
                response = response.header(k, v);
            }
            response.body(Full::new(Bytes::from(body)).boxed()).expect("a valid response")
        }
        object @ Reply::Object { .. } => full(object.rendered()),
        Reply::Watch { .. } | Reply::Live => unreachable!("streams are built by their own functions"),
    }
}

async fn read_request(req: Request<Incoming>) -> Result<HttpRequest, Response<Body>> {
    let (parts, body) = req.into_parts();
    let target = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let (path, query) = HttpRequest::parse_target(&target);
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes().to_vec(),
        Err(_) => {
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("Request entity too large: limit is {MAX_BODY_BYTES}"),
                "reason": "RequestEntityTooLarge", "code": 413});
            return Err(full(Reply::json(413, &status)));
        }
    };
    let mut req =
        HttpRequest { method: parts.method.as_str().to_string(), path, query, headers, body, typed_body: None };
    req.typed_body = kube::typed_body(&req);
    Ok(req)
}

async fn handle(
    shared: Arc<Shared>,
    reset: Arc<AtomicBool>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Dropped> {
    let req = match read_request(req).await {
        Ok(req) => req,
        Err(response) => return Ok(response),
    };
    if super::playground::is_path(&req.path) {
        // Simulations take milliseconds to a second (100 seeds): off the I/O threads, and
        // without the core's lock (the playground's worlds are its own).
        let (method, path, body) = (req.method.clone(), req.path.clone(), req.body.clone());
        let reply = tokio::task::spawn_blocking(move || super::playground::answer(&method, &path, &body))
            .await
            .unwrap_or_else(|_| kube::error_reply(&sim_core::api::ApiError::internal("the playground's run failed")));
        return Ok(full(reply));
    }
    if admin::is_admin_path(&req.path) {
        return Ok(match admin::answer(&shared, &req) {
            Reply::Live => live_stream(&shared),
            reply => full(reply),
        });
    }
    let class = classify(&req);
    let (client, number, fault, started) = {
        let mut core = shared.lock();
        let started = core.now();
        let client = match core.authenticate(&req) {
            Ok(client) => client,
            Err(reply) => {
                core.record("(unauthenticated)", 0, &req, &class, Some(reply.status()), started, None);
                return Ok(full(reply));
            }
        };
        let (number, fault) = core.decide(&client.identity, &req, &class);
        (client, number, fault.map(|(_, action)| action), started)
    };
    let wait = |nanos: u64| Duration::from_secs_f64(nanos as f64 / 1e9 * shared.real_per_true);
    match &fault {
        Some(Action::Latency { delay }) => tokio::time::sleep(wait(*delay)).await,
        Some(Action::Hang { max }) => {
            shared.lock().record(&client.identity, number, &req, &class, None, started, fault.as_ref());
            let mut shutdown = shared.shutdown.clone();
            tokio::select! {
                _ = tokio::time::sleep(wait(*max)) => {}
                _ = shutdown.changed() => {}
            }
            return Err(Dropped);
        }
        Some(Action::Close) | Some(Action::Reset) => {
            if matches!(fault, Some(Action::Reset)) {
                reset.store(true, Ordering::Relaxed);
            }
            shared.lock().record(&client.identity, number, &req, &class, None, started, fault.as_ref());
            return Err(Dropped);
        }
        Some(Action::Status { code, retry_after, message }) => {
            let mut core = shared.lock();
            let reply = core.fault_status(&req, &client, *code, *retry_after, message.as_deref());
            core.record(&client.identity, number, &req, &class, Some(*code), started, fault.as_ref());
            return Ok(full(reply));
        }
        None => {}
    }
    let reply = {
        let mut core = shared.lock();
        let reply = core.answer(&client, &req);
        core.record(&client.identity, number, &req, &class, Some(reply.status()), started, fault.as_ref());
        reply
    };
    Ok(match reply {
        Reply::Watch { spec, initial, rv } => watch_stream(&shared, *spec, initial, rv),
        Reply::Live => live_stream(&shared),
        reply => full(reply),
    })
}

/// A watch's chunked body: the first lines, then each matching change as it is committed,
/// bookmarks when asked; ends at `timeoutSeconds`, at shutdown, or when the client stops
/// reading (its backlog full).
fn watch_stream(
    shared: &Arc<Shared>,
    mut spec: super::http_types::WatchSpec,
    initial: Vec<Vec<u8>>,
    mut rv: u64,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(shared.limits.watch_backlog);
    for line in initial {
        if tx.try_send(Ok(Frame::data(Bytes::from(line)))).is_err() {
            break;
        }
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut revision = shared.revision.clone();
        let mut shutdown = shared.shutdown.clone();
        let deadline = spec.timeout_secs.map(|s| tokio::time::Instant::now() + Duration::from_secs(s));
        let mut bookmark = tokio::time::interval(Duration::from_secs(60));
        bookmark.tick().await;
        loop {
            // Catch up first: a change between the list and this watch is sent too.
            let (lines, next, gone) = {
                let core = shared.lock();
                let wall = core.wall(core.now());
                kube::watch_changes(core.world(), &mut spec, rv, wall)
            };
            rv = next;
            for line in lines {
                if tx.try_send(Ok(Frame::data(Bytes::from(line)))).is_err() {
                    return; // an unread watch is dropped, not buffered without bound
                }
            }
            if gone {
                return;
            }
            let until_deadline = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed = revision.changed() => if changed.is_err() { return },
                _ = bookmark.tick(), if spec.bookmarks => {
                    if tx.try_send(Ok(Frame::data(Bytes::from(kube::bookmark_line(spec.kind, rv))))).is_err() {
                        return;
                    }
                }
                _ = until_deadline => return,
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
            }
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(StreamBody::new(Frames(rx)).boxed())
        .expect("a valid response")
}

/// The live view's server-sent events: every record line, Lease write, belief and control.
fn live_stream(shared: &Arc<Shared>) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(shared.limits.watch_backlog);
    let mut events = shared.live.subscribe();
    let mut shutdown = shared.shutdown.clone();
    tokio::spawn(async move {
        let _ = tx.try_send(Ok(Frame::data(Bytes::from_static(b": leasesim live view\n\n"))));
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok(line) => {
                        if tx.try_send(Ok(Frame::data(Bytes::from(format!("data: {line}\n\n"))))).is_err() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => return,
                },
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
            }
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(StreamBody::new(Frames(rx)).boxed())
        .expect("a valid response")
}

/// A channel of body frames as the stream a streaming body reads.
struct Frames(mpsc::Receiver<Result<Frame<Bytes>, Infallible>>);

impl futures_core::Stream for Frames {
    type Item = Result<Frame<Bytes>, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}
