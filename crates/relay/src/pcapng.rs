//! Byte encoders for the relay's capture (pcapng, little endian): a Section Header Block, two
//! Interface Description Blocks and one Enhanced Packet Block per frame, with the marker as the
//! packet's `opt_comment`.
//!
//! Interface 0 ([`FORWARDED_INTERFACE`], named "relayed") holds the frames in the order the relay
//! forwarded them. A frame a rule dropped is written too, so the capture shows what was lost, but
//! on interface 1 ([`DROPPED_INTERFACE`], named `trace::capture::DROPPED_BY_RIG_INTERFACE`): the
//! trace reader records it without taking it for a delivery, and any other reader can tell it
//! apart by the interface. Control replies are not captured (they are the rig talking to itself).

use trace::capture::{DROPPED_BY_RIG_INTERFACE, MAX_COMMENT};

use crate::relay::Output;

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u16 = 1;
/// Bytes of a frame kept; longer frames are cut (their original length is recorded).
pub const SNAPLEN: u32 = 65535;
/// Interface of the frames the relay forwarded.
pub const FORWARDED_INTERFACE: u32 = 0;
/// Interface of the frames a rule dropped.
pub const DROPPED_INTERFACE: u32 = 1;
/// `if_name` of interface 0.
pub const FORWARDED_INTERFACE_NAME: &str = "relayed";

const BLOCK_SECTION_HEADER: u32 = 0x0A0D_0D0A;
const BLOCK_INTERFACE_DESCRIPTION: u32 = 1;
const BLOCK_ENHANCED_PACKET: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const OPTION_END: u16 = 0;
const OPTION_COMMENT: u16 = 1;
const OPTION_IF_NAME: u16 = 2;
const OPTION_IF_TSRESOL: u16 = 9;
/// `if_tsresol` value: 10^-9 s.
const NANOSECONDS: u8 = 9;

