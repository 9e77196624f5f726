//! One RoCEv2 capture per suite run, cut into per-case pcaps on the host: the client guest runs a
//! single tcpdump for the whole suite (starting one per case cost seconds under TCG and lost the
//! end of cases whose tcpdump lagged) and writes each case's start and end time
//! (`capture.windows`: `<case> start|end <epoch µs>`); [`split_pcap`] copies every record whose
//! timestamp falls in a case's window into `<case>.pcap`.
//!
//! Architecture Invariant: the guest capture is untrusted input: every length is checked against
//! the bytes left and a per-record limit; nothing here panics or allocates beyond the input.

use std::collections::BTreeMap;

use anyhow::{bail, ensure, Result};

/// Largest record we copy (tcpdump's default snap length is 262144).
const MAX_RECORD: usize = 262_144;
/// Most cases one windows file may name.
const MAX_WINDOWS: usize = 10_000;
/// How long after a case's recorded end its packets still belong to it: the client's window
/// closes when its script exits, and the peer's CM DREP (the answer to the client's DREQ) and
/// last ACKs arrive after that (a linux-6.1 `rig serve` DREP landed outside the window and the
/// snapshot lost its `S CM_DREP` line). Never past the next case's start.
pub const END_GRACE_US: u64 = 500_000;

/// A case's capture window in microseconds since the epoch, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start_us: u64,
    pub end_us: u64,
}

/// Parse `<case> start|end <µs>` lines; a case with a start and no end runs to the capture's end.
/// Other lines are ignored.
pub fn parse_windows(text: &str) -> BTreeMap<String, Window> {
    let mut windows: BTreeMap<String, Window> = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(case), Some(edge), Some(time), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Ok(time) = time.parse::<u64>() else {
            continue;
        };
        if windows.len() >= MAX_WINDOWS && !windows.contains_key(case) {
            break;
        }
        match edge {
            "start" => {
                windows.insert(
                    case.to_owned(),
                    Window {
                        start_us: time,
                        end_us: u64::MAX,
                    },
                );
            }
            "end" => {
                if let Some(window) = windows.get_mut(case) {
                    window.end_us = time.max(window.start_us);
                }
            }
            _ => {}
        }
    }
    extend_ends(&mut windows);
    windows
}

/// Each window's end moves [`END_GRACE_US`] later, but not into the next window (by start).
fn extend_ends(windows: &mut BTreeMap<String, Window>) {
    let mut starts: Vec<u64> = windows.values().map(|w| w.start_us).collect();
    starts.sort_unstable();
    for window in windows.values_mut() {
        if window.end_us == u64::MAX {
            continue;
        }
        let next_start = starts
            .iter()
            .copied()
            .find(|&s| s > window.start_us)
            .unwrap_or(u64::MAX);
        let extended = window.end_us.saturating_add(END_GRACE_US);
        window.end_us = extended
            .min(next_start.saturating_sub(1))
            .max(window.end_us);
    }
}

/// The classic pcap layout: byte order and timestamp resolution from the magic.
#[derive(Debug, Clone, Copy)]
struct Format {
    little: bool,
    nanos: bool,
}

fn read_u32(bytes: &[u8], at: usize, little: bool) -> Option<u32> {
    let raw: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if little {
        u32::from_le_bytes(raw)
    } else {
        u32::from_be_bytes(raw)
    })
}

fn format(header: &[u8]) -> Result<Format> {
    let magic = read_u32(header, 0, true).unwrap_or(0);
    Ok(match magic {
        0xa1b2_c3d4 => Format {
            little: true,
            nanos: false,
        },
        0xa1b2_3c4d => Format {
            little: true,
            nanos: true,
        },
        0xd4c3_b2a1 => Format {
            little: false,
            nanos: false,
        },
        0x4d3c_b2a1 => Format {
            little: false,
            nanos: true,
        },
        other => bail!("not a classic pcap file (magic {other:#010x})"),
    })
}

