//! The one catalogue of retransmission scenarios. Each scenario is written once, against
//! [`Driver`]: the simulator ([`crate::harness::Harness`]) drives it deterministically, with every
//! hold and wait it asks for, and `rdma::scenarios::Session` drives it over real verbs against
//! our server or kernel nfsd, where a hold only the simulator has is skipped (and a scenario that
//! cannot do without one is reported unsupported, with the driver's reason).

use engine::OutgoingCall;
use wire::nfs3::{
    CreateArgs, CreateHow3, DdpData, DirOpArgs3, FileHandle, Filename, LinkArgs, MkdirArgs,
    Nfs3Call, RemoveArgs, RenameArgs, Sattr3, StableHow, WriteArgs,
};
use wire::nfs_client;

/// What a scenario reports back besides what its driver recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The XID under test.
    pub xid: u32,
    /// A scenario-specific observation (file-system state, replies within the timeout, ...).
    pub note: String,
    /// The scenario's own evidence of executions, where a driver has to infer them (a count, or
    /// none when nothing tells, and how it was read); `None` leaves the driver's default.
    pub inference: Option<(Option<usize>, String)>,
}

impl Outcome {
    fn new(xid: u32, note: String) -> Outcome {
        Outcome {
            xid,
            note,
            inference: None,
        }
    }
}

/// Why a driver could not go on (a connection lost, a registration refused). The simulator
/// never fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError(pub String);

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DriverError {}

/// Whether a transmission respects the server's credit grant (RFC 8166 §3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credits {
    /// Refused by the requester when the grant is used up.
    Honour,
    /// Sent whatever the grant: a deliberate retransmit on a live connection.
    Exceed,
}

/// Something a scenario holds back, where its transport lets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Calls are looked up in the DRC as they arrive, but none finishes executing: an original
    /// stays in progress until released (the simulator and `rig serve --control` hold their
    /// executions; against kernel nfsd the export's file system is frozen, so the procedure
    /// blocks inside it).
    ServerExecution,
    /// The server's software does not poll its Send completions: the reply is acknowledged on
    /// the wire, but the server has not learned it.
    ServerSendCompletions,
    /// The server transmits nothing: its replies and RDMA Reads stay queued.
    ServerTransmissions,
    /// The server's software does not poll its Receive completions (no Receive is reposted).
    ServerReceives,
    /// Our software does not process received replies: they wait in our Receive buffers.
    ClientReceives,
    /// The server's reply to the next call is lost on the wire once, and the server's Send
    /// cannot complete until released: over RDMA the relay drops the reply's first packet (the
    /// server's RC layer sends it again when a later packet reveals the gap or its ACK timeout
    /// fires) and holds our RC ACKs; the simulator, which has no RC layer, keeps the reply
    /// from leaving the server.
    ReplyLost,
    /// Our RC ACK of the server's reply to the next call is lost once, and the server's Send
    /// cannot complete until released: we have the reply, the completion comes late (the
    /// server's RC layer sends the reply again when its ACK timeout fires; our HCA filters the
    /// copy below RPC). Over RDMA the relay drops that ACK and holds the later ones; the
    /// simulator holds the server's Send completions.
    ReplyAckLost,
    /// A connection-management message of the next disconnect or connect is lost on the wire
    /// once: the CM's own timeout sends it again (the REQ or DREQ again, or the REP again, which
    /// the peer answers by repeating what was lost). Over RDMA the relay drops it; the simulator
    /// has no CM timers and records the loss and its one retry.
    CmLost(CmMessage),
    /// The server's export caches are flushed and their upcalls go unanswered: kernel nfsd,
    /// finding the next call's file handle uncached, waits for rpc.mountd (its `thread_wait`,
    /// 5 s), then defers the call; released, the upcall is answered and the call revisited.
    /// Only kernel nfsd has it (`rig hold-export` stops rpc.mountd); our server and the
    /// simulator have no export cache.
    ExportCacheUpcall,
}

/// Why a transport without kernel nfsd's export cache cannot run a scenario that needs
/// [`Hold::ExportCacheUpcall`].
pub const NO_EXPORT_CACHE: &str = "needs an export cache whose upcall goes unanswered, which only kernel nfsd beside rig hold-export has (our server and the simulator have no export cache)";

/// The connection-management messages a case can lose (the simulator's own definition).
pub use sim::CmMessage;

