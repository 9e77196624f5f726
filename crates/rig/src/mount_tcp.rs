//! MOUNT v3 and portmap over TCP for `rig serve --mount-tcp` (the kernel NFS client mounting
//! our server), and the MNT client `rig scenarios`/`rig bench-rpc` use against rpc.mountd.
//!
//! The service is one thread sleeping in poll(2) on the listener and every connection, all
//! non-blocking: no thread per connection, no sleeps. Each connection's bytes go through
//! `wire::record::RecordDecoder` (RFC 5531 §11, bounded before allocation), each whole call to
//! `server::mount_service::answer`, each reply into the connection's bounded output buffer.
//!
//! Architecture Invariant: at most [`Limits::max_connections`] connections are open at once
//! (more are closed on accept), a connection idle for [`Limits::idle`] is closed, a connection
//! whose unsent replies exceed [`MAX_PENDING_OUTPUT`] is not read until they drain, and the
//! loop wakes at least every [`STOP_CHECK`] to see its stop flag.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use server::mount_service::{answer, Ports};
use wire::mount3::{DirPath, MntRes, Mount3Call, Mount3Proc, Mount3Reply, MOUNT_V3};
use wire::nfs3::FileHandle;
use wire::record::{encode_record, RecordDecoder};
use wire::rpc::{CallHeader, RpcMessage, MOUNT_PROGRAM};
use wire::{Reader, Writer, Xdr};

/// Largest RPC record accepted (MOUNT messages are tiny; 64 KiB is generous).
pub const MAX_RECORD: usize = 64 * 1024;
/// Unsent reply bytes one connection may hold before the service stops reading from it.
pub const MAX_PENDING_OUTPUT: usize = 256 * 1024;
/// Longest poll(2) sleep: how soon a set stop flag is seen when no signal interrupts the wait.
pub const STOP_CHECK: Duration = Duration::from_millis(500);
/// How long the listener is left out of the poll set after an accept error that does not go
/// away by itself (out of fds): the wait that replaces a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Bytes read from one connection per wake-up (fairness between connections).
const READ_PER_WAKE: usize = 64 * 1024;

/// What the service holds at most.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; the kernel client opens one per mount.
    pub max_connections: usize,
    /// A connection that moves no byte either way for this long is closed.
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 16,
            idle: Duration::from_secs(30),
        }
    }
}

/// One accepted connection.
struct Connection {
    stream: TcpStream,
    peer: SocketAddr,
    decoder: RecordDecoder,
    output: Vec<u8>,
    last_active: Instant,
}

