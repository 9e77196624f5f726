//! Invariant CRC check (IBTA Vol 1 §7.8.1, Annex A16/A17): CRC-32 over the packet with the
//! fields that routers may change masked to ones.
//!
//! For RoCEv2 the covered bytes are: 8 bytes of 0xff standing for the (absent) LRH, the IP header
//! with IPv4 TOS/TTL/checksum or IPv6 traffic class/flow label/hop limit set to ones, the UDP
//! header with its checksum set to ones, the BTH with its reserved byte (FECN/BECN) set to ones,
//! then everything up to the ICRC. The CRC is the Ethernet CRC-32; the wire carries it
//! least-significant byte first (as Linux rxe writes it).

use crate::link::IcrcPrefix;

/// Compute the ICRC of a packet. `transport` runs from the BTH to the end, ICRC included.
/// Returns `None` when the prefix headers have an unexpected size.
pub fn compute(prefix: IcrcPrefix<'_>, transport: &[u8]) -> Option<u32> {
    let covered = transport.len().checked_sub(crate::ib::ICRC_LEN)?;
    if covered < crate::ib::BTH_LEN {
        return None;
    }
    let mut hasher = crc32fast::Hasher::new();
    match prefix {
        IcrcPrefix::Ipv4 { ip, udp } => {
            hasher.update(&[0xff; 8]);
            let mut ip4: [u8; 20] = ip.try_into().ok()?;
            ip4[1] = 0xff; // TOS (DSCP + ECN)
            ip4[8] = 0xff; // TTL
            ip4[10] = 0xff; // header checksum
            ip4[11] = 0xff;
            hasher.update(&ip4);
            hasher.update(&masked_udp(udp)?);
        }
        IcrcPrefix::Ipv6 { ip, udp } => {
            hasher.update(&[0xff; 8]);
            let mut ip6: [u8; 40] = ip.try_into().ok()?;
            ip6[0] |= 0x0f; // traffic class, low nibble
            ip6[1] = 0xff; // traffic class high nibble + flow label
            ip6[2] = 0xff;
            ip6[3] = 0xff;
            ip6[7] = 0xff; // hop limit
            hasher.update(&ip6);
            hasher.update(&masked_udp(udp)?);
        }
        IcrcPrefix::Grh { grh } => {
            // RoCEv1: LRH masked as for v2, GRH with traffic class, flow label and hop limit masked.
            hasher.update(&[0xff; 8]);
            let mut g: [u8; 40] = grh.try_into().ok()?;
            g[0] |= 0x0f;
            g[1] = 0xff;
            g[2] = 0xff;
            g[3] = 0xff;
            g[7] = 0xff;
            hasher.update(&g);
        }
    }
    let mut bth = [0u8; crate::ib::BTH_LEN];
    bth.copy_from_slice(&transport[..crate::ib::BTH_LEN]);
    bth[4] = 0xff; // reserved 8 bits (FECN/BECN in RoCEv2)
    hasher.update(&bth);
    hasher.update(&transport[crate::ib::BTH_LEN..covered]);
    Some(hasher.finalize())
}

fn masked_udp(udp: &[u8]) -> Option<[u8; 8]> {
    let mut u: [u8; 8] = udp.try_into().ok()?;
    u[6] = 0xff;
    u[7] = 0xff;
    Some(u)
}

/// Whether the ICRC at the end of `transport` matches; `None` when it cannot be computed.
pub fn check(prefix: IcrcPrefix<'_>, transport: &[u8]) -> Option<bool> {
    let want = compute(prefix, transport)?;
    let tail = transport.get(transport.len() - crate::ib::ICRC_LEN..)?;
    Some(tail == want.to_le_bytes())
}