/// A point a scenario waits for. A driver that cannot observe it does not wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The server holds `n` received calls not yet executed.
    ServerQueued(usize),
    /// `n` replies wait unprocessed in our Receive buffers.
    RepliesHeld(usize),
    /// A reply waits unprocessed in our Receive buffer and the server has processed the
    /// completion of the Send that carried it.
    ReplyHeldAndAcked,
    /// Two replies wait unprocessed, or the server has decided `xid` twice and has nothing
    /// left to execute.
    RetransmitSettled { xid: u32 },
    /// The server has made `n` DRC decisions for `xid`.
    Decided { xid: u32, n: usize },
    /// The server has made `n` DRC decisions for `xid` and has nothing left to execute.
    DecidedAndIdle { xid: u32, n: usize },
    /// The server has `n` transmissions (Sends, RDMA Reads) on the wire.
    ServerInFlight(usize),
    /// The link has answered `n` Sends with an RNR NAK.
    RnrNaks(u64),
    /// The reply under [`Hold::ReplyLost`] has left the server and been lost.
    ReplyLost,
    /// Our ACK of the reply under [`Hold::ReplyAckLost`] has been lost on the wire (the
    /// simulator has no RC layer: the state it stands for, reply delivered and Send not
    /// completed, holds from the start).
    AckLost,
    /// The connection-management message under [`Hold::CmLost`] has been lost on the wire.
    CmLost,
    /// The server has deferred `n` calls under [`Hold::ExportCacheUpcall`].
    ServerDeferred(usize),
}

/// A capability a scenario cannot do without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Hold(Hold),
    /// Connect again with our Receives posted only when the scenario says so.
    LateReceivePosting,
    /// RNR retries that run out deterministically before a Receive is posted.
    RnrRetryExhaustion,
    /// A Send that finds no Receive posted is retried by the sender (an RC RNR NAK), not fatal:
    /// InfiniBand/RoCE. iWARP has no RNR: DDP reports it as an untagged buffer error and
    /// terminates the stream (RFC 5041 §7.1, RFC 5040 §7.4.1).
    RnrRetry,
}

/// A transport the catalogue runs on: what a scenario may ask of it. Everything a transport
/// cannot do is either skipped (a [`Hold`] returns false, an [`Until`] does not wait) or named
/// in [`Driver::supports`], which the runner asks before a scenario that requires it.
pub trait Driver {
    /// Whether this transport has `control`; if not, why (the reason goes into the verdict).
    fn supports(control: Control) -> Result<(), &'static str>
    where
        Self: Sized;
    /// The name of a file the scenario creates (unique per run where runs share a server).
    fn name(&self, base: &str) -> String;
    /// The export's root handle.
    fn root(&self) -> FileHandle;
    fn fresh_xid(&mut self) -> u32;
    /// An NFSv3 call message, its procedure recorded for reading the reply's status.
    fn nfs_call(&mut self, xid: u32, args: &Nfs3Call) -> OutgoingCall;
    /// An NFSv3 call whose DDP-eligible argument (`args` carries `DdpData::Moved`) travels in a
    /// Read chunk at its XDR position.
    fn nfs_call_moving(&mut self, xid: u32, args: &Nfs3Call, data: Vec<u8>) -> OutgoingCall {
        let call = self.nfs_call(xid, args);
        OutgoingCall::moving_argument(xid, call.message, data)
    }
    /// Transmit `call` (another transmission of its XID when it was sent before).
    fn send(&mut self, call: OutgoingCall, credits: Credits) -> Result<(), DriverError>;
    /// Run until `xid` has `n` replies or nothing more will come (the simulator: nothing can
    /// run; a real link: the timeout). Returns whether it has them.
    fn await_replies(&mut self, xid: u32, n: usize) -> bool;
    /// The status of the first reply to `xid` ("no reply" when none came).
    fn first_status(&self, xid: u32) -> String;
    /// Make a regular file exist before the call under test (not part of the verdict).
    fn create_file(&mut self, name: &str) -> Result<FileHandle, DriverError>;
    /// The status a LOOKUP of `name` in the root answers now.
    fn lookup(&mut self, name: &str) -> Result<String, DriverError>;
    /// Send one fresh call and wait for its reply; returns its status.
    fn exec(&mut self, args: &Nfs3Call) -> Result<String, DriverError>;
    /// The server's current credit grant.
    fn credits_granted(&self) -> u32;
    /// Calls the requester has outstanding.
    fn outstanding(&self) -> usize;
    /// Hold `hold` back from now on; returns whether this transport can.
    fn hold(&mut self, hold: Hold) -> bool;
    /// Run until `point` (or the transport's limit); false when it was not reached or cannot
    /// be observed here.
    fn until(&mut self, point: Until) -> Result<bool, DriverError>;
    /// Let everything held go.
    fn release_all(&mut self);
    /// Let the server process the Send completion of a reply we already processed.
    fn let_ack_settle(&mut self) -> Result<(), DriverError>;
    /// Send `call`, have its reply lost with the connection (never processed by us), and connect
    /// again; returns whether a reply was there to lose.
    fn lose_reply_with_connection(&mut self, call: OutgoingCall) -> Result<bool, DriverError>;
    /// Connect again with our Receives not yet posted ([`Control::LateReceivePosting`]).
    fn reconnect_with_late_receives(&mut self) -> Result<(), DriverError>;
    /// Post the Receives held back by [`Driver::reconnect_with_late_receives`].
    fn post_receives(&mut self) -> Result<(), DriverError>;
    /// RNR NAKs the link has seen, where the transport can count them.
    fn rnr_naks(&self) -> Option<u64>;
}

