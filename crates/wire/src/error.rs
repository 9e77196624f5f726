//! Typed decode errors: every variant carries the offending value and names the rule it broke.
//!
//! Modelled on rustls' `InvalidMessage`: the enum is `#[non_exhaustive]`, each variant keeps the bad
//! value (never just "invalid"), and [`DecodeError::rule`] names the RFC section that the input
//! violated, so a report can say *why* bytes were rejected, not only *that* they were.

use std::fmt;

/// Result alias used by every decoder in this crate.
pub type Result<T> = std::result::Result<T, DecodeError>;

/// Why a decoder rejected its input.
///
/// `field` is a static, human-readable path of what was being decoded (e.g. `"read_list.position"`),
/// `rule` a citation such as `"RFC 8166 §4.2.1"`.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended before `field` was complete.
    Truncated {
        field: &'static str,
        needed: usize,
        available: usize,
    },
    /// Bytes were left after a message that must consume its whole buffer.
    TrailingBytes { field: &'static str, count: usize },
    /// XDR padding bytes after variable-length data were not zero (RFC 4506 §4.9/§4.10).
    NonZeroPadding { field: &'static str },
    /// A length or count read from the wire exceeds the limit the decoder allows.
    LengthOverLimit {
        field: &'static str,
        length: u64,
        limit: u64,
        rule: &'static str,
    },
    /// A discriminant (enum or union arm, boolean) had a value outside its definition.
    BadDiscriminant {
        field: &'static str,
        value: u32,
        rule: &'static str,
    },
    /// A field carried a value the protocol forbids (misaligned position, XID mismatch, ...).
    BadValue {
        field: &'static str,
        value: u64,
        rule: &'static str,
    },
    /// An operation this decoder does not know the shape of (e.g. an NFSv4 COMPOUND operation
    /// outside the decoded set): decoding stops here rather than guess where the next item
    /// begins. The input may be valid; it is not understood.
    UndecodedOperation {
        field: &'static str,
        opnum: u32,
        rule: &'static str,
    },
    /// `rdma_vers` is not 1 (RFC 8166 §4.1.2): the one header error a Responder answers with
    /// ERR_VERS (§4.5.1).
    UnsupportedVersion { value: u32 },
    /// The body of an RDMA_ERROR did not decode (RFC 8166 §4.5); carries why. Never answered:
    /// an error must not provoke an error.
    MalformedErrorBody(Box<DecodeError>),
}

/// RFC 8166 §4.1.2: the version field of a version 1 header.
pub const RULE_VERS: &str = "RFC 8166 §4.1.2 (rdma_vers is 1)";

impl DecodeError {
    /// The rule (RFC section) the input broke.
    pub fn rule(&self) -> &'static str {
        match self {
            // XDR data is a sequence of 4-byte blocks; a short buffer cannot hold the item.
            DecodeError::Truncated { .. } => "RFC 4506 §3 (block size)",
            DecodeError::TrailingBytes { .. } => "RFC 4506 §3 (message length)",
            DecodeError::NonZeroPadding { .. } => "RFC 4506 §4.10 (residual bytes are zero)",
            DecodeError::LengthOverLimit { rule, .. }
            | DecodeError::BadDiscriminant { rule, .. }
            | DecodeError::BadValue { rule, .. }
            | DecodeError::UndecodedOperation { rule, .. } => rule,
            DecodeError::UnsupportedVersion { .. } => RULE_VERS,
            DecodeError::MalformedErrorBody(inner) => inner.rule(),
        }
    }

    /// The field being decoded when the error happened.
    pub fn field(&self) -> &'static str {
        match self {
            DecodeError::Truncated { field, .. }
            | DecodeError::TrailingBytes { field, .. }
            | DecodeError::NonZeroPadding { field }
            | DecodeError::LengthOverLimit { field, .. }
            | DecodeError::BadDiscriminant { field, .. }
            | DecodeError::BadValue { field, .. }
            | DecodeError::UndecodedOperation { field, .. } => field,
            DecodeError::UnsupportedVersion { .. } => "rdma_vers",
            DecodeError::MalformedErrorBody(inner) => inner.field(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated {
                field,
                needed,
                available,
            } => write!(
                f,
                "truncated at {field}: need {needed} bytes, {available} available"
            ),
            DecodeError::TrailingBytes { field, count } => {
                write!(f, "{count} trailing bytes after {field}")
            }
            DecodeError::NonZeroPadding { field } => {
                write!(f, "non-zero XDR padding after {field}")
            }
            DecodeError::LengthOverLimit {
                field,
                length,
                limit,
                ..
            } => write!(f, "{field} = {length} exceeds limit {limit}"),
            DecodeError::BadDiscriminant { field, value, .. } => {
                write!(f, "{field}: invalid discriminant {value}")
            }
            DecodeError::BadValue { field, value, .. } => {
                write!(f, "{field}: invalid value {value:#x}")
            }
            DecodeError::UndecodedOperation { field, opnum, .. } => {
                write!(f, "{field}: undecoded op {opnum}")
            }
            DecodeError::UnsupportedVersion { value } => {
                write!(f, "rdma_vers: invalid value {value:#x}")
            }
            // The inner error names its field and rule.
            DecodeError::MalformedErrorBody(inner) => return inner.fmt(f),
        }?;
        write!(f, " ({})", self.rule())
    }
}

impl std::error::Error for DecodeError {}
