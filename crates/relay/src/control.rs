//! The relay's in-band control channel: a UDP datagram over IPv4 from the client side to
//! [`CONTROL_PORT`] carries one JSON [`ControlRequest`]; the relay never forwards it and answers
//! with a UDP datagram carrying one JSON [`ControlReply`] back to the sender (Ethernet addresses,
//! IP addresses and ports swapped, IPv4 header checksum valid, UDP checksum 0 = none).
//!
//! The rig in the client guest addresses the request to the server guest's IP, so the guest's
//! ARP resolves through the relay like any other traffic, and reads the reply from the same
//! socket. A request must fit one frame: the relay does not reassemble IP fragments, so a
//! fragmented request is answered with an error (its first fragment) and its other fragments
//! pass on to the server, which drops them when reassembly times out. Replies are fragmented at
//! [`REPLY_MTU`] when they are longer, which the guest's IP stack reassembles.
//!
//! 4792 is the port after RoCEv2's 4791, unassigned by IANA and not used by the rig otherwise.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::rules::RuleSet;
use crate::udp::{
    be16, internet_checksum, ipv4_udp, ETHERNET_HEADER_LEN, ETHERTYPE_IPV4, IPV4_HEADER_LEN,
    IPV4_MORE_FRAGMENTS, IP_PROTOCOL_UDP, REPLY_TTL, UDP_HEADER_LEN,
};
pub use crate::udp::{control_datagram, ControlDatagram, UdpEndpoints, CONTROL_PORT};

/// Largest request payload accepted.
pub const MAX_CONTROL_REQUEST: usize = 64 * 1024;
/// Largest reply payload: a longer reply is replaced by an error (the largest status, 64 rules
/// with their counters, is far below).
pub const MAX_CONTROL_REPLY: usize = 60 * 1024;
/// IP packet size the reply is fragmented to (the guests' Ethernet MTU).
pub const REPLY_MTU: usize = 1500;

/// Counters of one rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleStats {
    pub name: String,
    /// Frames the rule acted on.
    pub hits: u64,
    pub dropped: u64,
    /// Held, delayed or reordered.
    pub held: u64,
    pub duplicated: u64,
    /// Forwarded at once because the hold limits were reached.
    pub not_held_over_limit: u64,
}

/// The relay's counters, as `Status` reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// The installed rule set's case (`""` when none).
    pub case: String,
    /// Frames held now, and their bytes.
    pub held: u64,
    pub held_bytes: u64,
    /// Frames sent on (duplicates included).
    pub forwarded: u64,
    pub dropped: u64,
    pub duplicated: u64,
    /// Frames ever held, delayed or reordered.
    pub held_total: u64,
    /// Held frames released because they reached `max_hold_micros`.
    pub released_by_limit: u64,
    /// Frames a rule would have held, forwarded at once because the hold limits were reached.
    pub not_held_over_limit: u64,
    pub control_requests: u64,
    pub control_errors: u64,
    pub tracked_xids: u64,
    pub rules: Vec<RuleStats>,
    /// Client frames the iWARP accept fence held (also in `held_total`), and new soft-iWARP
    /// connections left unfenced because `MAX_FENCED_CONNECTIONS` stood already.
    #[serde(default)]
    pub fenced: u64,
    #[serde(default)]
    pub unfenced_over_limit: u64,
}

/// What a control request asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlRequest {
    /// Install a case's rules (frames held under the previous rules are released first).
    SetRules(RuleSet),
    /// Release the frames held until `Release { name }`.
    Release {
        name: String,
    },
    /// Remove the rules (frames held are released).
    Clear,
    /// A case starts: as `Clear`, and the capture is cut here, so each case's frames also go
    /// to a file of their own named by `case` (validated like a rule set's case name).
    Begin {
        case: String,
    },
    Status,
}

/// The relay's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlReply {
    /// The rule set now installed: its case and number of rules (`""` and 0 after `Clear`).
    Ok {
        case: String,
        rules: u32,
    },
    /// How many held frames a `Release` let go.
    Released {
        name: String,
        frames: u32,
    },
    Status(Stats),
    Error {
        message: String,
    },
}