/// A scenario body: returns the XID under test and what it observed.
pub type ScenarioBody = fn(&mut dyn Driver) -> Result<Outcome, DriverError>;

/// One named scenario.
pub struct Scenario {
    pub name: &'static str,
    /// The NFSv3 procedure under test.
    pub procedure: &'static str,
    /// What the scenario proves.
    pub proves: &'static str,
    /// What the scenario cannot run without.
    pub requires: &'static [Control],
    pub run: ScenarioBody,
}

impl Scenario {
    /// Why a driver whose [`Driver::supports`] is `supports` cannot run this scenario (its
    /// reason for the first missing control).
    pub fn unsupported_by(
        &self,
        supports: impl Fn(Control) -> Result<(), &'static str>,
    ) -> Option<&'static str> {
        self.requires
            .iter()
            .find_map(|&control| supports(control).err())
    }
}

/// Every scenario, in table order.
pub fn catalogue() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "once",
            procedure: "REMOVE",
            proves: "baseline: one transmission, one execution, one reply, credits balanced",
            requires: &[],
            run: once,
        },
        Scenario {
            name: "deferred",
            procedure: "REMOVE",
            proves: "once, with the call deferred by the server (its export cache flushed, the \
                     upcall unanswered until the deferral) and revisited: one transmission, one \
                     execution, one reply; the deferred pass is not counted as an execution",
            requires: &[Control::Hold(Hold::ExportCacheUpcall)],
            run: deferred,
        },
        Scenario {
            name: "before-execution",
            procedure: "REMOVE",
            proves: "a duplicate that meets its original in progress is dropped (classic, acked: \
                     the client's credit for it never comes back) or parked and answered \
                     (acked-mark)",
            requires: &[],
            run: before_execution,
        },
        Scenario {
            name: "after-reply-before-ack",
            procedure: "MKDIR",
            proves: "a retransmit that arrives after the reply was posted but before its Send \
                     completed is answered from the cache under every policy",
            requires: &[Control::Hold(Hold::ServerSendCompletions)],
            run: after_reply_before_ack,
        },
        Scenario {
            name: "after-ack",
            procedure: "REMOVE",
            proves: "a retransmit from a client that already holds the reply: classic replays \
                     it; acked has evicted the entry and executes REMOVE again (NOENT)",
            requires: &[],
            run: after_ack,
        },
        Scenario {
            name: "after-ack-late",
            procedure: "REMOVE",
            proves: "the limit of acked-mark: a replay sent after a full credit window of later \
                     calls is executed again (classic still has it cached)",
            requires: &[],
            run: after_ack_late,
        },
        Scenario {
            name: "in-ack-window",
            procedure: "RENAME",
            proves: "the reply is in the client's buffer and acknowledged, the client's software \
                     has not seen it and retransmits: acked executes RENAME twice",
            requires: &[],
            run: in_ack_window,
        },
        Scenario {
            name: "burst",
            procedure: "LINK",
            proves: "the same call four times back to back: every transmission is accounted \
                     for (dropped, parked, replayed or executed); where the server's execution \
                     can be held, all four are looked up before the first has executed",
            requires: &[],
            run: burst,
        },
        Scenario {
            name: "changed-args-same-xid",
            procedure: "REMOVE",
            proves: "a different REMOVE (same length) reusing the XID: classic's checksum tells \
                     them apart; without it (acked, acked-mark) the first reply answers the \
                     second call and it is never executed",
            // The reuse must find the first reply unacknowledged at the server: an ordering
            // only a held Send completion forces (over iWARP none can be held, and whether
            // acked has evicted a's entry would be left to timing).
            requires: &[Control::Hold(Hold::ServerSendCompletions)],
            run: changed_args_same_xid,
        },
        Scenario {
            name: "over-credit",
            procedure: "MKDIR",
            proves: "a transmission beyond the credit grant finds no Receive posted: RNR NAK, \
                     and the retry succeeds once the server reposts",
            requires: &[Control::RnrRetry],
            run: over_credit,
        },
        Scenario {
            name: "after-reconnect",
            procedure: "REMOVE",
            proves: "what xprtrdma does: the reply is lost with the connection, the retransmit \
                     on the new connection is answered from the cache under every policy",
            requires: &[],
            run: after_reconnect,
        },
        Scenario {
            name: "after-reconnect-rep-lost",
            procedure: "REMOVE",
            proves: "after-reconnect whose new connection loses the server's CM REP once: the \
                     connect completes by the CM's retry, and the retransmit on it is answered \
                     from the cache under every policy that still holds the entry",
            requires: &[Control::Hold(Hold::CmLost(CmMessage::Rep))],
            run: after_reconnect_rep_lost,
        },
        Scenario {
            name: "after-reconnect-rtu-lost",
            procedure: "REMOVE",
            proves: "after-reconnect whose new connection loses our CM RTU once: we are \
                     established, the server not until its REP is repeated; the retransmit sent \
                     meanwhile is answered from the cache under every policy that still holds \
                     the entry",
            requires: &[Control::Hold(Hold::CmLost(CmMessage::Rtu))],
            run: after_reconnect_rtu_lost,
        },
        Scenario {
            name: "after-reconnect-drep-lost",
            procedure: "REMOVE",
            proves: "after-reconnect whose disconnect loses the server's CM DREP once: the old \
                     connection ends by our DREQ's retry, and the retransmit on the new one is \
                     answered from the cache under every policy that still holds the entry",
            requires: &[Control::Hold(Hold::CmLost(CmMessage::Drep))],
            run: after_reconnect_drep_lost,
        },
        Scenario {
            name: "large-write-read-chunk",
            procedure: "WRITE",
            proves: "a retransmit while the server pulls the first transmission's Read chunk: \
                     both pulls complete, and where the server's execution can be held the DRC \
                     sees the retransmit while the original is in progress",
            requires: &[],
            run: large_write_read_chunk,
        },
        Scenario {
            name: "reply-chunk",
            procedure: "CREATE",
            proves: "the cached reply goes back through the retransmit's own Reply chunk (the \
                     first one is invalidated; reusing it would be a remote access error), the \
                     retransmit arriving before the first reply's Send completed",
            requires: &[Control::Hold(Hold::ServerSendCompletions)],
            run: reply_chunk,
        },
        Scenario {
            name: "reply-chunk-after-ack",
            procedure: "CREATE",
            proves: "reply-chunk's other ordering: the retransmit, with its own Reply chunk, \
                     arrives after the first reply's Send completed: classic replays it through \
                     the new chunk; acked has evicted the entry and executes the GUARDED CREATE \
                     again (EXIST)",
            requires: &[],
            run: reply_chunk_after_ack,
        },
        Scenario {
            name: "reply-lost-live",
            procedure: "REMOVE",
            proves: "the reply is lost on the wire once and the client retransmits on the live \
                     connection before the RC layer delivers it: the server's Send has not \
                     completed, so every policy answers from the cache; the client gets the \
                     original reply (sent again by RC) and the replay, nothing executes twice",
            requires: &[Control::Hold(Hold::ReplyLost)],
            run: reply_lost_live,
        },
        Scenario {
            name: "ack-lost",
            procedure: "REMOVE",
            proves: "the client's RC ACK of the reply is lost, so the server's Send completes \
                     late (its RC layer sends the reply again when its ACK timeout fires, \
                     filtered below RPC); a retransmit before that completion is answered from \
                     the cache under every policy: two transmissions, two replies, not three",
            requires: &[Control::Hold(Hold::ReplyAckLost)],
            run: ack_lost,
        },
        Scenario {
            name: "passive-first",
            procedure: "MKDIR",
            proves: "the server's reply arrives before the client posted Receives: RNR NAK and \
                     its retry cover the race",
            requires: &[Control::LateReceivePosting],
            run: passive_first,
        },
        Scenario {
            name: "passive-first-exhausted",
            procedure: "MKDIR",
            proves: "if Receives are never posted the RNR retry count runs out and the \
                     connection breaks; the call executed but no reply arrives",
            requires: &[Control::RnrRetryExhaustion, Control::LateReceivePosting],
            run: passive_first_exhausted,
        },
    ]
}

