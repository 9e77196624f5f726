//! Chunk handle translation between the engine's [`MemoryTable`] and real memory registrations.
//!
//! The sans-IO requester invents its own chunk handles (offset 0 into a `Vec`); on a real
//! connection the peer needs an rkey and an address. Before a call goes out, every segment naming
//! an engine registration is backed by a real registration (its contents copied in for Read
//! chunks) and rewritten to that rkey and address; when a reply comes back, segments naming our
//! rkeys are rewritten to the engine's handles and the bytes the peer RDMA-wrote are copied into
//! the engine's table first, so the engine reads them exactly as it does in the simulator.
//!
//! Architecture Invariant: this module is generic over the registration type `M`, so it is tested
//! without a device; nothing here trusts a length from the peer beyond the registration's size.

use std::collections::BTreeMap;

use engine::verbs::{Access, AccessError, MemoryTable};
use wire::rpcrdma::{Body, ChunkLists, Header, Segment};
use wire::Xdr;

/// A real registration backing one engine handle.
#[derive(Debug)]
struct Backing<M> {
    registration: M,
    rkey: u32,
    addr: u64,
    len: u32,
}

/// Engine handle ⇄ real registration map for one requester.
#[derive(Debug)]
pub struct ChunkMap<M> {
    by_engine: BTreeMap<u32, Backing<M>>,
    engine_by_rkey: BTreeMap<u32, u32>,
}

impl<M> Default for ChunkMap<M> {
    fn default() -> Self {
        ChunkMap {
            by_engine: BTreeMap::new(),
            engine_by_rkey: BTreeMap::new(),
        }
    }
}

/// What the caller registers for one engine handle.
pub struct RegistrationRequest<'a> {
    /// Bytes the peer will RDMA Read (Read chunks); `None` for Write/Reply chunks (zeroed).
    pub contents: Option<&'a [u8]>,
    pub len: u32,
    pub access: Access,
}

/// A registration the caller made: the registration, its rkey and its address.
pub struct Registered<M> {
    pub registration: M,
    pub rkey: u32,
    pub addr: u64,
}

/// What kind of engine registration a handle is, if any.
fn engine_access(table: &MemoryTable, handle: u32) -> Option<Access> {
    match table.remote_read(handle, 0, 0) {
        Ok(_) => Some(Access::RemoteRead),
        Err(AccessError::NotPermitted(_)) => Some(Access::RemoteWrite),
        Err(_) => None,
    }
}

impl<M> ChunkMap<M> {
    /// Live real registrations.
    pub fn len(&self) -> usize {
        self.by_engine.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_engine.is_empty()
    }