/// Why a control payload or reply could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlError {
    TooLarge {
        len: usize,
        max: usize,
    },
    Fragmented {
        ip_id: u16,
    },
    Json {
        message: String,
    },
    /// A reply frame that is not an unfragmented-or-fragment IPv4 UDP packet.
    NotIpv4Udp {
        frame_len: usize,
    },
    BadIpChecksum {
        ip_id: u16,
    },
    /// Fragments that do not make one datagram (missing, overlapping, mixed IDs).
    Reassembly {
        ip_id: u16,
    },
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::TooLarge { len, max } => {
                write!(f, "control datagram of {len} bytes, at most {max}")
            }
            ControlError::Fragmented { ip_id } => write!(
                f,
                "control request is IP-fragmented (id {ip_id:#06x}); the relay reads one frame"
            ),
            ControlError::Json { message } => write!(f, "malformed control JSON: {message}"),
            ControlError::NotIpv4Udp { frame_len } => {
                write!(f, "frame of {frame_len} bytes is not IPv4 UDP")
            }
            ControlError::BadIpChecksum { ip_id } => {
                write!(f, "IPv4 header checksum wrong (id {ip_id:#06x})")
            }
            ControlError::Reassembly { ip_id } => {
                write!(f, "fragments of id {ip_id:#06x} do not make one datagram")
            }
        }
    }
}

impl std::error::Error for ControlError {}

/// Parse a request payload.
pub fn parse_request(payload: &[u8]) -> Result<ControlRequest, ControlError> {
    if payload.len() > MAX_CONTROL_REQUEST {
        return Err(ControlError::TooLarge {
            len: payload.len(),
            max: MAX_CONTROL_REQUEST,
        });
    }
    serde_json::from_slice(payload).map_err(|e| ControlError::Json {
        message: crate::bounded_text(&e.to_string()),
    })
}

/// Ethernet frames carrying one UDP datagram with `payload` from `endpoints.src` to
/// `endpoints.dst`, IPv4-fragmented at [`REPLY_MTU`]; `None` when the payload does not fit one
/// UDP datagram.
pub fn udp_frames(endpoints: &UdpEndpoints, ip_id: u16, payload: &[u8]) -> Option<Vec<Vec<u8>>> {
    let udp_len = u16::try_from(UDP_HEADER_LEN + payload.len()).ok()?;
    if usize::from(udp_len) + IPV4_HEADER_LEN > usize::from(u16::MAX) {
        return None;
    }
    let mut datagram = Vec::with_capacity(usize::from(udp_len));
    datagram.extend_from_slice(&endpoints.src_port.to_be_bytes());
    datagram.extend_from_slice(&endpoints.dst_port.to_be_bytes());
    datagram.extend_from_slice(&udp_len.to_be_bytes());
    datagram.extend_from_slice(&[0, 0]);
    datagram.extend_from_slice(payload);
    // Fragment offsets count 8-byte units, so every fragment but the last is a multiple of 8.
    let piece_len = (REPLY_MTU - IPV4_HEADER_LEN) & !7;
    let pieces = datagram.chunks(piece_len).count();
    let mut frames = Vec::with_capacity(pieces);
    for (index, piece) in datagram.chunks(piece_len).enumerate() {
        let offset_units = (index * piece_len / 8) as u16;
        let more = if index + 1 < pieces {
            IPV4_MORE_FRAGMENTS
        } else {
            0
        };
        let total_len = (IPV4_HEADER_LEN + piece.len()) as u16;
        let mut header = [0u8; IPV4_HEADER_LEN];
        header[0] = 0x45;
        header[2..4].copy_from_slice(&total_len.to_be_bytes());
        header[4..6].copy_from_slice(&ip_id.to_be_bytes());
        header[6..8].copy_from_slice(&(more | offset_units).to_be_bytes());
        header[8] = REPLY_TTL;
        header[9] = IP_PROTOCOL_UDP;
        header[12..16].copy_from_slice(&endpoints.src_ip.octets());
        header[16..20].copy_from_slice(&endpoints.dst_ip.octets());
        let checksum = internet_checksum(&header);
        header[10..12].copy_from_slice(&checksum.to_be_bytes());
        let mut frame = Vec::with_capacity(ETHERNET_HEADER_LEN + total_len as usize);
        frame.extend_from_slice(&endpoints.dst_mac);
        frame.extend_from_slice(&endpoints.src_mac);
        frame.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(piece);
        frames.push(frame);
    }
    Some(frames)
}

