//! Fuzzing entry point: sequences of client actions, malformed headers and transport faults over
//! requester + simulator + server, with the invariants checked after every operation.
//!
//! The fuzz target (in `fuzz/`) is a one-liner into [`run_operations`]; with the `arbitrary`
//! feature [`Operation`] derives `Arbitrary`. Any invariant violation panics, which is what the
//! fuzzer reports.

use engine::OutgoingCall;
use sim::{Action, Side};
use wire::nfs3::{
    CreateArgs, CreateHow3, DdpData, DirOpArgs3, FileHandle, Filename, GetattrArgs, LinkArgs,
    LookupArgs, MkdirArgs, Nfs3Call, ReadArgs, ReaddirplusArgs, RemoveArgs, RenameArgs, Sattr3,
    StableHow, WriteArgs,
};
use wire::raw::RawBuilder;

use crate::harness::Harness;

/// Most operations one run executes (keeps every input's run time bounded).
pub const MAX_OPERATIONS: usize = 256;
/// Largest raw payload a run sends (larger ones are truncated).
pub const MAX_RAW_BYTES: usize = 2048;
/// Largest registration one transmission makes (Read chunk 8 KiB + Reply chunk 4 KiB + slack).
const MAX_REGISTERED_PER_TRANSMISSION: usize = 16 * 1024;

/// Which NFSv3 call to send.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Null,
    Getattr,
    Lookup,
    Remove,
    CreateGuarded,
    Mkdir,
    Rename,
    Link,
    Write,
    WriteReadChunk,
    Read,
    Readdirplus,
}

/// A schedulable simulator action (`server` picks the side).
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Transmit { server: bool },
    PollSendQueue { server: bool },
    PollRecvQueue { server: bool },
    UpperLayer { server: bool },
}

impl ActionKind {
    fn action(self) -> Action {
        let side = |server| if server { Side::Server } else { Side::Client };
        match self {
            ActionKind::Transmit { server } => Action::Transmit(side(server)),
            ActionKind::PollSendQueue { server } => Action::PollSendQueue(side(server)),
            ActionKind::PollRecvQueue { server } => Action::PollRecvQueue(side(server)),
            ActionKind::UpperLayer { server } => Action::UpperLayer(side(server)),
        }
    }
}

/// One fuzzer-chosen step.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// A new call (a fresh XID) on one of a few names.
    Call {
        kind: CallKind,
        name: u8,
        reply_chunk: bool,
    },
    /// Send an earlier call's XID again, optionally past the credit grant.
    Retransmit {
        which: u8,
        ignore_credits: bool,
    },
    /// A transport header built word by word (any values; at most 64 extra words).
    RawHeader {
        xid: u32,
        vers: u32,
        credits: u32,
        proc_: u32,
        words: Vec<u32>,
    },
    /// Arbitrary bytes as a Send payload.
    RawBytes(Vec<u8>),
    /// Run up to this many scheduler steps.
    Step(u8),
    Hold(ActionKind),
    ReleaseAll,
    Disconnect,
    Reconnect,
    /// Run until nothing can run (bounded).
    Settle,
}

/// What a run did, for the fuzzer's curiosity and for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    pub operations: usize,
    pub transmissions: usize,
    pub raw_sends: usize,
    pub executions: usize,
    pub connections: u64,
}

struct Fuzz {
    h: Harness,
    sent: Vec<OutgoingCall>,
    raw_sends: usize,
    ignored_credits: bool,
}

const NAMES: [&str; 4] = ["n0", "n1", "n2", "n3"];

