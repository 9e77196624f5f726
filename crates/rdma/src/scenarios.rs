//! The retransmission scenarios over a real connection, against any NFSv3-over-RDMA server (ours
//! or kernel nfsd). Executions cannot be counted on a foreign server, so they are *inferred* from
//! NFS statuses (a second REMOVE answered NOENT was executed twice) and every verdict says so.
//! Scenarios that need control only the simulator has are reported `unsupported-on-rdma`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use engine::{ConnectionConfig, OutgoingCall, RequesterOutput};
use serde::Serialize;
use wire::mount3::{DirPath, MntRes, Mount3Call, Mount3Proc, Mount3Reply, MOUNT_V3};
use wire::nfs3::{
    CreateArgs, CreateHow3, Ddp, DdpData, DirOpArgs3, FileHandle, Filename, LinkArgs, LookupArgs,
    MkdirArgs, Nfs3Call, Nfs3Proc, Nfs3Reply, NfsRes, RemoveArgs, RenameArgs, Sattr3, StableHow,
    WriteArgs, NFS_V3,
};
use wire::rpc::{CallHeader, ReplyBody, RpcMessage, MOUNT_PROGRAM, NFS_PROGRAM};
use wire::{Reader, Writer, Xdr};

use crate::client::{ClientError, RdmaClient};

/// Where the export's root handle comes from.
#[derive(Debug, Clone)]
pub enum RootSource {
    Handle(FileHandle),
    /// MNT over TCP (rpc.mountd on a fixed port, or `rig serve --mount-tcp`).
    MountTcp(SocketAddr),
    /// MNT over the RDMA connection itself (our server serves MOUNT v3 on the NFS listener).
    MountRdma,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub server: SocketAddr,
    pub root: RootSource,
    pub export: Vec<u8>,
    pub label: String,
    /// Longest wait for any one reply.
    pub timeout: Duration,
    /// Prefix of every name created (unique per run, so runs never collide).
    pub prefix: String,
}

/// What was observed for the XID under test.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub scenario: &'static str,
    pub label: String,
    pub procedure: &'static str,
    /// "ok", "unsupported-on-rdma" or "error".
    pub outcome: &'static str,
    pub transmissions: usize,
    pub replies: usize,
    pub replies_identical: bool,
    pub statuses: Vec<String>,
    /// Executions *inferred* from the statuses (never counted on a foreign server); null when
    /// the statuses cannot tell.
    pub executions: Option<usize>,
    /// Always "inferred" over RDMA (the simulator counts them exactly).
    pub executions_basis: &'static str,
    pub inference: String,
    /// Credits we asked for, and the server's last grant.
    pub credits_requested: u32,
    pub credits_granted: u32,
    /// Transmissions never answered when the scenario ended (credits not returned).
    pub unanswered: usize,
    /// Nothing left unanswered: every credit we used came back.
    pub credits_balanced: bool,
    pub transport_errors: usize,
    pub connects: u32,
    pub connection: &'static str,
    pub note: String,
}

#[derive(Debug, Clone)]
struct Reply {
    bytes: Vec<u8>,
    status: String,
}

/// One scenario's connection plus bookkeeping.
pub struct Session {
    client: RdmaClient,
    options: Options,
    root: FileHandle,
    next_xid: u32,
    procs: BTreeMap<u32, Nfs3Proc>,
    transmissions: BTreeMap<u32, usize>,
    replies: BTreeMap<u32, Vec<Reply>>,
    transport_errors: BTreeMap<u32, usize>,
    /// Replies that reached our Receive buffer but were lost with the connection unprocessed.
    lost_replies: usize,
}

/// A scenario body: returns the XID under test and a note.
pub type ScenarioBody = fn(&mut Session) -> Result<(u32, String), ClientError>;

/// A scenario: name, procedure, what it shows, and its body (or why it cannot run on RDMA).
pub struct Scenario {
    pub name: &'static str,
    pub procedure: &'static str,
    pub run: Result<ScenarioBody, &'static str>,
}