/// The frames answering a request that came with `request` addressing.
pub fn reply_frames(request: &UdpEndpoints, ip_id: u16, reply: &ControlReply) -> Vec<Vec<u8>> {
    let json = reply_json(reply);
    udp_frames(&request.swapped(), ip_id, &json).unwrap_or_default()
}

fn reply_json(reply: &ControlReply) -> Vec<u8> {
    let json = serde_json::to_vec(reply).unwrap_or_default();
    if json.len() <= MAX_CONTROL_REPLY {
        return json;
    }
    let too_large = ControlReply::Error {
        message: format!("reply of {} bytes exceeds {MAX_CONTROL_REPLY}", json.len()),
    };
    serde_json::to_vec(&too_large).unwrap_or_default()
}

/// A request frame as the client's IP stack would send it (one frame: requests are not
/// fragmented); for tests and tools that inject requests.
pub fn request_frame(
    endpoints: &UdpEndpoints,
    ip_id: u16,
    request: &ControlRequest,
) -> Option<Vec<u8>> {
    let json = serde_json::to_vec(request).ok()?;
    let mut frames = udp_frames(endpoints, ip_id, &json)?;
    if frames.len() == 1 {
        frames.pop()
    } else {
        None
    }
}

/// Read a reply from its frames (one, or the IPv4 fragments in any order), checking the IPv4
/// header checksums.
pub fn decode_reply(frames: &[&[u8]]) -> Result<(UdpEndpoints, ControlReply), ControlError> {
    let mut pieces = Vec::with_capacity(frames.len().min(64));
    let mut ip_id = None;
    for frame in frames {
        let packet = ipv4_udp(frame).ok_or(ControlError::NotIpv4Udp {
            frame_len: frame.len(),
        })?;
        if !packet.header_checksum_ok {
            return Err(ControlError::BadIpChecksum {
                ip_id: packet.ip_id,
            });
        }
        if *ip_id.get_or_insert(packet.ip_id) != packet.ip_id {
            return Err(ControlError::Reassembly {
                ip_id: packet.ip_id,
            });
        }
        pieces.push(packet);
    }
    let ip_id = ip_id.unwrap_or(0);
    pieces.sort_by_key(|p| p.fragment_offset);
    let reassembly = ControlError::Reassembly { ip_id };
    let mut datagram = Vec::new();
    for (index, piece) in pieces.iter().enumerate() {
        let last = index + 1 == pieces.len();
        if piece.fragment_offset != datagram.len() || piece.more_fragments == last {
            return Err(reassembly);
        }
        if datagram.len() + piece.ip_payload.len() > usize::from(u16::MAX) {
            return Err(ControlError::TooLarge {
                len: datagram.len() + piece.ip_payload.len(),
                max: usize::from(u16::MAX),
            });
        }
        datagram.extend_from_slice(piece.ip_payload);
    }
    let first = pieces.first().ok_or(ControlError::Reassembly { ip_id })?;
    let udp_len = usize::from(be16(&datagram, 4).ok_or(ControlError::Reassembly { ip_id })?);
    let payload = datagram
        .get(UDP_HEADER_LEN..udp_len)
        .ok_or(ControlError::Reassembly { ip_id })?;
    let reply = serde_json::from_slice(payload).map_err(|e| ControlError::Json {
        message: crate::bounded_text(&e.to_string()),
    })?;
    let endpoints = UdpEndpoints {
        src_mac: first.src_mac,
        dst_mac: first.dst_mac,
        src_ip: first.src_ip,
        dst_ip: first.dst_ip,
        src_port: be16(&datagram, 0).unwrap_or(0),
        dst_port: be16(&datagram, 2).unwrap_or(0),
    };
    Ok((endpoints, reply))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn client() -> UdpEndpoints {
        UdpEndpoints {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: Ipv4Addr::new(10, 99, 0, 2),
            dst_ip: Ipv4Addr::new(10, 99, 0, 1),
            src_port: 40000,
            dst_port: CONTROL_PORT,
        }
    }

    #[test]
    fn request_frame_is_found_and_parsed() {
        let frame = request_frame(&client(), 9, &ControlRequest::Status).unwrap();
        let datagram = control_datagram(&frame).unwrap();
        assert_eq!(datagram.endpoints, client());
        assert!(!datagram.fragmented);
        assert_eq!(parse_request(datagram.payload), Ok(ControlRequest::Status));
        // etherparse agrees the frame is well formed.
        let sliced = etherparse::SlicedPacket::from_ethernet(&frame).unwrap();
        assert!(matches!(
            sliced.transport,
            Some(etherparse::TransportSlice::Udp(u)) if u.destination_port() == CONTROL_PORT
        ));
    }

    #[test]
    fn reply_round_trips_with_swapped_addresses_and_a_valid_checksum() {
        let reply = ControlReply::Released {
            name: "go".into(),
            frames: 3,
        };
        let frames = reply_frames(&client(), 0x1234, &reply);
        assert_eq!(frames.len(), 1);
        let (endpoints, back) = decode_reply(&[&frames[0]]).unwrap();
        assert_eq!(endpoints, client().swapped());
        assert_eq!(back, reply);
        let sliced = etherparse::SlicedPacket::from_ethernet(&frames[0]).unwrap();
        let Some(etherparse::NetSlice::Ipv4(ip)) = sliced.net else {
            panic!("not IPv4")
        };
        let header = ip.header().to_header();
        assert_eq!(header.header_checksum, header.calc_header_checksum());
        let Some(etherparse::TransportSlice::Udp(udp)) = sliced.transport else {
            panic!("not UDP")
        };
        assert_eq!(udp.checksum(), 0);
        assert_eq!(udp.source_port(), CONTROL_PORT);
        assert_eq!(udp.destination_port(), 40000);
    }

    #[test]
    fn a_long_reply_is_fragmented_and_reassembles_in_any_order() {
        let rules = (0..64)
            .map(|i| RuleStats {
                name: format!("rule-with-a-long-name-{i:040}"),
                ..RuleStats::default()
            })
            .collect();
        let reply = ControlReply::Status(Stats {
            case: "long".into(),
            rules,
            ..Stats::default()
        });
        let mut frames = reply_frames(&client(), 7, &reply);
        assert!(frames.len() > 2, "{} frames", frames.len());
        assert!(frames
            .iter()
            .all(|f| f.len() <= REPLY_MTU + ETHERNET_HEADER_LEN));
        frames.reverse();
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        assert_eq!(decode_reply(&refs).unwrap().1, reply);
        // A missing fragment is an error, not a short reply.
        assert_eq!(
            decode_reply(&refs[1..]),
            Err(ControlError::Reassembly { ip_id: 7 })
        );
        let mut corrupt = frames[0].clone();
        corrupt[ETHERNET_HEADER_LEN + 8] ^= 1;
        assert_eq!(
            decode_reply(&[&corrupt]),
            Err(ControlError::BadIpChecksum { ip_id: 7 })
        );
    }

    #[test]
    fn malformed_and_oversized_requests_are_typed_errors() {
        assert!(matches!(
            parse_request(b"{\"SetRules\":"),
            Err(ControlError::Json { .. })
        ));
        assert!(matches!(
            parse_request(b"\"Reboot\""),
            Err(ControlError::Json { .. })
        ));
        let big = vec![b' '; MAX_CONTROL_REQUEST + 1];
        assert_eq!(
            parse_request(&big),
            Err(ControlError::TooLarge {
                len: MAX_CONTROL_REQUEST + 1,
                max: MAX_CONTROL_REQUEST
            })
        );
        // An echo of a huge unknown name is cut.
        let long = format!("\"{}\"", "x".repeat(10_000));
        let Err(ControlError::Json { message }) = parse_request(long.as_bytes()) else {
            panic!("accepted")
        };
        assert!(message.len() <= crate::MAX_TEXT);
    }

    #[test]
    fn other_udp_and_truncated_frames_are_not_control() {
        let mut other = client();
        other.dst_port = 4791;
        let frame = udp_frames(&other, 1, b"{}").unwrap().pop().unwrap();
        assert!(control_datagram(&frame).is_none());
        let frame = request_frame(&client(), 1, &ControlRequest::Clear).unwrap();
        for cut in 0..frame.len() {
            // Truncation never panics; a cut inside the payload is no longer a datagram.
            let _ = control_datagram(&frame[..cut]);
        }
        assert!(control_datagram(&frame[..frame.len() - 1]).is_none());
    }
}
