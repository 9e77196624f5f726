//! Two-process RC test over rdma_cm (run inside the interop guests, soft-RoCE): Sends both ways,
//! then the client RDMA Reads and RDMA Writes the server's MR (address and rkey arrive in a Send) and
//! both sides check the bytes. Prints one PASS/FAIL line per check; every wait has a timeout.
//!
//! ```text
//! verbs_pingpong --server 0.0.0.0:20079 [--timeout-secs 10] [--size 65536]
//! verbs_pingpong --client 10.0.2.15:20079 [--timeout-secs 10] [--size 65536]
//! ```
//!
//! Message flow (control messages are 4-byte tags, big-endian fields):
//! client `HELO` → server; server `REGN addr(8) rkey(4) len(4)` → client; client RDMA Read (expects
//! the server's pattern), RDMA Write (its own pattern), RDMA Read again (expects its own pattern);
//! client `DONE` (as Send With Invalidate of the window's rkey) → server; server checks its MR holds
//! the client's pattern and the invalidated rkey, and answers `PASS`/`FAIL`; client RDMA Reads
//! with the revoked rkey (expects IBV_WC_REM_ACCESS_ERR) and disconnects.
//!
//! The server exposes a type 2 memory window bound over its MR, not the MR itself, so that the
//! client's Send With Invalidate can revoke it.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use verbs::sys::{IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE};
use verbs::{
    CmEventKind, CmId, CompletionChannel, ConnParams, Cq, EventChannel, ImmOrInv, Mr, Pd, QpCaps,
    RemoteRegion, SendOp, VerbsError, WorkCompletion,
};
use wire::private_data::PrivateData;

/// Receive buffer size per control message.
const MSG_LEN: usize = 64;
/// Receives posted up front (each side receives exactly two messages).
const RECVS: usize = 2;
/// Largest region the test allows (the peer's advertised length is checked against our own).
const MAX_SIZE: usize = 16 << 20;
/// RDMA Reads in flight per direction, offered in the connect request / accept.
const READ_DEPTH: u8 = 4;
/// Inline sizes we advertise in the RFC 8797 private data.
const INLINE_SIZE: u32 = 4096;

const WR_SEND: u64 = 1;
const WR_READ: u64 = 2;
const WR_WRITE: u64 = 3;
const WR_READ_BACK: u64 = 4;
const WR_BAD_READ: u64 = 5;
const WR_BIND: u64 = 6;
const WR_RECV_BASE: u64 = 100;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

struct Options {
    server: Option<SocketAddr>,
    client: Option<SocketAddr>,
    timeout: Duration,
    size: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        server: None,
        client: None,
        timeout: Duration::from_secs(10),
        size: 64 * 1024,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--server" => options.server = Some(value.parse().map_err(|e| format!("{flag}: {e}"))?),
            "--client" => options.client = Some(value.parse().map_err(|e| format!("{flag}: {e}"))?),
            "--timeout-secs" => {
                let secs: u64 = value.parse().map_err(|e| format!("{flag}: {e}"))?;
                options.timeout = Duration::from_secs(secs.clamp(1, 3600));
            }
            "--size" => {
                options.size = value.parse().map_err(|e| format!("{flag}: {e}"))?;
                if options.size == 0 || options.size > MAX_SIZE {
                    return Err(format!("--size must be 1 ..= {MAX_SIZE}"));
                }
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if options.server.is_some() == options.client.is_some() {
        return Err(
            "give exactly one of --server BIND_ADDR:PORT or --client SERVER_ADDR:PORT".into(),
        );
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("verbs_pingpong: {message}");
            return ExitCode::from(2);
        }
    };
    let mut report = Report::default();
    let outcome = match (options.server, options.client) {
        (Some(bind), _) => run_server(bind, &options, &mut report),
        (_, Some(server)) => run_client(server, &options, &mut report),
        _ => unreachable!("parse_options requires exactly one role"),
    };
    if let Err(error) = outcome {
        report.check("run to completion", false, &error.to_string());
    }
    println!(
        "RESULT {} ({} passed, {} failed)",
        if report.failed == 0 { "PASS" } else { "FAIL" },
        report.passed,
        report.failed
    );
    if report.failed == 0 && report.passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[derive(Default)]
struct Report {
    passed: u32,
    failed: u32,
}

impl Report {
    fn check(&mut self, what: &str, ok: bool, detail: &str) {
        if ok {
            self.passed += 1;
            println!("PASS {what}");
        } else {
            self.failed += 1;
            println!("FAIL {what}: {detail}");
        }
    }