/// Every scenario, in the simulator's table order.
pub fn catalogue() -> Vec<Scenario> {
    vec![
        Scenario { name: "once", procedure: "REMOVE", run: Ok(once) },
        Scenario { name: "before-execution", procedure: "REMOVE", run: Ok(before_execution) },
        Scenario {
            name: "after-reply-before-ack",
            procedure: "MKDIR",
            run: Err("needs the server's Send completion held back, which only the simulator controls"),
        },
        Scenario { name: "after-ack", procedure: "REMOVE", run: Ok(after_ack) },
        Scenario { name: "after-ack-late", procedure: "REMOVE", run: Ok(after_ack_late) },
        Scenario { name: "in-ack-window", procedure: "RENAME", run: Ok(in_ack_window) },
        Scenario { name: "burst", procedure: "LINK", run: Ok(burst) },
        Scenario { name: "changed-args-same-xid", procedure: "REMOVE", run: Ok(changed_args_same_xid) },
        Scenario { name: "over-credit", procedure: "MKDIR", run: Ok(over_credit) },
        Scenario { name: "after-reconnect", procedure: "REMOVE", run: Ok(after_reconnect) },
        Scenario { name: "large-write-read-chunk", procedure: "WRITE", run: Ok(large_write_read_chunk) },
        Scenario { name: "reply-chunk", procedure: "CREATE", run: Ok(reply_chunk) },
        Scenario {
            name: "passive-first",
            procedure: "NULL",
            run: Err("needs the server's first Send to race our Receive posting, which the HCA's RNR retry hides on a real link"),
        },
        Scenario {
            name: "passive-first-exhausted",
            procedure: "NULL",
            run: Err("needs RNR retries exhausted before we post Receives; not reproducible deterministically over rxe"),
        },
    ]
}

/// Run the catalogue (or one scenario) against `options.server`.
pub fn run(options: &Options, only: Option<&str>) -> Result<Vec<Verdict>, String> {
    let scenarios: Vec<Scenario> = catalogue()
        .into_iter()
        .filter(|s| only.is_none_or(|name| s.name == name))
        .collect();
    if scenarios.is_empty() {
        return Err(format!("unknown scenario {:?}", only.unwrap_or("")));
    }
    let root = match &options.root {
        RootSource::Handle(h) => Some(h.clone()),
        RootSource::MountTcp(addr) => Some(
            crate::mount_tcp::mount(*addr, &options.export, options.timeout)
                .map_err(|e| format!("MOUNT over TCP at {addr}: {e}"))?,
        ),
        RootSource::MountRdma => None,
    };
    let mut verdicts = Vec::new();
    for scenario in scenarios {
        verdicts.push(run_one(&scenario, options, root.clone()));
    }
    Ok(verdicts)
}

fn empty_verdict(
    scenario: &Scenario,
    options: &Options,
    outcome: &'static str,
    note: String,
) -> Verdict {
    Verdict {
        scenario: scenario.name,
        label: options.label.clone(),
        procedure: scenario.procedure,
        outcome,
        transmissions: 0,
        replies: 0,
        replies_identical: true,
        statuses: Vec::new(),
        executions: None,
        executions_basis: "inferred",
        inference: String::new(),
        credits_requested: 0,
        credits_granted: 0,
        unanswered: 0,
        credits_balanced: false,
        transport_errors: 0,
        connects: 0,
        connection: "down",
        note,
    }
}

fn run_one(scenario: &Scenario, options: &Options, root: Option<FileHandle>) -> Verdict {
    let body = match scenario.run {
        Ok(body) => body,
        Err(reason) => {
            return empty_verdict(scenario, options, "unsupported-on-rdma", reason.to_string())
        }
    };
    let mut opts = options.clone();
    opts.prefix = format!("{}-{}", options.prefix, scenario.name);
    let session = Session::open(opts, root);
    let mut session = match session {
        Ok(s) => s,
        Err(e) => return empty_verdict(scenario, options, "error", e.to_string()),
    };
    match body(&mut session) {
        Ok((xid, note)) => session.verdict(scenario, xid, note),
        Err(e) => empty_verdict(scenario, options, "error", e.to_string()),
    }
}

fn dirop(dir: &FileHandle, name: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: dir.clone(),
        name: Filename(name.as_bytes().to_vec()),
    }
}

