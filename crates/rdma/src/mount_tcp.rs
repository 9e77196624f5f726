//! MOUNT v3 (and a minimal portmap GETPORT) over TCP with RPC record marking (RFC 5531 §11), for
//! the kernel NFS client mounting `rig serve` (`mountproto=tcp,mountport=P`), and a tiny MNT
//! client for `rig scenarios` against kernel nfsd (rpc.mountd on a fixed port).
//!
//! Architecture Invariant: a record is read fragment by fragment, each length checked against
//! [`MAX_RECORD`] before anything is allocated; the number of fragments is bounded too; at most
//! [`MAX_CONNECTIONS`] connections (threads) are served at once.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use server::fs::Fs;
use wire::mount3::{DirPath, MntRes, Mount3Call, Mount3Proc, Mount3Reply, MOUNT_V3};
use wire::nfs3::FileHandle;
use wire::rpc::{
    AcceptStat, CallHeader, ReplyHeader, RpcMessage, MOUNT_PROGRAM, NFS_PROGRAM, PORTMAP_PROGRAM,
};
use wire::{Reader, Writer, Xdr};

/// Largest RPC record accepted (MOUNT messages are tiny; 64 KiB is generous).
pub const MAX_RECORD: usize = 64 * 1024;
/// Most fragments in one record.
const MAX_FRAGMENTS: usize = 64;
/// RFC 5531 §11: the high bit of the record mark flags the last fragment.
const LAST_FRAGMENT: u32 = 0x8000_0000;
/// portmap v2 (RFC 1833 §3) GETPORT.
const PMAP_V2: u32 = 2;
const PMAPPROC_GETPORT: u32 = 3;
const IPPROTO_TCP: u32 = 6;

/// Why a record could not be read.
#[derive(Debug)]
pub enum RecordError {
    Io(std::io::Error),
    /// RFC 5531 §11: the record (or fragment count) exceeds what we accept.
    TooLarge {
        len: usize,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Io(e) => write!(f, "{e}"),
            RecordError::TooLarge { len } => {
                write!(
                    f,
                    "RFC 5531 §11: record of {len}+ bytes over the {MAX_RECORD} limit"
                )
            }
        }
    }
}

impl From<std::io::Error> for RecordError {
    fn from(e: std::io::Error) -> Self {
        RecordError::Io(e)
    }
}

/// Read one record-marked RPC message.
pub fn read_record(stream: &mut impl Read) -> Result<Vec<u8>, RecordError> {
    let mut record = Vec::new();
    for _ in 0..MAX_FRAGMENTS {
        let mut mark = [0u8; 4];
        stream.read_exact(&mut mark)?;
        let mark = u32::from_be_bytes(mark);
        let len = (mark & !LAST_FRAGMENT) as usize;
        let total = record.len().saturating_add(len);
        if total > MAX_RECORD {
            return Err(RecordError::TooLarge { len: total });
        }
        let start = record.len();
        record.resize(total, 0);
        stream.read_exact(&mut record[start..])?;
        if mark & LAST_FRAGMENT != 0 {
            return Ok(record);
        }
    }
    Err(RecordError::TooLarge { len: record.len() })
}

/// Write `message` as one record (a single last fragment).
pub fn write_record(stream: &mut impl Write, message: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(message.len())
        .ok()
        .filter(|&n| n < LAST_FRAGMENT)
        .ok_or_else(|| std::io::Error::other("record too large"))?;
    let mut out = (len | LAST_FRAGMENT).to_be_bytes().to_vec();
    out.extend_from_slice(message);
    stream.write_all(&out)
}

/// Ports the portmap answer reports.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    pub nfs: u16,
    pub mount: u16,
}

fn accepted(xid: u32, stat: AcceptStat) -> Vec<u8> {
    ReplyHeader::accepted(xid, stat).to_bytes()
}

