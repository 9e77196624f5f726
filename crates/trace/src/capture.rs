//! Capture files: pcap and pcapng (via the `pcap-file` crate) read from memory into numbered frames.
//!
//! Architecture Invariant: frames borrow the capture bytes; nothing here copies packet data, and
//! the number of frames is bounded by [`MAX_FRAMES`] so a hostile file cannot make us loop forever
//! or grow a vector without end.

use std::borrow::Cow;
use std::time::Duration;

use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::DataLink;

/// Most frames read from one capture; the rest is reported as truncated, not read.
pub const MAX_FRAMES: usize = 4_000_000;

/// How the bytes of a frame start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// Ethernet II (DLT_EN10MB), possibly with VLAN tags.
    Ethernet,
    /// Linux "cooked" capture v1 (DLT_LINUX_SLL), what `tcpdump -i any` writes.
    LinuxSll,
    /// Raw IPv4 or IPv6 (DLT_RAW, DLT_IPV4, DLT_IPV6).
    RawIp,
    /// Anything else: the frame is kept but not decoded.
    Other(u32),
}

impl LinkType {
    fn from_datalink(dl: DataLink) -> Self {
        match dl {
            DataLink::ETHERNET => LinkType::Ethernet,
            DataLink::LINUX_SLL => LinkType::LinuxSll,
            DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => LinkType::RawIp,
            other => LinkType::Other(u32::from(other)),
        }
    }
}

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Frame<'a> {
    /// 1-based frame number, as Wireshark counts.
    pub number: u32,
    /// Capture timestamp (since the Unix epoch).
    pub time: Duration,
    pub link: LinkType,
    /// The captured bytes (possibly fewer than were on the wire).
    pub data: Cow<'a, [u8]>,
    /// Length on the wire; larger than `data.len()` when the capture was snapped.
    pub original_len: u32,
}

/// Why a capture could not be read (frames read before the problem are still returned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureError {
    /// Neither a pcap nor a pcapng magic number.
    UnknownFormat,
    /// The file header or a record was malformed; `after_frames` frames were read first.
    Malformed { after_frames: usize, detail: String },
    /// More than [`MAX_FRAMES`] frames.
    TooManyFrames,
    /// Every frame has a link type we do not decode (not Ethernet, Linux cooked or raw IP).
    UnsupportedLink { linktype: u32 },
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::UnknownFormat => write!(f, "not a pcap or pcapng file"),
            CaptureError::Malformed {
                after_frames,
                detail,
            } => write!(f, "malformed capture after frame {after_frames}: {detail}"),
            CaptureError::TooManyFrames => write!(f, "more than {MAX_FRAMES} frames"),
            CaptureError::UnsupportedLink { linktype } => write!(
                f,
                "link type {linktype} is not Ethernet (1), Linux cooked (113) or raw IP \
                 (101, 228, 229): no frame can be decoded"
            ),
        }
    }
}

impl std::error::Error for CaptureError {}

/// Frames read from a capture, and the reason reading stopped early, if it did.
#[derive(Debug, Clone)]
pub struct Capture<'a> {
    pub frames: Vec<Frame<'a>>,
    /// Set when the file ended in a malformed or truncated record; the frames before it are kept.
    pub stopped: Option<CaptureError>,
}

const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// What [`for_each_frame`] read: how many frames, and the reason reading stopped early, if it did.
#[derive(Debug, Clone)]
pub struct Scanned {
    pub frames: usize,
    pub stopped: Option<CaptureError>,
}

/// Read every frame of a pcap or pcapng capture held in memory.
pub fn read_capture(bytes: &[u8]) -> Result<Capture<'_>, CaptureError> {
    let mut frames = Vec::new();
    let scanned = for_each_frame(bytes, |f| frames.push(f))?;
    Ok(Capture {
        frames,
        stopped: scanned.stopped,
    })
}

/// Hand every frame of a capture to `each` as it is read, without a frame list: the decoder
/// then reads each record's header and its packet together, once (a list first and the packets
/// after meant two passes over a capture larger than the caches). Fails as [`read_capture`]
/// does, before or without calling `each`.
pub fn for_each_frame<'a>(
    bytes: &'a [u8],
    each: impl FnMut(Frame<'a>),
) -> Result<Scanned, CaptureError> {
    let magic: [u8; 4] = match bytes.get(..4) {
        Some(m) => [m[0], m[1], m[2], m[3]],
        None => return Err(CaptureError::UnknownFormat),
    };
    if PCAP_MAGICS.contains(&magic) {
        read_pcap(bytes, each)
    } else if magic == PCAPNG_MAGIC {
        read_pcapng(bytes, each)
    } else {
        Err(CaptureError::UnknownFormat)
    }
}

