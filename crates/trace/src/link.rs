//! Link, network and UDP layers: find the InfiniBand transport packet inside a RoCE frame.
//!
//! RoCEv2 (IBTA Annex A17) carries the IB Base Transport Header in UDP to port 4791 over IPv4 or
//! IPv6; RoCEv1 (Annex A16) carries a GRH (40 bytes, IPv6-shaped) then the BTH in an Ethernet frame
//! with ethertype 0x8915. Ethernet, VLAN, IP and UDP are sliced with `etherparse`, which checks
//! every length against the captured bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

use crate::capture::LinkType;

/// UDP destination port of RoCEv2 (IBTA Annex A17.3).
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Ethertype of RoCEv1 (IBTA Annex A16).
pub const ROCEV1_ETHERTYPE: u16 = 0x8915;
/// Size of the IB Global Route Header that starts a RoCEv1 payload.
pub const GRH_LEN: usize = 40;

/// NFS/RDMA's registered port (RFC 5666 §10 / RFC 8166), where iWARP's MPA start frames and
/// the RoCE CM's service id point.
pub const NFS_RDMA_PORT: u16 = 20049;

/// Which RoCE encapsulation carried the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoceVersion {
    V1,
    V2,
}

/// The network-layer view of one RoCE packet: addresses and the IB transport bytes.
#[derive(Debug, Clone)]
pub struct RocePacket<'a> {
    pub version: RoceVersion,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// From the BTH up to and including the 4-byte ICRC.
    pub transport: &'a [u8],
    /// The IP header followed by the UDP header (RoCEv2) or the GRH (RoCEv1): what the ICRC
    /// covers, after masking, ahead of the BTH.
    pub icrc_prefix: IcrcPrefix<'a>,
}

/// The headers below the BTH that the ICRC covers (masked), by encapsulation.
#[derive(Debug, Clone, Copy)]
pub enum IcrcPrefix<'a> {
    /// RoCEv2 over IPv4: the 20-byte IPv4 header (no options allowed by Annex A17) and UDP header.
    Ipv4 { ip: &'a [u8], udp: &'a [u8] },
    /// RoCEv2 over IPv6: the 40-byte IPv6 header and UDP header.
    Ipv6 { ip: &'a [u8], udp: &'a [u8] },
    /// RoCEv1: the 40-byte GRH.
    Grh { grh: &'a [u8] },
}

/// Find the RoCE packet in a frame; `None` for anything that is not RoCE (or is too short).
pub fn roce_packet<'a>(link: LinkType, data: &'a [u8]) -> Option<RocePacket<'a>> {
    let sliced = match link {
        LinkType::Ethernet => SlicedPacket::from_ethernet(data).ok()?,
        LinkType::LinuxSll => SlicedPacket::from_linux_sll(data).ok()?,
        LinkType::RawIp => SlicedPacket::from_ip(data).ok()?,
        LinkType::Other(_) => return None,
    };
    match (&sliced.net, &sliced.transport) {
        (Some(net), Some(TransportSlice::Udp(udp))) => {
            if udp.destination_port() != ROCEV2_UDP_PORT || sliced.is_ip_payload_fragmented() {
                return None;
            }
            // The IP header sits right before the UDP header (RoCEv2 uses no IPv4 options or
            // IPv6 extension headers); find it by the UDP header's offset in the frame.
            let udp_offset = (udp.slice().as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
            let udp_header = udp.header_slice();
            let (src, dst, prefix) = match net {
                NetSlice::Ipv4(v4) => {
                    let h = v4.header();
                    let ip = data.get(udp_offset.checked_sub(h.slice().len())?..udp_offset)?;
                    (
                        IpAddr::V4(h.source_addr()),
                        IpAddr::V4(h.destination_addr()),
                        IcrcPrefix::Ipv4 {
                            ip,
                            udp: udp_header,
                        },
                    )
                }
                NetSlice::Ipv6(v6) => {
                    let h = v6.header();
                    let ip = data.get(udp_offset.checked_sub(h.slice().len())?..udp_offset)?;
                    (
                        IpAddr::V6(h.source_addr()),
                        IpAddr::V6(h.destination_addr()),
                        IcrcPrefix::Ipv6 {
                            ip,
                            udp: udp_header,
                        },
                    )
                }
            };
            Some(RocePacket {
                version: RoceVersion::V2,
                src,
                dst,
                transport: udp.payload(),
                icrc_prefix: prefix,
            })
        }
        (None, None) => {
            let payload = sliced.ether_payload()?;
            if payload.ether_type.0 != ROCEV1_ETHERTYPE {
                return None;
            }
            let grh = payload.payload.get(..GRH_LEN)?;
            let transport = payload.payload.get(GRH_LEN..)?;
            // GRH: IPv6-shaped; SGID at bytes 8..24, DGID at 24..40 (IBTA Vol 1 §8.3).
            let gid = |range: std::ops::Range<usize>| -> Option<IpAddr> {
                let bytes: [u8; 16] = grh.get(range)?.try_into().ok()?;
                let v6 = Ipv6Addr::from(bytes);
                Some(match v6.to_ipv4_mapped() {
                    Some(v4) => IpAddr::V4(v4),
                    None => IpAddr::V6(v6),
                })
            };
            Some(RocePacket {
                version: RoceVersion::V1,
                src: gid(8..24)?,
                dst: gid(24..40)?,
                transport,
                icrc_prefix: IcrcPrefix::Grh { grh },
            })
        }
        _ => None,
    }
}

