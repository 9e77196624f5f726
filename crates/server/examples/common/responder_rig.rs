//! The responder-side allocation rig shared by `examples/responder_allocs.rs` (which prints the
//! figures) and `tests/responder_allocs.rs` (which keeps them from growing): the calls a mount sees
//! most, each driven by our requester through the simulator to the reference server, counting
//! the heap allocations made inside the server endpoint's own methods.
//!
//! Only what happens inside the server endpoint's methods is counted (every `Endpoint` and
//! `UpperLayer` call the simulator makes on it: the responder's judging, pulling and replying
//! and the server's dispatch, DRC and execution); the requester and the simulator are not. The
//! server's trace is never taken, as under `rig serve`. The same sequence of calls gives the same
//! counts.

use std::alloc::System;

use engine::endpoint::{Endpoint, Event, MemoryTable, RemoteMemory, UpperLayer, WorkRequest};
use engine::{ConnectionConfig, OutgoingCall, Requester, RequesterOutput};
use server::Server;
use sim::{Side, Sim, SimConfig};
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use wire::ddp::Ddp;
use wire::nfs3::{
    CreateArgs, CreateHow3, DdpData, DirOpArgs3, FileHandle, Filename, GetattrArgs, LookupArgs,
    Nfs3Call, Nfs3Proc, ReadArgs, ReaddirArgs, Sattr3, StableHow, WriteArgs,
};
use wire::nfs_client::{self, Procedure};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations (fresh blocks and reallocations) and bytes requested so far by the process.
fn allocated() -> (u64, u64) {
    let stats = GLOBAL.stats();
    let bytes = stats.bytes_allocated as i64 + stats.bytes_reallocated as i64;
    (
        (stats.allocations + stats.reallocations) as u64,
        bytes.max(0) as u64,
    )
}

/// An endpoint whose methods count the allocations they make.
pub struct Counted<E> {
    inner: E,
    pub allocations: u64,
    pub bytes: u64,
}

impl<E> Counted<E> {
    fn count<T>(&mut self, f: impl FnOnce(&mut E) -> T) -> T {
        let (a0, b0) = allocated();
        let out = f(&mut self.inner);
        let (a1, b1) = allocated();
        self.allocations += a1 - a0;
        self.bytes += b1.saturating_sub(b0);
        out
    }
}

impl<E: Endpoint> Endpoint for Counted<E> {
    fn handle_event(&mut self, event: Event) {
        self.count(|e| e.handle_event(event));
    }

    fn poll_work(&mut self) -> Option<WorkRequest> {
        self.count(|e| e.poll_work())
    }

    fn private_data(&self) -> Option<Vec<u8>> {
        self.inner.private_data()
    }
}

/// Serving the peer's Reads and Writes is the simulated HCA's work, not the server's: uncounted.
impl<E: RemoteMemory> RemoteMemory for Counted<E> {
    fn memory(&mut self) -> &mut MemoryTable {
        self.inner.memory()
    }
}

impl<E: UpperLayer> UpperLayer for Counted<E> {
    fn run_upper_layer(&mut self) -> bool {
        self.count(|e| e.run_upper_layer())
    }

    fn has_upper_layer_work(&self) -> bool {
        self.inner.has_upper_layer_work()
    }
}

const TRANSFER: u32 = nfs_client::UNASKED_TRANSFER_MAX;

/// The calls measured, each built afresh for its XID as a client would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Getattr,
    Lookup,
    WriteReadChunk,
    ReadWriteChunk,
    ReaddirReplyChunk,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Null,
        Kind::Getattr,
        Kind::Lookup,
        Kind::WriteReadChunk,
        Kind::ReadWriteChunk,
        Kind::ReaddirReplyChunk,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "NULL",
            Kind::Getattr => "GETATTR",
            Kind::Lookup => "LOOKUP",
            Kind::WriteReadChunk => "WRITE (Read chunk)",
            Kind::ReadWriteChunk => "READ (Write chunk)",
            Kind::ReaddirReplyChunk => "READDIR (Reply chunk)",
        }
    }

    fn call(self, xid: u32, root: &FileHandle, file: &FileHandle) -> (Nfs3Proc, OutgoingCall) {
        let inline = |args: &Nfs3Call| OutgoingCall::inline(xid, nfs_client::nfs3_call(xid, args));
        let (args, call) = match self {
            Kind::Null => (Nfs3Call::Null, None),
            Kind::Getattr => (
                Nfs3Call::Getattr(GetattrArgs {
                    object: file.clone(),
                }),
                None,
            ),
            Kind::Lookup => (
                Nfs3Call::Lookup(LookupArgs {
                    what: DirOpArgs3 {
                        dir: root.clone(),
                        name: Filename(b"file".to_vec()),
                    },
                }),
                None,
            ),
            Kind::WriteReadChunk => {
                let args = Nfs3Call::Write(WriteArgs {
                    file: file.clone(),
                    offset: 0,
                    count: TRANSFER,
                    stable: StableHow::FileSync,
                    data: DdpData::Moved { length: TRANSFER },
                });
                let reduced = nfs_client::nfs3_call(xid, &args);
                let call =
                    OutgoingCall::moving_argument(xid, reduced, nfs_client::pattern(TRANSFER));
                (args, Some(call))
            }
            Kind::ReadWriteChunk => {
                let args = Nfs3Call::Read(ReadArgs {
                    file: file.clone(),
                    offset: 0,
                    count: TRANSFER,
                });
                let call = OutgoingCall {
                    write_chunk_capacity: Some(TRANSFER),
                    ..inline(&args)
                };
                (args, Some(call))
            }
            Kind::ReaddirReplyChunk => {
                let args = Nfs3Call::Readdir(ReaddirArgs {
                    dir: root.clone(),
                    cookie: 0,
                    cookieverf: [0; 8],
                    count: 4096,
                });
                let call = OutgoingCall {
                    reply_chunk_capacity: Some(8192),
                    ..inline(&args)
                };
                (args, Some(call))
            }
        };
        let call = call.unwrap_or_else(|| inline(&args));
        (args.proc_(), call)
    }
}

