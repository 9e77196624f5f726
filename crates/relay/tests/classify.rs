//! Classification of built RoCEv2, CM, ARP and control frames.

mod frames;

use frames::*;
use relay::{
    classify, AckKind, CmKind, Direction, FrameKind, OpcodeClass, RoceInfo, RpcInfo, RpcMsg,
};

fn roce_info(direction: Direction, frame: &[u8]) -> RoceInfo {
    match classify(direction, frame).kind {
        FrameKind::Roce(info) => info,
        other => panic!("not RoCE: {other:?}"),
    }
}

#[test]
fn sends_carry_their_rpc_on_the_first_packet_only() {
    let info = roce_info(Direction::FromClient, &call(5, 0xabcd));
    assert_eq!(info.opcode, OpcodeClass::SendOnly);
    assert_eq!(info.dest_qp, SERVER_QP);
    assert_eq!(info.psn, 5);
    assert_eq!(info.ack, None);
    assert_eq!(
        info.rpc,
        Some(RpcInfo {
            xid: 0xabcd,
            msg: RpcMsg::Call
        })
    );
    let [first, middle, last] = reply_in_three(9, 0xabcd);
    let first = roce_info(Direction::FromServer, &first);
    assert_eq!(first.opcode, OpcodeClass::SendFirst);
    assert_eq!(first.rpc.map(|r| r.msg), Some(RpcMsg::Reply));
    let middle = roce_info(Direction::FromServer, &middle);
    assert_eq!((middle.opcode, middle.rpc), (OpcodeClass::SendMiddle, None));
    assert_eq!(
        roce_info(Direction::FromServer, &last).opcode,
        OpcodeClass::SendLast
    );
}

#[test]
fn immediate_and_invalidate_sends_map_to_the_plain_classes() {
    let imm = roce(
        false,
        op::SEND_LAST_IMM,
        CLIENT_QP,
        3,
        &[0, 0, 0, 9],
        &[1; 8],
    );
    assert_eq!(
        roce_info(Direction::FromServer, &imm).opcode,
        OpcodeClass::SendLast
    );
    let inv = roce(
        false,
        op::SEND_ONLY_INV,
        CLIENT_QP,
        3,
        &[0, 0, 0x12, 0x34],
        &rpcrdma_msg(4, 1, 8),
    );
    let info = roce_info(Direction::FromServer, &inv);
    assert_eq!(info.opcode, OpcodeClass::SendOnly);
    assert_eq!(info.rpc.map(|r| r.xid), Some(4));
}

#[test]
fn rdma_operations_and_acks_are_classed() {
    let mut reth = vec![0u8; 16];
    reth[15] = 4;
    let write = roce(false, op::WRITE_ONLY, CLIENT_QP, 1, &reth, &[7; 4]);
    assert_eq!(
        roce_info(Direction::FromServer, &write).opcode,
        OpcodeClass::RdmaWrite
    );
    assert_eq!(
        roce_info(Direction::FromServer, &read_request(2)).opcode,
        OpcodeClass::ReadRequest
    );
    let response = roce_info(Direction::FromClient, &read_response(2));
    assert_eq!(response.opcode, OpcodeClass::ReadResponse);
    assert_eq!(response.ack, Some(AckKind::Ack));
    let ack = roce_info(Direction::FromClient, &client_ack(0x1a));
    assert_eq!(
        (ack.opcode, ack.ack),
        (OpcodeClass::Ack, Some(AckKind::Ack))
    );
    let nak = roce_info(Direction::FromClient, &client_nak(3, NAK_SEQUENCE));
    assert_eq!(
        (nak.opcode, nak.ack),
        (OpcodeClass::Nak, Some(AckKind::Nak))
    );
    let rnr = roce_info(Direction::FromClient, &client_nak(3, RNR_NAK));
    assert_eq!(
        (rnr.opcode, rnr.ack),
        (OpcodeClass::Nak, Some(AckKind::RnrNak))
    );
    assert_eq!(
        classify(Direction::FromClient, &client_ack(0x1a)).summary(),
        "RC ACK PSN 0x00001a QP 0x000022"
    );
}

