//! `rig serve`'s execution hold: the one control our own server offers a case that no wire can
//! give, so the orderings that hinge on a call still *in progress* are forced, not hoped for.
//!
//! While a case holds execution, `rig serve` takes Receives, pulls Read chunks and looks every
//! call up in its DRC, but executes none (`server::Server::hold_execution`, as the simulator's
//! `Hold::ServerExecution`): a duplicate looked up meanwhile finds its original in progress
//! (`RC_INPROG`: dropped by classic and acked, parked by acked-mark), whatever the guests'
//! scheduling. The case waits until the server has made its DRC decisions, then releases.
//!
//! The protocol is one JSON datagram each way on UDP [`SERVE_CONTROL_PORT`] of the server's
//! address (through the interop guests' wire, which is ours). Every request is answered with the
//! server's [`ServeStatus`] after it was applied, so requests are idempotent and a lost datagram
//! is simply sent again. A hold that nobody releases ends by itself after [`HOLD_LIMIT`] (a
//! client that died cannot wedge a server that runs for days) and the status says so.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::datagram::exchange;

/// UDP port of `rig serve --control` (next to the relay's in-band port, 4792).
pub const SERVE_CONTROL_PORT: u16 = 4793;
/// Longest an execution hold lasts before the server lets its calls go on its own.
pub const HOLD_LIMIT: Duration = Duration::from_secs(10);
/// Largest request or answer: a status is well under it; anything longer is not ours.
pub const MAX_DATAGRAM: usize = 512;

/// What a case asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "kebab-case")]
pub enum ServeRequest {
    /// Look calls up but execute none until [`ServeRequest::Release`] (or the limit).
    HoldExecution,
    /// Flush the server's export caches and leave their upcalls unanswered until
    /// [`ServeRequest::Release`] (or the limit): kernel nfsd, finding the next call's file handle
    /// uncached, waits for rpc.mountd, then defers the call and revisits it once the upcall is
    /// answered (`rig hold-export` only: our server has no export cache and refuses it).
    HoldExportCache,
    /// Execute what waits, in arrival order.
    Release,
    /// Only the status, with the DRC decisions made for `xid`.
    Status { xid: u32 },
}

/// The server's answer to every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeStatus {
    /// Execution is held now.
    pub held: bool,
    /// Calls received and not yet answered or dropped, over every connection.
    pub queued: usize,
    /// DRC decisions made for the XID the request named (0 when it named none).
    pub decisions: usize,
    /// Transmissions of that XID the server's DRC dropped, so it never answers them, where the
    /// server can tell (`rig serve`; `rig hold-export` from nfsd's `nfsd_drc_found result=DROPIT`
    /// events); `None` where it cannot. A case waiting for replies stops waiting for these.
    #[serde(default)]
    pub dropped: Option<usize>,
    /// Holds that ran into [`HOLD_LIMIT`] since the server started.
    pub released_by_limit: u64,
    /// Calls the server deferred since its export-cache hold began (`sunrpc:svc_defer` events),
    /// where it can tell (`rig hold-export` under [`ServeRequest::HoldExportCache`]); `None`
    /// elsewhere.
    #[serde(default)]
    pub deferred: Option<usize>,
}

/// What a server observed, for the status of one XID.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    /// Calls received and not yet answered or dropped, over every connection.
    pub queued: usize,
    /// DRC decisions made for the XID.
    pub decisions: usize,
    /// Of those, drops (never answered), where the server can tell.
    pub dropped: Option<usize>,
    /// Calls deferred since the export-cache hold began, where the server can tell.
    pub deferred: Option<usize>,
}

/// Why the control request of a case failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeControlError {
    /// Nothing answered: the server is not `rig serve --control` (or not reachable).
    NoAnswer { server: SocketAddr },
    /// An answer that is not a status (the server refused the request, or it is not ours).
    Refused { answer: String },
    /// A socket error.
    Io { message: String },
}

impl std::fmt::Display for ServeControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeControlError::NoAnswer { server } => write!(
                f,
                "rig serve's control port {server} did not answer (is the server `rig serve --control`?)"
            ),
            ServeControlError::Refused { answer } => {
                write!(f, "rig serve's control port refused: {answer}")
            }
            ServeControlError::Io { message } => write!(f, "serve control: {message}"),
        }
    }
}

impl std::error::Error for ServeControlError {}

/// The server's side: whether execution is held, since when, and how often the limit ended it.
#[derive(Debug, Default)]
pub struct ExecutionHold {
    since: Option<Instant>,
    released_by_limit: u64,
}