/// The scenarios of `catalogue` to run: every one, or the one `name`d `only` (else an error
/// naming the `kind` of scenario asked for).
pub fn select<S>(
    catalogue: Vec<S>,
    name: fn(&S) -> &'static str,
    only: Option<&str>,
    kind: &str,
) -> Result<Vec<S>, String> {
    let scenarios: Vec<S> = catalogue
        .into_iter()
        .filter(|s| only.is_none_or(|wanted| name(s) == wanted))
        .collect();
    if scenarios.is_empty() {
        return Err(format!("unknown {kind} {:?}", only.unwrap_or("")));
    }
    Ok(scenarios)
}

fn dirop(dir: &FileHandle, name: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: dir.clone(),
        name: Filename(name.as_bytes().to_vec()),
    }
}

fn remove(d: &dyn Driver, name: &str) -> Nfs3Call {
    Nfs3Call::Remove(RemoveArgs {
        object: dirop(&d.root(), name),
    })
}

fn mkdir(d: &dyn Driver, name: &str) -> Nfs3Call {
    Nfs3Call::Mkdir(MkdirArgs {
        where_: dirop(&d.root(), name),
        attributes: Sattr3::default(),
    })
}

/// A file "victim" and a REMOVE of it under a fresh XID: the call most scenarios retransmit
/// (REMOVE executed twice answers NFS3ERR_NOENT). Returns the file's name, the XID and the call.
fn victim(d: &mut dyn Driver) -> Result<(String, u32, OutgoingCall), DriverError> {
    let name = d.name("victim");
    d.create_file(&name)?;
    let xid = d.fresh_xid();
    let args = remove(d, &name);
    Ok((name, xid, d.nfs_call(xid, &args)))
}