fn read_pcap<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(Frame<'a>),
) -> Result<Scanned, CaptureError> {
    let (mut rest, parser) = PcapParser::new(bytes).map_err(|e| CaptureError::Malformed {
        after_frames: 0,
        detail: e.to_string(),
    })?;
    let header = parser.header();
    if header.version_major != 2 {
        // Every pcap since 1998 is version 2.4: anything else is not a capture file.
        return Err(CaptureError::Malformed {
            after_frames: 0,
            detail: format!(
                "pcap version {}.{} (expected 2.4)",
                header.version_major, header.version_minor
            ),
        });
    }
    let link = LinkType::from_datalink(header.datalink);
    let mut frames = 0usize;
    let mut stopped = None;
    while !rest.is_empty() {
        if frames >= MAX_FRAMES {
            stopped = Some(CaptureError::TooManyFrames);
            break;
        }
        match parser.next_packet(rest) {
            Ok((next, _)) if next.len() >= rest.len() => {
                // A record that consumed nothing would loop forever.
                stopped = Some(CaptureError::Malformed {
                    after_frames: frames,
                    detail: "record of zero length".into(),
                });
                break;
            }
            Ok((next, packet)) => {
                each(Frame {
                    number: frame_number(frames),
                    time: packet.timestamp,
                    link,
                    data: packet.data,
                    original_len: packet.orig_len,
                });
                frames += 1;
                rest = next;
            }
            Err(e) => {
                stopped = Some(CaptureError::Malformed {
                    after_frames: frames,
                    detail: e.to_string(),
                });
                break;
            }
        }
    }
    finish(frames, stopped)
}

/// A capture whose very first record is malformed is no capture: an error, not an empty trace.
fn finish(frames: usize, stopped: Option<CaptureError>) -> Result<Scanned, CaptureError> {
    match stopped {
        Some(e @ CaptureError::Malformed { .. }) if frames == 0 => Err(e),
        stopped => Ok(Scanned { frames, stopped }),
    }
}

fn read_pcapng<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(Frame<'a>),
) -> Result<Scanned, CaptureError> {
    let (mut rest, mut parser) = PcapNgParser::new(bytes).map_err(|e| CaptureError::Malformed {
        after_frames: 0,
        detail: e.to_string(),
    })?;
    let mut frames = 0usize;
    let mut stopped = None;
    while !rest.is_empty() {
        if frames >= MAX_FRAMES {
            stopped = Some(CaptureError::TooManyFrames);
            break;
        }
        let (next, block) = match parser.next_block(rest) {
            Ok(ok) => ok,
            Err(e) => {
                stopped = Some(CaptureError::Malformed {
                    after_frames: frames,
                    detail: e.to_string(),
                });
                break;
            }
        };
        if next.len() >= rest.len() {
            // A block that consumed nothing would loop forever.
            stopped = Some(CaptureError::Malformed {
                after_frames: frames,
                detail: "block of zero length".into(),
            });
            break;
        }
        rest = next;
        let link_of = |id: u32| {
            parser
                .interfaces()
                .get(id as usize)
                .map(|i| LinkType::from_datalink(i.linktype))
                .unwrap_or(LinkType::Other(u32::MAX))
        };
        let frame = match block {
            Block::EnhancedPacket(p) => Frame {
                number: frame_number(frames),
                time: p.timestamp,
                link: link_of(p.interface_id),
                data: p.data,
                original_len: p.original_len,
            },
            Block::SimplePacket(p) => Frame {
                number: frame_number(frames),
                time: Duration::ZERO,
                link: link_of(0),
                data: p.data,
                original_len: p.original_len,
            },
            Block::Packet(p) => Frame {
                number: frame_number(frames),
                // The obsolete Packet Block carries a raw 64-bit timestamp in microseconds.
                time: Duration::from_micros(p.timestamp),
                link: link_of(u32::from(p.interface_id)),
                data: p.data,
                original_len: p.original_len,
            },
            _ => continue,
        };
        each(frame);
        frames += 1;
    }
    finish(frames, stopped)
}

fn frame_number(index: usize) -> u32 {
    // index < MAX_FRAMES, which fits in u32.
    u32::try_from(index + 1).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_unknown_magic_and_short_input() {
        assert_eq!(
            read_capture(b"GIF8").unwrap_err(),
            CaptureError::UnknownFormat
        );
        assert_eq!(read_capture(b"").unwrap_err(), CaptureError::UnknownFormat);
    }

    #[test]
    fn truncated_pcap_keeps_earlier_frames() {
        let mut file = Vec::new();
        // pcap global header, little endian, microseconds, Ethernet.
        file.extend_from_slice(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]);
        file.extend_from_slice(&[0; 8]);
        file.extend_from_slice(&65535u32.to_le_bytes());
        file.extend_from_slice(&1u32.to_le_bytes());
        // one 4-byte record
        for v in [7u32, 9, 4, 4] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        file.extend_from_slice(&[1, 2, 3, 4]);
        // a record header claiming more bytes than remain
        for v in [8u32, 0, 100, 100] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        let capture = read_capture(&file).unwrap();
        assert_eq!(capture.frames.len(), 1);
        assert_eq!(capture.frames[0].number, 1);
        assert_eq!(&*capture.frames[0].data, &[1, 2, 3, 4]);
        assert_eq!(capture.frames[0].time, Duration::new(7, 9_000));
        assert!(matches!(
            capture.stopped,
            Some(CaptureError::Malformed {
                after_frames: 1,
                ..
            })
        ));
    }
}