impl Session {
    fn open(options: Options, root: Option<FileHandle>) -> Result<Session, ClientError> {
        let config = ConnectionConfig::default();
        let client = RdmaClient::connect(options.server, config, options.timeout)?;
        let mut session = Session {
            client,
            options,
            root: root.clone().unwrap_or_default(),
            next_xid: std::process::id().wrapping_mul(0x10000) ^ 0x5a00_0000,
            procs: BTreeMap::new(),
            transmissions: BTreeMap::new(),
            replies: BTreeMap::new(),
            transport_errors: BTreeMap::new(),
            lost_replies: 0,
        };
        if root.is_none() {
            session.mount_rdma()?;
        }
        // Learn the server's grant (a new connection starts at one, RFC 8166 §3.3.3).
        let xid = session.fresh_xid();
        let call = session.nfs_call(xid, &Nfs3Call::Null);
        session.send(call, true)?;
        session.wait_replies(xid, 1);
        Ok(session)
    }

    fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.options.prefix)
    }

    fn fresh_xid(&mut self) -> u32 {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.next_xid
    }

    fn mount_rdma(&mut self) -> Result<(), ClientError> {
        let xid = self.fresh_xid();
        let mut message =
            CallHeader::new(xid, MOUNT_PROGRAM, MOUNT_V3, Mount3Proc::Mnt as u32).to_bytes();
        let mut w = Writer::new();
        Mount3Call::Mnt(DirPath(self.options.export.clone())).encode(&mut w);
        message.extend_from_slice(w.as_bytes());
        self.client.call(plain(xid, message), true)?;
        let timeout = self.options.timeout;
        let mut reply = None;
        self.client.run_until(timeout, |c| {
            c.outputs()
                .iter()
                .any(|o| matches!(o, RequesterOutput::Reply(r) if r.xid == xid))
        })?;
        for output in self.client.take_outputs() {
            if let RequesterOutput::Reply(r) = output {
                if r.xid == xid {
                    reply = Some(r.message);
                }
            }
        }
        let reply = reply.ok_or_else(|| ClientError::NotEstablished("no MNT reply".into()))?;
        if let Ok((RpcMessage::Reply(_), used)) = RpcMessage::decode_prefix(&reply) {
            if let Ok(Mount3Reply::Mnt(MntRes::Ok(ok))) =
                Mount3Reply::decode(Mount3Proc::Mnt, &mut Reader::new(&reply[used..]))
            {
                self.root = ok.fhandle;
                return Ok(());
            }
        }
        Err(ClientError::NotEstablished("MNT over RDMA failed".into()))
    }

    fn nfs_call(&mut self, xid: u32, args: &Nfs3Call) -> OutgoingCall {
        let proc_ = args.proc_();
        self.procs.insert(xid, proc_);
        let mut message = CallHeader::new(xid, NFS_PROGRAM, NFS_V3, proc_ as u32).to_bytes();
        message.extend_from_slice(&args.to_bytes());
        plain(xid, message)
    }

    fn send(&mut self, call: OutgoingCall, honour_credits: bool) -> Result<(), ClientError> {
        let xid = call.xid;
        self.client.call(call, honour_credits)?;
        *self.transmissions.entry(xid).or_default() += 1;
        Ok(())
    }

    fn absorb(&mut self) {
        for output in self.client.take_outputs() {
            match output {
                RequesterOutput::Reply(reply) => {
                    let status = self.status_of(reply.xid, &reply.message, &reply.write_chunk_data);
                    let mut bytes = reply.message;
                    bytes.extend(reply.write_chunk_data.unwrap_or_default());
                    self.replies
                        .entry(reply.xid)
                        .or_default()
                        .push(Reply { bytes, status });
                }
                RequesterOutput::TransportError { xid, .. } => {
                    *self.transport_errors.entry(xid).or_default() += 1;
                }
                _ => {}
            }
        }
    }

    /// Wait until `xid` has `n` replies (or the timeout); returns whether it has.
    fn wait_replies(&mut self, xid: u32, n: usize) -> bool {
        let timeout = self.options.timeout;
        let mut count = self.replies.get(&xid).map_or(0, Vec::len);
        let _ = self.client.run_until(timeout, |c| {
            let new = c
                .outputs()
                .iter()
                .filter(|o| matches!(o, RequesterOutput::Reply(r) if r.xid == xid))
                .count();
            count + new >= n
        });
        self.absorb();
        count = self.replies.get(&xid).map_or(0, Vec::len);
        count >= n
    }

    /// Send one fresh call and wait for its reply; returns its status.
    fn exec(&mut self, args: &Nfs3Call) -> Result<String, ClientError> {
        let xid = self.fresh_xid();
        let call = self.nfs_call(xid, args);
        self.send(call, true)?;
        self.wait_replies(xid, 1);
        Ok(self
            .replies
            .get(&xid)
            .and_then(|r| r.first())
            .map_or_else(|| "no reply".to_string(), |r| r.status.clone()))
    }

    fn create_file(&mut self, name: &str) -> Result<FileHandle, ClientError> {
        let xid = self.fresh_xid();
        let call = self.nfs_call(
            xid,
            &Nfs3Call::Create(CreateArgs {
                where_: dirop(&self.root, name),
                how: CreateHow3::Unchecked(Sattr3::default()),
            }),
        );
        self.send(call, true)?;
        self.wait_replies(xid, 1);
        let handle = self
            .replies
            .get(&xid)
            .and_then(|r| r.first())
            .and_then(|r| decode_nfs(Nfs3Proc::Create, &r.bytes))
            .and_then(|reply| match reply {
                Nfs3Reply::Create(NfsRes::Ok(ok)) => ok.obj,
                _ => None,
            });
        Ok(handle.unwrap_or_default())
    }

    fn lookup(&mut self, name: &str) -> Result<String, ClientError> {
        self.exec(&Nfs3Call::Lookup(LookupArgs {
            what: dirop(&self.root, name),
        }))
    }

    fn status_of(&self, xid: u32, message: &[u8], write: &Option<Vec<u8>>) -> String {
        let Ok((RpcMessage::Reply(header), used)) = RpcMessage::decode_prefix(message) else {
            return "undecodable".to_string();
        };
        match &header.body {
            ReplyBody::Accepted { stat, .. } if stat.code() != 0 => return stat.name().to_string(),
            ReplyBody::Denied(_) => return "DENIED".to_string(),
            _ => {}
        }
        let Some(proc_) = self.procs.get(&xid) else {
            return "MNT3_OK".to_string();
        };
        let ddp = if write.as_ref().is_some_and(|d| !d.is_empty()) {
            Ddp::Moved
        } else {
            Ddp::Inline
        };
        Nfs3Reply::decode_reduced(*proc_, &mut Reader::new(&message[used..]), ddp)
            .map(|r| r.status().name().to_string())
            .unwrap_or_else(|e| format!("undecodable ({})", e.rule()))
    }

    fn verdict(&mut self, scenario: &Scenario, xid: u32, note: String) -> Verdict {
        self.absorb();
        let replies = self.replies.get(&xid).cloned().unwrap_or_default();
        // A reply lost with its connection still proves an execution; it leads the list.
        let statuses: Vec<String> = std::iter::repeat_n(LOST.to_string(), self.lost_replies)
            .chain(replies.iter().map(|r| r.status.clone()))
            .collect();
        let identical = replies.windows(2).all(|w| w[0].bytes == w[1].bytes);
        let (executions, inference) = infer(scenario.procedure, &statuses);
        Verdict {
            scenario: scenario.name,
            label: self.options.label.clone(),
            procedure: scenario.procedure,
            outcome: "ok",
            transmissions: self.transmissions.get(&xid).copied().unwrap_or(0),
            replies: replies.len(),
            replies_identical: identical,
            statuses,
            executions,
            executions_basis: "inferred",
            inference,
            credits_requested: ConnectionConfig::default().credits,
            credits_granted: self.client.engine.credits_granted(),
            unanswered: self.client.engine.outstanding(),
            credits_balanced: self.client.engine.outstanding() == 0,
            transport_errors: self.transport_errors.get(&xid).copied().unwrap_or(0),
            connects: self.client.connects(),
            connection: if self.client.is_connected() {
                "up"
            } else {
                "down"
            },
            note,
        }
    }
}