impl Fuzz {
    fn name(&self, index: u8) -> &'static str {
        NAMES[usize::from(index) % NAMES.len()]
    }

    fn dirop(&self, name: &str) -> DirOpArgs3 {
        DirOpArgs3 {
            dir: self.h.root.clone(),
            name: Filename(name.as_bytes().to_vec()),
        }
    }

    fn handle_of(&mut self, name: &str) -> FileHandle {
        let call = Nfs3Call::Lookup(LookupArgs {
            what: self.dirop(name),
        });
        match self.h.fixture(&call) {
            wire::nfs3::Nfs3Reply::Lookup(wire::nfs3::NfsRes::Ok(ok)) => ok.object,
            _ => self.h.root.clone(),
        }
    }

    fn build(&mut self, kind: CallKind, name_index: u8, reply_chunk: bool) -> OutgoingCall {
        let name = self.name(name_index);
        let other = self.name(name_index.wrapping_add(1));
        let xid = self.h.fresh_xid();
        let data: Vec<u8> = (0..8192u32).map(|i| i as u8).collect();
        let args = match kind {
            CallKind::Null => Nfs3Call::Null,
            CallKind::Getattr => Nfs3Call::Getattr(GetattrArgs {
                object: self.h.root.clone(),
            }),
            CallKind::Lookup => Nfs3Call::Lookup(LookupArgs {
                what: self.dirop(name),
            }),
            CallKind::Remove => Nfs3Call::Remove(RemoveArgs {
                object: self.dirop(name),
            }),
            CallKind::CreateGuarded => Nfs3Call::Create(CreateArgs {
                where_: self.dirop(name),
                how: CreateHow3::Guarded(Sattr3::default()),
            }),
            CallKind::Mkdir => Nfs3Call::Mkdir(MkdirArgs {
                where_: self.dirop(name),
                attributes: Sattr3::default(),
            }),
            CallKind::Rename => Nfs3Call::Rename(RenameArgs {
                from: self.dirop(name),
                to: self.dirop(other),
            }),
            CallKind::Link => Nfs3Call::Link(LinkArgs {
                file: self.handle_of(name),
                link: self.dirop(other),
            }),
            CallKind::Write => Nfs3Call::Write(WriteArgs {
                file: self.handle_of(name),
                offset: 0,
                count: 16,
                stable: StableHow::FileSync,
                data: DdpData::Inline(data[..16].to_vec()),
            }),
            CallKind::WriteReadChunk => Nfs3Call::Write(WriteArgs {
                file: self.handle_of(name),
                offset: 0,
                count: data.len() as u32,
                stable: StableHow::FileSync,
                data: DdpData::Moved {
                    length: data.len() as u32,
                },
            }),
            CallKind::Read => Nfs3Call::Read(ReadArgs {
                file: self.handle_of(name),
                offset: 0,
                count: 4096,
            }),
            CallKind::Readdirplus => Nfs3Call::Readdirplus(ReaddirplusArgs {
                dir: self.h.root.clone(),
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 4096,
                maxcount: 4096,
            }),
        };
        let mut call = if kind == CallKind::WriteReadChunk {
            self.h.nfs_call_moving(xid, &args, data)
        } else {
            self.h.nfs_call(xid, &args)
        };
        if kind == CallKind::Read {
            call.write_chunk_capacity = Some(4096);
        }
        if reply_chunk || kind == CallKind::Readdirplus {
            call.reply_chunk_capacity = Some(4096);
        }
        call
    }

    fn apply(&mut self, op: &Operation) {
        match op {
            Operation::Call {
                kind,
                name,
                reply_chunk,
            } => {
                let call = self.build(*kind, *name, *reply_chunk);
                if self.h.send(call.clone(), true) {
                    self.sent.push(call);
                }
            }
            Operation::Retransmit {
                which,
                ignore_credits,
            } => {
                if self.sent.is_empty() {
                    return;
                }
                let call = self.sent[usize::from(*which) % self.sent.len()].clone();
                self.ignored_credits |= *ignore_credits;
                self.h.send(call, !*ignore_credits);
            }
            Operation::RawHeader {
                xid,
                vers,
                credits,
                proc_,
                words,
            } => {
                let builder = RawBuilder::new()
                    .fixed(*xid, *vers, *credits, *proc_)
                    .words(&words[..words.len().min(64)]);
                self.raw(builder.bytes());
            }
            Operation::RawBytes(bytes) => {
                self.raw(bytes[..bytes.len().min(MAX_RAW_BYTES)].to_vec());
            }
            Operation::Step(n) => {
                for _ in 0..*n {
                    if self.h.step().is_none() {
                        break;
                    }
                }
            }
            Operation::Hold(kind) => self.h.hold(kind.action()),
            Operation::ReleaseAll => self.h.release_all(),
            Operation::Disconnect => {
                self.h.sim.disconnect(Side::Client);
                self.h.collect();
            }
            Operation::Reconnect => {
                if !self.h.sim.is_connected() {
                    self.h.settle();
                    self.h.connect();
                }
            }
            Operation::Settle => {
                self.h.settle();
            }
        }
    }

    fn raw(&mut self, payload: Vec<u8>) {
        self.raw_sends += 1;
        self.h.sim.client.send_raw(payload);
        self.h.sim.flush_work(Side::Client);
        self.h.collect();
    }

    /// The invariants; a violation panics (that is the fuzzer's signal).
    fn check(&self) {
        let server = &self.h.sim.server;
        let responder = server.responder();
        let credits = responder.credits() as usize;
        assert!(
            self.h.sim.posted_receives(Side::Server) <= credits,
            "server has more Receives posted than it grants"
        );
        assert!(
            self.h.sim.client.max_receive_bytes_seen() <= engine::DEFAULT_INLINE_THRESHOLD,
            "a Receive held more than its buffer"
        );
        // Memory on the server is bounded by the grant: at most twice the credits of calls
        // received and unanswered per connection instance.
        let connections = self.h.sim.stats().connections.max(1) as usize;
        assert!(
            responder.unanswered() <= 2 * credits * connections,
            "server holds {} unanswered calls",
            responder.unanswered()
        );
        assert!(
            responder.acked_position() <= responder.positions_posted(),
            "a Send completion acknowledged a position never posted"
        );
        if !self.ignored_credits {
            assert!(
                self.h.sim.client.outstanding() <= self.h.sim.client.credits_granted() as usize,
                "requester exceeded its grant while honouring credits"
            );
        }
        assert!(
            self.h.sim.client.registered_bytes()
                <= (self.h.sim.client.outstanding() + 1) * MAX_REGISTERED_PER_TRANSMISSION,
            "registered memory not bounded by outstanding transmissions"
        );
        for call in &self.sent {
            let executed = server
                .executions()
                .iter()
                .filter(|e| e.xid == call.xid)
                .count();
            assert!(
                executed <= self.h.transmissions(call.xid) + self.raw_sends,
                "xid {:#x} executed {executed} times for {} transmissions",
                call.xid,
                self.h.transmissions(call.xid)
            );
        }
    }
}

