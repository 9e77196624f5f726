//! The requester's chunk memory on a device: each chunk buffer a memory region of its own,
//! registered with the least remote access its chunk needs (a Read chunk remote read only, a Write
//! or Reply chunk remote write only), whose rkey and address the engine writes into the header it
//! encodes. Invalidating a Write or Reply chunk reads what the peer RDMA-wrote straight from its
//! region, then drops the region (deregistering it).
//!
//! Architecture Invariant: generic over where regions come from ([`RegionSource`], a `verbs::Pd`
//! on a device), so the bookkeeping is tested without one; nothing here reads a region past the
//! length it registered.

use std::collections::BTreeMap;

use engine::endpoint::Access;
use engine::memory::{ChunkBuffer, RegisterError, Registrar, Registration};
use verbs::{Mr, Pd, RemoteAccess, VerbsError};

/// Registers chunk regions (a protection domain).
pub trait RegionSource {
    type Region: ChunkRegion;
    /// A zeroed region of `len` (> 0) bytes the peer may reach only by `access`.
    fn register(&self, len: usize, access: RemoteAccess) -> Result<Self::Region, VerbsError>;
}

/// A registered region, as far as chunk bookkeeping needs it.
pub trait ChunkRegion {
    fn rkey(&self) -> u32;
    /// The address the peer names in its RDMA Read/Write.
    fn addr(&self) -> u64;
    /// Copy `bytes` in at offset 0 (before the segment is advertised).
    fn write(&self, bytes: &[u8]) -> Result<(), VerbsError>;
    /// The first `len` bytes (after the reply that follows the peer's RDMA Writes arrived).
    fn read(&self, len: usize) -> Result<Vec<u8>, VerbsError>;
}

impl RegionSource for Pd {
    type Region = Mr;

    fn register(&self, len: usize, access: RemoteAccess) -> Result<Mr, VerbsError> {
        self.register_remote(len, access)
    }
}

impl ChunkRegion for Mr {
    fn rkey(&self) -> u32 {
        Mr::rkey(self)
    }

    fn addr(&self) -> u64 {
        Mr::addr(self)
    }

    fn write(&self, bytes: &[u8]) -> Result<(), VerbsError> {
        Mr::write(self, 0, bytes)
    }

    fn read(&self, len: usize) -> Result<Vec<u8>, VerbsError> {
        self.to_vec(0, len)
    }
}

/// One live registration.
struct Live<R> {
    region: R,
    access: Access,
    length: u32,
}

/// The requester's chunk registrations on the current connection's protection domain.
pub struct DeviceMemory<P: RegionSource = Pd> {
    source: Option<P>,
    live: BTreeMap<u32, Live<P::Region>>,
    bytes: usize,
}

impl<P: RegionSource> Default for DeviceMemory<P> {
    fn default() -> Self {
        DeviceMemory {
            source: None,
            live: BTreeMap::new(),
            bytes: 0,
        }
    }
}

