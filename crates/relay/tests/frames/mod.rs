//! RoCEv2 and other Ethernet frames for the relay's tests: RoCEv2 by trace's frame builder
//! (`trace::synth::roce_frame`) with hand-made AETH/DETH, the rest with etherparse.

#![allow(dead_code)]

pub const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
pub const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
pub const CLIENT_IP: [u8; 4] = [10, 0, 0, 2];
pub const SERVER_IP: [u8; 4] = [10, 0, 0, 1];
/// The client's QP (destination of the server's packets) and the server's.
pub const CLIENT_QP: u32 = 0x11;
pub const SERVER_QP: u32 = 0x22;

pub mod op {
    pub const SEND_FIRST: u8 = 0x00;
    pub const SEND_MIDDLE: u8 = 0x01;
    pub const SEND_LAST: u8 = 0x02;
    pub const SEND_LAST_IMM: u8 = 0x03;
    pub const SEND_ONLY: u8 = 0x04;
    pub const SEND_ONLY_INV: u8 = 0x17;
    pub const WRITE_ONLY: u8 = 0x0a;
    pub const READ_REQUEST: u8 = 0x0c;
    pub const READ_RESPONSE_ONLY: u8 = 0x10;
    pub const ACK: u8 = 0x11;
    pub const UD_SEND_ONLY: u8 = 0x64;
}

/// AETH syndromes.
pub const ACK_SYNDROME: u8 = 0x1f;
pub const NAK_SEQUENCE: u8 = 0x60;
pub const RNR_NAK: u8 = 0x21;

/// A RoCEv2 frame between the client and the server (trace's builder: BTH, `ext` headers,
/// payload, pad and a valid ICRC, which the relay does not check).
pub fn roce(
    from_client: bool,
    opcode: u8,
    qp: u32,
    psn: u32,
    ext: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let (src, dst) = if from_client {
        (CLIENT_IP, SERVER_IP)
    } else {
        (SERVER_IP, CLIENT_IP)
    };
    trace::synth::roce_frame(src.into(), dst.into(), opcode, qp, psn, ext, payload)
        .expect("a test frame fits one datagram")
}

/// An RPC-over-RDMA RDMA_MSG header (no chunks) followed by an RPC message of `msg_type`.
pub fn rpcrdma_msg(xid: u32, msg_type: u32, body_len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for word in [xid, 1, 32, 0, 0, 0, 0, xid, msg_type] {
        out.extend_from_slice(&word.to_be_bytes());
    }
    out.extend(std::iter::repeat_n(0xee, body_len));
    out
}

/// The client's call `xid` as a SEND Only to the server's QP.
pub fn call(psn: u32, xid: u32) -> Vec<u8> {
    call_to(SERVER_QP, psn, xid)
}

pub fn call_to(server_qp: u32, psn: u32, xid: u32) -> Vec<u8> {
    roce(
        true,
        op::SEND_ONLY,
        server_qp,
        psn,
        &[],
        &rpcrdma_msg(xid, 0, 64),
    )
}

/// The server's reply to `xid` as a SEND Only to the client's QP.
pub fn reply(psn: u32, xid: u32) -> Vec<u8> {
    roce(
        false,
        op::SEND_ONLY,
        CLIENT_QP,
        psn,
        &[],
        &rpcrdma_msg(xid, 1, 64),
    )
}

/// The server's reply to `xid` in three packets (First, Middle, Last).
pub fn reply_in_three(psn: u32, xid: u32) -> [Vec<u8>; 3] {
    [
        roce(
            false,
            op::SEND_FIRST,
            CLIENT_QP,
            psn,
            &[],
            &rpcrdma_msg(xid, 1, 64),
        ),
        roce(
            false,
            op::SEND_MIDDLE,
            CLIENT_QP,
            psn + 1,
            &[],
            &[0xee; 256],
        ),
        roce(false, op::SEND_LAST, CLIENT_QP, psn + 2, &[], &[0xee; 16]),
    ]
}

fn aeth(syndrome: u8, msn: u32) -> [u8; 4] {
    ((u32::from(syndrome) << 24) | msn).to_be_bytes()
}

/// The client's ACK of the server's packets up to `psn`.
pub fn client_ack(psn: u32) -> Vec<u8> {
    roce(true, op::ACK, SERVER_QP, psn, &aeth(ACK_SYNDROME, 1), &[])
}

/// The server's ACK of the client's packets up to `psn`.
pub fn server_ack(psn: u32) -> Vec<u8> {
    roce(false, op::ACK, CLIENT_QP, psn, &aeth(ACK_SYNDROME, 1), &[])
}

pub fn client_nak(psn: u32, syndrome: u8) -> Vec<u8> {
    roce(true, op::ACK, SERVER_QP, psn, &aeth(syndrome, 1), &[])
}

/// The server's RDMA READ request to the client's memory.
pub fn read_request(psn: u32) -> Vec<u8> {
    let mut reth = 0x1000u64.to_be_bytes().to_vec();
    reth.extend_from_slice(&0xabcdu32.to_be_bytes());
    reth.extend_from_slice(&64u32.to_be_bytes());
    roce(false, op::READ_REQUEST, CLIENT_QP, psn, &reth, &[])
}

/// The client's READ response to the server's QP.
pub fn read_response(psn: u32) -> Vec<u8> {
    roce(
        true,
        op::READ_RESPONSE_ONLY,
        SERVER_QP,
        psn,
        &aeth(ACK_SYNDROME, 1),
        &[0x55; 64],
    )
}