/// Answer one call: MOUNT v3 from a fresh [`Fs`] (its root handle is the one every `rig serve`
/// slot has), portmap GETPORT for NFS and MOUNT over TCP; `None` for a non-call (dropped).
pub fn answer(message: &[u8], ports: Ports) -> Option<Vec<u8>> {
    let Ok((RpcMessage::Call(header), used)) = RpcMessage::decode_prefix(message) else {
        return None;
    };
    let args = &message[used..];
    let xid = header.xid;
    let reply = match (header.prog, header.vers) {
        (MOUNT_PROGRAM, MOUNT_V3) => {
            let Some(proc_) = Mount3Proc::from_u32(header.proc_) else {
                return Some(accepted(xid, AcceptStat::ProcUnavail));
            };
            let Ok(call) = Mount3Call::decode(proc_, &mut Reader::new(args)) else {
                return Some(accepted(xid, AcceptStat::GarbageArgs));
            };
            let mut message = accepted(xid, AcceptStat::Success);
            let mut w = Writer::new();
            Fs::default().mount(&call).encode(&mut w);
            message.extend_from_slice(w.as_bytes());
            message
        }
        (MOUNT_PROGRAM, _) => accepted(
            xid,
            AcceptStat::ProgMismatch {
                low: MOUNT_V3,
                high: MOUNT_V3,
            },
        ),
        (PORTMAP_PROGRAM, PMAP_V2) if header.proc_ == 0 => accepted(xid, AcceptStat::Success),
        (PORTMAP_PROGRAM, PMAP_V2) if header.proc_ == PMAPPROC_GETPORT => {
            // RFC 1833 §3: struct mapping { prog, vers, prot, port }.
            let mut r = Reader::new(args);
            let prog = r.u32("pmap prog").ok()?;
            let _vers = r.u32("pmap vers").ok()?;
            let prot = r.u32("pmap prot").ok()?;
            let port = match (prog, prot) {
                (NFS_PROGRAM, _) => u32::from(ports.nfs),
                (MOUNT_PROGRAM, IPPROTO_TCP) => u32::from(ports.mount),
                _ => 0,
            };
            let mut message = accepted(xid, AcceptStat::Success);
            message.extend_from_slice(&port.to_be_bytes());
            message
        }
        _ => accepted(xid, AcceptStat::ProgUnavail),
    };
    Some(reply)
}

/// Most TCP connections served at once (one thread each); more are closed on accept. The
/// kernel client opens one per mount.
pub const MAX_CONNECTIONS: usize = 16;
/// A connection that sends nothing (or reads nothing) for this long is closed.
const IDLE: Duration = Duration::from_secs(30);

/// Serve MOUNT/portmap on `listener` until `stop` is set: one thread per TCP connection, at
/// most [`MAX_CONNECTIONS`] at once.
pub fn serve(listener: TcpListener, ports: Ports, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    serve_bounded(listener, ports, stop, MAX_CONNECTIONS)
}

