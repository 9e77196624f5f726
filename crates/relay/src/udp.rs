//! Ethernet/IPv4/UDP framing of the relay's control datagrams: finding a datagram to
//! [`CONTROL_PORT`] in a frame (what frame classification needs) and the header arithmetic the
//! control channel builds its replies with. Apart from `control` so classification does not
//! import the control protocol.

use std::net::Ipv4Addr;

/// UDP destination port of control requests.
pub const CONTROL_PORT: u16 = 4792;
pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(crate) const ETHERTYPE_VLAN: u16 = 0x8100;
pub(crate) const ETHERNET_HEADER_LEN: usize = 14;
pub(crate) const IPV4_HEADER_LEN: usize = 20;
pub(crate) const UDP_HEADER_LEN: usize = 8;
pub(crate) const IP_PROTOCOL_UDP: u8 = 17;
pub(crate) const IP_PROTOCOL_TCP: u8 = 6;
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86dd;
pub(crate) const IPV4_MORE_FRAGMENTS: u16 = 0x2000;
pub(crate) const IPV4_OFFSET_MASK: u16 = 0x1fff;
pub(crate) const REPLY_TTL: u8 = 64;

/// The Ethernet, IPv4 and UDP addressing of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpEndpoints {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub src_port: u16,
    pub dst_port: u16,
}

impl UdpEndpoints {
    /// The addressing of an answer.
    pub fn swapped(&self) -> UdpEndpoints {
        UdpEndpoints {
            src_mac: self.dst_mac,
            dst_mac: self.src_mac,
            src_ip: self.dst_ip,
            dst_ip: self.src_ip,
            src_port: self.dst_port,
            dst_port: self.src_port,
        }
    }
}

/// A datagram to [`CONTROL_PORT`] found in a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlDatagram<'a> {
    pub endpoints: UdpEndpoints,
    /// The UDP payload (for a fragmented request, what the first fragment holds of it).
    pub payload: &'a [u8],
    /// The request is the first fragment of a larger IP packet.
    pub fragmented: bool,
    pub ip_id: u16,
}

/// One IPv4 UDP packet (or fragment) in an Ethernet frame.
pub(crate) struct Ipv4Udp<'a> {
    pub(crate) src_mac: [u8; 6],
    pub(crate) dst_mac: [u8; 6],
    pub(crate) src_ip: Ipv4Addr,
    pub(crate) dst_ip: Ipv4Addr,
    pub(crate) ip_id: u16,
    pub(crate) more_fragments: bool,
    /// In bytes.
    pub(crate) fragment_offset: usize,
    pub(crate) header_checksum_ok: bool,
    /// The IP payload (UDP header included when `fragment_offset` is 0).
    pub(crate) ip_payload: &'a [u8],
}

pub(crate) fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

pub(crate) fn mac(bytes: &[u8], at: usize) -> Option<[u8; 6]> {
    bytes.get(at..at + 6)?.try_into().ok()
}

pub(crate) fn ipv4_udp(frame: &[u8]) -> Option<Ipv4Udp<'_>> {
    let mut l2 = ETHERNET_HEADER_LEN;
    let mut ethertype = be16(frame, 12)?;
    if ethertype == ETHERTYPE_VLAN {
        ethertype = be16(frame, 16)?;
        l2 += 4;
    }
    if ethertype != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = frame.get(l2..)?;
    let first = *ip.first()?;
    let header_len = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || header_len < IPV4_HEADER_LEN || *ip.get(9)? != IP_PROTOCOL_UDP {
        return None;
    }
    let total_len = usize::from(be16(ip, 2)?);
    let header = ip.get(..header_len)?;
    let ip_payload = ip.get(header_len..total_len)?;
    let flags = be16(ip, 6)?;
    Some(Ipv4Udp {
        src_mac: mac(frame, 6)?,
        dst_mac: mac(frame, 0)?,
        src_ip: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        dst_ip: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        ip_id: be16(ip, 4)?,
        more_fragments: flags & IPV4_MORE_FRAGMENTS != 0,
        fragment_offset: usize::from(flags & IPV4_OFFSET_MASK) * 8,
        header_checksum_ok: internet_checksum(header) == 0,
        ip_payload,
    })
}

/// Whether `frame` carries a TCP segment (IPv4, or IPv6 with TCP as its first next header):
/// what soft-iWARP's MPA/DDP/RDMAP ride on. Only the headers' bytes that are present are read.
pub(crate) fn is_tcp(frame: &[u8]) -> bool {
    let (l2, ethertype) = match be16(frame, 12) {
        Some(ETHERTYPE_VLAN) => (ETHERNET_HEADER_LEN + 4, be16(frame, 16)),
        other => (ETHERNET_HEADER_LEN, other),
    };
    let Some(ip) = frame.get(l2..) else {
        return false;
    };
    match ethertype {
        Some(ETHERTYPE_IPV4) => {
            ip.first().is_some_and(|b| b >> 4 == 4) && ip.get(9) == Some(&IP_PROTOCOL_TCP)
        }
        Some(ETHERTYPE_IPV6) => {
            ip.first().is_some_and(|b| b >> 4 == 6) && ip.get(6) == Some(&IP_PROTOCOL_TCP)
        }
        _ => false,
    }
}

/// The datagram to [`CONTROL_PORT`] in `frame`, if it is one (IPv4, UDP, first or only
/// fragment).
pub fn control_datagram(frame: &[u8]) -> Option<ControlDatagram<'_>> {
    let packet = ipv4_udp(frame)?;
    if packet.fragment_offset != 0 {
        return None;
    }
    let udp = packet.ip_payload.get(..UDP_HEADER_LEN)?;
    let dst_port = be16(udp, 2)?;
    if dst_port != CONTROL_PORT {
        return None;
    }
    let payload = if packet.more_fragments {
        packet.ip_payload.get(UDP_HEADER_LEN..)?
    } else {
        let udp_len = usize::from(be16(udp, 4)?);
        packet.ip_payload.get(UDP_HEADER_LEN..udp_len)?
    };
    Some(ControlDatagram {
        endpoints: UdpEndpoints {
            src_mac: packet.src_mac,
            dst_mac: packet.dst_mac,
            src_ip: packet.src_ip,
            dst_ip: packet.dst_ip,
            src_port: be16(udp, 0)?,
            dst_port,
        },
        payload,
        fragmented: packet.more_fragments,
        ip_id: packet.ip_id,
    })
}

/// RFC 1071 checksum over `bytes` (0 when a header holding its own checksum is intact).
pub(crate) fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let word = u16::from_be_bytes([pair[0], pair.get(1).copied().unwrap_or(0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
