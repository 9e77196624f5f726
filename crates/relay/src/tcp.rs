//! The addressing and payload of a TCP segment in an Ethernet frame (IPv4, or IPv6 with TCP as
//! its first next header): what the iWARP accept fence needs to know which connection a
//! soft-iWARP frame travels and whether it carries an MPA Reply. Only bytes present are read.

use std::net::IpAddr;

use crate::udp::{
    be16, ETHERNET_HEADER_LEN, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_VLAN, IPV4_HEADER_LEN,
    IPV4_OFFSET_MASK, IP_PROTOCOL_TCP,
};

const IPV6_HEADER_LEN: usize = 40;
const TCP_MIN_HEADER_LEN: usize = 20;

/// One end of a TCP connection.
pub(crate) type Endpoint = (IpAddr, u16);

/// A TCP segment's ends and payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment<'a> {
    pub(crate) source: Endpoint,
    pub(crate) destination: Endpoint,
    pub(crate) payload: &'a [u8],
}

/// The TCP segment `frame` carries, if it carries one whole (an IPv4 fragment past the first
/// carries no TCP header and is not one).
pub(crate) fn segment(frame: &[u8]) -> Option<Segment<'_>> {
    let (l2, ethertype) = match be16(frame, 12)? {
        ETHERTYPE_VLAN => (ETHERNET_HEADER_LEN + 4, be16(frame, 16)?),
        other => (ETHERNET_HEADER_LEN, other),
    };
    let ip = frame.get(l2..)?;
    let (source_ip, destination_ip, tcp) = match ethertype {
        ETHERTYPE_IPV4 => {
            let header_len = usize::from(*ip.first()? & 0x0f) * 4;
            let fragment_offset = be16(ip, 6)? & IPV4_OFFSET_MASK;
            if ip.first()? >> 4 != 4
                || header_len < IPV4_HEADER_LEN
                || *ip.get(9)? != IP_PROTOCOL_TCP
                || fragment_offset != 0
            {
                return None;
            }
            let total_len = usize::from(be16(ip, 2)?);
            let source: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
            let destination: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
            (
                IpAddr::from(source),
                IpAddr::from(destination),
                ip.get(header_len..total_len)?,
            )
        }
        ETHERTYPE_IPV6 => {
            if ip.first()? >> 4 != 6 || *ip.get(6)? != IP_PROTOCOL_TCP {
                return None;
            }
            let payload_len = usize::from(be16(ip, 4)?);
            let source: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            let destination: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
            (
                IpAddr::from(source),
                IpAddr::from(destination),
                ip.get(IPV6_HEADER_LEN..IPV6_HEADER_LEN.checked_add(payload_len)?)?,
            )
        }
        _ => return None,
    };
    let header_len = usize::from(*tcp.get(12)? >> 4) * 4;
    if header_len < TCP_MIN_HEADER_LEN {
        return None;
    }
    Some(Segment {
        source: (source_ip, be16(tcp, 0)?),
        destination: (destination_ip, be16(tcp, 2)?),
        payload: tcp.get(header_len..)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_or_foreign_frames_are_no_segment() {
        assert_eq!(segment(&[]), None);
        assert_eq!(segment(&[0u8; 14]), None);
        // IPv4 header claiming TCP but cut before the TCP header.
        let mut frame = vec![0u8; 14 + 20];
        frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        frame[14] = 0x45;
        frame[16..18].copy_from_slice(&40u16.to_be_bytes());
        frame[23] = IP_PROTOCOL_TCP;
        assert_eq!(segment(&frame), None);
    }
}
