//! The catalogue of retransmission scenarios. Each one drives our requester (which retransmits on a
//! live connection on purpose) against the reference server and names the XID whose fate the
//! verdict reports.

use engine::OutgoingCall;
use sim::{Action, Side};
use wire::nfs3::{
    CreateArgs, CreateHow3, DdpData, DirOpArgs3, FileHandle, Filename, LinkArgs, MkdirArgs,
    Nfs3Call, Nfs3Reply, NfsRes, RemoveArgs, RenameArgs, Sattr3, StableHow, WriteArgs,
};
use wire::nfs_client;

use crate::harness::Harness;

/// What a scenario reports back besides what the harness recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The XID under test.
    pub xid: u32,
    /// A scenario-specific observation (file-system state, RNR count, ...).
    pub note: String,
}

/// One named scenario.
pub struct Scenario {
    pub name: &'static str,
    /// The NFSv3 procedure under test.
    pub procedure: &'static str,
    /// What the scenario proves.
    pub proves: &'static str,
    pub run: fn(&mut Harness) -> Outcome,
}

/// Every scenario, in table order.
pub fn catalogue() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "once",
            procedure: "REMOVE",
            proves: "baseline: one transmission, one execution, one reply, credits balanced",
            run: once,
        },
        Scenario {
            name: "before-execution",
            procedure: "REMOVE",
            proves: "a duplicate that meets its original in progress is dropped (classic, acked: \
                     the client's credit for it never comes back) or parked and answered \
                     (acked-mark)",
            run: before_execution,
        },
        Scenario {
            name: "after-reply-before-ack",
            procedure: "MKDIR",
            proves: "a retransmit that arrives after the reply was posted but before its Send \
                     completed is answered from the cache under every policy",
            run: after_reply_before_ack,
        },
        Scenario {
            name: "after-ack",
            procedure: "REMOVE",
            proves: "a retransmit from a client that already holds the reply: classic replays \
                     it; acked has evicted the entry and executes REMOVE again (NOENT)",
            run: after_ack,
        },
        Scenario {
            name: "after-ack-late",
            procedure: "REMOVE",
            proves: "the limit of acked-mark: a replay sent after a full credit window of later \
                     calls is executed again (classic still has it cached)",
            run: after_ack_late,
        },
        Scenario {
            name: "in-ack-window",
            procedure: "RENAME",
            proves: "the reply is in the client's buffer and acknowledged, the client's software \
                     has not seen it and retransmits: acked executes RENAME twice",
            run: in_ack_window,
        },
        Scenario {
            name: "burst",
            procedure: "LINK",
            proves: "the same call four times back to back: every transmission is accounted \
                     for (dropped, parked, replayed or executed) as the scheduler interleaves",
            run: burst,
        },
        Scenario {
            name: "changed-args-same-xid",
            procedure: "REMOVE",
            proves: "a different REMOVE (same length) reusing the XID: classic's checksum tells \
                     them apart; without it (acked, acked-mark) the first reply answers the \
                     second call and it is never executed",
            run: changed_args_same_xid,
        },
        Scenario {
            name: "over-credit",
            procedure: "MKDIR",
            proves: "a retransmit beyond the credit grant finds no Receive posted: RNR NAK, and \
                     the retry succeeds once the server reposts",
            run: over_credit,
        },
        Scenario {
            name: "after-reconnect",
            procedure: "WRITE",
            proves: "what xprtrdma does: the reply is lost with the connection, the retransmit \
                     on the new connection is answered from the cache under every policy",
            run: after_reconnect,
        },
        Scenario {
            name: "large-write-read-chunk",
            procedure: "WRITE",
            proves: "a retransmit while the server pulls the first transmission's Read chunk: \
                     both pulls complete, the DRC sees two in-flight duplicates",
            run: large_write_read_chunk,
        },
        Scenario {
            name: "reply-chunk",
            procedure: "CREATE",
            proves: "the cached reply goes back through the retransmit's own Reply chunk (the \
                     first one is invalidated; reusing it would be a remote access error)",
            run: reply_chunk,
        },
        Scenario {
            name: "passive-first",
            procedure: "MKDIR",
            proves: "the server's reply arrives before the client posted Receives: RNR NAK and \
                     its retry cover the race",
            run: passive_first,
        },
        Scenario {
            name: "passive-first-exhausted",
            procedure: "MKDIR",
            proves: "if Receives are never posted the RNR retry count runs out and the \
                     connection breaks; the call executed but no reply arrives",
            run: passive_first_exhausted,
        },
    ]
}

