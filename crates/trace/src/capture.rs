//! Capture files: pcap and pcapng (via the `pcap-file` crate) read into numbered frames, from
//! memory ([`for_each_frame`]) or streamed from a reader through one reused window
//! ([`for_each_frame_read`]: a large capture is not held whole, so its pages are not faulted in
//! one by one; the window is refilled by the caller's reader, the library opens no file).
//!
//! Architecture Invariant: frames borrow the capture bytes (or the window); nothing here copies
//! packet data, and the number of frames is bounded by [`MAX_FRAMES`] so a hostile file cannot
//! make us loop forever or grow a vector without end. The window grows only to hold one record
//! that does not fit, never past the bytes the reader gives.

use std::borrow::Cow;
use std::io::Read;
use std::time::Duration;

use pcap_file::pcap::{PcapPacket, PcapParser};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketOption;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption;
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::{DataLink, PcapError};

/// The name (`if_name`) of the pcapng interface the rig's relay writes the frames a rule dropped
/// on: they are in the capture for the record, but never reached the peer, so no reader may
/// treat them as delivered.
pub const DROPPED_BY_RIG_INTERFACE: &str = "dropped by the rig";

/// Longest frame comment kept (a hostile file's comment is cut, not copied whole).
pub const MAX_COMMENT: usize = 512;

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
    /// The pcapng packet comment (`opt_comment`), at most [`MAX_COMMENT`] bytes: the rig's relay
    /// marks each fault it injected this way.
    pub comment: Option<String>,
    /// The frame sits on the relay's [`DROPPED_BY_RIG_INTERFACE`]: it never reached the peer.
    pub dropped_by_rig: bool,
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
    /// The reader of a streamed capture failed (or ran out of memory for the window).
    Read { detail: String },
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
            CaptureError::Read { detail } => write!(f, "reading the capture: {detail}"),
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

fn read_pcap<'a>(bytes: &'a [u8], each: impl FnMut(Frame<'a>)) -> Result<Scanned, CaptureError> {
    let (rest, parser) = PcapParser::new(bytes).map_err(|e| CaptureError::Malformed {
        after_frames: 0,
        detail: e.to_string(),
    })?;
    let link = pcap_link(&parser)?;
    scan(
        rest,
        "record",
        |rest, frames| {
            let (next, packet) = parser.next_packet(rest).map_err(|e| e.to_string())?;
            Ok((next, Some(pcap_frame(packet, link, frames))))
        },
        each,
    )
}

fn read_pcapng<'a>(bytes: &'a [u8], each: impl FnMut(Frame<'a>)) -> Result<Scanned, CaptureError> {
    let (rest, mut parser) = PcapNgParser::new(bytes).map_err(|e| CaptureError::Malformed {
        after_frames: 0,
        detail: e.to_string(),
    })?;
    scan(
        rest,
        "block",
        |rest, frames| {
            let (next, block) = parser.next_block(rest).map_err(|e| e.to_string())?;
            Ok((next, pcapng_frame(&parser, block, frames)))
        },
        each,
    )
}

