//! The requester's chunk memory behind one trait: what a driver registers, with which access, and
//! what the requester writes into the header it encodes.
//!
//! The requester asks a [`Registrar`] for one registration per chunk buffer, with exactly the
//! remote access that chunk needs (a Read chunk: remote read only; a Write or Reply chunk: remote
//! write only, RFC 8166 §3.4), and puts the handle *and* address it gets back into the segment the
//! first time it encodes the header: no driver rewrites a header afterwards. When the transmission
//! ends it invalidates each registration and takes what the peer wrote from it.
//!
//! The simulator's registrar is [`MemoryTable`] (handles counted up from the table's first, every
//! address 0: offsets into the registered `Vec`); the verbs driver's registers real memory regions
//! (`rdma::memory`).

use crate::endpoint::{Access, MemoryTable};

/// A chunk buffer the requester offers the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkBuffer {
    /// A Read chunk: the peer RDMA Reads these bytes, and nothing else may reach them.
    Read(Vec<u8>),
    /// A Write or Reply chunk: the peer RDMA Writes at most this many bytes into zeroed memory.
    Write(u32),
}

impl ChunkBuffer {
    /// The least access the peer needs to it.
    pub fn access(&self) -> Access {
        match self {
            ChunkBuffer::Read(_) => Access::RemoteRead,
            ChunkBuffer::Write(_) => Access::RemoteWrite,
        }
    }

    /// Its length in bytes (a Read chunk longer than `u32::MAX` is cut, as the segment's length is).
    pub fn len(&self) -> u32 {
        match self {
            ChunkBuffer::Read(bytes) => bytes.len() as u32,
            ChunkBuffer::Write(capacity) => *capacity,
        }
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where the peer finds a registered buffer: the segment's handle (the rkey / STag), its offset
/// (the address the peer names) and its length (RFC 8166 §3.4.2, `rpcrdma1_segment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    pub handle: u32,
    pub address: u64,
    pub length: u32,
}

/// Why a buffer could not be registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// The driver (device, protection domain, memory) refused a registration of `length` bytes
    /// with `access`.
    Refused { access: Access, length: u32 },
    /// The driver handed out a handle that is still live (a registration it did not release).
    HandleInUse(u32),
}

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegisterError::Refused { access, length } => {
                write!(f, "registration of {length} bytes for {access:?} refused")
            }
            RegisterError::HandleInUse(handle) => write!(f, "handle {handle:#x} is still live"),
        }
    }
}

impl std::error::Error for RegisterError {}

/// Registers and invalidates the requester's chunk buffers.
pub trait Registrar {
    /// Register `buffer` with [`ChunkBuffer::access`] and nothing more.
    fn register(&mut self, buffer: ChunkBuffer) -> Result<Registration, RegisterError>;

    /// End the registration `handle`: the peer can no longer reach it. Returns what it holds (for
    /// a Write or Reply chunk, the bytes the peer wrote, as many as were registered; for a Read
    /// chunk the implementation may return no byte), or `None` for an unknown handle.
    fn invalidate(&mut self, handle: u32) -> Option<Vec<u8>>;

    /// Bytes currently registered.
    fn registered_bytes(&self) -> usize;
}

impl Registrar for MemoryTable {
    fn register(&mut self, buffer: ChunkBuffer) -> Result<Registration, RegisterError> {
        let access = buffer.access();
        let length = buffer.len();
        let bytes = match buffer {
            ChunkBuffer::Read(bytes) => bytes,
            ChunkBuffer::Write(capacity) => vec![0; capacity as usize],
        };
        let handle = MemoryTable::register(self, bytes, access);
        // The simulated peer names an offset into the registered bytes: they start at 0.
        Ok(Registration {
            handle,
            address: 0,
            length,
        })
    }

    fn invalidate(&mut self, handle: u32) -> Option<Vec<u8>> {
        MemoryTable::invalidate(self, handle)
    }

    fn registered_bytes(&self) -> usize {
        MemoryTable::registered_bytes(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::AccessError;

    #[test]
    fn the_table_registers_each_chunk_with_the_least_access_it_needs() {
        let mut table = MemoryTable::new(0x1000);
        let read = Registrar::register(&mut table, ChunkBuffer::Read(b"data".to_vec())).unwrap();
        let write = Registrar::register(&mut table, ChunkBuffer::Write(8)).unwrap();
        assert_eq!(
            (read, write),
            (
                Registration {
                    handle: 0x1000,
                    address: 0,
                    length: 4
                },
                Registration {
                    handle: 0x1001,
                    address: 0,
                    length: 8
                }
            )
        );
        // A Read chunk refuses a remote write, a Write chunk a remote read.
        assert_eq!(
            table.remote_write(read.handle, 0, b"x"),
            Err(AccessError::NotPermitted(read.handle))
        );
        assert_eq!(
            table.remote_read(write.handle, 0, 1),
            Err(AccessError::NotPermitted(write.handle))
        );
        assert_eq!(table.remote_read(read.handle, 0, 4).unwrap(), b"data");
        table.remote_write(write.handle, 0, b"abc").unwrap();
        assert_eq!(Registrar::registered_bytes(&table), 12);
        assert_eq!(
            Registrar::invalidate(&mut table, write.handle).unwrap(),
            b"abc\0\0\0\0\0"
        );
        assert_eq!(Registrar::invalidate(&mut table, write.handle), None);
    }
}