/// Run `operations` (at most [`MAX_OPERATIONS`]) under the policy picked by `policy`
/// (index into the policy list, modulo), checking every invariant after every operation.
pub fn run_operations(policy: u8, operations: &[Operation]) -> Report {
    let names = server::drc::POLICY_NAMES;
    let name = names[usize::from(policy) % names.len()];
    let Some(mut h) = Harness::new(name, u64::from(policy)) else {
        return Report::default();
    };
    h.mount();
    let mut fuzz = Fuzz {
        h,
        sent: Vec::new(),
        raw_sends: 0,
        ignored_credits: false,
    };
    let ops = &operations[..operations.len().min(MAX_OPERATIONS)];
    for op in ops {
        fuzz.apply(op);
        fuzz.check();
    }
    fuzz.h.release_all();
    fuzz.h.settle();
    fuzz.check();
    Report {
        operations: ops.len(),
        transmissions: fuzz.sent.iter().map(|c| fuzz.h.transmissions(c.xid)).sum(),
        raw_sends: fuzz.raw_sends,
        executions: fuzz.h.sim.server.executions().len(),
        connections: fuzz.h.sim.stats().connections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::SplitMix64;

    fn random_operation(rng: &mut SplitMix64) -> Operation {
        const KINDS: [CallKind; 12] = [
            CallKind::Null,
            CallKind::Getattr,
            CallKind::Lookup,
            CallKind::Remove,
            CallKind::CreateGuarded,
            CallKind::Mkdir,
            CallKind::Rename,
            CallKind::Link,
            CallKind::Write,
            CallKind::WriteReadChunk,
            CallKind::Read,
            CallKind::Readdirplus,
        ];
        let server = rng.below(2) == 1;
        match rng.below(12) {
            0..=3 => Operation::Call {
                kind: KINDS[rng.below(KINDS.len())],
                name: rng.below(8) as u8,
                reply_chunk: rng.below(4) == 0,
            },
            4 | 5 => Operation::Retransmit {
                which: rng.below(256) as u8,
                ignore_credits: rng.below(8) == 0,
            },
            6 => Operation::RawHeader {
                xid: rng.next_u64() as u32,
                vers: rng.below(3) as u32,
                credits: rng.next_u64() as u32,
                proc_: rng.below(6) as u32,
                words: (0..rng.below(12)).map(|_| rng.below(4) as u32).collect(),
            },
            7 => Operation::RawBytes((0..rng.below(40)).map(|_| rng.next_u64() as u8).collect()),
            8 => Operation::Step(rng.below(50) as u8),
            9 => Operation::Hold(match rng.below(4) {
                0 => ActionKind::Transmit { server },
                1 => ActionKind::PollSendQueue { server },
                2 => ActionKind::PollRecvQueue { server },
                _ => ActionKind::UpperLayer { server },
            }),
            10 => match rng.below(4) {
                0 => Operation::Disconnect,
                1 => Operation::Reconnect,
                2 => Operation::ReleaseAll,
                _ => Operation::Settle,
            },
            _ => Operation::Settle,
        }
    }

    #[test]
    fn random_operation_sequences_keep_every_invariant() {
        let mut rng = SplitMix64::new(0x5eed);
        let mut executions = 0;
        for round in 0..100u8 {
            let ops: Vec<Operation> = (0..60).map(|_| random_operation(&mut rng)).collect();
            let report = run_operations(round, &ops);
            assert_eq!(report.operations, 60);
            executions += report.executions;
        }
        // The sequences really exercised the server (not all rejected or stuck).
        assert!(executions > 100, "only {executions} executions");
    }

    #[test]
    fn malformed_headers_get_answers_and_never_execute() {
        let ops = vec![
            Operation::RawHeader {
                xid: 1,
                vers: 2,
                credits: 0,
                proc_: 0,
                words: vec![],
            },
            Operation::RawBytes(vec![0xff; 7]),
            Operation::RawHeader {
                xid: 2,
                vers: 1,
                credits: 0,
                proc_: 0,
                words: vec![1, 0, 0xdead, 1 << 30, 0, 0, 0, 0],
            },
            Operation::Settle,
        ];
        let report = run_operations(0, &ops);
        assert_eq!(report.raw_sends, 3);
        // Only the MOUNT of the setup executed.
        assert_eq!(report.executions, 1);
    }
}