/// A CM MAD with `attribute` and `data`, as a UD SEND Only to QP1.
pub fn cm(from_client: bool, attribute: u16, data: &[u8]) -> Vec<u8> {
    let mut mad = vec![1, 0x07, 2, 3, 0, 0, 0, 0];
    mad.extend_from_slice(&[0; 8]);
    mad.extend_from_slice(&attribute.to_be_bytes());
    mad.extend_from_slice(&[0; 6]);
    mad.extend_from_slice(data);
    let mut deth = 0x8001_0000u32.to_be_bytes().to_vec();
    deth.extend_from_slice(&1u32.to_be_bytes());
    roce(from_client, op::UD_SEND_ONLY, 1, 0, &deth, &mad)
}

/// CM REQ from the client naming its QP.
pub fn cm_req(comm_id: u32, client_qp: u32) -> Vec<u8> {
    let mut data = vec![0u8; 232];
    data[0..4].copy_from_slice(&comm_id.to_be_bytes());
    data[32..36].copy_from_slice(&(client_qp << 8).to_be_bytes());
    cm(true, 0x0010, &data)
}

/// CM REP from the server naming its QP.
pub fn cm_rep(comm_id: u32, remote_comm_id: u32, server_qp: u32) -> Vec<u8> {
    let mut data = vec![0u8; 232];
    data[0..4].copy_from_slice(&comm_id.to_be_bytes());
    data[4..8].copy_from_slice(&remote_comm_id.to_be_bytes());
    data[12..16].copy_from_slice(&(server_qp << 8).to_be_bytes());
    cm(false, 0x0013, &data)
}

/// A CM RTU (0x0014), DREQ (0x0015) or DREP (0x0016): the two communication IDs only.
pub fn cm_ids(from_client: bool, attribute: u16, comm_id: u32, remote_comm_id: u32) -> Vec<u8> {
    let mut data = vec![0u8; 232];
    data[0..4].copy_from_slice(&comm_id.to_be_bytes());
    data[4..8].copy_from_slice(&remote_comm_id.to_be_bytes());
    cm(from_client, attribute, &data)
}

/// An ARP request from the client.
pub fn arp() -> Vec<u8> {
    let mut frame = vec![0xff; 6];
    frame.extend_from_slice(&CLIENT_MAC);
    frame.extend_from_slice(&0x0806u16.to_be_bytes());
    frame.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    frame.extend_from_slice(&CLIENT_MAC);
    frame.extend_from_slice(&CLIENT_IP);
    frame.extend_from_slice(&[0; 6]);
    frame.extend_from_slice(&SERVER_IP);
    frame
}

/// A UDP datagram from the client to the relay's control port.
pub fn control(payload: &[u8]) -> Vec<u8> {
    let builder = etherparse::PacketBuilder::ethernet2(CLIENT_MAC, SERVER_MAC)
        .ipv4(CLIENT_IP, SERVER_IP, 64)
        .udp(40000, relay::CONTROL_PORT);
    let mut frame = Vec::new();
    builder.write(&mut frame, payload).unwrap();
    frame
}

/// A TCP segment from the server (soft-iWARP's frames: MPA/DDP/RDMAP ride on TCP; the payload
/// is opaque to the relay), IPv4 or IPv6.
pub fn server_tcp(payload: &[u8], ipv6: bool) -> Vec<u8> {
    let builder = etherparse::PacketBuilder::ethernet2(SERVER_MAC, CLIENT_MAC);
    let builder = if ipv6 {
        builder.ipv6([0xfe; 16], [0xfd; 16], 64)
    } else {
        builder.ipv4(SERVER_IP, CLIENT_IP, 64)
    };
    let builder = builder.tcp(20049, 40001, 1, 65535).ack(1);
    let mut frame = Vec::new();
    builder.write(&mut frame, payload).unwrap();
    frame
}

/// A TCP segment on connection `client_port` ↔ 20049 (IPv4), from the client or the server.
fn tcp_on(from_client: bool, client_port: u16, payload: &[u8]) -> Vec<u8> {
    let (macs, ips, ports) = if from_client {
        (
            (CLIENT_MAC, SERVER_MAC),
            (CLIENT_IP, SERVER_IP),
            (client_port, 20049),
        )
    } else {
        (
            (SERVER_MAC, CLIENT_MAC),
            (SERVER_IP, CLIENT_IP),
            (20049, client_port),
        )
    };
    let builder = etherparse::PacketBuilder::ethernet2(macs.0, macs.1)
        .ipv4(ips.0, ips.1, 64)
        .tcp(ports.0, ports.1, 1, 65535)
        .ack(1);
    let mut frame = Vec::new();
    builder.write(&mut frame, payload).unwrap();
    frame
}

/// A TCP segment from the client on connection `client_port` → 20049, IPv4.
pub fn client_tcp(client_port: u16, payload: &[u8]) -> Vec<u8> {
    tcp_on(true, client_port, payload)
}

/// A TCP segment from the server on connection 20049 → `client_port`, IPv4.
pub fn server_tcp_to(client_port: u16, payload: &[u8]) -> Vec<u8> {
    tcp_on(false, client_port, payload)
}

/// An MPA Reply Frame (RFC 5044 §7.1) with no private data, from the server to `client_port`.
pub fn mpa_reply(client_port: u16) -> Vec<u8> {
    let mut payload = relay::MPA_REPLY_KEY.to_vec();
    payload.extend_from_slice(&[0x40, 0x01, 0x00, 0x00]);
    server_tcp_to(client_port, &payload)
}