fn once(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (name, xid, call) = victim(d)?;
    d.send(call, Credits::Honour)?;
    d.await_replies(xid, 1);
    let after = d.lookup(&name)?;
    Ok(Outcome::new(xid, format!("LOOKUP victim after: {after}")))
}

fn deferred(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (name, xid, call) = victim(d)?;
    d.hold(Hold::ExportCacheUpcall);
    d.send(call, Credits::Honour)?;
    // Released only once deferred: a release inside the thread wait answers the upcall in time
    // and nothing is deferred.
    d.until(Until::ServerDeferred(1))?;
    d.release_all();
    d.await_replies(xid, 1);
    let after = d.lookup(&name)?;
    Ok(Outcome::new(xid, format!("LOOKUP victim after: {after}")))
}

fn before_execution(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    // Where it can, the original's execution is held until the duplicate has been looked up
    // too: the duplicate meets it in progress whatever the scheduling.
    d.hold(Hold::ServerExecution);
    d.send(call.clone(), Credits::Honour)?;
    d.send(call, Credits::Honour)?;
    d.until(Until::Decided { xid, n: 2 })?;
    d.release_all();
    let both = d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        format!("second reply within the timeout: {both} (a dropped duplicate is never answered)"),
    ))
}

fn after_reply_before_ack(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let name = d.name("dir");
    let xid = d.fresh_xid();
    let args = mkdir(d, &name);
    let call = d.nfs_call(xid, &args);
    // The server may not see its Send complete, nor the client its reply, until the retransmit
    // has been looked up.
    d.hold(Hold::ServerSendCompletions);
    d.hold(Hold::ClientReceives);
    d.send(call.clone(), Credits::Honour)?;
    d.until(Until::RepliesHeld(1))?;
    d.send(call, Credits::Honour)?;
    d.until(Until::Decided { xid, n: 2 })?;
    d.release_all();
    d.await_replies(xid, 2);
    let after = d.lookup(&name)?;
    Ok(Outcome::new(xid, format!("LOOKUP dir after: {after}")))
}

fn after_ack(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    retransmit_after_ack(d, xid, call)?;
    Ok(Outcome::new(
        xid,
        "retransmitted after the reply was processed".to_string(),
    ))
}

/// Send `call`, take its reply, let the server process the reply's Send completion, then send
/// it again and wait for the second answer: the after-ack ordering.
fn retransmit_after_ack(
    d: &mut dyn Driver,
    xid: u32,
    call: OutgoingCall,
) -> Result<(), DriverError> {
    d.send(call.clone(), Credits::Honour)?;
    d.await_replies(xid, 1);
    // The client has processed the reply; the server processes the Send completion.
    d.let_ack_settle()?;
    d.send(call, Credits::Honour)?;
    d.await_replies(xid, 2);
    Ok(())
}

fn after_ack_late(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    d.send(call.clone(), Credits::Honour)?;
    d.await_replies(xid, 1);
    // A full credit window of later calls (twice over), one at a time, then the replay.
    let window = d.credits_granted().max(1) as usize * 2;
    for _ in 0..window {
        d.exec(&Nfs3Call::Null)?;
    }
    d.send(call, Credits::Honour)?;
    d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        format!("replayed after {window} later calls"),
    ))
}

