//! Wire codecs for rpcrdma-rig: XDR, RPC-over-RDMA v1, RFC 8797 private data, ONC RPC v2, NFSv3,
//! the Read chunk position rule ([`ddp`]) and the NFS client layer every requester shares
//! ([`nfs_client`]).
//!
//! Architecture Invariant: this crate does no I/O, reads no clock and contains no `unsafe`.
//! Every decoder takes untrusted bytes and returns a typed [`DecodeError`] naming the RFC rule the
//! input broke; nothing here panics on any input (fuzzed in `fuzz/`).
#![forbid(unsafe_code)]

pub mod ddp;
pub mod error;
pub mod hex;
pub mod message;
pub mod mount3;
pub mod nfs3;
pub mod nfs4;
pub mod nfs_client;
pub mod nfsacl;
pub mod private_data;
pub mod raw;
pub mod record;
pub mod rpc;
pub mod rpcrdma;
pub mod skeleton;
pub mod svcrdma;
pub mod xdr;

pub use error::{DecodeError, Result};
pub use xdr::{Reader, Writer, Xdr};