impl Connection {
    /// Read what is there (up to [`READ_PER_WAKE`]), answering each whole call; false when the
    /// connection is to be closed (peer closed, error, a record over the limits).
    fn read_available(&mut self, ports: Ports, buf: &mut [u8]) -> bool {
        let mut read = 0;
        while read < READ_PER_WAKE && self.output.len() < MAX_PENDING_OUTPUT {
            let n = match self.stream.read(buf) {
                Ok(0) => return false,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            read += n;
            self.last_active = Instant::now();
            let output = &mut self.output;
            let pushed = self.decoder.push(&buf[..n], &mut |call| {
                if let Some(reply) = answer(&call, ports).and_then(|r| encode_record(&r)) {
                    output.extend_from_slice(&reply);
                }
            });
            if let Err(e) = pushed {
                eprintln!("rig serve: mount-tcp {}: {e}; closing", self.peer);
                return false;
            }
        }
        true
    }

    /// Write what the socket takes now; false when the connection is to be closed.
    fn flush(&mut self) -> bool {
        while !self.output.is_empty() {
            match self.stream.write(&self.output) {
                Ok(0) => return false,
                Ok(n) => {
                    self.output.drain(..n);
                    self.last_active = Instant::now();
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }

    fn events(&self) -> PollFlags {
        let mut events = PollFlags::empty();
        if self.output.len() < MAX_PENDING_OUTPUT {
            events |= PollFlags::POLLIN;
        }
        if !self.output.is_empty() {
            events |= PollFlags::POLLOUT;
        }
        events
    }
}

/// Serve MOUNT/portmap on `listener` until `stop` is set (by a signal handler or another
/// thread), within `limits`. Accept errors that come and go (out of fds, aborted handshakes)
/// are reported and waited out, not fatal; a poll(2) failure other than EINTR is.
pub fn serve(
    listener: TcpListener,
    ports: Ports,
    stop: &AtomicBool,
    limits: Limits,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut connections: Vec<Connection> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut refused = 0u64;
    let mut accept_errors = 0u64;
    let mut accept_paused_until: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let listening = accept_paused_until.is_none_or(|until| now >= until);
        // Sleep until a socket is ready, the next idle deadline, the accept back-off's end, or
        // the stop check, whichever comes first.
        let mut wait = STOP_CHECK;
        for c in &connections {
            wait = wait.min((c.last_active + limits.idle).saturating_duration_since(now));
        }
        if let (false, Some(until)) = (listening, accept_paused_until) {
            wait = wait.min(until.saturating_duration_since(now));
        }
        let revents = {
            let mut fds = Vec::with_capacity(connections.len() + 1);
            for c in &connections {
                fds.push(PollFd::new(c.stream.as_fd(), c.events()));
            }
            if listening {
                fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
            }
            // Round up so a sub-millisecond rest still sleeps instead of spinning.
            let millis = u16::try_from(wait.as_millis().saturating_add(1)).unwrap_or(u16::MAX);
            match poll(&mut fds, PollTimeout::from(millis)) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
            fds.iter()
                .map(|fd| fd.revents().unwrap_or(PollFlags::empty()))
                .collect::<Vec<_>>()
        };
        let now = Instant::now();
        let mut index = 0;
        connections.retain_mut(|c| {
            let ready = revents[index];
            index += 1;
            let mut open = true;
            if ready.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
                open = c.read_available(ports, &mut buf);
            }
            if open && !c.output.is_empty() {
                open = c.flush();
            }
            open && now.saturating_duration_since(c.last_active) < limits.idle
        });
        if listening && revents.get(index).is_some_and(|r| !r.is_empty()) {
            accept_paused_until = None;
            loop {
                match listener.accept() {
                    Ok((stream, peer)) => {
                        if connections.len() >= limits.max_connections {
                            refused += 1;
                            // Reported at the 1st, 2nd, 4th, ... refusal: one line per doubling.
                            if refused.is_power_of_two() {
                                eprintln!(
                                    "rig serve: mount-tcp {peer}: {} connections already \
                                     served; closed ({refused} refused so far)",
                                    limits.max_connections
                                );
                            }
                            continue;
                        }
                        if stream.set_nonblocking(true).is_err() {
                            continue;
                        }
                        connections.push(Connection {
                            stream,
                            peer,
                            decoder: RecordDecoder::new(MAX_RECORD),
                            output: Vec::new(),
                            last_active: Instant::now(),
                        });
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                        ) => {}
                    Err(e) => {
                        // EMFILE, ENFILE, ENOBUFS...: leave the listener out for a while.
                        accept_errors += 1;
                        if accept_errors.is_power_of_two() {
                            eprintln!("rig serve: mount-tcp: accept: {e} ({accept_errors} so far)");
                        }
                        accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                        break;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Read `count` whole records from a blocking stream (the MNT client's reply: one).
fn read_records(stream: &mut TcpStream, count: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut decoder = RecordDecoder::new(MAX_RECORD);
    let mut buf = [0u8; 4096];
    let mut records = Vec::new();
    while records.len() < count {
        let n = match stream.read(&mut buf) {
            Ok(0) => return Err("connection closed before a whole reply".into()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        decoder
            .push(&buf[..n], &mut |r| records.push(r))
            .map_err(|e| e.to_string())?;
    }
    Ok(records)
}

/// Read one whole record from a blocking stream.
fn read_record(stream: &mut TcpStream) -> Result<Vec<u8>, String> {
    Ok(read_records(stream, 1)?.swap_remove(0))
}

/// MNT `path` at a MOUNT v3 server over TCP; returns the root file handle.
pub fn mount(server: SocketAddr, path: &[u8], timeout: Duration) -> Result<FileHandle, String> {
    let mut stream = TcpStream::connect_timeout(&server, timeout)
        .map_err(|e| format!("connect {server}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let xid = std::process::id() ^ 0x4d4e_5400;
    let mut call = CallHeader::new(xid, MOUNT_PROGRAM, MOUNT_V3, Mount3Proc::Mnt as u32).to_bytes();
    let mut w = Writer::new();
    Mount3Call::Mnt(DirPath(path.to_vec())).encode(&mut w);
    call.extend_from_slice(w.as_bytes());
    let record = encode_record(&call).ok_or("MNT call too large")?;
    stream
        .write_all(&record)
        .map_err(|e| format!("send MNT: {e}"))?;
    let reply = read_record(&mut stream).map_err(|e| format!("MNT reply: {e}"))?;
    let Ok((RpcMessage::Reply(header), used)) = RpcMessage::decode_prefix(&reply) else {
        return Err("MNT reply is not an RPC reply".to_string());
    };
    if !header.is_success() {
        return Err(format!("MNT refused: {:?}", header.body));
    }
    match Mount3Reply::decode(Mount3Proc::Mnt, &mut Reader::new(&reply[used..])) {
        Ok(Mount3Reply::Mnt(MntRes::Ok(ok))) => Ok(ok.fhandle),
        Ok(Mount3Reply::Mnt(MntRes::Fail(status))) => Err(format!("MNT failed: {}", status.name())),
        Ok(_) => Err("MNT reply of another procedure".to_string()),
        Err(e) => Err(format!("MNT reply undecodable: {}", e.rule())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use server::fs::Fs;
    use server::mount_service::PMAP_V2;
    use std::sync::Arc;
    use wire::rpc::PORTMAP_PROGRAM;

    /// The service on a loopback port in a thread, stopped and joined on drop.
    struct Service {
        addr: SocketAddr,
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    }

    impl Service {
        fn start(limits: Limits) -> Service {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let ports = Ports {
                nfs: 20049,
                mount: addr.port(),
            };
            let thread = {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || serve(listener, ports, &stop, limits))
            };
            Service {
                addr,
                stop,
                thread: Some(thread),
            }
        }
    }

    impl Drop for Service {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                thread.join().unwrap().unwrap();
            }
        }
    }

    fn portmap_null(xid: u32) -> Vec<u8> {
        encode_record(&CallHeader::new(xid, PORTMAP_PROGRAM, PMAP_V2, 0).to_bytes()).unwrap()
    }

    fn connect(addr: SocketAddr) -> TcpStream {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    fn reply_xid(stream: &mut TcpStream) -> u32 {
        let reply = read_record(stream).unwrap();
        RpcMessage::decode_prefix(&reply).unwrap().0.xid()
    }

    #[test]
    fn mount_over_tcp_round_trips_against_our_mount_service() {
        let service = Service::start(Limits::default());
        let handle = mount(service.addr, b"/export", Duration::from_secs(5)).unwrap();
        assert_eq!(handle, Fs::default().root_handle());
        let missing = mount(service.addr, b"/nope", Duration::from_secs(5)).unwrap_err();
        assert!(missing.contains("MNT failed"), "{missing}");
    }

    #[test]
    fn one_thread_serves_a_connection_while_another_is_mid_record() {
        // A blocking server would sit in the half-sent record of the first connection; this
        // one answers the second connection meanwhile, then the first when it completes.
        let service = Service::start(Limits::default());
        let mut slow = connect(service.addr);
        let call = portmap_null(1);
        slow.write_all(&call[..6]).unwrap();
        let mut quick = connect(service.addr);
        quick.write_all(&portmap_null(2)).unwrap();
        assert_eq!(reply_xid(&mut quick), 2);
        slow.write_all(&call[6..]).unwrap();
        assert_eq!(reply_xid(&mut slow), 1);
        // Two calls in one write, answered in order.
        let mut both = portmap_null(3);
        both.extend(portmap_null(4));
        quick.write_all(&both).unwrap();
        let xids: Vec<u32> = read_records(&mut quick, 2)
            .unwrap()
            .iter()
            .map(|r| RpcMessage::decode_prefix(r).unwrap().0.xid())
            .collect();
        assert_eq!(xids, [3, 4]);
    }

    #[test]
    fn connections_beyond_the_limit_are_closed_and_their_slots_come_back() {
        let service = Service::start(Limits {
            max_connections: 2,
            ..Limits::default()
        });
        // Two idle connections hold both slots (each proven served by a round trip).
        let hold: Vec<TcpStream> = (0..2)
            .map(|i| {
                let mut s = connect(service.addr);
                s.write_all(&portmap_null(i)).unwrap();
                assert_eq!(reply_xid(&mut s), i);
                s
            })
            .collect();
        // A third is closed by the server: it reads end of file. Only Ok(0) is the close; a
        // read that times out (a server that kept the connection open and idle) or returns
        // bytes is a failure, so the check cannot pass without the server closing.
        let mut third = connect(service.addr);
        let mut byte = [0u8; 1];
        match third.read(&mut byte) {
            Ok(0) => {}
            Ok(n) => panic!("the third connection was served ({n} bytes), not closed"),
            Err(e) => panic!("the third connection was not closed within 10 s: {e}"),
        }
        // Once the two go, a new connection is served again (the server sees them close at its
        // next wake-up, which their closing causes).
        drop(hold);
        let served = (0..50).any(|_| {
            let mut s = connect(service.addr);
            s.write_all(&portmap_null(9)).is_ok()
                && read_record(&mut s).is_ok_and(|r| !r.is_empty())
        });
        assert!(served);
    }

    #[test]
    fn an_idle_connection_and_an_oversized_record_are_closed() {
        let service = Service::start(Limits {
            idle: Duration::from_millis(200),
            ..Limits::default()
        });
        let mut idle = connect(service.addr);
        let mut byte = [0u8; 1];
        assert!(
            matches!(idle.read(&mut byte), Ok(0)),
            "idle connection left open"
        );
        let mut huge = connect(service.addr);
        huge.write_all(&[0xff, 0xff, 0xff, 0xff]).unwrap();
        assert!(
            matches!(huge.read(&mut byte), Ok(0)),
            "oversized record not refused"
        );
    }
}