#[test]
fn rpc_role_of_messages_without_an_inline_rpc_follows_the_direction() {
    // RDMA_NOMSG (proc 1) with three empty lists.
    let mut nomsg = Vec::new();
    for word in [0x77u32, 1, 32, 1, 0, 0, 0] {
        nomsg.extend_from_slice(&word.to_be_bytes());
    }
    let from_client = roce(true, op::SEND_ONLY, SERVER_QP, 1, &[], &nomsg);
    assert_eq!(
        roce_info(Direction::FromClient, &from_client).rpc,
        Some(RpcInfo {
            xid: 0x77,
            msg: RpcMsg::Call
        })
    );
    // RDMA_ERROR ERR_CHUNK from the server answers the call.
    let mut error = Vec::new();
    for word in [0x78u32, 1, 32, 4, 2] {
        error.extend_from_slice(&word.to_be_bytes());
    }
    let from_server = roce(false, op::SEND_ONLY, CLIENT_QP, 1, &[], &error);
    assert_eq!(
        roce_info(Direction::FromServer, &from_server).rpc,
        Some(RpcInfo {
            xid: 0x78,
            msg: RpcMsg::Reply
        })
    );
    // Not RPC-over-RDMA (version 2): no RPC, still a Send.
    let mut bad = rpcrdma_msg(1, 0, 8);
    bad[7] = 2;
    let info = roce_info(
        Direction::FromClient,
        &roce(true, op::SEND_ONLY, SERVER_QP, 1, &[], &bad),
    );
    assert_eq!((info.opcode, info.rpc), (OpcodeClass::SendOnly, None));
    // An inline RPC message whose msg_type is neither call nor reply.
    let odd = rpcrdma_msg(1, 7, 8);
    let info = roce_info(
        Direction::FromClient,
        &roce(true, op::SEND_ONLY, SERVER_QP, 1, &[], &odd),
    );
    assert_eq!(info.rpc, None);
}

#[test]
fn cm_mads_are_recognised_with_their_qps() {
    let req = classify(Direction::FromClient, &cm_req(0x100, CLIENT_QP));
    let FrameKind::Cm(req) = req.kind else {
        panic!("not CM: {req:?}")
    };
    assert_eq!(req.kind, CmKind::Req);
    assert_eq!(req.local_comm_id, Some(0x100));
    assert_eq!(req.local_qpn, Some(CLIENT_QP));
    let rep = classify(Direction::FromServer, &cm_rep(0x200, 0x100, SERVER_QP));
    let FrameKind::Cm(rep) = rep.kind else {
        panic!("not CM: {rep:?}")
    };
    assert_eq!(
        (rep.kind, rep.remote_comm_id, rep.local_qpn),
        (CmKind::Rep, Some(0x100), Some(SERVER_QP))
    );
    for (attribute, kind) in [
        (0x0011, CmKind::Mra),
        (0x0012, CmKind::Rej),
        (0x0014, CmKind::Rtu),
        (0x0015, CmKind::Dreq),
        (0x0016, CmKind::Drep),
        (0x0019, CmKind::Other),
    ] {
        let info = classify(Direction::FromServer, &cm(false, attribute, &[0; 232]));
        assert!(
            matches!(info.kind, FrameKind::Cm(c) if c.kind == kind),
            "{attribute:#x}: {info:?}"
        );
    }
}

#[test]
fn everything_else_is_other_and_control_only_from_the_client() {
    assert_eq!(
        classify(Direction::FromClient, &arp()).kind,
        FrameKind::Other
    );
    assert_eq!(classify(Direction::FromClient, &[]).kind, FrameKind::Other);
    // A UD Send to a QP other than QP1 is not CM.
    let ud = roce(true, op::UD_SEND_ONLY, 5, 0, &[0; 8], &[0; 32]);
    assert_eq!(classify(Direction::FromClient, &ud).kind, FrameKind::Other);
    // Unknown opcode.
    let unknown = roce(true, 0x40, SERVER_QP, 0, &[], &[]);
    assert_eq!(
        classify(Direction::FromClient, &unknown).kind,
        FrameKind::Other
    );
    let request = control(b"\"Status\"");
    assert_eq!(
        classify(Direction::FromClient, &request).kind,
        FrameKind::Control
    );
    assert_eq!(
        classify(Direction::FromServer, &request).kind,
        FrameKind::Other
    );
}