pub type Rig = Sim<Requester, Counted<Server>>;

/// Send one call, run the simulator until nothing moves, and check the reply said NFS3_OK.
fn round_trip(sim: &mut Rig, kind: Kind, xid: u32, root: &FileHandle, file: &FileHandle) {
    let (proc_, call) = kind.call(xid, root, file);
    if sim.client.call(call, true).is_err() {
        panic!("{}: call {xid:#x} refused by the requester", kind.name());
    }
    sim.flush_work(Side::Client);
    assert!(
        sim.run_to_quiescence(10_000),
        "{}: call {xid:#x} did not settle",
        kind.name()
    );
    let mut answered = false;
    while let Some(output) = sim.client.poll_output() {
        if let RequesterOutput::Reply(reply) = output {
            let moved = reply
                .write_chunk_data
                .as_ref()
                .is_some_and(|d| !d.is_empty());
            let ddp = Ddp::moved_if(moved);
            let status =
                nfs_client::reply_status(&reply.message, Some(Procedure::Nfs3(proc_)), ddp);
            assert_eq!(status, "NFS3_OK", "{}: call {xid:#x}", kind.name());
            answered = true;
        }
    }
    assert!(answered, "{}: call {xid:#x} not answered", kind.name());
    let _ = sim.take_trace();
    let _ = sim.client.take_trace();
}

/// What one kind of call cost: allocations (fresh blocks and reallocations) and bytes requested,
/// summed over the calls measured.
#[derive(Clone, Copy, Debug)]
pub struct Cost {
    pub kind: Kind,
    pub calls: u64,
    pub allocations: u64,
    pub bytes: u64,
}

/// Warm up with every kind (the file gets its data, the records' rings fill, tables reach their
/// steady size), then run `calls` of each kind on its own; returns the warm-up call count and
/// each kind's cost.
pub fn measure(drc: Box<dyn server::drc::DrcPolicy>, calls: u64) -> (u64, Vec<Cost>) {
    let config = ConnectionConfig::default();
    let mut server = Server::new(config, drc, 0x0a63_0002);
    let root = server.fs().root_handle();
    // A file to read, write and look up, and a directory long enough for a Reply chunk.
    let mut file = FileHandle::default();
    for i in 0..24 {
        let name = if i == 0 {
            "file".to_owned()
        } else {
            format!("entry-{i:02}")
        };
        let create = Nfs3Call::Create(CreateArgs {
            where_: DirOpArgs3 {
                dir: root.clone(),
                name: Filename(name.into_bytes()),
            },
            how: CreateHow3::Unchecked(Sattr3::default()),
        });
        if let wire::nfs3::Nfs3Reply::Create(wire::nfs3::NfsRes::Ok(ok)) =
            server.fs_mut().nfs(&create)
        {
            if i == 0 {
                file = ok.obj.unwrap_or_default();
            }
        }
    }
    let counted = Counted {
        inner: server,
        allocations: 0,
        bytes: 0,
    };
    let mut sim = Sim::new(Requester::new(config), counted, SimConfig::default());
    sim.connect();
    let mut xid = 0x1000u32;
    let warm_up = 4096 / Kind::ALL.len() as u64 + 1;
    for _ in 0..warm_up {
        for kind in Kind::ALL {
            xid += 1;
            round_trip(&mut sim, kind, xid, &root, &file);
        }
    }
    let mut costs = Vec::new();
    for kind in Kind::ALL {
        sim.server.allocations = 0;
        sim.server.bytes = 0;
        for _ in 0..calls {
            xid += 1;
            round_trip(&mut sim, kind, xid, &root, &file);
        }
        costs.push(Cost {
            kind,
            calls,
            allocations: sim.server.allocations,
            bytes: sim.server.bytes,
        });
    }
    (warm_up * Kind::ALL.len() as u64, costs)
}
