//! rdma_cm: the event channel, communication ids (RDMA_PS_TCP, i.e. RC), address and route
//! resolution, connect / listen / accept / reject / disconnect with private data (bytes here: the
//! RFC 8797 encoding is `wire::private_data`'s).
//!
//! Events are copied into an owned [`CmEvent`] and acked at once: `rdma_destroy_id` blocks until
//! every event on the id is acked, so holding C events across calls would risk a hang on drop.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::rc::Rc;
use std::time::Duration;

use crate::caps::QpCaps;
use crate::cq::{Cq, CqInner};
use crate::device::Context;
use crate::error::{Result, VerbsError};
use crate::fd::wait_readable;
use crate::mem::{Mr, Mw, Pd, PdInner};
use crate::sys;

/// Private data an active side may carry in a connect request: the IB CM REQ holds 92 bytes and
/// rdma_cm's own header takes 36 (Linux `IB_CM_REQ_PRIVATE_DATA_SIZE` minus `sizeof(struct cma_hdr)`).
pub const MAX_CONNECT_PRIVATE_DATA: usize = 56;
/// Private data in an accept (IB CM REP, `IB_CM_REP_PRIVATE_DATA_SIZE`).
pub const MAX_ACCEPT_PRIVATE_DATA: usize = 196;
/// Private data in a reject (IB CM REJ, `IB_CM_REJ_PRIVATE_DATA_SIZE`).
pub const MAX_REJECT_PRIVATE_DATA: usize = 148;

pub(crate) struct ChannelInner {
    raw: NonNull<sys::rdma_event_channel>,
}

impl Drop for ChannelInner {
    fn drop(&mut self) {
        // SAFETY: created by rdma_create_event_channel; every id on it holds an Rc of this and has
        // been destroyed, and every event was acked when read.
        unsafe { sys::rdma_destroy_event_channel(self.raw.as_ptr()) }
    }
}

/// An rdma_cm event channel: CM events for every id created on it arrive here.
pub struct EventChannel {
    inner: Rc<ChannelInner>,
}

impl EventChannel {
    /// Open `/dev/infiniband/rdma_cm`. On a machine without RDMA this is [`VerbsError::NoDevice`].
    pub fn new() -> Result<Self> {
        // SAFETY: no arguments; NULL is handled.
        let raw = unsafe { sys::rdma_create_event_channel() };
        let raw = NonNull::new(raw)
            .ok_or_else(|| VerbsError::last_os_error("rdma_create_event_channel"))?;
        Ok(EventChannel {
            inner: Rc::new(ChannelInner { raw }),
        })
    }

    /// The channel's fd, readable when an event is pending (for a driver's poll(2) set).
    pub fn fd(&self) -> RawFd {
        // SAFETY: live channel; `fd` is set at creation.
        unsafe { (*self.inner.raw.as_ptr()).fd }
    }

    /// A new RDMA_PS_TCP (reliable connected) id on this channel.
    pub fn create_id(&self) -> Result<CmId> {
        let mut raw: *mut sys::rdma_cm_id = std::ptr::null_mut();
        // SAFETY: live channel, valid out-pointer, no user context.
        let rc = unsafe {
            sys::rdma_create_id(
                self.inner.raw.as_ptr(),
                &mut raw,
                std::ptr::null_mut(),
                sys::RDMA_PS_TCP,
            )
        };
        if rc != 0 {
            return Err(VerbsError::last_os_error("rdma_create_id"));
        }
        let raw = NonNull::new(raw).ok_or(VerbsError::Os {
            verb: "rdma_create_id",
            errno: libc::EINVAL,
        })?;
        Ok(CmId::wrap(raw, Rc::clone(&self.inner)))
    }