    /// Check `what`: the next event on `channel` is the disconnection.
    fn check_disconnected(
        &mut self,
        what: &str,
        channel: &EventChannel,
        timeout: Duration,
    ) -> AnyResult<()> {
        let event = channel.next_event(timeout)?;
        self.check(
            what,
            event.kind == CmEventKind::Disconnected,
            event.kind.name(),
        );
        Ok(())
    }
}

/// Server's region content before the client writes; the client's pattern differs at every byte.
fn server_pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(7).wrapping_add(3)) as u8)
        .collect()
}

fn client_pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(7).wrapping_add(4)) as u8)
        .collect()
}

/// One connection's verbs objects. Drop order is safe whatever it is: the id owns its QP and keeps
/// the PD, CQ and every posted MR alive until the QP is destroyed.
struct Connection {
    id: CmId,
    cq: Cq,
    recv_mr: Mr,
    send_mr: Mr,
    completions: Completions,
}

impl Connection {
    /// PD, completion channel, one CQ for both queues, the RC QP, and `RECVS` posted Receives.
    fn set_up(mut id: CmId) -> AnyResult<(Connection, Pd)> {
        let context = id.context()?;
        let pd = Pd::new(context)?;
        let channel = CompletionChannel::new(context)?;
        let caps = QpCaps::for_credits(RECVS as u32, 2)?;
        let cq = Cq::new(context, caps.cq_entries(), &channel)?;
        println!(
            "device {}: wc_flags layout {:?}",
            context.device_name(),
            cq.flag_layout()
        );
        id.create_qp(&pd, &cq, &cq, caps)?;
        let recv_mr = pd.register(MSG_LEN * RECVS)?;
        for index in 0..RECVS {
            id.post_recv(
                WR_RECV_BASE + index as u64,
                &recv_mr.sge(index * MSG_LEN, MSG_LEN)?,
            )?;
        }
        let send_mr = pd.register(MSG_LEN)?;
        let connection = Connection {
            id,
            cq,
            recv_mr,
            send_mr,
            completions: Completions::default(),
        };
        Ok((connection, pd))
    }

    fn send(&mut self, message: &[u8], timeout: Duration) -> AnyResult<()> {
        self.send_as(SendOp::Send, message, timeout)
    }

    /// A Send or a Send With Invalidate carrying `message`.
    fn send_as(&mut self, op: SendOp, message: &[u8], timeout: Duration) -> AnyResult<()> {
        self.send_mr.write(0, message)?;
        let sge = self.send_mr.sge(0, message.len())?;
        self.id.post_send(WR_SEND, op, &sge, true)?;
        self.completions
            .await_success(&self.cq, WR_SEND, "Send", timeout)?;
        Ok(())
    }

    /// The `index`-th received message (Receives complete in posting order on an RC QP).
    fn receive(&mut self, index: usize, timeout: Duration) -> AnyResult<Vec<u8>> {
        Ok(self.receive_with_completion(index, timeout)?.0)
    }

    fn receive_with_completion(
        &mut self,
        index: usize,
        timeout: Duration,
    ) -> AnyResult<(Vec<u8>, WorkCompletion)> {
        let wc = self.completions.await_success(
            &self.cq,
            WR_RECV_BASE + index as u64,
            "Receive",
            timeout,
        )?;
        // byte_len comes from the peer's Send; never read past our own buffer.
        let len = (wc.byte_len as usize).min(MSG_LEN);
        Ok((self.recv_mr.to_vec(index * MSG_LEN, len)?, wc))
    }
}

/// Completions polled but not yet claimed (send and receive completions share one CQ and may
/// arrive in any order).
#[derive(Default)]
struct Completions {
    pending: Vec<WorkCompletion>,
}

impl Completions {
    /// Wait for the completion of `wr_id`, whatever its status. A failed completion of another
    /// request means the QP broke, which is an error.
    fn await_completion(
        &mut self,
        cq: &Cq,
        wr_id: u64,
        what: &str,
        timeout: Duration,
    ) -> AnyResult<WorkCompletion> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(position) = self.pending.iter().position(|wc| wc.wr_id == wr_id) {
                return Ok(self.pending.remove(position));
            }
            // Bounded: each round either finds completions or runs out the remaining time.
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(VerbsError::Timeout {
                    what: "a work completion",
                    after: timeout,
                }
                .into());
            }
            let polled = cq.wait(16, remaining)?;
            if let Some(failed) = polled
                .iter()
                .find(|wc| wc.wr_id != wr_id && !wc.status.is_success())
            {
                return Err(
                    format!("{what}: another request failed while waiting: {failed}").into(),
                );
            }
            self.pending.extend(polled);
        }
    }

    fn await_success(
        &mut self,
        cq: &Cq,
        wr_id: u64,
        what: &str,
        timeout: Duration,
    ) -> AnyResult<WorkCompletion> {
        let wc = self.await_completion(cq, wr_id, what, timeout)?;
        if !wc.status.is_success() {
            return Err(format!("{what} completed in error: {wc}").into());
        }
        Ok(wc)
    }
}

