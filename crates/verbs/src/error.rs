//! Typed errors for every verb: which call failed and the errno text, with "no RDMA here" singled out.

use std::fmt;
use std::time::Duration;

/// What to tell a user who runs verbs code on a machine without RDMA (the CI host, a laptop).
pub const NO_DEVICE_HINT: &str =
    "no RDMA device: load rdma_rxe and `rdma link add` (run inside the interop guests)";

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, VerbsError>;

/// Why a verbs or rdma_cm call failed.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerbsError {
    /// The machine has no usable RDMA device (no device list, or ENODEV/ENOSYS from the kernel).
    #[error("{verb}: {NO_DEVICE_HINT} ({})", Errno(*.errno))]
    NoDevice { verb: &'static str, errno: i32 },
    /// A call failed with an errno.
    #[error("{verb}: {}", Errno(*.errno))]
    Os { verb: &'static str, errno: i32 },
    /// A wait (CM event, completion) did not finish in time.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: &'static str, after: Duration },
    /// The CM reported an event other than the one the caller waited for.
    #[error("expected CM event {expected}, got {got} (status {status})")]
    UnexpectedCmEvent {
        expected: &'static str,
        got: &'static str,
        status: i32,
    },
    /// A caller-supplied argument is out of range (length over a limit, slice out of bounds).
    #[error("{what}: {value} exceeds the limit {limit}")]
    OverLimit {
        what: &'static str,
        value: u64,
        limit: u64,
    },
    /// An operation needs state the object does not have yet (e.g. posting before a QP exists).
    #[error("{0}")]
    InvalidState(&'static str),
}

impl VerbsError {
    /// Classify a failed call: the errnos a machine without RDMA produces become [`VerbsError::NoDevice`].
    pub fn from_errno(verb: &'static str, errno: i32) -> Self {
        // ENODEV: librdmacm found no device; ENOSYS: kernel without RDMA support;
        // ENOENT: /dev/infiniband/* does not exist (no rdma_ucm/ib_uverbs module).
        if errno == libc::ENODEV || errno == libc::ENOSYS || errno == libc::ENOENT {
            VerbsError::NoDevice { verb, errno }
        } else {
            VerbsError::Os { verb, errno }
        }
    }

    /// The errno left by a C call that returned -1 or NULL.
    pub fn last_os_error(verb: &'static str) -> Self {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        Self::from_errno(verb, errno)
    }

    /// Whether this error means "there is no RDMA on this machine" (callers skip gated work).
    pub fn is_no_device(&self) -> bool {
        matches!(self, VerbsError::NoDevice { .. })
    }

    /// Whether `rdma_connect` found its local port in use, which a fresh CM id (another port)
    /// gets past: over iWARP each connection is a TCP connection whose port the RDMA CM picks
    /// without seeing TCP's TIME_WAIT sockets. Seen on the siw lanes by the wire fuzzer
    /// (linux-6.1-siw) and the scenarios client (linux-7.x-siw, selftest `acked.after-ack`).
    /// Callers connect again up to [`CONNECT_ATTEMPTS_PORT_IN_USE`] times.
    pub fn is_connect_port_in_use(&self) -> bool {
        matches!(
            self,
            VerbsError::Os {
                verb: "rdma_connect",
                errno: libc::EADDRINUSE,
            }
        )
    }
}

/// Connects a caller tries, each with a fresh CM id, while
/// [`VerbsError::is_connect_port_in_use`] holds.
pub const CONNECT_ATTEMPTS_PORT_IN_USE: usize = 8;

/// Formats an errno as `strerror text (errno N)`.
struct Errno(i32);

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = std::io::Error::from_raw_os_error(self.0);
        // io::Error's Display already appends "(os error N)"; keep only the text part.
        let text = text.to_string();
        let text = text.split(" (os error").next().unwrap_or("");
        write!(f, "{text} (errno {})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rdma_connect_finding_its_port_in_use_is_worth_a_fresh_id() {
        let in_use = VerbsError::from_errno("rdma_connect", libc::EADDRINUSE);
        assert!(in_use.is_connect_port_in_use());
        assert!(in_use.to_string().starts_with("rdma_connect: "));
        for other in [
            VerbsError::from_errno("rdma_bind_addr", libc::EADDRINUSE),
            VerbsError::from_errno("rdma_connect", libc::ECONNREFUSED),
        ] {
            assert!(!other.is_connect_port_in_use(), "{other}");
        }
    }

    #[test]
    fn no_rdma_errnos_map_to_no_device_with_the_hint() {
        for errno in [libc::ENODEV, libc::ENOSYS, libc::ENOENT] {
            let error = VerbsError::from_errno("rdma_create_event_channel", errno);
            assert!(error.is_no_device(), "{errno}");
            let text = error.to_string();
            assert!(text.starts_with("rdma_create_event_channel: no RDMA device: load rdma_rxe"));
            assert!(text.ends_with(&format!("(errno {errno}))")), "{text}");
        }
    }

    #[test]
    fn other_errnos_name_the_verb_and_the_errno_text() {
        let error = VerbsError::from_errno("ibv_reg_mr", libc::ENOMEM);
        assert!(!error.is_no_device());
        assert_eq!(
            error.to_string(),
            format!(
                "ibv_reg_mr: Cannot allocate memory (errno {})",
                libc::ENOMEM
            )
        );
    }

    #[test]
    fn timeout_and_limit_errors_say_what_and_how_much() {
        let timeout = VerbsError::Timeout {
            what: "RDMA_CM_EVENT_ESTABLISHED",
            after: Duration::from_millis(1500),
        };
        assert_eq!(
            timeout.to_string(),
            "timed out after 1.5s waiting for RDMA_CM_EVENT_ESTABLISHED"
        );
        let over = VerbsError::OverLimit {
            what: "connect private data",
            value: 57,
            limit: 56,
        };
        assert_eq!(
            over.to_string(),
            "connect private data: 57 exceeds the limit 56"
        );
    }
}