/// The status recorded for a reply that reached our buffer but was lost with the connection.
const LOST: &str = "lost-with-connection";

fn plain(xid: u32, message: Vec<u8>) -> OutgoingCall {
    OutgoingCall {
        xid,
        message,
        read_chunk: None,
        write_chunk_capacity: None,
        reply_chunk_capacity: None,
    }
}

fn decode_nfs(proc_: Nfs3Proc, message: &[u8]) -> Option<Nfs3Reply> {
    let (_, used) = RpcMessage::decode_prefix(message).ok()?;
    Nfs3Reply::decode_reduced(proc_, &mut Reader::new(message.get(used..)?), Ddp::Inline).ok()
}

/// Executions inferred from the statuses of the replies to one XID. A non-idempotent procedure
/// executed again fails the second time (REMOVE/RENAME → NOENT, CREATE GUARDED/MKDIR/LINK →
/// EXIST); an identical success is a replay from the cache.
fn infer(procedure: &str, statuses: &[String]) -> (Option<usize>, String) {
    let again = match procedure {
        "REMOVE" | "RENAME" => "NFS3ERR_NOENT",
        "CREATE" | "MKDIR" | "LINK" => "NFS3ERR_EXIST",
        _ => {
            return (
                None,
                "not inferable: the procedure succeeds again when re-executed".to_string(),
            )
        }
    };
    let Some(first) = statuses.first() else {
        return (None, "no reply: nothing to infer from".to_string());
    };
    // A reply lost with its connection answered an execution: it counts as the first success.
    if first != "NFS3_OK" && first != LOST {
        return (None, format!("first reply {first}: nothing to infer from"));
    }
    let re_executed = statuses.iter().skip(1).filter(|s| *s == again).count();
    let replayed = statuses.iter().skip(1).filter(|s| *s == "NFS3_OK").count();
    (
        Some(1 + re_executed),
        format!(
            "inferred: {re_executed} later reply(ies) {again} (executed again), {replayed} NFS3_OK (replayed)"
        ),
    )
}

