//! Listeners, connection threads and request dispatch. One thread accepts
//! per origin and one thread serves each connection (keep-alive), so slow or
//! stalled clients never block each other. Shutdown closes every socket.

use std::collections::{BTreeSet, HashMap};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use super::faults::Faults;
use super::http::{self, AfterResponse, ReadError, Request, Response};
use super::log::{LoggedRequest, Origin};
use super::store::Store;
use super::{hub_api, storage};

/// What a token may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read public repos and the user's own private repos.
    Read,
    /// Read, and create and commit to repos in the user's namespaces.
    Write,
}

#[derive(Clone, Debug)]
pub(super) struct TokenGrant {
    pub user: String,
    pub access: Access,
}

/// Knobs of the server's (non-hostile) policy.
pub(super) struct Config {
    /// Entries per tree page before a `Link: rel="next"` is sent.
    pub tree_page_size: usize,
    /// Files at least this large are LFS whatever their content.
    pub lfs_threshold: Option<u64>,
    /// Like S3 presigned URLs, refuse storage requests that carry `Authorization`.
    pub cdn_rejects_authorization: bool,
}

/// Replaces the normal handling of a request when it returns `Some`.
pub type Interceptor = dyn Fn(&Request) -> Option<Response> + Send + Sync;

pub(super) struct State {
    pub store: Store,
    pub tokens: HashMap<String, TokenGrant>,
    /// Organization name to member user names.
    pub orgs: HashMap<String, BTreeSet<String>>,
    pub config: Config,
    pub faults: Faults,
    /// Signs storage URLs; changing it expires every URL handed out so far.
    pub url_secret: u64,
}

impl State {
    /// Whether `user` may act in `namespace` (their own, or an org they belong to).
    pub fn is_member(&self, user: &str, namespace: &str) -> bool {
        user == namespace
            || self
                .orgs
                .get(namespace)
                .is_some_and(|members| members.contains(user))
    }
}

pub(super) struct Urls {
    pub hub: String,
    pub cdn: String,
    pub foreign: String,
}

pub(super) struct Shared {
    pub urls: Urls,
    pub state: Mutex<State>,
    pub log: Mutex<Vec<LoggedRequest>>,
    pub interceptor: Mutex<Option<Arc<Interceptor>>>,
    pub internal_errors: Mutex<Vec<String>>,
    stopping: AtomicBool,
    connections: Mutex<HashMap<u64, TcpStream>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    next_connection: AtomicU64,
}

/// Locks a mutex even if a panicking thread poisoned it: the state is only
/// mutated in complete steps, so it stays consistent.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub fn record_internal_error(&self, message: String) {
        lock(&self.internal_errors).push(message);
    }
}

/// The running listeners; dropping it stops everything.
pub(super) struct Running {
    pub shared: Arc<Shared>,
    addresses: Vec<SocketAddr>,
    acceptors: Vec<JoinHandle<()>>,
}

fn bind() -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    Ok((listener, address))
}

pub(super) fn start(state: State) -> std::io::Result<Running> {
    let (hub, hub_address) = bind()?;
    let (cdn, cdn_address) = bind()?;
    let (foreign, foreign_address) = bind()?;
    let shared = Arc::new(Shared {
        urls: Urls {
            hub: format!("http://{hub_address}"),
            cdn: format!("http://{cdn_address}"),
            foreign: format!("http://{foreign_address}"),
        },
        state: Mutex::new(state),
        log: Mutex::new(Vec::new()),
        interceptor: Mutex::new(None),
        internal_errors: Mutex::new(Vec::new()),
        stopping: AtomicBool::new(false),
        connections: Mutex::new(HashMap::new()),
        workers: Mutex::new(Vec::new()),
        next_connection: AtomicU64::new(0),
    });
    let mut acceptors = Vec::new();
    for (listener, origin) in [
        (hub, Origin::Hub),
        (cdn, Origin::Cdn),
        (foreign, Origin::Foreign),
    ] {
        let shared = Arc::clone(&shared);
        acceptors.push(
            thread::Builder::new()
                .name(format!("hub-server-{origin}-accept"))
                .spawn(move || accept_loop(&shared, &listener, origin))?,
        );
    }
    Ok(Running {
        shared,
        addresses: vec![hub_address, cdn_address, foreign_address],
        acceptors,
    })
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // A blocking accept() only returns on a connection: make one per listener.
        for address in &self.addresses {
            let _ = TcpStream::connect(address);
        }
        for acceptor in self.acceptors.drain(..) {
            let _ = acceptor.join();
        }
        for stream in lock(&self.shared.connections).values() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        let workers: Vec<JoinHandle<()>> = lock(&self.shared.workers).drain(..).collect();
        for worker in workers {
            let _ = worker.join();
        }
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener, origin: Origin) {
    let port = listener.local_addr().map_or(0, |address| address.port());
    for stream in listener.incoming() {
        if shared.stopping() {
            break;
        }
        let Ok(stream) = stream else {
            continue;
        };
        let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
        if let Ok(clone) = stream.try_clone() {
            lock(&shared.connections).insert(id, clone);
        }
        let worker_shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name(format!("hub-server-{origin}-conn-{id}"))
            .spawn(move || {
                serve_connection(&worker_shared, stream, origin, port);
                lock(&worker_shared.connections).remove(&id);
            });
        let mut workers = lock(&shared.workers);
        workers.retain(|worker| !worker.is_finished());
        match spawned {
            Ok(worker) => workers.push(worker),
            Err(error) => {
                shared.record_internal_error(format!("spawning a connection thread: {error}"))
            }
        }
    }
}