    /// The next event, waiting at most `timeout`.
    pub fn next_event(&self, timeout: Duration) -> Result<CmEvent> {
        wait_readable(self.fd(), timeout, "an rdma_cm event")?;
        let mut raw: *mut sys::rdma_cm_event = std::ptr::null_mut();
        // SAFETY: live channel (readable, so this does not block), valid out-pointer.
        let rc = unsafe { sys::rdma_get_cm_event(self.inner.raw.as_ptr(), &mut raw) };
        if rc != 0 {
            return Err(VerbsError::last_os_error("rdma_get_cm_event"));
        }
        let raw = NonNull::new(raw).ok_or(VerbsError::Os {
            verb: "rdma_get_cm_event",
            errno: libc::EINVAL,
        })?;
        // SAFETY: a live event from rdma_get_cm_event, not yet acked.
        let event = unsafe { CmEvent::copy_from(raw, &self.inner) };
        // SAFETY: acked exactly once, after everything needed was copied out.
        unsafe { sys::rdma_ack_cm_event(raw.as_ptr()) };
        Ok(event)
    }

    /// The next event, which must be `expected` with status 0; anything else is an error that names
    /// both (e.g. REJECTED instead of ESTABLISHED).
    pub fn expect_event(&self, expected: CmEventKind, timeout: Duration) -> Result<CmEvent> {
        let event = self.next_event(timeout).map_err(|error| match error {
            VerbsError::Timeout { after, .. } => VerbsError::Timeout {
                what: expected.name(),
                after,
            },
            other => other,
        })?;
        if event.kind != expected || event.status != 0 {
            return Err(VerbsError::UnexpectedCmEvent {
                expected: expected.name(),
                got: event.kind.name(),
                status: event.status,
            });
        }
        Ok(event)
    }
}

/// `enum rdma_cm_event_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmEventKind {
    AddrResolved,
    AddrError,
    RouteResolved,
    RouteError,
    ConnectRequest,
    ConnectResponse,
    ConnectError,
    Unreachable,
    Rejected,
    Established,
    Disconnected,
    DeviceRemoval,
    TimewaitExit,
    AddrChange,
    /// Multicast events and values newer than rdma-core 44.
    Other(u32),
}

impl CmEventKind {
    pub fn from_raw(raw: sys::rdma_cm_event_type) -> Self {
        match raw {
            sys::RDMA_CM_EVENT_ADDR_RESOLVED => CmEventKind::AddrResolved,
            sys::RDMA_CM_EVENT_ADDR_ERROR => CmEventKind::AddrError,
            sys::RDMA_CM_EVENT_ROUTE_RESOLVED => CmEventKind::RouteResolved,
            sys::RDMA_CM_EVENT_ROUTE_ERROR => CmEventKind::RouteError,
            sys::RDMA_CM_EVENT_CONNECT_REQUEST => CmEventKind::ConnectRequest,
            sys::RDMA_CM_EVENT_CONNECT_RESPONSE => CmEventKind::ConnectResponse,
            sys::RDMA_CM_EVENT_CONNECT_ERROR => CmEventKind::ConnectError,
            sys::RDMA_CM_EVENT_UNREACHABLE => CmEventKind::Unreachable,
            sys::RDMA_CM_EVENT_REJECTED => CmEventKind::Rejected,
            sys::RDMA_CM_EVENT_ESTABLISHED => CmEventKind::Established,
            sys::RDMA_CM_EVENT_DISCONNECTED => CmEventKind::Disconnected,
            sys::RDMA_CM_EVENT_DEVICE_REMOVAL => CmEventKind::DeviceRemoval,
            sys::RDMA_CM_EVENT_TIMEWAIT_EXIT => CmEventKind::TimewaitExit,
            sys::RDMA_CM_EVENT_ADDR_CHANGE => CmEventKind::AddrChange,
            other => CmEventKind::Other(other),
        }
    }