/// RFC 8797 §4 private data; `accepts_invalidate` sets the W flag (we can receive Send With
/// Invalidate).
fn private_data_params(
    responder_resources: u8,
    initiator_depth: u8,
    accepts_invalidate: bool,
) -> ConnParams {
    ConnParams::new(
        PrivateData::new(INLINE_SIZE, INLINE_SIZE, accepts_invalidate)
            .encode()
            .to_vec(),
        responder_resources,
        initiator_depth,
    )
}

fn run_server(bind: SocketAddr, options: &Options, report: &mut Report) -> AnyResult<()> {
    let timeout = options.timeout;
    let channel = EventChannel::new()?;
    let listener = channel.create_id()?;
    listener.bind_addr(bind)?;
    listener.listen(1)?;
    println!("listening on {bind}");

    let mut request = channel.expect_event(CmEventKind::ConnectRequest, timeout)?;
    let client_private = PrivateData::decode(&request.private_data).ok();
    report.check(
        "connect request carries RFC 8797 private data",
        client_private.is_some(),
        &format!("{:02x?}", request.private_data),
    );
    let id = request
        .new_id
        .take()
        .ok_or("CONNECT_REQUEST without a new id")?;
    let (mut connection, pd) = Connection::set_up(id)?;
    // The client gets a type 2 memory window's rkey, not the MR's, so its Send With Invalidate can
    // revoke remote access (what svcrdma relies on with FRWR-registered client memory).
    let region = pd.register_bindable(options.size)?;
    region.write(0, &server_pattern(options.size))?;
    let window = pd.alloc_window()?;

    // Answer the client's offer: it may read as deep as it asked for (up to our READ_DEPTH).
    let params = private_data_params(
        request.initiator_depth.min(READ_DEPTH),
        request.responder_resources.min(READ_DEPTH),
        true,
    );
    connection.id.accept(&params)?;
    channel.expect_event(CmEventKind::Established, timeout)?;
    report.check("connection established", true, "");

    let hello = connection.receive(0, timeout)?;
    report.check("Receive HELO", hello == b"HELO", &format!("{hello:02x?}"));

    let window_rkey = connection.id.post_bind_window(
        WR_BIND,
        &window,
        &region.sge(0, options.size)?,
        IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
        true,
    )?;
    connection
        .completions
        .await_success(&connection.cq, WR_BIND, "memory window bind", timeout)?;
    report.check("bind a type 2 memory window over the region", true, "");
    let remote = RemoteRegion {
        addr: region.addr(),
        rkey: window_rkey,
    };
    let mut message = b"REGN".to_vec();
    message.extend_from_slice(&remote.addr.to_be_bytes());
    message.extend_from_slice(&remote.rkey.to_be_bytes());
    message.extend_from_slice(&(options.size as u32).to_be_bytes());
    connection.send(&message, timeout)?;
    report.check("Send REGN (address, rkey, length)", true, "");

    let (done, done_wc) = connection.receive_with_completion(1, timeout)?;
    report.check("Receive DONE", done == b"DONE", &format!("{done:02x?}"));
    report.check(
        "DONE arrived as Send With Invalidate of the window's rkey",
        done_wc.imm_or_inv == ImmOrInv::Invalidated(window_rkey),
        &done_wc.to_string(),
    );
    // The client's RDMA Write completed (acked by our HCA) before it sent DONE, and RC delivers in
    // order, so the bytes are in our MR now.
    let written = region.to_vec(0, options.size)?;
    let region_ok = written == client_pattern(options.size);
    report.check(
        "server MR holds the client's RDMA Write",
        region_ok,
        &first_difference(&written, &client_pattern(options.size)),
    );
    connection.send(if region_ok { b"PASS" } else { b"FAIL" }, timeout)?;

    report.check_disconnected("client disconnects", &channel, timeout)
}