fn victim(s: &mut Session) -> Result<(String, OutgoingCall, u32), ClientError> {
    let name = s.name("victim");
    s.create_file(&name)?;
    let xid = s.fresh_xid();
    let call = s.nfs_call(
        xid,
        &Nfs3Call::Remove(RemoveArgs {
            object: dirop(&s.root.clone(), &name),
        }),
    );
    Ok((name, call, xid))
}

fn once(s: &mut Session) -> Result<(u32, String), ClientError> {
    let (name, call, xid) = victim(s)?;
    s.send(call, true)?;
    s.wait_replies(xid, 1);
    let after = s.lookup(&name)?;
    Ok((xid, format!("LOOKUP victim after: {after}")))
}

fn before_execution(s: &mut Session) -> Result<(u32, String), ClientError> {
    let (_, call, xid) = victim(s)?;
    // Back to back: on a real link the duplicate may meet its original in progress or not.
    s.send(call.clone(), true)?;
    s.send(call, true)?;
    let both = s.wait_replies(xid, 2);
    Ok((
        xid,
        format!("second reply within the timeout: {both} (a dropped duplicate is never answered)"),
    ))
}

fn after_ack(s: &mut Session) -> Result<(u32, String), ClientError> {
    let (_, call, xid) = victim(s)?;
    s.send(call.clone(), true)?;
    s.wait_replies(xid, 1);
    s.send(call, true)?;
    s.wait_replies(xid, 2);
    Ok((
        xid,
        "retransmitted after the reply was processed".to_string(),
    ))
}

fn after_ack_late(s: &mut Session) -> Result<(u32, String), ClientError> {
    let (_, call, xid) = victim(s)?;
    s.send(call.clone(), true)?;
    s.wait_replies(xid, 1);
    // A full credit window of later calls, then the replay.
    let window = s.client.engine.credits_granted().max(1) as usize * 2;
    for _ in 0..window {
        s.exec(&Nfs3Call::Null)?;
    }
    s.send(call, true)?;
    s.wait_replies(xid, 2);
    Ok((xid, format!("replayed after {window} later calls")))
}