fn serve_connection(shared: &Shared, stream: TcpStream, origin: Origin, port: u16) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        if shared.stopping() {
            return;
        }
        let incoming = match http::read_request(&mut reader, &mut writer, origin) {
            Ok(Some(incoming)) => incoming,
            Ok(None) | Err(ReadError::Io(_)) => return,
            Err(error) => {
                let status = match error {
                    ReadError::TooLarge(_) => 413,
                    ReadError::Unsupported(_) => 501,
                    _ => 400,
                };
                let response = Response::hub_error(status, None, &error.to_string());
                let _ = http::write_response(&mut writer, "GET", &response, true, &|| true);
                return;
            }
        };
        let request = incoming.request;
        let response = dispatch(shared, &request, port);
        let written = http::write_response(
            &mut writer,
            &request.method,
            &response,
            incoming.close,
            &|| shared.stopping(),
        );
        match written {
            Ok(AfterResponse::KeepAlive) => {}
            Ok(AfterResponse::Close) | Err(_) => {
                let _ = writer.flush();
                let _ = writer.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    }
}

/// Logs a request, then answers it: an injected failure first, then the
/// interceptor, then the origin's routes. A panic anywhere becomes a 500 and
/// an entry in `internal_errors`, never a dead connection thread.
fn dispatch(shared: &Shared, request: &Request, port: u16) -> Response {
    let seq = {
        let mut log = lock(&shared.log);
        let seq = log.len();
        log.push(LoggedRequest::new(seq, port, request));
        seq
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| answer(shared, request)));
    let (response, routed) = match outcome {
        Ok(answered) => answered,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
                .unwrap_or_else(|| "non-string panic".to_owned());
            shared.record_internal_error(format!(
                "panic while answering {} {}: {message}",
                request.method, request.target
            ));
            (
                Response::hub_error(500, None, "internal error in the test server"),
                true,
            )
        }
    };
    if let Some(entry) = lock(&shared.log).get_mut(seq) {
        entry.status = if response.delivery == http::Delivery::NoResponse {
            0
        } else {
            response.status
        };
        entry.routed = routed;
    }
    response
}

fn answer(shared: &Shared, request: &Request) -> (Response, bool) {
    if let Some(failure) = lock(&shared.state).faults.take_failure(request) {
        return (failure, true);
    }
    let interceptor = lock(&shared.interceptor).clone();
    if let Some(response) = interceptor.and_then(|intercept| intercept(request)) {
        return (response, true);
    }
    let routed = match request.origin {
        Origin::Hub => hub_api::handle(shared, request),
        Origin::Cdn => storage::handle_cdn(shared, request),
        Origin::Foreign => storage::handle_foreign(shared, request),
    };
    match routed {
        Some(response) => (response, true),
        None => {
            let hint = if request.path().contains("/xet-") {
                " (this server speaks basic LFS only: run the client with HF_HUB_DISABLE_XET=1)"
            } else {
                ""
            };
            let message = format!(
                "the babel test Hub has no route for {} {}{hint}",
                request.method,
                request.path()
            );
            (Response::hub_error(404, None, &message), false)
        }
    }
}