    /// The C enumerator's name, as `rdma_event_str` would print it.
    pub fn name(self) -> &'static str {
        match self {
            CmEventKind::AddrResolved => "RDMA_CM_EVENT_ADDR_RESOLVED",
            CmEventKind::AddrError => "RDMA_CM_EVENT_ADDR_ERROR",
            CmEventKind::RouteResolved => "RDMA_CM_EVENT_ROUTE_RESOLVED",
            CmEventKind::RouteError => "RDMA_CM_EVENT_ROUTE_ERROR",
            CmEventKind::ConnectRequest => "RDMA_CM_EVENT_CONNECT_REQUEST",
            CmEventKind::ConnectResponse => "RDMA_CM_EVENT_CONNECT_RESPONSE",
            CmEventKind::ConnectError => "RDMA_CM_EVENT_CONNECT_ERROR",
            CmEventKind::Unreachable => "RDMA_CM_EVENT_UNREACHABLE",
            CmEventKind::Rejected => "RDMA_CM_EVENT_REJECTED",
            CmEventKind::Established => "RDMA_CM_EVENT_ESTABLISHED",
            CmEventKind::Disconnected => "RDMA_CM_EVENT_DISCONNECTED",
            CmEventKind::DeviceRemoval => "RDMA_CM_EVENT_DEVICE_REMOVAL",
            CmEventKind::TimewaitExit => "RDMA_CM_EVENT_TIMEWAIT_EXIT",
            CmEventKind::AddrChange => "RDMA_CM_EVENT_ADDR_CHANGE",
            CmEventKind::Other(_) => "RDMA_CM_EVENT_OTHER",
        }
    }

    /// Whether the event's `param.conn` (private data, RDMA Read depths) is meaningful.
    fn carries_conn_param(self) -> bool {
        matches!(
            self,
            CmEventKind::ConnectRequest
                | CmEventKind::ConnectResponse
                | CmEventKind::Established
                | CmEventKind::Rejected
        )
    }
}

/// An rdma_cm event, copied out and already acked.
pub struct CmEvent {
    pub kind: CmEventKind,
    /// 0, or a negative errno / a reject reason (REJECTED carries the IB CM reason code).
    pub status: i32,
    /// The peer's private data (at most 255 bytes: the C length is a u8). For connect requests and
    /// accepts the transport pads it, so it is usually longer than what the peer sent.
    pub private_data: Vec<u8>,
    /// The peer's offered RDMA Read depths (connect request / accept).
    pub responder_resources: u8,
    pub initiator_depth: u8,
    /// For CONNECT_REQUEST: the new id for the incoming connection (accept or reject it; dropping it
    /// destroys it, which rejects the connection).
    pub new_id: Option<CmId>,
    /// The id the event is about, for [`CmEvent::is_for`].
    id: *const sys::rdma_cm_id,
}

impl CmEvent {
    /// # Safety
    /// `raw` is a live, unacked event from `rdma_get_cm_event` on `channel`.
    unsafe fn copy_from(raw: NonNull<sys::rdma_cm_event>, channel: &Rc<ChannelInner>) -> Self {
        // SAFETY: guaranteed by the caller.
        let event = unsafe { raw.as_ref() };
        let kind = CmEventKind::from_raw(event.event);
        let (private_data, responder_resources, initiator_depth) = if kind.carries_conn_param() {
            // SAFETY: for these event kinds on a TCP port space id, `param.conn` is the active arm.
            let conn = unsafe { event.param.conn };
            let private_data = if conn.private_data.is_null() {
                Vec::new()
            } else {
                // SAFETY: librdmacm guarantees `private_data_len` (<= 255) readable bytes until ack.
                unsafe {
                    std::slice::from_raw_parts(
                        conn.private_data.cast::<u8>(),
                        usize::from(conn.private_data_len),
                    )
                }
                .to_vec()
            };
            (private_data, conn.responder_resources, conn.initiator_depth)
        } else {
            (Vec::new(), 0, 0)
        };
        let new_id = if kind == CmEventKind::ConnectRequest {
            // The event's id is a new id for the incoming connection, created on the listener's
            // channel; we now own it.
            NonNull::new(event.id).map(|id| CmId::wrap(id, Rc::clone(channel)))
        } else {
            None
        };
        CmEvent {
            kind,
            status: event.status,
            private_data,
            responder_resources,
            initiator_depth,
            new_id,
            id: event.id,
        }
    }