fn in_ack_window(s: &mut Session) -> Result<(u32, String), ClientError> {
    let from = s.name("from");
    let to = s.name("to");
    s.create_file(&from)?;
    let xid = s.fresh_xid();
    let root = s.root.clone();
    let call = s.nfs_call(
        xid,
        &Nfs3Call::Rename(RenameArgs {
            from: dirop(&root, &from),
            to: dirop(&root, &to),
        }),
    );
    // Real-world analogue: the reply's Receive completes (our HCA acknowledged it), but our
    // software does not process it before retransmitting.
    s.client.hold_receives = true;
    s.send(call.clone(), true)?;
    let timeout = s.options.timeout;
    let held = s.client.run_until(timeout, |c| c.held_receives() >= 1)?;
    s.send(call, false)?;
    s.client.release_receives();
    s.wait_replies(xid, 2);
    Ok((
        xid,
        format!("reply held in our Receive buffer before the retransmit: {held}"),
    ))
}

fn burst(s: &mut Session) -> Result<(u32, String), ClientError> {
    let target = s.name("target");
    let file = s.create_file(&target)?;
    let xid = s.fresh_xid();
    let root = s.root.clone();
    let call = s.nfs_call(
        xid,
        &Nfs3Call::Link(LinkArgs {
            file,
            link: dirop(&root, &s.name("link")),
        }),
    );
    for _ in 0..4 {
        s.send(call.clone(), false)?;
    }
    let all = s.wait_replies(xid, 4);
    Ok((xid, format!("all four answered within the timeout: {all}")))
}

fn changed_args_same_xid(s: &mut Session) -> Result<(u32, String), ClientError> {
    let a = s.name("a");
    let b = s.name("b");
    s.create_file(&a)?;
    s.create_file(&b)?;
    let xid = s.fresh_xid();
    let root = s.root.clone();
    let first = s.nfs_call(
        xid,
        &Nfs3Call::Remove(RemoveArgs {
            object: dirop(&root, &a),
        }),
    );
    let second = s.nfs_call(
        xid,
        &Nfs3Call::Remove(RemoveArgs {
            object: dirop(&root, &b),
        }),
    );
    s.send(first, true)?;
    s.wait_replies(xid, 1);
    s.send(second, true)?;
    s.wait_replies(xid, 2);
    let b_after = s.lookup(&b)?;
    let executed = if b_after == "NFS3ERR_NOENT" {
        "second REMOVE executed (b is gone)"
    } else {
        "second REMOVE NOT executed: answered with the first call's cached reply (b still exists)"
    };
    Ok((xid, format!("{executed}; LOOKUP b: {b_after}")))
}

fn over_credit(s: &mut Session) -> Result<(u32, String), ClientError> {
    let grant = s.client.engine.credits_granted().max(1) as usize;
    let mut xids = Vec::new();
    for i in 0..=grant {
        let xid = s.fresh_xid();
        let root = s.root.clone();
        let call = s.nfs_call(
            xid,
            &Nfs3Call::Mkdir(MkdirArgs {
                where_: dirop(&root, &s.name(&format!("dir{i}"))),
                attributes: Sattr3::default(),
            }),
        );
        s.send(call, false)?;
        xids.push(xid);
    }
    let last = *xids.last().unwrap_or(&0);
    let mut answered = 0;
    for xid in &xids {
        answered += usize::from(s.wait_replies(*xid, 1));
    }
    Ok((
        last,
        format!(
            "{} calls against a grant of {grant}: {answered} answered (the HCA's RNR retry covers the gap until a Receive is reposted)",
            xids.len()
        ),
    ))
}

fn after_reconnect(s: &mut Session) -> Result<(u32, String), ClientError> {
    let (_, call, xid) = victim(s)?;
    // The reply reaches our buffer, then the connection goes before we process it: what
    // xprtrdma does on a timeout. The retransmit goes out on the new connection.
    s.client.hold_receives = true;
    s.send(call.clone(), true)?;
    let timeout = s.options.timeout;
    let held = s.client.run_until(timeout, |c| c.held_receives() >= 1)?;
    s.lost_replies = s.client.held_receives();
    s.client.disconnect()?;
    s.client.hold_receives = false;
    s.client.reconnect()?;
    // A new connection starts with a grant of one.
    s.send(call, true)?;
    s.wait_replies(xid, 1);
    Ok((
        xid,
        format!("first reply received then lost with the connection: {held}"),
    ))
}