fn in_ack_window(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let from = d.name("from");
    let to = d.name("to");
    d.create_file(&from)?;
    let xid = d.fresh_xid();
    let root = d.root();
    let call = d.nfs_call(
        xid,
        &Nfs3Call::Rename(RenameArgs {
            from: dirop(&root, &from),
            to: dirop(&root, &to),
        }),
    );
    // The reply's Receive completes (our HCA acknowledged it), but our software does not
    // process it before retransmitting.
    d.hold(Hold::ClientReceives);
    d.send(call.clone(), Credits::Honour)?;
    let held = d.until(Until::ReplyHeldAndAcked)?;
    d.send(call, Credits::Exceed)?;
    d.until(Until::RetransmitSettled { xid })?;
    d.release_all();
    d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        format!("reply held in our Receive buffer before the retransmit: {held}"),
    ))
}

fn burst(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let target = d.name("target");
    let file = d.create_file(&target)?;
    let xid = d.fresh_xid();
    let link = d.name("link");
    let root = d.root();
    let call = d.nfs_call(
        xid,
        &Nfs3Call::Link(LinkArgs {
            file,
            link: dirop(&root, &link),
        }),
    );
    // Where it can, the first one's execution is held until all four have been looked up: the
    // duplicates meet it in progress, whatever the scheduling.
    d.hold(Hold::ServerExecution);
    for _ in 0..4 {
        d.send(call.clone(), Credits::Exceed)?;
    }
    d.until(Until::Decided { xid, n: 4 })?;
    d.release_all();
    let all = d.await_replies(xid, 4);
    Ok(Outcome::new(
        xid,
        format!("all four answered within the timeout: {all}"),
    ))
}

fn changed_args_same_xid(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let a = d.name("a");
    let b = d.name("b");
    d.create_file(&a)?;
    d.create_file(&b)?;
    let xid = d.fresh_xid();
    let first = remove(d, &a);
    let first = d.nfs_call(xid, &first);
    let second = remove(d, &b);
    let second = d.nfs_call(xid, &second);
    // The XID is reused while the first reply is still unacknowledged at the server (so even
    // acked has it): the scenario requires this hold.
    d.hold(Hold::ServerSendCompletions);
    d.send(first, Credits::Honour)?;
    d.await_replies(xid, 1);
    let first_status = d.first_status(xid);
    d.send(second, Credits::Honour)?;
    d.until(Until::DecidedAndIdle { xid, n: 2 })?;
    d.release_all();
    d.await_replies(xid, 2);
    let b_after = d.lookup(&b)?;
    let executed = if b_after == "NFS3ERR_NOENT" {
        "second REMOVE executed (b is gone)"
    } else {
        "second REMOVE NOT executed: answered with the first call's cached reply (b still exists)"
    };
    // Two argument sets: a second NFS3_OK is what executing REMOVE b answers too, so the
    // statuses cannot tell; whether b is still there can.
    Ok(Outcome {
        xid,
        note: format!("{executed}; LOOKUP b: {b_after}"),
        inference: Some(infer_changed_args(&first_status, &b_after)),
    })
}

/// Executions of changed-args-same-xid from the first reply and a LOOKUP of b afterwards.
pub fn infer_changed_args(first: &str, b_after: &str) -> (Option<usize>, String) {
    match (first, b_after) {
        ("NFS3_OK", "NFS3ERR_NOENT") => (
            Some(2),
            "inferred: REMOVE a answered NFS3_OK and b is gone afterwards (both argument sets executed)"
                .to_string(),
        ),
        ("NFS3_OK", "NFS3_OK") => (
            Some(1),
            "inferred: REMOVE a answered NFS3_OK and b is still there afterwards (REMOVE b never executed)"
                .to_string(),
        ),
        _ => (
            None,
            format!("not inferable: first reply {first}, LOOKUP b afterwards {b_after}"),
        ),
    }
}

/// Fills the credit grant with distinct MKDIRs, then sends one transmission over it. Where the
/// server's Receives can be held, the excess is a retransmit of the first call and meets no
/// posted Receive (an RNR NAK the simulator counts); on a real link the HCA's RNR retry hides
/// the gap, so the excess is one more call and every call must be answered.
fn over_credit(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    if !d.hold(Hold::ServerReceives) {
        return over_credit_unheld(d);
    }
    let grant = d.credits_granted();
    let mut first = None;
    for i in 0..grant {
        let xid = d.fresh_xid();
        let args = mkdir(d, &d.name(&format!("m{i}")));
        let call = d.nfs_call(xid, &args);
        first.get_or_insert_with(|| call.clone());
        d.send(call, Credits::Honour)?;
    }
    // Retransmit the first one: over the grant, deliberately.
    let refused_under_credits = d.outstanding() >= grant as usize;
    let Some(first) = first else {
        return Err(DriverError("no credit granted".to_string()));
    };
    let xid = first.xid;
    d.send(first, Credits::Exceed)?;
    d.until(Until::RnrNaks(1))?;
    d.release_all();
    d.await_replies(xid, 2);
    let naks = d.rnr_naks().unwrap_or_default();
    Ok(Outcome::new(
        xid,
        format!(
            "requester refused it with credits honoured: {refused_under_credits}, RNR NAKs: {naks}"
        ),
    ))
}

