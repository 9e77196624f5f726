//! The verbs-shaped boundary between a sans-IO endpoint and whatever drives it (simulator or hardware).
//!
//! An endpoint never performs I/O: it emits [`WorkRequest`]s (what ibverbs would post) and consumes
//! [`Event`]s (what a completion queue or the CM would report). Registered memory is modelled by
//! [`MemoryTable`], which the driver reads and writes on behalf of the *remote* peer's RDMA Read and
//! Write, checking handle, bounds and access rights exactly as an HCA does.
//!
//! A driver sees an endpoint through up to three traits, each asked for only where it is used:
//! [`Endpoint`] (the transport: events and work requests), [`RemoteMemory`] (what the peer's
//! RDMA Read and Write reach, for a driver that serves them itself) and [`UpperLayer`] (work
//! above the transport that the driver schedules, implemented by the server).
//!
//! Architecture Invariant: [`Endpoint`] has no upper-layer method; a transport endpoint never
//! implements [`UpperLayer`].
//!
//! Architecture Invariant: nothing in this module allocates more than a caller-checked length, and a
//! remote access never panics: every violation is a typed [`AccessError`].

use std::collections::BTreeMap;

use serde::Serialize;

/// Identifies one posted work request; completions carry it back.
pub type WrId = u64;

/// What an endpoint asks its driver to post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkRequest {
    /// Post a Receive buffer of `capacity` bytes on the Receive Queue.
    PostRecv { wr_id: WrId, capacity: usize },
    /// Post a Send carrying `payload` (transport header + inline RPC message).
    PostSend { wr_id: WrId, payload: Vec<u8> },
    /// Pull `length` bytes from the peer's registered memory `handle` at `offset` (RDMA Read).
    RdmaRead {
        wr_id: WrId,
        handle: u32,
        offset: u64,
        length: u32,
    },
    /// Push `data` into the peer's registered memory `handle` at `offset` (RDMA Write).
    RdmaWrite {
        wr_id: WrId,
        handle: u32,
        offset: u64,
        data: Vec<u8>,
    },
    /// Tear the connection down (rdma_disconnect).
    Disconnect,
}

/// Why a work request completed in error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CompletionError {
    /// The connection broke; outstanding work is flushed.
    Flushed,
    /// The peer had no Receive posted and the RNR retry count ran out.
    RnrRetryExceeded,
    /// An RDMA Read/Write named an unknown handle, went out of bounds or lacked the access right.
    RemoteAccess,
    /// An incoming Send was larger than the Receive buffer it landed in.
    LocalLength,
}

/// What a driver reports to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The connection is established (the CM's ESTABLISHED event), with the private data the
    /// peer sent in its CM REQ/REP, if any (RFC 8797).
    Connected { peer_private_data: Option<Vec<u8>> },
    /// A Receive completed: a Send from the peer landed in this buffer.
    RecvCompleted { wr_id: WrId, payload: Vec<u8> },
    /// A Send completed: the peer's HCA acknowledged it, so it is in the peer's Receive buffer.
    SendCompleted { wr_id: WrId },
    /// An RDMA Read completed with the pulled bytes.
    ReadCompleted { wr_id: WrId, data: Vec<u8> },
    /// An RDMA Write completed.
    WriteCompleted { wr_id: WrId },
    /// A work request completed in error.
    WorkFailed { wr_id: WrId, error: CompletionError },
    /// The connection is gone (DISCONNECTED); everything posted has been flushed.
    ConnectionLost,
}

/// Which remote operations a registered region admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The peer may RDMA Read it (Read chunks).
    RemoteRead,
    /// The peer may RDMA Write it (Write and Reply chunks).
    RemoteWrite,
}

/// Why a remote access to a [`MemoryTable`] was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessError {
    UnknownHandle(u32),
    OutOfBounds {
        handle: u32,
        offset: u64,
        length: u64,
    },
    NotPermitted(u32),
}

#[derive(Debug, Clone)]
struct Region {
    bytes: Vec<u8>,
    access: Access,
}

/// An endpoint's registered memory regions, keyed by handle (the STag / rkey).
#[derive(Debug, Clone, Default)]
pub struct MemoryTable {
    regions: BTreeMap<u32, Region>,
    next_handle: u32,
}

impl MemoryTable {
    /// An empty table whose handles start at `first_handle` (distinct per endpoint so that a
    /// handle from the wrong side is caught as unknown).
    pub fn new(first_handle: u32) -> Self {
        MemoryTable {
            regions: BTreeMap::new(),
            next_handle: first_handle,
        }
    }

    /// Register `bytes`; returns the new handle.
    pub fn register(&mut self, bytes: Vec<u8>, access: Access) -> u32 {
        let handle = self.next_handle;
        // Handles are never reused within a table, so a stale handle is always caught as unknown.
        self.next_handle = self.next_handle.wrapping_add(1);
        self.regions.insert(handle, Region { bytes, access });
        handle
    }