fn dirop(dir: &FileHandle, name: &str) -> DirOpArgs3 {
    DirOpArgs3 {
        dir: dir.clone(),
        name: Filename(name.as_bytes().to_vec()),
    }
}

fn remove(h: &Harness, name: &str) -> Nfs3Call {
    Nfs3Call::Remove(RemoveArgs {
        object: dirop(&h.root, name),
    })
}

fn mkdir(h: &Harness, name: &str) -> Nfs3Call {
    Nfs3Call::Mkdir(MkdirArgs {
        where_: dirop(&h.root, name),
        attributes: Sattr3::default(),
    })
}

fn create_guarded(h: &Harness, name: &str) -> Nfs3Call {
    Nfs3Call::Create(CreateArgs {
        where_: dirop(&h.root, name),
        how: CreateHow3::Guarded(Sattr3::default()),
    })
}

/// Create a regular file directly on the server (a fixture, not part of the verdict).
fn fixture_file(h: &mut Harness, name: &str) -> FileHandle {
    let call = Nfs3Call::Create(CreateArgs {
        where_: dirop(&h.root, name),
        how: CreateHow3::Unchecked(Sattr3::default()),
    });
    match h.fixture(&call) {
        Nfs3Reply::Create(NfsRes::Ok(ok)) => ok.obj.unwrap_or_default(),
        _ => FileHandle::default(),
    }
}

fn ready(policy_h: &mut Harness) {
    policy_h.mount();
}

fn has_name(h: &Harness, name: &str) -> bool {
    h.root_names().iter().any(|n| n == name)
}

/// Mounted, with a file "victim" and a REMOVE of it under a fresh XID: the call most scenarios
/// retransmit (REMOVE executed twice answers NFS3ERR_NOENT).
fn victim(h: &mut Harness) -> (u32, OutgoingCall) {
    ready(h);
    fixture_file(h, "victim");
    let xid = h.fresh_xid();
    let call = remove(h, "victim");
    (xid, h.nfs_call(xid, &call))
}

fn victim_outcome(h: &Harness, xid: u32) -> Outcome {
    Outcome {
        xid,
        note: format!("victim present: {}", has_name(h, "victim")),
    }
}

fn once(h: &mut Harness) -> Outcome {
    let (xid, call) = victim(h);
    h.send(call, true);
    h.settle();
    victim_outcome(h, xid)
}

fn before_execution(h: &mut Harness) -> Outcome {
    let (xid, call) = victim(h);
    // No nfsd thread runs until both transmissions have been received.
    h.hold(Action::UpperLayer(Side::Server));
    h.send(call.clone(), true);
    h.send(call, true);
    h.run_until(|h| h.sim.server.queued() >= 2);
    h.release_all();
    h.settle();
    victim_outcome(h, xid)
}

fn after_reply_before_ack(h: &mut Harness) -> Outcome {
    ready(h);
    let xid = h.fresh_xid();
    let call = mkdir(h, "dir");
    let call = h.nfs_call(xid, &call);
    // The server may not see its Send complete, nor the client its reply, until the retransmit
    // has been looked up.
    h.hold(Action::PollSendQueue(Side::Server));
    h.hold(Action::PollRecvQueue(Side::Client));
    h.send(call.clone(), true);
    h.run_until(|h| h.client_unpolled() >= 1);
    h.send(call, true);
    h.run_until(|h| h.decisions(xid).len() >= 2);
    h.release_all();
    h.settle();
    Outcome {
        xid,
        note: format!("dir present: {}", has_name(h, "dir")),
    }
}

fn after_ack(h: &mut Harness) -> Outcome {
    let (xid, call) = victim(h);
    h.send(call.clone(), true);
    // The client processes the reply and the server processes the Send completion.
    h.settle();
    h.send(call, true);
    h.settle();
    victim_outcome(h, xid)
}