fn over_credit_unheld(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let grant = d.credits_granted().max(1) as usize;
    let mut xids = Vec::new();
    for i in 0..=grant {
        let xid = d.fresh_xid();
        let args = mkdir(d, &d.name(&format!("dir{i}")));
        let call = d.nfs_call(xid, &args);
        d.send(call, Credits::Exceed)?;
        xids.push(xid);
    }
    let last = *xids.last().unwrap_or(&0);
    let mut answered = 0;
    for xid in &xids {
        answered += usize::from(d.await_replies(*xid, 1));
    }
    Ok(Outcome::new(
        last,
        format!(
            "{} calls against a grant of {grant}: {answered} answered (the HCA's RNR retry covers the gap until a Receive is reposted)",
            xids.len()
        ),
    ))
}

fn after_reconnect(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    // The reply is lost with the connection before we process it: what xprtrdma does on a
    // timeout. The retransmit goes out on the new connection, which starts with a grant of one.
    let held = d.lose_reply_with_connection(call.clone())?;
    d.send(call, Credits::Honour)?;
    d.await_replies(xid, 1);
    Ok(Outcome::new(
        xid,
        format!("first reply received then lost with the connection: {held}"),
    ))
}

fn after_reconnect_rep_lost(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    after_reconnect_losing(d, CmMessage::Rep)
}

fn after_reconnect_rtu_lost(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    after_reconnect_losing(d, CmMessage::Rtu)
}

fn after_reconnect_drep_lost(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    after_reconnect_losing(d, CmMessage::Drep)
}

/// after-reconnect with `lost` lost once on the wire between the connections: the disconnect
/// (DREP) or the connect (REP, RTU) completes by the CM's retry, or fails and the case errors.
fn after_reconnect_losing(d: &mut dyn Driver, lost: CmMessage) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    // Installed before the connection goes: no REP, RTU or DREP passes on a live connection.
    d.hold(Hold::CmLost(lost));
    let held = d.lose_reply_with_connection(call.clone())?;
    let cm_lost = d.until(Until::CmLost)?;
    d.release_all();
    d.send(call, Credits::Honour)?;
    d.await_replies(xid, 1);
    Ok(Outcome::new(
        xid,
        format!(
            "first reply received then lost with the connection: {held}; CM {} lost once \
             between the connections: {cm_lost}",
            lost.name()
        ),
    ))
}

fn large_write_read_chunk(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let name = d.name("big");
    let file = d.create_file(&name)?;
    let xid = d.fresh_xid();
    // 8 KiB: no server's FSINFO wtmax is smaller (nfsd bottoms out there), so no FSINFO first.
    let length = nfs_client::UNASKED_TRANSFER_MAX;
    let args = Nfs3Call::Write(WriteArgs {
        file,
        offset: 0,
        count: length,
        stable: StableHow::FileSync,
        data: DdpData::Moved { length },
    });
    let call = d.nfs_call_moving(xid, &args, nfs_client::pattern(length));
    // Where it can, the original's execution is held until the retransmit, its Read chunk
    // pulled too, has been looked up: it meets the original in progress, whatever the
    // scheduling.
    d.hold(Hold::ServerExecution);
    d.send(call.clone(), Credits::Honour)?;
    d.send(call, Credits::Honour)?;
    d.until(Until::Decided { xid, n: 2 })?;
    d.release_all();
    let both = d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        format!("both transmissions answered: {both}"),
    ))
}

fn reply_chunk(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let name = d.name("created");
    let xid = d.fresh_xid();
    let call = create_with_reply_chunk(d, xid, &name);
    // The client gets the first reply (and invalidates its Reply chunk); the server has not
    // seen the Send complete when the retransmit, with a fresh Reply chunk, arrives (over RDMA
    // through the rig's relay: the client's RC ACKs are held on the wire). The other ordering
    // is reply-chunk-after-ack.
    d.hold(Hold::ServerSendCompletions);
    d.send(call.clone(), Credits::Honour)?;
    d.await_replies(xid, 1);
    d.send(call, Credits::Honour)?;
    d.until(Until::DecidedAndIdle { xid, n: 2 })?;
    d.release_all();
    d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        "each transmission offered its own Reply chunk".to_string(),
    ))
}