    /// Invalidate `handle`, returning its contents (the requester reads Write/Reply chunk data).
    pub fn invalidate(&mut self, handle: u32) -> Option<Vec<u8>> {
        self.regions.remove(&handle).map(|r| r.bytes)
    }

    /// Number of live registrations.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether no region is registered.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Total registered bytes.
    pub fn registered_bytes(&self) -> usize {
        self.regions.values().map(|r| r.bytes.len()).sum()
    }

    fn checked_range(
        &self,
        handle: u32,
        offset: u64,
        length: u64,
        need: Access,
    ) -> Result<(usize, usize), AccessError> {
        let region = self
            .regions
            .get(&handle)
            .ok_or(AccessError::UnknownHandle(handle))?;
        if region.access != need {
            return Err(AccessError::NotPermitted(handle));
        }
        let end = offset.checked_add(length);
        match end {
            Some(end) if end <= region.bytes.len() as u64 => Ok((offset as usize, end as usize)),
            _ => Err(AccessError::OutOfBounds {
                handle,
                offset,
                length,
            }),
        }
    }

    /// Serve a peer's RDMA Read.
    pub fn remote_read(
        &self,
        handle: u32,
        offset: u64,
        length: u32,
    ) -> Result<Vec<u8>, AccessError> {
        let (start, end) = self.checked_range(handle, offset, length.into(), Access::RemoteRead)?;
        Ok(self.regions[&handle].bytes[start..end].to_vec())
    }

    /// Serve a peer's RDMA Write.
    pub fn remote_write(
        &mut self,
        handle: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), AccessError> {
        let (start, end) =
            self.checked_range(handle, offset, data.len() as u64, Access::RemoteWrite)?;
        if let Some(region) = self.regions.get_mut(&handle) {
            region.bytes[start..end].copy_from_slice(data);
        }
        Ok(())
    }
}

/// A sans-IO endpoint as a transport driver sees it: events in, work requests out, and the CM
/// private data it offers. Nothing here runs or reports work above the transport: that is
/// [`UpperLayer`], which a driver schedules separately.
pub trait Endpoint {
    /// Feed one completion or CM event.
    fn handle_event(&mut self, event: Event);
    /// Next work request to post, if any.
    fn poll_work(&mut self) -> Option<WorkRequest>;
    /// The CM private data this endpoint sends when connecting (RFC 8797), if any.
    fn private_data(&self) -> Option<Vec<u8>> {
        None
    }
}

/// The registered memory a peer reaches by RDMA Read and Write. Only a driver that carries out
/// the peer's Reads and Writes itself (the simulator, standing in for the peer's HCA) needs it;
/// over real verbs the HCA serves them from memory registered with the device.
pub trait RemoteMemory {
    /// The endpoint's registered memory, for the driver to serve the peer's RDMA Read/Write.
    fn memory(&mut self) -> &mut MemoryTable;
}

/// Work above the transport (nfsd threads executing requests), run when the driver schedules
/// it rather than inside an event: a driver interleaves these steps with transport events (the
/// simulator as one of its scheduled actions, `rig serve` between polls). Implemented by a
/// server, never by a transport endpoint.
pub trait UpperLayer {
    /// Run one unit of upper-layer work. Returns whether there was any.
    fn run_upper_layer(&mut self) -> bool;
    /// Whether [`UpperLayer::run_upper_layer`] would do something.
    fn has_upper_layer_work(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_access_checks_handle_bounds_and_rights() {
        let mut table = MemoryTable::new(0x100);
        let readable = table.register(vec![1, 2, 3, 4], Access::RemoteRead);
        let writable = table.register(vec![0; 4], Access::RemoteWrite);
        assert_eq!(table.remote_read(readable, 1, 2).unwrap(), vec![2, 3]);
        assert_eq!(
            table.remote_read(readable, 3, 2),
            Err(AccessError::OutOfBounds {
                handle: readable,
                offset: 3,
                length: 2
            })
        );
        assert_eq!(
            table.remote_read(readable, u64::MAX, 2),
            Err(AccessError::OutOfBounds {
                handle: readable,
                offset: u64::MAX,
                length: 2
            })
        );
        assert_eq!(
            table.remote_read(writable, 0, 1),
            Err(AccessError::NotPermitted(writable))
        );
        table.remote_write(writable, 2, &[9, 9]).unwrap();
        assert_eq!(table.invalidate(writable).unwrap(), vec![0, 0, 9, 9]);
        assert_eq!(
            table.remote_write(writable, 0, &[1]),
            Err(AccessError::UnknownHandle(writable))
        );
    }
}