/// [`serve`] with at most `max_connections` served at once. Connections beyond it are closed
/// at once; a thread that cannot be spawned closes its connection; accept errors that come
/// and go (out of fds, aborted handshakes) are reported and waited out, not fatal.
pub fn serve_bounded(
    listener: TcpListener,
    ports: Ports,
    stop: Arc<AtomicBool>,
    max_connections: usize,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let active = Arc::new(AtomicUsize::new(0));
    let mut refused = 0u64;
    let mut accept_errors = 0u64;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                if active.load(Ordering::Acquire) >= max_connections {
                    refused += 1;
                    // Reported at the 1st, 2nd, 4th, ... refusal: a flood is one line per doubling.
                    if refused.is_power_of_two() {
                        eprintln!(
                            "rig serve: mount-tcp {peer}: {max_connections} connections already \
                             served; closed ({refused} refused so far)"
                        );
                    }
                    drop(stream);
                    continue;
                }
                if stream.set_nonblocking(false).is_err()
                    || stream.set_read_timeout(Some(IDLE)).is_err()
                    || stream.set_write_timeout(Some(IDLE)).is_err()
                {
                    continue;
                }
                active.fetch_add(1, Ordering::AcqRel);
                let guard = Active(Arc::clone(&active));
                let stop = Arc::clone(&stop);
                let spawned =
                    std::thread::Builder::new()
                        .name("mount-tcp".into())
                        .spawn(move || {
                            let _guard = guard;
                            serve_stream(stream, peer, ports, &stop);
                        });
                if let Err(e) = spawned {
                    // The closure (stream and guard) was dropped: connection closed, slot freed.
                    eprintln!("rig serve: mount-tcp {peer}: cannot start a thread ({e}); closed");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // Nothing pending: check the stop flag a few times a second.
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionAborted
                ) => {}
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS...: wait for resources to come back.
                accept_errors += 1;
                if accept_errors.is_power_of_two() {
                    eprintln!("rig serve: mount-tcp: accept: {e} ({accept_errors} so far)");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    Ok(())
}

/// Counts a served connection until its thread ends (or is never started).
struct Active(Arc<AtomicUsize>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn serve_stream(mut stream: TcpStream, peer: SocketAddr, ports: Ports, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let message = match read_record(&mut stream) {
            Ok(message) => message,
            Err(RecordError::Io(_)) => return,
            Err(e) => {
                eprintln!("rig serve: mount-tcp {peer}: {e}; closing");
                return;
            }
        };
        if let Some(reply) = answer(&message, ports) {
            if write_record(&mut stream, &reply).is_err() {
                return;
            }
        }
    }
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
    write_record(&mut stream, &call).map_err(|e| format!("send MNT: {e}"))?;
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

    #[test]
    fn mount_over_tcp_round_trips_against_our_mount_service() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let ports = Ports {
            nfs: 20049,
            mount: addr.port(),
        };
        let server = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || serve(listener, ports, stop))
        };
        let handle = mount(addr, b"/export", Duration::from_secs(5)).unwrap();
        assert_eq!(handle, Fs::default().root_handle());
        let missing = mount(addr, b"/nope", Duration::from_secs(5)).unwrap_err();
        assert!(missing.contains("MNT failed"), "{missing}");
        stop.store(true, Ordering::Relaxed);
        server.join().unwrap().unwrap();
    }

    #[test]
    fn connections_beyond_the_limit_are_closed_and_their_slots_come_back() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let ports = Ports {
            nfs: 20049,
            mount: addr.port(),
        };
        let server = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || serve_bounded(listener, ports, stop, 2))
        };
        // Two idle connections hold both slots (each proven served by a round trip).
        let hold: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let call = CallHeader::new(1, PORTMAP_PROGRAM, PMAP_V2, 0).to_bytes();
                write_record(&mut s, &call).unwrap();
                read_record(&mut s).unwrap();
                s
            })
            .collect();
        // A third is closed by the server: it reads end of file. Only Ok(0) is the close; a
        // read that times out (a server that kept the connection open and idle) or returns
        // bytes is a failure, so the check cannot pass without the server closing.
        let mut third = TcpStream::connect(addr).unwrap();
        third
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut byte = [0u8; 1];
        match third.read(&mut byte) {
            Ok(0) => {}
            Ok(n) => panic!("the third connection was served ({n} bytes), not closed"),
            Err(e) => panic!("the third connection was not closed within 10 s: {e}"),
        }
        // Once the two go, a new connection is served again.
        drop(hold);
        let served = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            mount(addr, b"/export", Duration::from_secs(5)).is_ok()
        });
        assert!(served);
        stop.store(true, Ordering::Relaxed);
        server.join().unwrap().unwrap();
    }

    #[test]
    fn records_over_the_limit_are_refused_before_allocation() {
        let mut huge: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_record(&mut huge),
            Err(RecordError::TooLarge { len: 0x7fff_ffff })
        ));
        // Two fragments reassemble into one record.
        let mut two: &[u8] = &[0, 0, 0, 2, b'a', b'b', 0x80, 0, 0, 1, b'c'];
        assert_eq!(read_record(&mut two).unwrap(), b"abc");
        let mut out = Vec::new();
        write_record(&mut out, b"xyz").unwrap();
        assert_eq!(out, [0x80, 0, 0, 3, b'x', b'y', b'z']);
    }

    #[test]
    fn portmap_getport_names_our_ports() {
        let mut call = CallHeader::new(9, PORTMAP_PROGRAM, PMAP_V2, PMAPPROC_GETPORT).to_bytes();
        for v in [MOUNT_PROGRAM, MOUNT_V3, IPPROTO_TCP, 0] {
            call.extend_from_slice(&v.to_be_bytes());
        }
        let reply = answer(
            &call,
            Ports {
                nfs: 20049,
                mount: 20048,
            },
        )
        .unwrap();
        assert_eq!(&reply[reply.len() - 4..], &20048u32.to_be_bytes());
        assert_eq!(answer(b"junk", Ports { nfs: 1, mount: 2 }), None);
    }
}