/// An unspecified address, used where a capture has no network layer to name an endpoint.
pub const UNSPECIFIED: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

#[cfg(test)]
mod tests {
    use super::*;

    fn ethernet_ipv4_udp(dport: u16, payload: &[u8]) -> Vec<u8> {
        let builder = etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 2], [10, 0, 0, 1], 64)
            .udp(50000, dport);
        let mut out = Vec::new();
        builder.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn finds_rocev2_payload_and_addresses() {
        let frame = ethernet_ipv4_udp(ROCEV2_UDP_PORT, &[0xaa; 16]);
        let p = roce_packet(LinkType::Ethernet, &frame).unwrap();
        assert_eq!(p.version, RoceVersion::V2);
        assert_eq!(p.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(p.dst, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(p.transport, &[0xaa; 16]);
        assert!(
            matches!(p.icrc_prefix, IcrcPrefix::Ipv4 { ip, udp } if ip.len() == 20 && udp.len() == 8)
        );
    }

    #[test]
    fn ignores_other_udp_ports_and_truncated_frames() {
        let frame = ethernet_ipv4_udp(2049, &[0xaa; 16]);
        assert!(roce_packet(LinkType::Ethernet, &frame).is_none());
        let frame = ethernet_ipv4_udp(ROCEV2_UDP_PORT, &[0xaa; 16]);
        for cut in 0..frame.len() - 16 {
            assert!(roce_packet(LinkType::Ethernet, &frame[..cut]).is_none());
        }
    }

    #[test]
    fn finds_rocev1_behind_grh() {
        let mut frame = vec![2u8; 6];
        frame.extend_from_slice(&[1; 6]);
        frame.extend_from_slice(&ROCEV1_ETHERTYPE.to_be_bytes());
        let mut grh = [0u8; GRH_LEN];
        grh[0] = 0x60;
        grh[8..24].copy_from_slice(&Ipv4Addr::new(10, 0, 0, 2).to_ipv6_mapped().octets());
        grh[24..40].copy_from_slice(&Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped().octets());
        frame.extend_from_slice(&grh);
        frame.extend_from_slice(&[0xbb; 16]);
        let p = roce_packet(LinkType::Ethernet, &frame).unwrap();
        assert_eq!(p.version, RoceVersion::V1);
        assert_eq!(p.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(p.transport, &[0xbb; 16]);
        assert!(roce_packet(LinkType::Ethernet, &frame[..14 + 20]).is_none());
    }
}