/// Cut `pcap` into one pcap per window: the global header, then every record whose timestamp
/// lies in the window (a record may belong to several overlapping windows). A record cut short
/// at the end of the file (tcpdump killed mid-write) ends the capture.
pub fn split_pcap(
    pcap: &[u8],
    windows: &BTreeMap<String, Window>,
) -> Result<BTreeMap<String, Vec<u8>>> {
    ensure!(pcap.len() >= 24, "capture shorter than a pcap header");
    let header = &pcap[..24];
    let format = format(header)?;
    let mut out: BTreeMap<String, Vec<u8>> = windows
        .keys()
        .map(|case| (case.clone(), header.to_vec()))
        .collect();
    let mut at = 24usize;
    while at < pcap.len() {
        let (Some(sec), Some(frac), Some(len)) = (
            read_u32(pcap, at, format.little),
            read_u32(pcap, at + 4, format.little),
            read_u32(pcap, at + 8, format.little),
        ) else {
            break;
        };
        let len = len as usize;
        let end = match at.checked_add(16).and_then(|h| h.checked_add(len)) {
            Some(end) if len <= MAX_RECORD && end <= pcap.len() => end,
            _ => break,
        };
        let micros = if format.nanos {
            u64::from(frac) / 1000
        } else {
            u64::from(frac)
        };
        let time = u64::from(sec) * 1_000_000 + micros;
        for (case, window) in windows {
            if (window.start_us..=window.end_us).contains(&time) {
                if let Some(file) = out.get_mut(case) {
                    file.extend_from_slice(&pcap[at..end]);
                }
            }
        }
        at = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap(records: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(0xa1b2_c3d4u32.to_le_bytes());
        out.extend(2u16.to_le_bytes());
        out.extend(4u16.to_le_bytes());
        out.extend([0u8; 8]);
        out.extend(65535u32.to_le_bytes());
        out.extend(1u32.to_le_bytes());
        for (sec, usec, data) in records {
            out.extend(sec.to_le_bytes());
            out.extend(usec.to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend((data.len() as u32).to_le_bytes());
            out.extend_from_slice(data);
        }
        out
    }

    #[test]
    fn windows_pair_starts_with_ends() {
        let windows = parse_windows(
            "nfsd.once start 1000\nnfsd.once end 2000\nnfsd.burst start 3000\ngarbage\nx end 5\n",
        );
        // The end moves later by the grace, but not into the next case's window.
        assert_eq!(
            windows["nfsd.once"],
            Window {
                start_us: 1000,
                end_us: 2999
            }
        );
        assert_eq!(windows["nfsd.burst"].end_us, u64::MAX);
        assert!(!windows.contains_key("x"));
    }

    #[test]
    fn records_go_to_the_case_whose_window_holds_them() {
        let capture = pcap(&[
            (1, 0, b"a"),
            (2, 500_000, b"bb"),
            (4, 0, b"c"),
            (9, 0, b"d"),
        ]);
        let windows = parse_windows("one start 1000000\none end 3000000\ntwo start 3500000\n");
        let cut = split_pcap(&capture, &windows).unwrap();
        assert_eq!(cut["one"], pcap(&[(1, 0, b"a"), (2, 500_000, b"bb")]));
        assert_eq!(cut["two"], pcap(&[(4, 0, b"c"), (9, 0, b"d")]));
    }

    #[test]
    fn the_peers_answer_to_the_disconnect_stays_with_its_case() {
        // The client's window ends at 3.0 s; the server's DREP arrives 0.2 s later, the next
        // case starts at 10 s.
        let capture = pcap(&[(2, 0, b"dreq"), (3, 200_000, b"drep"), (10, 100, b"next")]);
        let windows = parse_windows("one start 1000000\none end 3000000\ntwo start 10000000\n");
        assert_eq!(windows["one"].end_us, 3_000_000 + END_GRACE_US);
        let cut = split_pcap(&capture, &windows).unwrap();
        assert_eq!(cut["one"], pcap(&[(2, 0, b"dreq"), (3, 200_000, b"drep")]));
        assert_eq!(cut["two"], pcap(&[(10, 100, b"next")]));
    }

    #[test]
    fn truncated_and_hostile_captures_are_bounded() {
        let mut capture = pcap(&[(1, 0, b"abc")]);
        capture.extend([1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f]);
        let windows = parse_windows("one start 0\n");
        let cut = split_pcap(&capture, &windows).unwrap();
        assert_eq!(cut["one"], pcap(&[(1, 0, b"abc")]));
        assert!(split_pcap(&[0u8; 10], &windows).is_err());
        assert!(split_pcap(&[0u8; 40], &windows).is_err());
    }
}