/// Step through a capture's records with `next` (the rest after one record, and the frame it
/// holds if any) within the frame budget ([`MAX_FRAMES`]), stopping at a malformed record or one
/// that consumed nothing (which would loop forever); `each` gets every frame.
fn scan<'a>(
    mut rest: &'a [u8],
    record: &str,
    mut next: impl FnMut(&'a [u8], usize) -> Result<(&'a [u8], Option<Frame<'a>>), String>,
    mut each: impl FnMut(Frame<'a>),
) -> Result<Scanned, CaptureError> {
    let mut frames = 0usize;
    let mut stopped = None;
    while !rest.is_empty() {
        if frames >= MAX_FRAMES {
            stopped = Some(CaptureError::TooManyFrames);
            break;
        }
        let (after, frame) = match next(rest, frames) {
            Ok((after, _)) if after.len() >= rest.len() => {
                stopped = Some(CaptureError::Malformed {
                    after_frames: frames,
                    detail: format!("{record} of zero length"),
                });
                break;
            }
            Ok(ok) => ok,
            Err(detail) => {
                stopped = Some(CaptureError::Malformed {
                    after_frames: frames,
                    detail,
                });
                break;
            }
        };
        rest = after;
        if let Some(frame) = frame {
            each(frame);
            frames += 1;
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

/// The link type of a pcap capture, once its header says it is one (version 2).
fn pcap_link(parser: &PcapParser) -> Result<LinkType, CaptureError> {
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
    Ok(LinkType::from_datalink(header.datalink))
}

/// Frame number `frames + 1` from a pcap record.
fn pcap_frame(packet: PcapPacket<'_>, link: LinkType, frames: usize) -> Frame<'_> {
    Frame {
        number: frame_number(frames),
        time: packet.timestamp,
        link,
        data: packet.data,
        original_len: packet.orig_len,
        comment: None,
        dropped_by_rig: false,
    }
}

/// Frame number `frames + 1` from a pcapng block, if the block is a packet.
fn pcapng_frame<'a>(parser: &PcapNgParser, block: Block<'a>, frames: usize) -> Option<Frame<'a>> {
    let link_of = |id: u32| {
        parser
            .interfaces()
            .get(id as usize)
            .map(|i| LinkType::from_datalink(i.linktype))
            .unwrap_or(LinkType::Other(u32::MAX))
    };
    Some(match block {
        Block::EnhancedPacket(p) => Frame {
            number: frame_number(frames),
            time: p.timestamp,
            link: link_of(p.interface_id),
            comment: p.options.iter().find_map(|option| match option {
                EnhancedPacketOption::Comment(text) => Some(bounded_comment(text)),
                _ => None,
            }),
            dropped_by_rig: parser
                .interfaces()
                .get(p.interface_id as usize)
                .is_some_and(|i| {
                    i.options.iter().any(|option| {
                        matches!(option, InterfaceDescriptionOption::IfName(name)
                            if name == DROPPED_BY_RIG_INTERFACE)
                    })
                }),
            data: p.data,
            original_len: p.original_len,
        },
        Block::SimplePacket(p) => Frame {
            number: frame_number(frames),
            time: Duration::ZERO,
            link: link_of(0),
            data: p.data,
            original_len: p.original_len,
            comment: None,
            dropped_by_rig: false,
        },
        Block::Packet(p) => Frame {
            number: frame_number(frames),
            // The obsolete Packet Block carries a raw 64-bit timestamp in microseconds.
            time: Duration::from_micros(p.timestamp),
            link: link_of(u32::from(p.interface_id)),
            data: p.data,
            original_len: p.original_len,
            comment: None,
            dropped_by_rig: false,
        },
        _ => return None,
    })
}

/// A comment cut to [`MAX_COMMENT`] bytes at a character boundary.
fn bounded_comment(text: &str) -> String {
    let mut end = text.len().min(MAX_COMMENT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// Bytes the window of [`for_each_frame_read`] starts with (it grows only for a larger record).
pub const READ_WINDOW: usize = 256 << 10;

/// The part of a streamed capture a frame's data borrows: `bytes` start at `offset` in the
/// capture (so a payload's place in the capture is `offset` + its place in `bytes`).
#[derive(Debug, Clone, Copy)]
pub struct Window<'w> {
    pub bytes: &'w [u8],
    pub offset: usize,
}

/// A capture read through one reused buffer: `buf[start..end]` is read and not yet consumed.
struct Stream<'r> {
    reader: &'r mut dyn Read,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Offset in the capture of `buf[0]`.
    offset: usize,
    eof: bool,
}

impl Stream<'_> {
    fn avail(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn window(&self) -> Window<'_> {
        Window {
            bytes: self.avail(),
            offset: self.offset + self.start,
        }
    }

    /// Read more, keeping the bytes not consumed (moved to the front; the buffer doubles only
    /// when they fill it); false at the end of the input.
    fn more(&mut self) -> Result<bool, CaptureError> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.offset += self.start;
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grow = self.buf.len().max(READ_WINDOW);
            self.buf
                .try_reserve_exact(grow)
                .map_err(|_| CaptureError::Read {
                    detail: format!(
                        "out of memory for a record of more than {} bytes",
                        self.buf.len()
                    ),
                })?;
            self.buf.resize(self.buf.len() + grow, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(CaptureError::Read {
                        detail: e.to_string(),
                    })
                }
            }
        }
    }

    /// Parse the next item with `parse`, reading more while it says the buffer is incomplete
    /// and the input has more: at the end of the input `parse` sees every byte left, so it
    /// fails (or not) as it would on the capture held whole.
    fn next<T>(
        &mut self,
        mut parse: impl FnMut(&[u8]) -> Result<T, PcapError>,
    ) -> Result<Result<T, PcapError>, CaptureError> {
        loop {
            match parse(&self.buf[self.start..self.end]) {
                Err(PcapError::IncompleteBuffer) if self.more()? => {}
                result => return Ok(result),
            }
        }
    }

    /// Hand each record after the file header to `each`, as `record` parses it from the window
    /// (the bytes left after it, and its frame: none for a pcapng block that holds no packet),
    /// until the input ends, [`MAX_FRAMES`] frames were handed on or a record is malformed;
    /// the same loop for pcap records and pcapng blocks (`unit` names one in the error).
    /// Returns the frames handed on and why the scan stopped early, if it did.
    fn records(
        &mut self,
        unit: &str,
        each: &mut impl FnMut(Frame<'_>, Window<'_>),
        mut record: impl FnMut(&[u8], usize) -> Result<(&[u8], Option<Frame<'_>>), PcapError>,
    ) -> Result<(usize, Option<CaptureError>), CaptureError> {
        let mut frames = 0usize;
        loop {
            if self.start == self.end && !self.more()? {
                return Ok((frames, None));
            }
            if frames >= MAX_FRAMES {
                return Ok((frames, Some(CaptureError::TooManyFrames)));
            }
            let window = self.window();
            let (used, frame) = match record(window.bytes, frames) {
                Ok((next, _)) if next.len() >= window.bytes.len() => {
                    // A record that consumed nothing would loop forever.
                    let detail = format!("{unit} of zero length");
                    return Ok((
                        frames,
                        Some(CaptureError::Malformed {
                            after_frames: frames,
                            detail,
                        }),
                    ));
                }
                Ok((next, frame)) => (window.bytes.len() - next.len(), frame),
                Err(PcapError::IncompleteBuffer) if !self.eof => {
                    self.more()?;
                    continue;
                }
                Err(e) => {
                    let detail = e.to_string();
                    return Ok((
                        frames,
                        Some(CaptureError::Malformed {
                            after_frames: frames,
                            detail,
                        }),
                    ));
                }
            };
            if let Some(frame) = frame {
                each(frame, window);
                frames += 1;
            }
            self.start += used;
        }
    }
}