fn after_ack_late(h: &mut Harness) -> Outcome {
    let (xid, call) = victim(h);
    h.send(call.clone(), true);
    h.settle();
    // A full credit window of other calls, one at a time.
    for i in 0..h.credits {
        let other = h.fresh_xid();
        let args = mkdir(h, &format!("d{i}"));
        let other_call = h.nfs_call(other, &args);
        h.send(other_call, true);
        h.settle();
    }
    h.send(call, true);
    h.settle();
    victim_outcome(h, xid)
}

fn in_ack_window(h: &mut Harness) -> Outcome {
    ready(h);
    fixture_file(h, "src");
    let xid = h.fresh_xid();
    let call = Nfs3Call::Rename(RenameArgs {
        from: dirop(&h.root, "src"),
        to: dirop(&h.root, "dst"),
    });
    let call = h.nfs_call(xid, &call);
    h.hold(Action::PollRecvQueue(Side::Client));
    h.send(call.clone(), true);
    // Reply landed and acknowledged; the server has polled the Send completion.
    h.run_until(|h| h.client_unpolled() >= 1 && h.sim.pending_send_completions(Side::Server) == 0);
    h.send(call, true);
    h.run_until(|h| {
        h.client_unpolled() >= 2 || h.decisions(xid).len() >= 2 && !h.server_has_work()
    });
    h.release_all();
    h.settle();
    Outcome {
        xid,
        note: format!(
            "src present: {}, dst present: {}",
            has_name(h, "src"),
            has_name(h, "dst")
        ),
    }
}

fn burst(h: &mut Harness) -> Outcome {
    ready(h);
    let file = fixture_file(h, "file");
    let xid = h.fresh_xid();
    let call = Nfs3Call::Link(LinkArgs {
        file,
        link: dirop(&h.root, "link"),
    });
    let call = h.nfs_call(xid, &call);
    for _ in 0..4 {
        h.send(call.clone(), true);
    }
    h.settle();
    Outcome {
        xid,
        note: format!("link present: {}", has_name(h, "link")),
    }
}

fn changed_args_same_xid(h: &mut Harness) -> Outcome {
    ready(h);
    fixture_file(h, "a1");
    fixture_file(h, "a2");
    let xid = h.fresh_xid();
    let first = remove(h, "a1");
    let first = h.nfs_call(xid, &first);
    let second = remove(h, "a2");
    let second = h.nfs_call(xid, &second);
    // Reuse the XID while the first reply is still unacknowledged (so even acked has it).
    h.hold(Action::PollSendQueue(Side::Server));
    h.send(first, true);
    h.run_until(|h| !h.replies(xid).is_empty());
    h.send(second, true);
    h.run_until(|h| h.decisions(xid).len() >= 2 && !h.server_has_work());
    h.release_all();
    h.settle();
    Outcome {
        xid,
        note: format!(
            "a1 present: {}, a2 present: {}",
            has_name(h, "a1"),
            has_name(h, "a2")
        ),
    }
}

fn over_credit(h: &mut Harness) -> Outcome {
    ready(h);
    let mut target = 0;
    let mut first_call = None;
    // Fill the grant with distinct calls the server may not process yet.
    h.hold(Action::PollRecvQueue(Side::Server));
    for i in 0..h.credits {
        let xid = h.fresh_xid();
        let args = mkdir(h, &format!("m{i}"));
        let call = h.nfs_call(xid, &args);
        if i == 0 {
            target = xid;
            first_call = Some(call.clone());
        }
        h.send(call, true);
    }
    // Retransmit the first one: over the grant, deliberately.
    let refused_under_credits =
        h.sim.client.outstanding() >= h.sim.client.credits_granted() as usize;
    if let Some(call) = first_call {
        h.send(call, false);
    }
    h.run_until(|h| h.sim.stats().rnr_naks >= 1);
    h.release_all();
    h.settle();
    Outcome {
        xid: target,
        note: format!(
            "requester refused it with credits honoured: {}, RNR NAKs: {}",
            refused_under_credits,
            h.sim.stats().rnr_naks
        ),
    }
}