fn pad4(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Append one option (code, length, value padded to 4 bytes).
fn option(body: &mut Vec<u8>, code: u16, value: &[u8]) {
    body.extend_from_slice(&code.to_le_bytes());
    body.extend_from_slice(&(value.len() as u16).to_le_bytes());
    body.extend_from_slice(value);
    body.extend(std::iter::repeat_n(0, pad4(value.len())));
}

fn end_of_options(body: &mut Vec<u8>) {
    body.extend_from_slice(&OPTION_END.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
}

/// A block: type, total length, body, total length again.
fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let total = (12 + body.len()) as u32;
    let mut out = Vec::with_capacity(total as usize);
    out.extend_from_slice(&block_type.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&total.to_le_bytes());
    out
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Section Header Block, version 1.0, section length unknown.
pub fn section_header_block() -> Vec<u8> {
    let mut body = Vec::with_capacity(16);
    body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    block(BLOCK_SECTION_HEADER, &body)
}

/// Interface Description Block: Ethernet, [`SNAPLEN`], named `name` (cut to 255 bytes),
/// timestamps in nanoseconds (`if_tsresol` 9). Not the microsecond default: the `pcap-file`
/// crate, which `trace` reads captures with, ignores `if_tsresol` and always takes nanoseconds,
/// so only nanoseconds read the same there and in Wireshark.
pub fn interface_description_block(name: &str) -> Vec<u8> {
    let mut body = Vec::with_capacity(16 + name.len());
    body.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&SNAPLEN.to_le_bytes());
    option(&mut body, OPTION_IF_NAME, cut(name, 255).as_bytes());
    option(&mut body, OPTION_IF_TSRESOL, &[NANOSECONDS]);
    end_of_options(&mut body);
    block(BLOCK_INTERFACE_DESCRIPTION, &body)
}

/// Enhanced Packet Block on `interface`, at `timestamp_us` microseconds (written in the
/// interfaces' nanoseconds), with an optional comment (cut to `trace::capture::MAX_COMMENT`
/// bytes, what the trace reader keeps).
pub fn enhanced_packet_block(
    interface: u32,
    timestamp_us: u64,
    frame: &[u8],
    comment: Option<&str>,
) -> Vec<u8> {
    let captured = &frame[..frame.len().min(SNAPLEN as usize)];
    let mut body = Vec::with_capacity(32 + captured.len() + MAX_COMMENT);
    let timestamp_ns = timestamp_us.saturating_mul(1_000);
    body.extend_from_slice(&interface.to_le_bytes());
    body.extend_from_slice(&((timestamp_ns >> 32) as u32).to_le_bytes());
    body.extend_from_slice(&(timestamp_ns as u32).to_le_bytes());
    body.extend_from_slice(&(captured.len() as u32).to_le_bytes());
    body.extend_from_slice(&u32::try_from(frame.len()).unwrap_or(u32::MAX).to_le_bytes());
    body.extend_from_slice(captured);
    body.extend(std::iter::repeat_n(0, pad4(captured.len())));
    if let Some(comment) = comment {
        option(
            &mut body,
            OPTION_COMMENT,
            cut(comment, MAX_COMMENT).as_bytes(),
        );
        end_of_options(&mut body);
    }
    block(BLOCK_ENHANCED_PACKET, &body)
}

/// The start of the relay's capture: the section header and both interfaces.
pub fn capture_header() -> Vec<u8> {
    let mut out = section_header_block();
    out.extend(interface_description_block(FORWARDED_INTERFACE_NAME));
    out.extend(interface_description_block(DROPPED_BY_RIG_INTERFACE));
    out
}

/// The capture record of one relay output (`None` for control replies).
pub fn output_record(timestamp_us: u64, output: &Output) -> Option<Vec<u8>> {
    match output {
        Output::Forward { frame, marker, .. } => Some(enhanced_packet_block(
            FORWARDED_INTERFACE,
            timestamp_us,
            frame,
            marker.as_ref().map(|m| m.text.as_str()),
        )),
        Output::Dropped { frame, marker, .. } => Some(enhanced_packet_block(
            DROPPED_INTERFACE,
            timestamp_us,
            frame,
            Some(&marker.text),
        )),
        Output::Reply { .. } | Output::CaseBegins { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
    use pcap_file::pcapng::{Block, PcapNgReader};
    use pcap_file::DataLink;

    use super::*;
    use crate::classify::{Direction, Side};
    use crate::relay::Marker;

    #[test]
    fn pcap_file_reads_interfaces_comments_and_times() {
        let mut capture = capture_header();
        let forwarded = Output::Forward {
            to: Side::Server,
            frame: vec![0xab; 61],
            marker: Some(Marker {
                text: "held 300 ms by the rig (rule x): SEND Only".into(),
            }),
        };
        let dropped = Output::Dropped {
            direction: Direction::FromClient,
            frame: vec![0xcd; 64],
            marker: Marker {
                text: "dropped by the rig (rule y): RC ACK".into(),
            },
        };
        capture.extend(output_record(1_500_000, &forwarded).unwrap());
        capture.extend(output_record(2_000_001, &dropped).unwrap());
        capture.extend(enhanced_packet_block(0, 3, &[1, 2, 3], None));
        let reply = Output::Reply {
            to: Side::Client,
            frame: vec![1],
        };
        assert_eq!(output_record(0, &reply), None);

        let mut reader = PcapNgReader::new(capture.as_slice()).unwrap();
        let mut interfaces = Vec::new();
        let mut packets = Vec::new();
        while let Some(block) = reader.next_block() {
            match block.unwrap() {
                Block::InterfaceDescription(idb) => {
                    assert_eq!(idb.linktype, DataLink::ETHERNET);
                    assert_eq!(idb.snaplen, SNAPLEN);
                    assert!(idb
                        .options
                        .iter()
                        .any(|o| matches!(o, InterfaceDescriptionOption::IfTsResol(9))));
                    let name = idb.options.iter().find_map(|o| match o {
                        InterfaceDescriptionOption::IfName(n) => Some(n.to_string()),
                        _ => None,
                    });
                    interfaces.push(name.unwrap());
                }
                Block::EnhancedPacket(epb) => {
                    let comment = epb.options.iter().find_map(|o| match o {
                        EnhancedPacketOption::Comment(c) => Some(c.to_string()),
                        _ => None,
                    });
                    packets.push((epb.interface_id, epb.timestamp, epb.data.to_vec(), comment));
                }
                other => panic!("unexpected block {other:?}"),
            }
        }
        assert_eq!(interfaces, ["relayed", DROPPED_BY_RIG_INTERFACE]);
        assert_eq!(packets.len(), 3);
        assert_eq!(packets[0].0, FORWARDED_INTERFACE);
        assert_eq!(packets[0].1, Duration::from_micros(1_500_000));
        assert_eq!(packets[0].2, vec![0xab; 61]);
        assert_eq!(
            packets[0].3.as_deref(),
            Some("held 300 ms by the rig (rule x): SEND Only")
        );
        assert_eq!(packets[1].0, DROPPED_INTERFACE);
        assert_eq!(packets[1].1, Duration::from_micros(2_000_001));
        assert_eq!(
            packets[1].3.as_deref(),
            Some("dropped by the rig (rule y): RC ACK")
        );
        assert_eq!(packets[2].3, None);
    }

    #[test]
    fn the_trace_reader_marks_dropped_frames_and_keeps_comments() {
        let mut capture = capture_header();
        capture.extend(enhanced_packet_block(
            DROPPED_INTERFACE,
            5,
            &[0; 60],
            Some("dropped"),
        ));
        capture.extend(enhanced_packet_block(
            FORWARDED_INTERFACE,
            6_000_123,
            &[0; 60],
            None,
        ));
        let read = trace::capture::read_capture(&capture).unwrap();
        assert_eq!(read.frames.len(), 2);
        assert!(read.frames[0].dropped_by_rig);
        assert_eq!(read.frames[0].comment.as_deref(), Some("dropped"));
        assert!(!read.frames[1].dropped_by_rig);
        assert_eq!(read.frames[1].time, Duration::from_micros(6_000_123));
    }

    #[test]
    fn long_comments_and_frames_are_cut() {
        let comment = "é".repeat(MAX_COMMENT);
        let frame = vec![7u8; SNAPLEN as usize + 10];
        let mut capture = capture_header();
        capture.extend(enhanced_packet_block(0, 0, &frame, Some(&comment)));
        let mut reader = PcapNgReader::new(capture.as_slice()).unwrap();
        let mut seen = false;
        while let Some(block) = reader.next_block() {
            if let Block::EnhancedPacket(epb) = block.unwrap() {
                assert_eq!(epb.data.len(), SNAPLEN as usize);
                assert_eq!(epb.original_len as usize, frame.len());
                let Some(EnhancedPacketOption::Comment(c)) = epb.options.first() else {
                    panic!("no comment")
                };
                assert!(c.len() <= MAX_COMMENT && c.chars().all(|ch| ch == 'é'));
                seen = true;
            }
        }
        assert!(seen);
    }
}
