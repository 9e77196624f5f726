//! Waiting on a file descriptor with a deadline (poll(2)), so no verbs wait can hang forever.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use crate::error::{Result, VerbsError};

/// Block until `fd` is readable or `timeout` passes. The fd is always polled at least once, so a zero
/// timeout means "is it readable now?". EINTR restarts with the remaining time, so the loop is
/// bounded by the deadline.
pub(crate) fn wait_readable(fd: RawFd, timeout: Duration, what: &'static str) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        // Round a non-zero remainder up so a sub-millisecond rest still sleeps instead of spinning.
        let millis = if remaining.is_zero() {
            0
        } else {
            remaining
                .as_millis()
                .saturating_add(1)
                .min(i32::MAX as u128) as i32
        };
        let mut pollfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pollfd` is a valid, exclusively borrowed array of one element for the call.
        let ready = unsafe { libc::poll(&mut pollfd, 1, millis) };
        if ready > 0 {
            return Ok(());
        }
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(VerbsError::from_errno(
                    "poll",
                    error.raw_os_error().unwrap_or(0),
                ));
            }
        } else if remaining.is_zero() || Instant::now() >= deadline {
            return Err(VerbsError::Timeout {
                what,
                after: timeout,
            });
        }
    }
}

/// Most fds one [`wait_any_readable`] call watches (a driver's CM channel plus its connections).
pub const MAX_WAIT_FDS: usize = 1024;

/// Sleep until at least one of `fds` is readable or `timeout` passes (poll(2), no busy-waiting), and
/// say which are readable; all `false` on timeout. A driver puts its rdma_cm channel fd and every
/// completion channel fd ([`crate::Cq::channel_fd`]) in one call. EINTR returns early with nothing
/// readable, so a caller's signal flag (e.g. `rig serve`'s SIGUSR1) is seen at once.
pub fn wait_any_readable(fds: &[RawFd], timeout: Duration) -> Result<Vec<bool>> {
    if fds.len() > MAX_WAIT_FDS {
        return Err(VerbsError::OverLimit {
            what: "file descriptors in one wait",
            value: fds.len() as u64,
            limit: MAX_WAIT_FDS as u64,
        });
    }
    let mut pollfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // Round a sub-millisecond timeout up so it sleeps instead of spinning.
    let millis = if timeout.is_zero() {
        0
    } else {
        timeout.as_millis().saturating_add(1).min(i32::MAX as u128) as i32
    };
    // SAFETY: `pollfds` is a valid, exclusively borrowed array of `len` (<= MAX_WAIT_FDS) entries.
    let ready = unsafe { libc::poll(pollfds.as_mut_ptr(), pollfds.len() as libc::nfds_t, millis) };
    if ready < 0 {
        let error = std::io::Error::last_os_error();
        if error.kind() == std::io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(VerbsError::from_errno(
            "poll",
            error.raw_os_error().unwrap_or(0),
        ));
    }
    // POLLERR/POLLHUP count as readable: the owner's next read reports the problem.
    Ok(pollfds
        .iter()
        .map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn wait_any_reports_which_fds_are_readable() {
        let (mut writer_a, reader_a) = UnixStream::pair().unwrap();
        let (_writer_b, reader_b) = UnixStream::pair().unwrap();
        let fds = [reader_a.as_raw_fd(), reader_b.as_raw_fd()];
        assert_eq!(
            wait_any_readable(&fds, Duration::from_millis(10)).unwrap(),
            vec![false, false]
        );
        writer_a.write_all(b"x").unwrap();
        assert_eq!(
            wait_any_readable(&fds, Duration::from_secs(5)).unwrap(),
            vec![true, false]
        );
        assert!(wait_any_readable(&vec![0; MAX_WAIT_FDS + 1], Duration::ZERO).is_err());
    }

    #[test]
    fn readable_fd_returns_at_once_and_idle_fd_times_out() {
        let (mut writer, reader) = UnixStream::pair().unwrap();
        let idle = wait_readable(reader.as_raw_fd(), Duration::from_millis(20), "test event");
        assert_eq!(
            idle,
            Err(VerbsError::Timeout {
                what: "test event",
                after: Duration::from_millis(20)
            })
        );
        assert!(wait_readable(reader.as_raw_fd(), Duration::ZERO, "test event").is_err());
        writer.write_all(b"x").unwrap();
        // A zero timeout still reports an fd that is already readable.
        assert_eq!(
            wait_readable(reader.as_raw_fd(), Duration::ZERO, "test event"),
            Ok(())
        );
        assert_eq!(
            wait_readable(reader.as_raw_fd(), Duration::from_secs(5), "test event"),
            Ok(())
        );
    }
}