/// [`for_each_frame`] for a capture read from `reader` through a window of [`READ_WINDOW`]
/// bytes: each frame comes with the [`Window`] its data borrows. Fails as [`for_each_frame`]
/// does on the same bytes, and with [`CaptureError::Read`] when the reader fails.
pub fn for_each_frame_read(
    reader: &mut dyn Read,
    mut each: impl FnMut(Frame<'_>, Window<'_>),
) -> Result<Scanned, CaptureError> {
    let mut s = Stream {
        reader,
        buf: vec![0; READ_WINDOW],
        start: 0,
        end: 0,
        offset: 0,
        eof: false,
    };
    while s.end < 4 && s.more()? {}
    let magic: [u8; 4] = match s.avail().get(..4) {
        Some(m) => [m[0], m[1], m[2], m[3]],
        None => return Err(CaptureError::UnknownFormat),
    };
    let malformed = |frames: usize| {
        move |e: PcapError| CaptureError::Malformed {
            after_frames: frames,
            detail: e.to_string(),
        }
    };
    let (frames, stopped);
    if PCAP_MAGICS.contains(&magic) {
        let (used, parser) = s
            .next(|b| PcapParser::new(b).map(|(rest, p)| (b.len() - rest.len(), p)))?
            .map_err(malformed(0))?;
        s.start += used;
        let link = pcap_link(&parser)?;
        (frames, stopped) = s.records("record", &mut each, |bytes, frames| {
            let (next, packet) = parser.next_packet(bytes)?;
            Ok((next, Some(pcap_frame(packet, link, frames))))
        })?;
    } else if magic == PCAPNG_MAGIC {
        let (used, mut parser) = s
            .next(|b| PcapNgParser::new(b).map(|(rest, p)| (b.len() - rest.len(), p)))?
            .map_err(malformed(0))?;
        s.start += used;
        // A block the window holds only in part is parsed again once more is read: the
        // parser changes its state (interfaces, section) only for a block it read whole.
        (frames, stopped) = s.records("block", &mut each, |bytes, frames| {
            let (next, block) = parser.next_block(bytes)?;
            Ok((next, pcapng_frame(&parser, block, frames)))
        })?;
    } else {
        return Err(CaptureError::UnknownFormat);
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