impl<P: RegionSource> std::fmt::Debug for DeviceMemory<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMemory")
            .field("attached", &self.source.is_some())
            .field("live", &self.live.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl<P: RegionSource> DeviceMemory<P> {
    /// Register from now on in `source` (the connection's protection domain).
    pub fn attach(&mut self, source: P) {
        self.source = Some(source);
    }

    /// The connection is gone: register nothing more until the next [`DeviceMemory::attach`].
    /// (The engine invalidated every registration when it saw the connection go.)
    pub fn detach(&mut self) {
        self.source = None;
    }

    /// Live registrations.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

fn remote_access(access: Access) -> RemoteAccess {
    match access {
        Access::RemoteRead => RemoteAccess::Read,
        Access::RemoteWrite => RemoteAccess::Write,
    }
}

impl<P: RegionSource> Registrar for DeviceMemory<P> {
    fn register(&mut self, buffer: ChunkBuffer) -> Result<Registration, RegisterError> {
        let access = buffer.access();
        let length = buffer.len();
        let refused = |_| RegisterError::Refused { access, length };
        let source = self
            .source
            .as_ref()
            .ok_or(RegisterError::Refused { access, length })?;
        // A memory region is at least one byte long; an empty chunk still gets a handle.
        let region = source
            .register((length as usize).max(1), remote_access(access))
            .map_err(refused)?;
        if let ChunkBuffer::Read(bytes) = &buffer {
            region.write(bytes).map_err(refused)?;
        }
        let handle = region.rkey();
        if self.live.contains_key(&handle) {
            return Err(RegisterError::HandleInUse(handle));
        }
        let address = region.addr();
        self.live.insert(
            handle,
            Live {
                region,
                access,
                length,
            },
        );
        self.bytes += length as usize;
        Ok(Registration {
            handle,
            address,
            length,
        })
    }

    fn invalidate(&mut self, handle: u32) -> Option<Vec<u8>> {
        let live = self.live.remove(&handle)?;
        self.bytes -= live.length as usize;
        Some(match live.access {
            // What the peer wrote; never more than was registered, whatever its reply claims.
            Access::RemoteWrite => live.region.read(live.length as usize).unwrap_or_default(),
            // The requester keeps nothing of a Read chunk.
            Access::RemoteRead => Vec::new(),
        })
        // `live.region` drops here: the last reference deregisters it.
    }

    fn registered_bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use engine::endpoint::{Event, WorkRequest};
    use engine::{ConnectionConfig, OutgoingCall, ReplyPath, Requester, RequesterOutput};
    use wire::rpcrdma::{Body, ChunkLists, Header, Segment, RPCRDMA_VERSION};
    use wire::Xdr;

    /// A region: its bytes (shared with the peer's view) and whether it is still registered.
    struct FakeMr {
        bytes: Rc<RefCell<Vec<u8>>>,
        rkey: u32,
        live: Rc<Cell<bool>>,
    }

    impl Drop for FakeMr {
        fn drop(&mut self) {
            // Not Clone: dropping it is the deregistration.
            self.live.set(false);
        }
    }

    impl ChunkRegion for FakeMr {
        fn rkey(&self) -> u32 {
            self.rkey
        }
        fn addr(&self) -> u64 {
            0x7f00_0000_0000 + u64::from(self.rkey)
        }
        fn write(&self, bytes: &[u8]) -> Result<(), VerbsError> {
            self.bytes.borrow_mut()[..bytes.len()].copy_from_slice(bytes);
            Ok(())
        }
        fn read(&self, len: usize) -> Result<Vec<u8>, VerbsError> {
            Ok(self.bytes.borrow()[..len].to_vec())
        }
    }

    /// What the peer sees of a region.
    #[derive(Clone)]
    struct PeerView {
        bytes: Rc<RefCell<Vec<u8>>>,
        access: RemoteAccess,
        rkey: u32,
        live: Rc<Cell<bool>>,
    }

    /// A fake protection domain that keeps the peer's view of every region it made, and refuses
    /// every registration once it made `refuse_from` of them.
    #[derive(Clone, Default)]
    struct FakePd {
        made: Rc<RefCell<Vec<PeerView>>>,
        refuse_from: Option<usize>,
    }

    impl FakePd {
        fn region(&self, rkey: u32) -> PeerView {
            let made = self.made.borrow();
            made.iter()
                .find(|view| view.rkey == rkey)
                .cloned()
                .expect("registered")
        }
    }

    impl RegionSource for FakePd {
        type Region = FakeMr;
        fn register(&self, len: usize, access: RemoteAccess) -> Result<FakeMr, VerbsError> {
            let made = self.made.borrow().len();
            if self.refuse_from.is_some_and(|n| made >= n) {
                return Err(VerbsError::NoDevice {
                    verb: "ibv_reg_mr",
                    errno: 12, // ENOMEM
                });
            }
            let view = PeerView {
                bytes: Rc::new(RefCell::new(vec![0; len])),
                access,
                rkey: 0x100 * (made as u32 + 1),
                live: Rc::new(Cell::new(true)),
            };
            self.made.borrow_mut().push(view.clone());
            Ok(FakeMr {
                bytes: view.bytes,
                rkey: view.rkey,
                live: view.live,
            })
        }
    }

    fn header(body: Body) -> Vec<u8> {
        Header {
            xid: 7,
            vers: RPCRDMA_VERSION,
            credits: 8,
            body,
        }
        .to_bytes()
    }

    fn sent(req: &mut Requester<DeviceMemory<FakePd>>) -> Vec<u8> {
        loop {
            match req.poll_work() {
                Some(WorkRequest::PostSend { payload, .. }) => return payload,
                Some(_) => {}
                None => panic!("no Send posted"),
            }
        }
    }

    fn connected(pd: &FakePd) -> Requester<DeviceMemory<FakePd>> {
        let mut memory = DeviceMemory::default();
        memory.attach(pd.clone());
        let mut req = Requester::with_memory(ConnectionConfig::default(), memory);
        req.handle_event(Event::Connected {
            peer_private_data: None,
        });
        req
    }

    #[test]
    fn real_rkeys_and_addresses_go_into_the_header_with_the_least_access() {
        let pd = FakePd::default();
        let mut req = connected(&pd);
        let call = OutgoingCall {
            write_chunk_capacity: Some(16),
            reply_chunk_capacity: Some(8),
            ..OutgoingCall::moving_argument(7, b"rpc!".to_vec(), b"DDP-data".to_vec())
        };
        req.call(call, true).unwrap();
        let payload = sent(&mut req);
        let (header, consumed) = Header::decode_prefix(&payload).unwrap();
        let chunks = header.chunks().unwrap();
        assert_eq!(
            chunks.reads[0].target,
            Segment {
                handle: 0x100,
                length: 8,
                offset: 0x7f00_0000_0100
            }
        );
        assert_eq!(
            chunks.writes[0][0],
            Segment {
                handle: 0x200,
                length: 16,
                offset: 0x7f00_0000_0200
            }
        );
        assert_eq!(
            chunks.reply.as_ref().unwrap()[0],
            Segment {
                handle: 0x300,
                length: 8,
                offset: 0x7f00_0000_0300
            }
        );
        assert_eq!(&payload[consumed..], b"rpc!");
        // The Read chunk's region holds the data and is remote-read only; the others remote-write.
        let read = pd.region(0x100);
        assert_eq!(read.bytes.borrow().as_slice(), b"DDP-data");
        assert_eq!(read.access, RemoteAccess::Read);
        assert_eq!(pd.region(0x200).access, RemoteAccess::Write);
        assert_eq!(pd.region(0x300).access, RemoteAccess::Write);
        assert_eq!(req.memory_mut().len(), 3);
        assert_eq!(req.registered_bytes(), 32);
    }

    #[test]
    fn a_reply_reads_what_the_peer_wrote_from_the_region_and_deregisters_everything() {
        let pd = FakePd::default();
        let mut req = connected(&pd);
        let call = OutgoingCall {
            write_chunk_capacity: Some(16),
            ..OutgoingCall::moving_argument(7, b"rpc!".to_vec(), b"DDP-data".to_vec())
        };
        req.call(call, true).unwrap();
        sent(&mut req);
        // The peer writes 5 bytes into the Write chunk and replies naming our rkey and address,
        // claiming more than we registered: never read past the region.
        pd.region(0x200).bytes.borrow_mut()[..5].copy_from_slice(b"hello");
        let mut reply = header(Body::Msg(ChunkLists {
            reads: Vec::new(),
            writes: vec![vec![Segment {
                handle: 0x200,
                length: 5,
                offset: 0x7f00_0000_0200,
            }]],
            reply: None,
        }));
        reply.extend_from_slice(b"reply");
        req.handle_event(Event::RecvCompleted {
            wr_id: 1,
            payload: reply,
        });
        let reply = loop {
            match req.poll_output() {
                Some(RequesterOutput::Reply(reply)) => break reply,
                Some(_) => {}
                None => panic!("no reply"),
            }
        };
        assert_eq!(reply.write_chunk_data.as_deref(), Some(&b"hello"[..]));
        assert_eq!(reply.message, b"reply");
        assert_eq!(reply.path, ReplyPath::Inline);
        assert!(req.memory_mut().is_empty());
        assert_eq!(req.registered_bytes(), 0);
        assert!(!pd.region(0x100).live.get(), "Read chunk deregistered");
        assert!(!pd.region(0x200).live.get(), "Write chunk deregistered");
    }

    #[test]
    fn invalidate_never_reads_past_the_registration() {
        let pd = FakePd::default();
        let mut memory = DeviceMemory::default();
        memory.attach(pd.clone());
        let write = memory.register(ChunkBuffer::Write(4)).unwrap();
        pd.region(write.handle)
            .bytes
            .borrow_mut()
            .copy_from_slice(b"abcd");
        assert_eq!(memory.invalidate(write.handle).unwrap(), b"abcd");
        assert_eq!(memory.invalidate(write.handle), None);
        // An empty chunk still registers one byte and hands back none.
        let empty = memory.register(ChunkBuffer::Write(0)).unwrap();
        assert_eq!(empty.length, 0);
        assert_eq!(pd.region(empty.handle).bytes.borrow().len(), 1);
        assert_eq!(memory.invalidate(empty.handle).unwrap(), b"");
    }

    #[test]
    fn a_refused_registration_refuses_the_call_and_holds_nothing() {
        let pd = FakePd::default();
        let mut req = connected(&pd);
        // Unattached memory (no connection's protection domain) refuses every registration.
        req.memory_mut().detach();
        let call = OutgoingCall::moving_argument(7, b"rpc!".to_vec(), b"data".to_vec());
        assert_eq!(
            req.call(call, true),
            Err(engine::CallError::Registration(RegisterError::Refused {
                access: Access::RemoteRead,
                length: 4
            }))
        );
        // A refusal after an earlier chunk of the same call registered releases that chunk.
        let refusing = FakePd {
            refuse_from: Some(1),
            ..pd.clone()
        };
        req.memory_mut().attach(refusing);
        let call = OutgoingCall {
            write_chunk_capacity: Some(16),
            ..OutgoingCall::moving_argument(8, b"rpc!".to_vec(), b"data".to_vec())
        };
        assert_eq!(
            req.call(call, true),
            Err(engine::CallError::Registration(RegisterError::Refused {
                access: Access::RemoteWrite,
                length: 16
            }))
        );
        assert!(!pd.region(0x100).live.get(), "the Read chunk was released");
        assert!(req.memory_mut().is_empty());
        assert_eq!(req.outstanding(), 0);
        assert!(
            std::iter::from_fn(|| req.poll_work())
                .all(|work| !matches!(work, WorkRequest::PostSend { .. })),
            "nothing was sent"
        );
    }
}
