//! MOUNT calls over the transport: what the server records for each is the status its reply
//! carries (a MNT of a path that is not exported is recorded as MNT3ERR_NOENT, not MNT3_OK).

use engine::{ConnectionConfig, OutgoingCall, Requester};
use server::drc::policy_by_name;
use server::Server;
use sim::{Side, Sim, SimConfig};
use wire::mount3::{DirPath, Mount3Call, Mountstat3};
use wire::nfs_client::{mount3_call, Status};

/// Send `calls` one at a time over the simulator and return the statuses the server recorded.
fn recorded_statuses(calls: &[Mount3Call]) -> Vec<Status> {
    let config = ConnectionConfig::default();
    let drc = policy_by_name("classic", config.credits).unwrap();
    let server = Server::new(config, drc, 0x0a63_0002);
    let mut sim = Sim::new(Requester::new(config), server, SimConfig::default());
    sim.connect();
    for (i, call) in calls.iter().enumerate() {
        let xid = 0x2000 + u32::try_from(i).unwrap();
        sim.client
            .call(OutgoingCall::inline(xid, mount3_call(xid, call)), true)
            .unwrap();
        sim.flush_work(Side::Client);
        assert!(sim.run_to_quiescence(10_000), "call {i} settled");
    }
    sim.server.executions().iter().map(|e| e.status).collect()
}

#[test]
fn a_mount_is_recorded_with_the_status_of_its_reply() {
    let statuses = recorded_statuses(&[
        Mount3Call::Mnt(DirPath(b"/export".to_vec())),
        Mount3Call::Mnt(DirPath(b"/not-exported".to_vec())),
        Mount3Call::Export,
    ]);
    assert_eq!(
        statuses,
        [
            Status::Mount3(Mountstat3::Ok),
            Status::Mount3(Mountstat3::Noent),
            Status::Mount3(Mountstat3::Ok),
        ]
    );
}
