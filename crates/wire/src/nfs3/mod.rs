//! NFS version 3 (RFC 1813): every procedure's arguments and results, plus the RFC 8267
//! upper-layer binding (which data items may be moved by RDMA chunks, i.e. are DDP-eligible).
//!
//! Architecture Invariant: a DDP-eligible item that travelled in a chunk is absent from the
//! inline XDR stream (RFC 8166 §3.4.1, "reduced" stream). Decoders take a [`Ddp`] mode so a
//! reduced READ reply or WRITE call decodes cleanly instead of looking truncated; such an item is
//! represented as [`DdpData::Moved`] carrying only its length.
//!
//! By concern: `codec` (the field codec and the macros the types are declared with), `types`
//! (handles, names, enums and attributes, the result union), `args` and `results` (per
//! procedure, RFC 1813 §3.3), `procedures` (a call's arguments and a reply's results by
//! procedure). Everything is re-exported here: callers name `wire::nfs3::X`.

use serde::{Serialize, Serializer};

pub use crate::ddp::{Ddp, DdpData};
use crate::error::{DecodeError, Result};
use crate::xdr::{Reader, Writer, Xdr};

mod args;
mod codec;
mod procedures;
mod results;
mod types;

pub use args::*;
pub use codec::serialize_bytes_as_text;
pub(crate) use codec::{
    bounded_bytes, serialize_hex, serialize_verifier, xdr_enum, xdr_struct, Wire,
};
pub use procedures::*;
pub use results::*;
pub use types::*;

/// NFS version this module implements.
pub const NFS_V3: u32 = 3;
/// RFC 1813 §2.4 (sizes) and §2.6 (nfs_fh3): `opaque data<NFS3_FHSIZE>`, NFS3_FHSIZE = 64.
pub const NFS3_FHSIZE: u32 = 64;
/// Decoder limit for `filename3` (RFC 1813 §2.5 leaves it unbounded; Linux uses 255).
pub const MAX_FILENAME: u32 = 1024;
/// Decoder limit for `nfspath3` (RFC 1813 §2.5 leaves it unbounded; Linux PATH_MAX is 4096).
pub const MAX_PATH: u32 = 4096;
/// Decoder limit for WRITE data and READ results (Linux nfsd's maximum payload is 1 MiB).
pub const MAX_DATA: u32 = 1 << 20;
/// Decoder limit on READDIR / READDIRPLUS entry lists.
pub const MAX_DIR_ENTRIES: usize = 65536;