fn after_reconnect(h: &mut Harness) -> Outcome {
    ready(h);
    let file = fixture_file(h, "file");
    let xid = h.fresh_xid();
    let args = Nfs3Call::Write(WriteArgs {
        file,
        offset: 0,
        count: 5,
        stable: StableHow::FileSync,
        data: DdpData::Inline(b"hello".to_vec()),
    });
    let call = h.nfs_call(xid, &args);
    // The reply is posted but never leaves the server: the client times out and reconnects.
    h.hold(Action::Transmit(Side::Server));
    h.send(call.clone(), true);
    h.run_until(|h| h.sim.in_flight(Side::Server) >= 1 && !h.server_has_work());
    h.release_all();
    h.sim.disconnect(Side::Client);
    h.collect();
    h.settle();
    h.connect();
    h.settle();
    h.send(call, true);
    h.settle();
    Outcome {
        xid,
        note: format!("connections: {}", h.sim.stats().connections),
    }
}

fn large_write_read_chunk(h: &mut Harness) -> Outcome {
    ready(h);
    let file = fixture_file(h, "big");
    let xid = h.fresh_xid();
    // 8 KiB: no server's FSINFO wtmax is smaller, so the WRITE needs no FSINFO first.
    let length = nfs_client::UNASKED_TRANSFER_MAX;
    let args = Nfs3Call::Write(WriteArgs {
        file,
        offset: 0,
        count: length,
        stable: StableHow::FileSync,
        data: DdpData::Moved { length },
    });
    let call = h.nfs_call_moving(xid, &args, nfs_client::pattern(length));
    // Hold the server's RDMA Reads until the retransmit has arrived too.
    h.hold(Action::Transmit(Side::Server));
    h.send(call.clone(), true);
    h.run_until(|h| h.sim.in_flight(Side::Server) >= 1);
    h.send(call, true);
    h.run_until(|h| h.sim.in_flight(Side::Server) >= 2);
    h.release_all();
    h.settle();
    Outcome {
        xid,
        note: format!("file size after: {}", file_size(h, "big")),
    }
}

fn file_size(h: &mut Harness, name: &str) -> u64 {
    let call = Nfs3Call::Lookup(wire::nfs3::LookupArgs {
        what: dirop(&h.root, name),
    });
    match h.fixture(&call) {
        Nfs3Reply::Lookup(NfsRes::Ok(ok)) => ok.obj_attributes.map_or(0, |a| a.size),
        _ => 0,
    }
}

fn reply_chunk(h: &mut Harness) -> Outcome {
    ready(h);
    let xid = h.fresh_xid();
    let args = create_guarded(h, "new");
    let base = h.nfs_call(xid, &args);
    let call = OutgoingCall {
        reply_chunk_capacity: Some(4096),
        ..base
    };
    // The client gets the first reply (and invalidates its Reply chunk); the server has not seen
    // the Send complete when the retransmit, with a fresh Reply chunk, arrives.
    h.hold(Action::PollSendQueue(Side::Server));
    h.send(call.clone(), true);
    h.run_until(|h| !h.replies(xid).is_empty());
    h.send(call, true);
    h.run_until(|h| h.decisions(xid).len() >= 2 && !h.server_has_work());
    h.release_all();
    h.settle();
    let paths: Vec<String> = h
        .replies(xid)
        .iter()
        .map(|r| format!("{:?}", r.reply.path))
        .collect();
    Outcome {
        xid,
        note: format!("reply paths: {}", paths.join(",")),
    }
}

/// A MKDIR of "early" sent first on a new connection whose client has not posted its Receives
/// yet (the late-posting race); returns its XID.
fn mkdir_before_receives(h: &mut Harness) -> u32 {
    ready(h);
    let xid = h.fresh_xid();
    let args = mkdir(h, "early");
    let call = h.nfs_call(xid, &args);
    h.sim.disconnect(Side::Client);
    h.settle();
    h.sim.client.defer_receive_posting();
    h.connect();
    h.send(call, true);
    xid
}

fn passive_first(h: &mut Harness) -> Outcome {
    let xid = mkdir_before_receives(h);
    h.run_until(|h| h.sim.stats().rnr_naks >= 1);
    h.sim.client.post_receives();
    h.sim.flush_work(Side::Client);
    h.settle();
    Outcome {
        xid,
        note: format!("RNR NAKs: {}", h.sim.stats().rnr_naks),
    }
}

fn passive_first_exhausted(h: &mut Harness) -> Outcome {
    let xid = mkdir_before_receives(h);
    h.settle();
    Outcome {
        xid,
        note: format!(
            "RNR NAKs: {}, early present: {}",
            h.sim.stats().rnr_naks,
            has_name(h, "early")
        ),
    }
}