fn large_write_read_chunk(s: &mut Session) -> Result<(u32, String), ClientError> {
    let name = s.name("big");
    let file = s.create_file(&name)?;
    let xid = s.fresh_xid();
    let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    let reduced = s.nfs_call(
        xid,
        &Nfs3Call::Write(WriteArgs {
            file,
            offset: 0,
            count: data.len() as u32,
            stable: StableHow::FileSync,
            data: DdpData::Moved {
                length: data.len() as u32,
            },
        }),
    );
    // RFC 8166 §3.4.5: the Read chunk's position is the XDR position of the data item (the
    // last item of WRITE3args, right after the reduced stream).
    let position = reduced.message.len() as u32;
    let call = OutgoingCall {
        read_chunk: Some((position, data)),
        ..reduced
    };
    s.send(call.clone(), true)?;
    s.send(call, true)?;
    let both = s.wait_replies(xid, 2);
    Ok((xid, format!("both transmissions answered: {both}")))
}

fn reply_chunk(s: &mut Session) -> Result<(u32, String), ClientError> {
    let name = s.name("created");
    let xid = s.fresh_xid();
    let root = s.root.clone();
    let mut call = s.nfs_call(
        xid,
        &Nfs3Call::Create(CreateArgs {
            where_: dirop(&root, &name),
            how: CreateHow3::Guarded(Sattr3::default()),
        }),
    );
    call.reply_chunk_capacity = Some(4096);
    s.send(call.clone(), true)?;
    s.wait_replies(xid, 1);
    s.send(call, true)?;
    s.wait_replies(xid, 2);
    Ok((
        xid,
        "each transmission offered its own Reply chunk".to_string(),
    ))
}

/// The verdicts as a table.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut out = format!(
        "{:<24} {:<8} {:<20} {:>4} {:>4} {:>5} {:<9} {:<32} {:>7}  {}\n",
        "scenario", "proc", "outcome", "tx", "rx", "same", "exec*", "statuses", "credit", "note"
    );
    for v in verdicts {
        out.push_str(&format!(
            "{:<24} {:<8} {:<20} {:>4} {:>4} {:>5} {:<9} {:<32} {:>7}  {}\n",
            v.scenario,
            v.procedure,
            v.outcome,
            v.transmissions,
            v.replies,
            v.replies_identical,
            v.executions.map_or("?".to_string(), |n| n.to_string()),
            v.statuses.join(","),
            format!("{}/{}", v.unanswered, v.credits_granted),
            v.note
        ));
    }
    out.push_str("exec* = executions inferred from NFS statuses; credit = unanswered/granted\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executions_are_inferred_from_statuses() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            infer("REMOVE", &s(&["NFS3_OK", "NFS3ERR_NOENT"])).0,
            Some(2)
        );
        assert_eq!(infer("REMOVE", &s(&["NFS3_OK", "NFS3_OK"])).0, Some(1));
        assert_eq!(
            infer("LINK", &s(&["NFS3_OK", "NFS3ERR_EXIST", "NFS3_OK"])).0,
            Some(2)
        );
        assert_eq!(infer("WRITE", &s(&["NFS3_OK", "NFS3_OK"])).0, None);
        assert_eq!(infer("REMOVE", &s(&["NFS3ERR_NOENT"])).0, None);
        assert_eq!(infer("REMOVE", &[]).0, None);
        assert_eq!(infer("REMOVE", &s(&[LOST, "NFS3ERR_NOENT"])).0, Some(2));
        assert_eq!(infer("REMOVE", &s(&[LOST, "NFS3_OK"])).0, Some(1));
    }

    #[test]
    fn every_simulator_scenario_is_covered_or_explained() {
        let ours: Vec<&str> = catalogue().iter().map(|s| s.name).collect();
        let simulator: Vec<&str> = client::scenarios::catalogue()
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(ours, simulator);
        for scenario in catalogue() {
            if let Err(reason) = scenario.run {
                assert!(!reason.is_empty());
            }
        }
    }
}