impl ExecutionHold {
    /// Whether calls must stay queued at `now` (a hold past [`HOLD_LIMIT`] ends here, counted).
    pub fn holds(&mut self, now: Instant) -> bool {
        match self.since {
            Some(since) if now.duration_since(since) >= HOLD_LIMIT => {
                self.since = None;
                self.released_by_limit += 1;
                false
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Apply `request` at `now`; returns the XID whose decisions the status must count (0
    /// when the request named none).
    pub fn apply(&mut self, request: ServeRequest, now: Instant) -> u32 {
        match request {
            ServeRequest::HoldExecution | ServeRequest::HoldExportCache => {
                // A hold asked again while held keeps its start: the limit bounds the whole hold.
                self.since.get_or_insert(now);
                0
            }
            ServeRequest::Release => {
                self.since = None;
                0
            }
            ServeRequest::Status { xid } => xid,
        }
    }

    /// The status at `now`, with what the server `observed`.
    pub fn status(&mut self, now: Instant, observed: Observed) -> ServeStatus {
        ServeStatus {
            held: self.holds(now),
            queued: observed.queued,
            decisions: observed.decisions,
            dropped: observed.dropped,
            released_by_limit: self.released_by_limit,
            deferred: observed.deferred,
        }
    }

    /// Apply one request datagram at `now` and return the answer datagram. `observe(xid)` gives
    /// what the server observed for `xid`, over every connection. A datagram that is not a
    /// request is answered with an error naming it, never acted on, and so is an export-cache
    /// hold: `rig serve` has no export cache to hold.
    pub fn answer(
        &mut self,
        datagram: &[u8],
        now: Instant,
        observe: impl Fn(u32) -> Observed,
    ) -> Vec<u8> {
        let request = match decode_request(datagram) {
            Ok(request) => request,
            Err(refusal) => return refusal,
        };
        if request == ServeRequest::HoldExportCache {
            return refusal(NO_EXPORT_CACHE);
        }
        let xid = self.apply(request, now);
        encode_status(&self.status(now, observe(xid)))
    }
}

/// Why `rig serve` refuses [`ServeRequest::HoldExportCache`].
pub const NO_EXPORT_CACHE: &str =
    "this server has no export cache to hold (only kernel nfsd beside rig hold-export has)";

/// A request datagram, or the error answer for one that is not a request.
pub fn decode_request(datagram: &[u8]) -> Result<ServeRequest, Vec<u8>> {
    serde_json::from_slice::<ServeRequest>(datagram)
        .map_err(|e| refusal(&format!("not a serve control request: {e}")))
}

/// The answer refusing a request, with why (a client reads it as [`ServeControlError::Refused`]).
pub fn refusal(why: &str) -> Vec<u8> {
    serde_json::json!({ "error": why }).to_string().into_bytes()
}

/// The answer datagram carrying `status`.
pub fn encode_status(status: &ServeStatus) -> Vec<u8> {
    serde_json::to_vec(status).unwrap_or_default()
}

/// DRC lookups kernel nfsd has made, from `/proc/fs/nfsd/reply_cache_stats`: its `cache hits`
/// (a duplicate found, in progress or done) plus `cache misses` (a new entry). nfsd counts them
/// per network namespace, not per XID; `None` when either line is missing or not a number.
pub fn nfsd_drc_lookups(reply_cache_stats: &str) -> Option<u64> {
    let field = |name: &str| {
        reply_cache_stats.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().parse::<u64>().ok())?
        })
    };
    field("cache hits")?.checked_add(field("cache misses")?)
}

/// A case's side: the control port of the `rig serve` it runs against.
pub struct ServeControl {
    socket: UdpSocket,
    server: SocketAddr,
    /// The server's count of holds ended by its limit when this case began.
    limit_releases_before: u64,
}

impl ServeControl {
    /// Reach the control port at `server` (its status answered), or say why not.
    pub fn open(server: SocketAddr) -> Result<ServeControl, ServeControlError> {
        let bind = if server.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let socket = UdpSocket::bind(bind).map_err(io)?;
        let mut control = ServeControl {
            socket,
            server,
            limit_releases_before: 0,
        };
        // A case starts with the server's calls flowing, whatever the last case left.
        let status = control.request(ServeRequest::Release)?;
        control.limit_releases_before = status.released_by_limit;
        Ok(control)
    }

    /// Hold the server's execution from now until [`ServeControl::release`] (or the limit).
    pub fn hold(&mut self) -> Result<ServeStatus, ServeControlError> {
        self.request(ServeRequest::HoldExecution)
    }

    /// Flush the server's export caches and hold their upcalls from now until
    /// [`ServeControl::release`] (or the limit): the next call is deferred.
    pub fn hold_export_cache(&mut self) -> Result<ServeStatus, ServeControlError> {
        self.request(ServeRequest::HoldExportCache)
    }

    /// Let the server dispatch what it queued; returns whether a hold of this case ran into
    /// the server's limit first (its ordering was then not forced).
    pub fn release(&mut self) -> Result<bool, ServeControlError> {
        let status = self.request(ServeRequest::Release)?;
        Ok(status.released_by_limit > self.limit_releases_before)
    }

    /// The server's status, with its DRC decisions for `xid`.
    pub fn status(&mut self, xid: u32) -> Result<ServeStatus, ServeControlError> {
        self.request(ServeRequest::Status { xid })
    }

