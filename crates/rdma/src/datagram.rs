//! One request, one answer over UDP: how a case talks to the rig's relay and to the server's
//! execution hold. Requests are idempotent on both, so a lost request or answer is sent again.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// How long a peer has to answer one send (a UDP round trip from a TCG guest).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// Sends per request.
pub const ATTEMPTS: u32 = 3;

/// Send `request` to `peer` and wait for its answer in `buf`: up to [`ATTEMPTS`] sends, each
/// waiting [`ANSWER_WITHIN`]; datagrams from anyone else are ignored. Returns the answer's length,
/// or `None` when nothing answered (a closed port, ICMP unreachable, counts as no answer).
pub fn exchange(
    socket: &UdpSocket,
    peer: SocketAddr,
    request: &[u8],
    buf: &mut [u8],
) -> io::Result<Option<usize>> {
    for _ in 0..ATTEMPTS {
        socket.send_to(request, peer)?;
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            socket.set_read_timeout(Some(left))?;
            match socket.recv_from(buf) {
                Ok((len, from)) if from == peer => return Ok(Some(len)),
                // Not the peer (nothing else should write here): keep waiting.
                Ok(_) => continue,
                Err(e) if timed_out(&e) => break,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }
    Ok(None)
}

/// Whether a socket read with a timeout ended by the timeout (`WouldBlock` or `TimedOut`, as the
/// platform reports it), not by an error.
pub fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peers_answer_is_returned_and_a_closed_port_is_no_answer() {
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let case = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer_addr = peer.local_addr().unwrap();
        let answerer = std::thread::spawn(move || {
            let mut buf = [0u8; 16];
            let (n, from) = peer.recv_from(&mut buf).unwrap();
            peer.send_to(&buf[..n].repeat(2), from).unwrap();
        });
        let mut buf = [0u8; 16];
        let len = exchange(&case, peer_addr, b"ab", &mut buf).unwrap();
        answerer.join().unwrap();
        assert_eq!(len.map(|n| &buf[..n]), Some(&b"abab"[..]));
        // The peer's socket is gone: its port answers ICMP unreachable.
        assert_eq!(exchange(&case, peer_addr, b"ab", &mut buf).unwrap(), None);
    }
}