    /// Rewrite an outgoing Send payload: segments naming engine registrations get real ones.
    /// A payload that is not a decodable header (a raw, deliberately malformed Send) or names no
    /// engine handle goes out unchanged. `register` fails → the error is returned.
    pub fn outgoing<E>(
        &mut self,
        payload: Vec<u8>,
        table: &MemoryTable,
        mut register: impl FnMut(RegistrationRequest<'_>) -> Result<Registered<M>, E>,
    ) -> Result<Vec<u8>, E> {
        let Ok((mut header, consumed)) = Header::decode_prefix(&payload) else {
            return Ok(payload);
        };
        let chunks = match &mut header.body {
            Body::Msg(chunks) | Body::Nomsg(chunks) => chunks,
            _ => return Ok(payload),
        };
        let mut changed = false;
        let mut translate = |segment: &mut Segment| -> Result<(), E> {
            let Some(access) = engine_access(table, segment.handle) else {
                return Ok(());
            };
            let engine_handle = segment.handle;
            if !self.by_engine.contains_key(&engine_handle) {
                let read_bytes = match access {
                    Access::RemoteRead => table
                        .remote_read(engine_handle, segment.offset, segment.length)
                        .ok(),
                    Access::RemoteWrite => None,
                };
                let registered = register(RegistrationRequest {
                    contents: read_bytes.as_deref(),
                    len: segment.length,
                    access,
                })?;
                self.engine_by_rkey.insert(registered.rkey, engine_handle);
                self.by_engine.insert(
                    engine_handle,
                    Backing {
                        registration: registered.registration,
                        rkey: registered.rkey,
                        addr: registered.addr,
                        len: segment.length,
                    },
                );
            }
            if let Some(backing) = self.by_engine.get(&engine_handle) {
                segment.handle = backing.rkey;
                segment.offset = backing.addr;
                changed = true;
            }
            Ok(())
        };
        for_each_segment(chunks, true, &mut translate)?;
        if !changed {
            return Ok(payload);
        }
        let mut out = header.to_bytes();
        out.extend_from_slice(&payload[consumed..]);
        Ok(out)
    }

    /// Rewrite an incoming reply: segments naming our rkeys get the engine's handles back, and
    /// what the peer wrote into those registrations is copied into the engine's table (read with
    /// `fetch`, at most the registration's length). Anything undecodable is passed through for the
    /// engine to judge.
    pub fn incoming(
        &mut self,
        payload: Vec<u8>,
        table: &mut MemoryTable,
        fetch: impl Fn(&M, u32) -> Option<Vec<u8>>,
    ) -> Vec<u8> {
        let Ok((mut header, consumed)) = Header::decode_prefix(&payload) else {
            return payload;
        };
        let chunks = match &mut header.body {
            Body::Msg(chunks) | Body::Nomsg(chunks) => chunks,
            _ => return payload,
        };
        let mut changed = false;
        let mut translate = |segment: &mut Segment| -> Result<(), ()> {
            let Some(&engine_handle) = self.engine_by_rkey.get(&segment.handle) else {
                return Ok(());
            };
            let Some(backing) = self.by_engine.get(&engine_handle) else {
                return Ok(());
            };
            if let Some(bytes) = fetch(&backing.registration, backing.len) {
                // The engine's region has exactly the segment's length; never write past it.
                let _ = table.remote_write(engine_handle, 0, &bytes);
            }
            segment.offset = segment.offset.saturating_sub(backing.addr);
            segment.handle = engine_handle;
            changed = true;
            Ok(())
        };
        let _ = for_each_segment(chunks, false, &mut translate);
        if !changed {
            return payload;
        }
        let mut out = header.to_bytes();
        out.extend_from_slice(&payload[consumed..]);
        out
    }

    /// Release the real registrations whose engine handles the engine has invalidated.
    pub fn sweep(&mut self, table: &MemoryTable) -> usize {
        let stale: Vec<u32> = self
            .by_engine
            .keys()
            .copied()
            .filter(|&handle| engine_access(table, handle).is_none())
            .collect();
        for handle in &stale {
            if let Some(backing) = self.by_engine.remove(handle) {
                self.engine_by_rkey.remove(&backing.rkey);
            }
        }
        stale.len()
    }

    /// Drop every registration (the connection is gone; the engine released everything).
    pub fn clear(&mut self) {
        self.by_engine.clear();
        self.engine_by_rkey.clear();
    }
}

/// Visit the Read list (when `reads`), every Write chunk and the Reply chunk.
fn for_each_segment<E>(
    chunks: &mut ChunkLists,
    reads: bool,
    visit: &mut impl FnMut(&mut Segment) -> Result<(), E>,
) -> Result<(), E> {
    if reads {
        for read in &mut chunks.reads {
            visit(&mut read.target)?;
        }
    }
    for chunk in &mut chunks.writes {
        for segment in chunk.iter_mut() {
            visit(segment)?;
        }
    }
    if let Some(reply) = &mut chunks.reply {
        for segment in reply.iter_mut() {
            visit(segment)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::rpcrdma::{ReadSegment, RPCRDMA_VERSION};

    /// A fake registration: its bytes, as the peer would see and modify them.
    #[derive(Debug, Clone, PartialEq)]
    struct FakeMr(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    fn header(body: Body) -> Vec<u8> {
        let mut bytes = Header {
            xid: 7,
            vers: RPCRDMA_VERSION,
            credits: 8,
            body,
        }
        .to_bytes();
        bytes.extend_from_slice(b"rpc!");
        bytes
    }

    fn fake_registrar<'a>(
        next_rkey: &'a mut u32,
        made: &'a mut Vec<FakeMr>,
    ) -> impl FnMut(RegistrationRequest<'_>) -> Result<Registered<FakeMr>, ()> + 'a {
        move |request| {
            let mut bytes = vec![0u8; request.len as usize];
            if let Some(contents) = request.contents {
                bytes.copy_from_slice(contents);
            }
            let mr = FakeMr(std::rc::Rc::new(std::cell::RefCell::new(bytes)));
            made.push(mr.clone());
            *next_rkey += 0x100;
            Ok(Registered {
                registration: mr,
                rkey: *next_rkey,
                addr: 0x7f00_0000_0000 + u64::from(*next_rkey),
            })
        }
    }

    #[test]
    fn calls_get_real_rkeys_and_replies_get_engine_handles_and_written_bytes() {
        let mut table = MemoryTable::new(0x1000);
        let read = table.register(b"DDP-data".to_vec(), Access::RemoteRead);
        let write = table.register(vec![0; 16], Access::RemoteWrite);
        let call = header(Body::Msg(ChunkLists {
            reads: vec![ReadSegment {
                position: 4,
                target: Segment {
                    handle: read,
                    length: 8,
                    offset: 0,
                },
            }],
            writes: vec![vec![Segment {
                handle: write,
                length: 16,
                offset: 0,
            }]],
            reply: None,
        }));
        let mut map = ChunkMap::default();
        let (mut rkey, mut made) = (0, Vec::new());
        let sent = map
            .outgoing(call, &table, fake_registrar(&mut rkey, &mut made))
            .unwrap();
        let (sent_header, _) = Header::decode_prefix(&sent).unwrap();
        let chunks = sent_header.chunks().unwrap();
        assert_eq!(chunks.reads[0].target.handle, 0x100);
        assert_eq!(chunks.reads[0].target.offset, 0x7f00_0000_0100);
        assert_eq!(chunks.writes[0][0].handle, 0x200);
        assert!(sent.ends_with(b"rpc!"));
        assert_eq!(made[0].0.borrow().as_slice(), b"DDP-data");
        assert_eq!(map.len(), 2);

        // The peer writes 5 bytes into the Write chunk and replies naming our rkey.
        made[1].0.borrow_mut()[..5].copy_from_slice(b"hello");
        let reply = header(Body::Msg(ChunkLists {
            reads: Vec::new(),
            writes: vec![vec![Segment {
                handle: 0x200,
                length: 5,
                offset: 0x7f00_0000_0200,
            }]],
            reply: None,
        }));
        let seen = map.incoming(reply, &mut table, |mr, len| {
            Some(mr.0.borrow()[..len as usize].to_vec())
        });
        let (seen_header, _) = Header::decode_prefix(&seen).unwrap();
        assert_eq!(
            seen_header.chunks().unwrap().writes[0][0],
            Segment {
                handle: write,
                length: 5,
                offset: 0
            }
        );
        assert_eq!(&table.invalidate(write).unwrap()[..5], b"hello");
        // The engine invalidated the Write chunk: its real registration goes, the Read one stays.
        assert_eq!(map.sweep(&table), 1);
        assert_eq!(map.len(), 1);
    }

    #[test]
    fn raw_and_foreign_payloads_pass_unchanged() {
        let table = MemoryTable::new(0x1000);
        let mut map: ChunkMap<FakeMr> = ChunkMap::default();
        let (mut rkey, mut made) = (0, Vec::new());
        let garbage = vec![0xff; 7];
        assert_eq!(
            map.outgoing(
                garbage.clone(),
                &table,
                fake_registrar(&mut rkey, &mut made)
            )
            .unwrap(),
            garbage
        );
        // A segment naming a handle the engine never registered is not ours to translate.
        let foreign = header(Body::Msg(ChunkLists {
            reads: Vec::new(),
            writes: vec![vec![Segment {
                handle: 0x4242,
                length: 4,
                offset: 9,
            }]],
            reply: None,
        }));
        assert_eq!(
            map.outgoing(
                foreign.clone(),
                &table,
                fake_registrar(&mut rkey, &mut made)
            )
            .unwrap(),
            foreign
        );
        assert!(made.is_empty());
        let mut table = table;
        assert_eq!(
            map.incoming(foreign.clone(), &mut table, |_, _| None),
            foreign
        );
    }
}