    /// Whether this event is about `id`.
    pub fn is_for(&self, id: &CmId) -> bool {
        std::ptr::eq(self.id, id.raw.as_ptr())
    }
}

/// Connection parameters for `rdma_connect` / `rdma_accept`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnParams {
    pub private_data: Vec<u8>,
    /// RDMA Reads the peer may have outstanding against us (we are responder).
    pub responder_resources: u8,
    /// RDMA Reads we may have outstanding against the peer (we are initiator).
    pub initiator_depth: u8,
    pub retry_count: u8,
    /// 7 means "retry forever" on RNR NAK; RPC-over-RDMA relies on credits instead, so use a
    /// finite count and let an overrun surface as IBV_WC_RNR_RETRY_EXC_ERR.
    pub rnr_retry_count: u8,
}

impl ConnParams {
    /// Parameters carrying `private_data` (opaque here: RPC-over-RDMA puts its RFC 8797 bytes
    /// there) and explicit RDMA Read depths.
    pub fn new(private_data: Vec<u8>, responder_resources: u8, initiator_depth: u8) -> Self {
        ConnParams {
            private_data,
            responder_resources,
            initiator_depth,
            retry_count: 7,
            rnr_retry_count: 6,
        }
    }

    /// The C struct, pointing at `self.private_data`, after checking it fits in `limit` bytes.
    pub fn to_raw(&self, limit: usize, what: &'static str) -> Result<sys::rdma_conn_param> {
        let len = self.private_data.len();
        if len > limit || len > usize::from(u8::MAX) {
            return Err(VerbsError::OverLimit {
                what,
                value: len as u64,
                limit: limit.min(usize::from(u8::MAX)) as u64,
            });
        }
        Ok(sys::rdma_conn_param {
            private_data: if len == 0 {
                std::ptr::null()
            } else {
                self.private_data.as_ptr().cast()
            },
            private_data_len: len as u8,
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: 1,
            retry_count: self.retry_count.min(7),
            rnr_retry_count: self.rnr_retry_count.min(7),
            srq: 0,
            qp_num: 0,
        })
    }
}

/// The resources a connection's QP uses, kept alive until the QP is destroyed.
struct QpResources {
    _pd: Rc<PdInner>,
    _send_cq: Rc<CqInner>,
    _recv_cq: Rc<CqInner>,
    /// Every MR ever posted on the QP (de-duplicated): a posted WR may still name it until the QP is
    /// destroyed, so it must stay registered and its buffer allocated until then.
    retained: RefCell<Vec<Mr>>,
    /// Every memory window bound through the QP, for the same reason.
    retained_windows: RefCell<Vec<Mw>>,
}

/// An rdma_cm communication identifier (one connection or one listener), owning its QP.
pub struct CmId {
    pub(crate) raw: NonNull<sys::rdma_cm_id>,
    qp: Option<QpResources>,
    _channel: Rc<ChannelInner>,
}

impl Drop for CmId {
    fn drop(&mut self) {
        if self.qp.is_some() {
            // SAFETY: the QP was created by rdma_create_qp on this id and is destroyed once, before
            // the id; its PD, CQs and MRs are dropped after this function returns.
            unsafe { sys::rdma_destroy_qp(self.raw.as_ptr()) };
        }
        // SAFETY: created by rdma_create_id (or handed over by a CONNECT_REQUEST event); all its
        // events were acked when read; its channel outlives it (we hold an Rc).
        unsafe {
            sys::rdma_destroy_id(self.raw.as_ptr());
        }
    }
}

impl CmId {
    fn wrap(raw: NonNull<sys::rdma_cm_id>, channel: Rc<ChannelInner>) -> Self {
        CmId {
            raw,
            qp: None,
            _channel: channel,
        }
    }

    fn check(rc: i32, verb: &'static str) -> Result<()> {
        if rc != 0 {
            return Err(VerbsError::last_os_error(verb));
        }
        Ok(())
    }