    fn request(&mut self, request: ServeRequest) -> Result<ServeStatus, ServeControlError> {
        let datagram = serde_json::to_vec(&request).map_err(|e| ServeControlError::Io {
            message: e.to_string(),
        })?;
        let mut buf = [0u8; MAX_DATAGRAM];
        let Some(n) = exchange(&self.socket, self.server, &datagram, &mut buf).map_err(io)? else {
            return Err(ServeControlError::NoAnswer {
                server: self.server,
            });
        };
        serde_json::from_slice(&buf[..n]).map_err(|_| ServeControlError::Refused {
            answer: String::from_utf8_lossy(&buf[..n]).into_owned(),
        })
    }
}

fn io(e: std::io::Error) -> ServeControlError {
    ServeControlError::Io {
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(answer: &[u8]) -> ServeStatus {
        serde_json::from_slice(answer).expect("a status")
    }

    #[test]
    fn a_hold_keeps_calls_queued_until_released() {
        let mut hold = ExecutionHold::default();
        let t0 = Instant::now();
        assert!(!hold.holds(t0));
        let held = status(&hold.answer(br#"{"request":"hold-execution"}"#, t0, |_| {
            Observed::default()
        }));
        assert!(held.held);
        assert!(hold.holds(t0 + Duration::from_secs(1)));
        let queued = status(&hold.answer(
            br#"{"request":"status","xid":7}"#,
            t0 + Duration::from_secs(1),
            |xid| Observed {
                queued: 2,
                decisions: usize::from(xid == 7),
                dropped: Some(1),
                deferred: None,
            },
        ));
        assert_eq!(
            (queued.held, queued.queued, queued.decisions, queued.dropped),
            (true, 2, 1, Some(1))
        );
        let released = status(&hold.answer(
            br#"{"request":"release"}"#,
            t0 + Duration::from_secs(2),
            |_| Observed::default(),
        ));
        assert!(!released.held);
        assert_eq!(released.released_by_limit, 0);
        assert!(!hold.holds(t0 + Duration::from_secs(2)));
    }

    #[test]
    fn a_hold_nobody_releases_ends_at_the_limit_and_is_counted() {
        let mut hold = ExecutionHold::default();
        let t0 = Instant::now();
        hold.answer(br#"{"request":"hold-execution"}"#, t0, |_| {
            Observed::default()
        });
        // Asked again later: the limit still counts from the first request.
        hold.answer(
            br#"{"request":"hold-execution"}"#,
            t0 + HOLD_LIMIT / 2,
            |_| Observed::default(),
        );
        assert!(!hold.holds(t0 + HOLD_LIMIT));
        let after = status(&hold.answer(
            br#"{"request":"status","xid":0}"#,
            t0 + HOLD_LIMIT,
            |_| Observed::default(),
        ));
        assert!(!after.held);
        assert_eq!(after.released_by_limit, 1);
    }

    #[test]
    fn a_status_without_drops_reads_as_a_server_that_cannot_tell() {
        // What a `rig hold-export` of before the field answers.
        let old = br#"{"held":false,"queued":0,"decisions":2,"released_by_limit":0}"#;
        assert_eq!(status(old).dropped, None);
        assert_eq!(status(old).deferred, None);
    }

    #[test]
    fn rig_serve_refuses_an_export_cache_hold_and_stays_unheld() {
        let mut hold = ExecutionHold::default();
        let t0 = Instant::now();
        let answer = hold.answer(br#"{"request":"hold-export-cache"}"#, t0, |_| {
            Observed::default()
        });
        assert!(serde_json::from_slice::<ServeStatus>(&answer).is_err());
        assert!(String::from_utf8_lossy(&answer).contains("no export cache"));
        assert!(!hold.holds(t0));
        // `rig hold-export` applies it as a hold, bounded by the same limit.
        assert_eq!(hold.apply(ServeRequest::HoldExportCache, t0), 0);
        assert!(hold.holds(t0 + HOLD_LIMIT / 2));
        assert!(!hold.holds(t0 + HOLD_LIMIT));
    }

    #[test]
    fn nfsd_lookups_are_its_hits_plus_misses() {
        // /proc/fs/nfsd/reply_cache_stats as 6.1 and 6.12 print it.
        let stats = "max entries:           4096\nnum entries:           3\nhash buckets:          64\n\
                     mem usage:             1200\ncache hits:            2\ncache misses:          5\n\
                     not cached:            40\npayload misses:        0\n";
        assert_eq!(nfsd_drc_lookups(stats), Some(7));
        assert_eq!(nfsd_drc_lookups("cache hits: 2\n"), None);
        assert_eq!(nfsd_drc_lookups("cache hits: x\ncache misses: 1\n"), None);
        assert_eq!(nfsd_drc_lookups(""), None);
    }

    #[test]
    fn a_datagram_that_is_not_a_request_is_answered_with_an_error_and_changes_nothing() {
        let mut hold = ExecutionHold::default();
        let t0 = Instant::now();
        for junk in [&b""[..], b"\xff\x00", br#"{"request":"hold"}"#, b"[]"] {
            let answer = hold.answer(junk, t0, |_| Observed::default());
            assert!(serde_json::from_slice::<ServeStatus>(&answer).is_err());
            assert!(String::from_utf8_lossy(&answer).contains("not a serve control request"));
            assert!(!hold.holds(t0));
        }
    }
}
