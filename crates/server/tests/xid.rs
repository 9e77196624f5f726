//! The two XIDs of a call, applied as nfsd applies them: the transport header's XID routes the
//! reply back (the reply's header echoes it, net/sunrpc/xprtrdma/svc_rdma_sendto.c:1055 in
//! 6.12.117, `*p++ = *rdma_argp`), the RPC header's XID is the call's identity (the RPC reply's
//! XID and the duplicate reply cache's key, `rq_xid` from the RPC header, net/sunrpc/svc.c:1636,
//! written back at :1411). Neither endpoint compares them (RFC 8166 §4.1.1 makes them equal a
//! requester's duty, and lets a receiver key on the transport XID alone); the decoders report a
//! mismatch (`wire::message::check_xid`).

use engine::{ConnectionConfig, OutgoingCall, Requester, RequesterOutput};
use server::drc::policy_by_name;
use server::fs::Fs;
use server::Server;
use sim::{Side, Sim, SimConfig};
use wire::nfs3::{CreateArgs, CreateHow3, DirOpArgs3, Filename, Nfs3Call, Sattr3};
use wire::nfs_client::nfs3_call;
use wire::rpc::RpcMessage;

fn create(name: &str) -> Nfs3Call {
    Nfs3Call::Create(CreateArgs {
        where_: DirOpArgs3 {
            dir: Fs::default().root_handle(),
            name: Filename(name.as_bytes().to_vec()),
        },
        how: CreateHow3::Guarded(Sattr3::default()),
    })
}

/// Send an RPC message whose RPC XID is `rpc_xid` under transport XID `transport_xid`; return
/// the transport XID the reply came back under and the XID of the RPC reply inside it.
fn exchange(sim: &mut Sim<Requester, Server>, transport_xid: u32, message: Vec<u8>) -> (u32, u32) {
    sim.client
        .call(OutgoingCall::inline(transport_xid, message), true)
        .unwrap();
    sim.flush_work(Side::Client);
    assert!(sim.run_to_quiescence(10_000), "settled");
    let replies: Vec<_> = std::iter::from_fn(|| sim.client.poll_output())
        .filter_map(|out| match out {
            RequesterOutput::Reply(reply) => Some(reply),
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 1, "one reply");
    let (rpc, _) = RpcMessage::decode_prefix(&replies[0].message).unwrap();
    (replies[0].xid, rpc.xid())
}

#[test]
fn the_transport_xid_routes_the_reply_and_the_rpc_xid_keys_the_cache() {
    let config = ConnectionConfig::default();
    let drc = policy_by_name("classic", config.credits).unwrap();
    let server = Server::new(config, drc, 0x0a63_0002);
    let mut sim = Sim::new(Requester::new(config), server, SimConfig::default());
    sim.connect();
    let rpc_xid = 0x0000_b0b0;
    let call = nfs3_call(rpc_xid, &create("f"));

    // A mismatched call is executed and answered, as nfsd answers it: the header echoes the
    // transport XID, the RPC reply carries the RPC XID.
    assert_eq!(
        exchange(&mut sim, 0x0000_a0a0, call.clone()),
        (0xa0a0, rpc_xid)
    );
    // The same call under another transport XID is the same call to the cache (keyed on the
    // RPC XID and arguments): replayed, not executed again (a GUARDED CREATE would fail EXIST).
    assert_eq!(exchange(&mut sim, 0x0000_c0c0, call), (0xc0c0, rpc_xid));
    assert_eq!(sim.server.executions_of(rpc_xid, "CREATE"), 1);
    assert_eq!(sim.server.executions_of(0xa0a0, "CREATE"), 0);
    assert_eq!(sim.server.executions_of(0xc0c0, "CREATE"), 0);
}