fn reply_chunk_after_ack(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let name = d.name("created");
    let xid = d.fresh_xid();
    let call = create_with_reply_chunk(d, xid, &name);
    retransmit_after_ack(d, xid, call)?;
    Ok(Outcome::new(
        xid,
        "retransmitted with its own Reply chunk after the reply was processed".to_string(),
    ))
}

fn reply_lost_live(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    // The reply leaves the server and is lost; the retransmit goes out on the same connection
    // while the server's Send of the lost reply cannot complete.
    d.hold(Hold::ReplyLost);
    d.send(call.clone(), Credits::Honour)?;
    let lost = d.until(Until::ReplyLost)?;
    d.send(call, Credits::Exceed)?;
    d.until(Until::Decided { xid, n: 2 })?;
    d.release_all();
    d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        format!("reply lost on the wire before the retransmit: {lost}"),
    ))
}

fn ack_lost(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (_, xid, call) = victim(d)?;
    // We take the reply and our ACK of it is lost; the retransmit goes out before the server
    // has seen its Send complete (whether its RC layer's ACK timeout sends the reply again
    // inside the hold depends on the kernel's timeout: the capture marks it, it is not judged).
    d.hold(Hold::ReplyAckLost);
    d.send(call.clone(), Credits::Honour)?;
    d.await_replies(xid, 1);
    let lost = d.until(Until::AckLost)?;
    d.send(call, Credits::Honour)?;
    d.until(Until::Decided { xid, n: 2 })?;
    d.release_all();
    d.await_replies(xid, 2);
    Ok(Outcome::new(
        xid,
        format!("our ACK of the reply lost before the retransmit: {lost}"),
    ))
}

/// A GUARDED CREATE of `name` whose reply must come back through a Reply chunk.
fn create_with_reply_chunk(d: &mut dyn Driver, xid: u32, name: &str) -> OutgoingCall {
    let root = d.root();
    let call = d.nfs_call(
        xid,
        &Nfs3Call::Create(CreateArgs {
            where_: dirop(&root, name),
            how: CreateHow3::Guarded(Sattr3::default()),
        }),
    );
    OutgoingCall {
        reply_chunk_capacity: Some(4096),
        ..call
    }
}

/// A MKDIR of "early" sent first on a new connection whose client has not posted its Receives
/// yet (the late-posting race); returns its XID and the directory's name.
fn mkdir_before_receives(d: &mut dyn Driver) -> Result<(u32, String), DriverError> {
    let name = d.name("early");
    let xid = d.fresh_xid();
    let args = mkdir(d, &name);
    let call = d.nfs_call(xid, &args);
    d.reconnect_with_late_receives()?;
    d.send(call, Credits::Honour)?;
    Ok((xid, name))
}

fn passive_first(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (xid, _) = mkdir_before_receives(d)?;
    d.until(Until::RnrNaks(1))?;
    d.post_receives()?;
    d.await_replies(xid, 1);
    let naks = d.rnr_naks().unwrap_or_default();
    Ok(Outcome::new(xid, format!("RNR NAKs: {naks}")))
}

fn passive_first_exhausted(d: &mut dyn Driver) -> Result<Outcome, DriverError> {
    let (xid, name) = mkdir_before_receives(d)?;
    d.await_replies(xid, 1);
    let naks = d.rnr_naks().unwrap_or_default();
    let after = d.lookup(&name)?;
    Ok(Outcome::new(
        xid,
        format!("RNR NAKs: {naks}, LOOKUP early after: {after}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_args_are_inferred_from_the_lookup_of_b() {
        assert_eq!(infer_changed_args("NFS3_OK", "NFS3ERR_NOENT").0, Some(2));
        assert_eq!(infer_changed_args("NFS3_OK", "NFS3_OK").0, Some(1));
        assert_eq!(infer_changed_args("no reply", "NFS3_OK").0, None);
        assert_eq!(infer_changed_args("NFS3_OK", "NFS3ERR_ACCES").0, None);
    }

    #[test]
    fn scenario_names_are_unique_and_every_requirement_is_named() {
        let mut names: Vec<&str> = catalogue().iter().map(|s| s.name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        let requiring: Vec<&str> = catalogue()
            .iter()
            .filter(|s| !s.requires.is_empty())
            .map(|s| s.name)
            .collect();
        assert_eq!(
            requiring,
            [
                "deferred",
                "after-reply-before-ack",
                "changed-args-same-xid",
                "over-credit",
                "after-reconnect-rep-lost",
                "after-reconnect-rtu-lost",
                "after-reconnect-drep-lost",
                "reply-chunk",
                "reply-lost-live",
                "ack-lost",
                "passive-first",
                "passive-first-exhausted"
            ]
        );
    }
}