fn run_client(server: SocketAddr, options: &Options, report: &mut Report) -> AnyResult<()> {
    let timeout = options.timeout;
    let channel = EventChannel::new()?;
    let id = channel.create_id()?;
    id.resolve_addr(server, timeout)?;
    channel.expect_event(CmEventKind::AddrResolved, timeout)?;
    id.resolve_route(timeout)?;
    channel.expect_event(CmEventKind::RouteResolved, timeout)?;

    let (mut connection, pd) = Connection::set_up(id)?;
    let local = pd.register(options.size)?;
    let read_back = pd.register(options.size)?;

    connection
        .id
        .connect(&private_data_params(READ_DEPTH, READ_DEPTH, false))?;
    let established = channel.expect_event(CmEventKind::Established, timeout)?;
    let server_private = PrivateData::decode(&established.private_data).ok();
    report.check(
        "accept carries RFC 8797 private data",
        server_private.is_some(),
        &format!("{:02x?}", established.private_data),
    );
    // RFC 8797 §4: Send With Invalidate only to a peer that set the W flag.
    let server_accepts_invalidate = server_private.is_some_and(|p| p.send_with_invalidate());
    report.check(
        "server advertises Send With Invalidate (W flag)",
        server_accepts_invalidate,
        "W flag clear",
    );
    println!(
        "connected: qp {:?}, server offers responder_resources {} initiator_depth {}",
        connection.id.qp_num(),
        established.responder_resources,
        established.initiator_depth
    );

    connection.send(b"HELO", timeout)?;
    report.check("Send HELO", true, "");

    let region_message = connection.receive(0, timeout)?;
    let (remote, length) = parse_region(&region_message)?;
    // The length is the peer's claim: it must fit our own buffers before we post anything.
    if length == 0 || length > local.len() {
        return Err(format!(
            "server region length {length} outside 1 ..= {}",
            local.len()
        )
        .into());
    }
    report.check("Receive REGN", true, "");

    let sge = local.sge(0, length)?;
    connection
        .id
        .post_send(WR_READ, SendOp::RdmaRead { remote }, &sge, true)?;
    connection
        .completions
        .await_success(&connection.cq, WR_READ, "RDMA Read", timeout)?;
    let read = local.to_vec(0, length)?;
    report.check(
        "RDMA Read returns the server's bytes",
        read == server_pattern(length),
        &first_difference(&read, &server_pattern(length)),
    );

    local.write(0, &client_pattern(length))?;
    connection
        .id
        .post_send(WR_WRITE, SendOp::RdmaWrite { remote }, &sge, true)?;
    connection
        .completions
        .await_success(&connection.cq, WR_WRITE, "RDMA Write", timeout)?;
    report.check("RDMA Write completes", true, "");

    let back_sge = read_back.sge(0, length)?;
    connection
        .id
        .post_send(WR_READ_BACK, SendOp::RdmaRead { remote }, &back_sge, true)?;
    connection.completions.await_success(
        &connection.cq,
        WR_READ_BACK,
        "RDMA Read after Write",
        timeout,
    )?;
    let back = read_back.to_vec(0, length)?;
    report.check(
        "RDMA Read after RDMA Write returns the written bytes",
        back == client_pattern(length),
        &first_difference(&back, &client_pattern(length)),
    );

    let done_op = if server_accepts_invalidate {
        SendOp::SendWithInvalidate {
            invalidate_rkey: remote.rkey,
        }
    } else {
        SendOp::Send
    };
    connection.send_as(done_op, b"DONE", timeout)?;
    let verdict = connection.receive(1, timeout)?;
    report.check(
        "server saw the RDMA Write in its MR",
        verdict == b"PASS",
        &String::from_utf8_lossy(&verdict),
    );

    // Last, because it breaks the QP: an RDMA Read with the rkey our Send With Invalidate revoked
    // must complete with a remote access error (the typed completion path), not hang or succeed.
    connection
        .id
        .post_send(WR_BAD_READ, SendOp::RdmaRead { remote }, &sge, true)?;
    let wc = connection.completions.await_completion(
        &connection.cq,
        WR_BAD_READ,
        "RDMA Read with the invalidated rkey",
        timeout,
    )?;
    report.check(
        "RDMA Read with the invalidated rkey completes with IBV_WC_REM_ACCESS_ERR",
        wc.status.name() == "IBV_WC_REM_ACCESS_ERR",
        &wc.to_string(),
    );

    connection.id.disconnect()?;
    report.check_disconnected("disconnect completes", &channel, timeout)
}

/// `REGN addr(8) rkey(4) len(4)`, exactly 20 bytes.
fn parse_region(message: &[u8]) -> AnyResult<(RemoteRegion, usize)> {
    let body = message
        .strip_prefix(b"REGN")
        .filter(|body| body.len() == 16)
        .ok_or_else(|| format!("not a 20-byte REGN message: {message:02x?}"))?;
    let addr = u64::from_be_bytes(body[0..8].try_into()?);
    let rkey = u32::from_be_bytes(body[8..12].try_into()?);
    let len = u32::from_be_bytes(body[12..16].try_into()?);
    Ok((RemoteRegion { addr, rkey }, len as usize))
}

/// Where two byte strings first differ, for a FAIL line.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(index) => format!(
            "first difference at byte {index}: got {:#04x}, want {:#04x}",
            got[index], want[index]
        ),
        None if got.len() != want.len() => {
            format!("length {} != expected {}", got.len(), want.len())
        }
        None => "identical".to_string(),
    }
}