    /// Bind to a local address (a listener's address, or a client's source address).
    pub fn bind_addr(&self, addr: SocketAddr) -> Result<()> {
        let (mut storage, _len) = socket_addr_to_raw(addr);
        // SAFETY: live id; `storage` is a valid sockaddr_in/sockaddr_in6 for the call.
        let rc = unsafe {
            sys::rdma_bind_addr(
                self.raw.as_ptr(),
                (&mut storage as *mut libc::sockaddr_storage).cast(),
            )
        };
        Self::check(rc, "rdma_bind_addr")
    }

    /// Listen for connect requests (they arrive as CONNECT_REQUEST events with a new id).
    pub fn listen(&self, backlog: i32) -> Result<()> {
        // SAFETY: live, bound id.
        let rc = unsafe { sys::rdma_listen(self.raw.as_ptr(), backlog) };
        Self::check(rc, "rdma_listen")
    }

    /// Start resolving `dst` to an RDMA device and GID; completes with ADDR_RESOLVED.
    pub fn resolve_addr(&self, dst: SocketAddr, timeout: Duration) -> Result<()> {
        let (mut storage, _len) = socket_addr_to_raw(dst);
        let timeout_ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: live id; `storage` is valid for the call (librdmacm copies it); no source address.
        let rc = unsafe {
            sys::rdma_resolve_addr(
                self.raw.as_ptr(),
                std::ptr::null_mut(),
                (&mut storage as *mut libc::sockaddr_storage).cast(),
                timeout_ms,
            )
        };
        Self::check(rc, "rdma_resolve_addr")
    }

    /// Start resolving the route to the resolved address; completes with ROUTE_RESOLVED.
    pub fn resolve_route(&self, timeout: Duration) -> Result<()> {
        let timeout_ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: live id with a resolved address.
        let rc = unsafe { sys::rdma_resolve_route(self.raw.as_ptr(), timeout_ms) };
        Self::check(rc, "rdma_resolve_route")
    }

    /// The device context this id is bound to (after address resolution, bind to a device address,
    /// or for an id from a connect request).
    pub fn context(&self) -> Result<Context> {
        // SAFETY: live id; `verbs` is NULL until the id is bound to a device.
        let verbs = unsafe { (*self.raw.as_ptr()).verbs };
        NonNull::new(verbs)
            .map(|raw| Context { raw })
            .ok_or(VerbsError::InvalidState(
                "rdma_cm id is not bound to a device yet (resolve the address first)",
            ))
    }

    /// Create this connection's RC QP on `pd`, completing into `send_cq` / `recv_cq`.
    pub fn create_qp(&mut self, pd: &Pd, send_cq: &Cq, recv_cq: &Cq, caps: QpCaps) -> Result<()> {
        if self.qp.is_some() {
            return Err(VerbsError::InvalidState("this rdma_cm id already has a QP"));
        }
        let mut attr = caps.init_attr(send_cq.inner.raw.as_ptr(), recv_cq.inner.raw.as_ptr());
        // SAFETY: live id bound to the device the PD and CQs were created on; `attr` is valid for
        // the call. The QP is destroyed in Drop before the PD/CQs we retain below.
        let rc =
            unsafe { sys::rdma_create_qp(self.raw.as_ptr(), pd.inner.raw.as_ptr(), &mut attr) };
        Self::check(rc, "rdma_create_qp")?;
        self.qp = Some(QpResources {
            _pd: Rc::clone(&pd.inner),
            _send_cq: Rc::clone(&send_cq.inner),
            _recv_cq: Rc::clone(&recv_cq.inner),
            retained: RefCell::new(Vec::new()),
            retained_windows: RefCell::new(Vec::new()),
        });
        Ok(())
    }

    /// The QP number (for logs and traces), if the QP exists.
    pub fn qp_num(&self) -> Option<u32> {
        self.qp_ptr()
            .ok()
            // SAFETY: live QP owned by this id.
            .map(|qp| unsafe { (*qp).qp_num })
    }

    pub(crate) fn qp_ptr(&self) -> Result<*mut sys::ibv_qp> {
        if self.qp.is_none() {
            return Err(VerbsError::InvalidState("no QP: call create_qp first"));
        }
        // SAFETY: live id; rdma_create_qp stored the QP in `id->qp`.
        let qp = unsafe { (*self.raw.as_ptr()).qp };
        if qp.is_null() {
            return Err(VerbsError::InvalidState("rdma_cm id has no QP"));
        }
        Ok(qp)
    }

    pub(crate) fn retain(&self, mr: &Mr) {
        if let Some(qp) = &self.qp {
            let mut retained = qp.retained.borrow_mut();
            if !retained.iter().any(|kept| kept.same_region(mr)) {
                retained.push(mr.clone());
            }
        }
    }

    pub(crate) fn retain_window(&self, mw: &Mw) {
        if let Some(qp) = &self.qp {
            let mut retained = qp.retained_windows.borrow_mut();
            if !retained.iter().any(|kept| kept.same_window(mw)) {
                retained.push(mw.clone());
            }
        }
    }

    /// Send a connect request (after ROUTE_RESOLVED and create_qp); completes with ESTABLISHED or
    /// REJECTED/UNREACHABLE/CONNECT_ERROR.
    pub fn connect(&self, params: &ConnParams) -> Result<()> {
        // RFC 8797 §4: the requester's private data goes in the connect request.
        let mut raw = params.to_raw(MAX_CONNECT_PRIVATE_DATA, "connect private data")?;
        // SAFETY: live id with a QP; `raw` and the private data it points to outlive the call.
        let rc = unsafe { sys::rdma_connect(self.raw.as_ptr(), &mut raw) };
        Self::check(rc, "rdma_connect")
    }

    /// Accept a connect request (on the id from the CONNECT_REQUEST event, after create_qp).
    pub fn accept(&self, params: &ConnParams) -> Result<()> {
        // RFC 8797 §4: the responder's private data goes in the accept.
        let mut raw = params.to_raw(MAX_ACCEPT_PRIVATE_DATA, "accept private data")?;
        // SAFETY: live id with a QP; `raw` and its private data outlive the call.
        let rc = unsafe { sys::rdma_accept(self.raw.as_ptr(), &mut raw) };
        Self::check(rc, "rdma_accept")
    }

    /// Reject a connect request, with optional private data.
    pub fn reject(&self, private_data: &[u8]) -> Result<()> {
        if private_data.len() > MAX_REJECT_PRIVATE_DATA {
            return Err(VerbsError::OverLimit {
                what: "reject private data",
                value: private_data.len() as u64,
                limit: MAX_REJECT_PRIVATE_DATA as u64,
            });
        }
        let ptr = if private_data.is_empty() {
            std::ptr::null()
        } else {
            private_data.as_ptr().cast()
        };
        // SAFETY: live id; `private_data` outlives the call; its length fits in u8 (checked).
        let rc = unsafe { sys::rdma_reject(self.raw.as_ptr(), ptr, private_data.len() as u8) };
        Self::check(rc, "rdma_reject")
    }

    /// Start a disconnect; both sides then see DISCONNECTED and outstanding work flushes.
    pub fn disconnect(&self) -> Result<()> {
        // SAFETY: live id.
        let rc = unsafe { sys::rdma_disconnect(self.raw.as_ptr()) };
        Self::check(rc, "rdma_disconnect")
    }
}

/// A `sockaddr_in` / `sockaddr_in6` in a `sockaddr_storage`, and its length.
pub fn socket_addr_to_raw(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid (AF_UNSPEC) value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and suitably aligned for sockaddr_in.
            unsafe {
                std::ptr::write(
                    (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>(),
                    sin,
                )
            };
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and suitably aligned for sockaddr_in6.
            unsafe {
                std::ptr::write(
                    (&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>(),
                    sin6,
                )
            };
            (
                storage,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_channel_on_a_host_without_rdma_is_a_clear_error_or_works() {
        match EventChannel::new() {
            // Inside the guests (rdma_rxe loaded) the channel opens and an id can be created.
            Ok(channel) => {
                assert!(channel.fd() >= 0);
                let id = channel.create_id().unwrap();
                assert!(id.qp_num().is_none());
                // An unbound id has no device yet.
                assert!(matches!(id.context(), Err(VerbsError::InvalidState(_))));
            }
            Err(error) => {
                assert!(error.is_no_device(), "{error:?}");
                assert!(
                    error
                        .to_string()
                        .starts_with("rdma_create_event_channel: no RDMA device: load rdma_rxe"),
                    "{error}"
                );
            }
        }
    }

    #[test]
    fn event_kinds_round_trip_their_c_values_and_names() {
        for raw in 0..=sys::RDMA_CM_EVENT_TIMEWAIT_EXIT {
            let kind = CmEventKind::from_raw(raw);
            // SAFETY: rdma_event_str returns a static string for any value.
            let c_name = unsafe { std::ffi::CStr::from_ptr(sys::rdma_event_str(raw)) };
            match kind {
                CmEventKind::Other(value) => {
                    assert_eq!(value, raw);
                    assert!(c_name.to_str().unwrap().contains("MULTICAST"), "{c_name:?}");
                }
                known => assert_eq!(known.name(), c_name.to_str().unwrap()),
            }
        }
    }

    #[test]
    fn conn_params_carry_private_data_and_read_depths() {
        let private = vec![0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 7];
        let params = ConnParams::new(private.clone(), 4, 2);
        let raw = params
            .to_raw(MAX_CONNECT_PRIVATE_DATA, "connect private data")
            .unwrap();
        assert_eq!(raw.private_data_len, 8);
        assert_eq!((raw.responder_resources, raw.initiator_depth), (4, 2));
        assert_eq!(raw.private_data, params.private_data.as_ptr().cast());
        // The CM carries the caller's bytes as they are.
        assert_eq!(params.private_data, private);
    }

    #[test]
    fn conn_params_reject_private_data_over_the_cm_limit() {
        let params = ConnParams {
            private_data: vec![0; MAX_CONNECT_PRIVATE_DATA + 1],
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 7,
            rnr_retry_count: 7,
        };
        assert_eq!(
            params
                .to_raw(MAX_CONNECT_PRIVATE_DATA, "connect private data")
                .unwrap_err(),
            VerbsError::OverLimit {
                what: "connect private data",
                value: 57,
                limit: 56
            }
        );
        assert!(params
            .to_raw(MAX_ACCEPT_PRIVATE_DATA, "accept private data")
            .is_ok());
        let empty = ConnParams {
            private_data: Vec::new(),
            ..params
        };
        assert!(empty.to_raw(0, "none").unwrap().private_data.is_null());
    }

    #[test]
    fn socket_addresses_become_network_order_sockaddrs() {
        let (storage, len) = socket_addr_to_raw("10.0.2.15:20049".parse().unwrap());
        assert_eq!(len as usize, std::mem::size_of::<libc::sockaddr_in>());
        // SAFETY: written as a sockaddr_in above.
        let sin =
            unsafe { *(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
        assert_eq!(sin.sin_family, libc::AF_INET as libc::sa_family_t);
        assert_eq!(sin.sin_port.to_ne_bytes(), 20049u16.to_be_bytes());
        assert_eq!(sin.sin_addr.s_addr.to_ne_bytes(), [10, 0, 2, 15]);

        let (storage, len) = socket_addr_to_raw("[fe80::1]:20049".parse().unwrap());
        assert_eq!(len as usize, std::mem::size_of::<libc::sockaddr_in6>());
        // SAFETY: written as a sockaddr_in6 above.
        let sin6 =
            unsafe { *(&storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
        assert_eq!(sin6.sin6_family, libc::AF_INET6 as libc::sa_family_t);
        assert_eq!(sin6.sin6_addr.s6_addr[0..2], [0xfe, 0x80]);
        assert_eq!(sin6.sin6_addr.s6_addr[15], 1);
    }
}
