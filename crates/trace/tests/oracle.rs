//! Our decode of the fixture captures against Wireshark's (tshark 4.0), recorded once into
//! `fixtures/pcap-messages/<name>.wireshark.tsv`: xid, version, credits, procedure and chunk
//! counts must agree for every RPC-over-RDMA message, and every message must decode with no
//! error — including the READ replies Wireshark marks malformed (their data came by Write chunk).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use trace::{Message, Options, Role};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const FIXTURES: [&str; 5] = [
    "nfs3-linux-6.1",
    "nfs3-linux-7.2",
    "nfs41-linux-6.1",
    "nfs41-linux-6.12",
    "nfs41-linux-7.x",
];

/// Soft-iWARP captures (siw on linux-6.12-siw, 6.12.118 built from Debian's source: TCP, MPA with
/// CRC32c, DDP, RDMAP): the smoke suite's NFSv3 mount (Read chunks, a Write chunk) and an
/// NFSv4.1 connection (Write chunks, Reply chunks), cut from one capture
/// (fixtures/pcap-messages/README.md). The same oracle: every message Wireshark's iwarp_mpa /
/// iwarp_ddp_rdmap / rpcordma dissectors show is ours, with the same xid, type and chunks.
const SIW_FIXTURES: [&str; 2] = ["siw-nfs3-linux-6.12", "siw-nfs41-linux-6.12"];

/// The NFSv4.1 captures (the smoke suite's NFSv4.1 mount on each kernel: its first and last
/// connection), with Wireshark's NFSv4 view in `<name>.nfs4.tsv` too.
const NFS41_FIXTURES: [&str; 3] = ["nfs41-linux-6.1", "nfs41-linux-6.12", "nfs41-linux-7.x"];

/// One row of Wireshark's view.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    frame: u32,
    xid: u32,
    vers: u32,
    credits: u32,
    proc_: u32,
    reads: usize,
    writes: usize,
    reply: usize,
    /// RPC program and procedure when Wireshark decoded the RPC layer in this frame.
    rpc: Option<(u32, u32)>,
}

fn parse_tsv(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with("frame")) {
        let f: Vec<&str> = line.split('\t').collect();
        assert!(f.len() >= 8, "short TSV line: {line:?}");
        let num = |s: &str| -> u32 {
            // Several values (reassembled PDUs) are comma-separated; the first belongs to this message.
            let s = s.split(',').next().unwrap_or("");
            match s.strip_prefix("0x") {
                Some(hex) => u32::from_str_radix(hex, 16).unwrap(),
                None => s.parse().unwrap(),
            }
        };
        let rpc = match (f.get(8), f.get(9)) {
            (Some(p), Some(q)) if !p.is_empty() && !q.is_empty() => Some((num(p), num(q))),
            _ => None,
        };
        rows.push(Row {
            frame: num(f[0]),
            xid: num(f[1]),
            vers: num(f[2]),
            credits: num(f[3]),
            proc_: num(f[4]),
            reads: num(f[5]) as usize,
            writes: num(f[6]) as usize,
            reply: num(f[7]) as usize,
            rpc,
        });
    }
    rows
}

fn our_messages(name: &str) -> BTreeMap<u32, (Option<Role>, Message)> {
    let bytes = std::fs::read(root().join(format!("fixtures/pcap/{name}.pcap"))).unwrap();
    let options = Options {
        check_icrc: true,
        ..Default::default()
    };
    let t = trace::trace_capture(&bytes, &options).unwrap();
    assert!(t.capture_error.is_none(), "{:?}", t.capture_error);
    t.messages()
        .map(|(e, m)| (e.frame, (e.dir, m.clone())))
        .collect()
}

fn proc_number(name: &str) -> u32 {
    wire::rpcrdma::Proc::ALL
        .iter()
        .find(|p| p.name() == name)
        .map(|p| *p as u32)
        .unwrap()
}

/// Compare every Wireshark row with our message in the same frame, and the frame sets.
fn assert_agrees(name: &str, rows: &[Row]) {
    let ours = our_messages(name);
    let their_frames: Vec<u32> = rows.iter().map(|r| r.frame).collect();
    let our_frames: Vec<u32> = ours.keys().copied().collect();
    assert_eq!(our_frames, their_frames, "{name}: message frames differ");
    for row in rows {
        let (dir, m) = &ours[&row.frame];
        let ctx = format!("{name} frame {}", row.frame);
        assert_eq!(m.error, None, "{ctx}");
        assert_eq!(m.xid, Some(row.xid), "{ctx}");
        assert_eq!(m.vers, Some(row.vers), "{ctx}");
        assert_eq!(m.credits, Some(row.credits), "{ctx}");
        assert_eq!(m.proc_.map(proc_number), Some(row.proc_), "{ctx}");
        let chunks = m.header.as_ref().and_then(|h| h.chunks()).unwrap();
        assert_eq!(chunks.reads.len(), row.reads, "{ctx}: read list entries");
        assert_eq!(chunks.writes.len(), row.writes, "{ctx}: write chunks");
        assert_eq!(
            usize::from(chunks.reply.is_some()),
            row.reply,
            "{ctx}: reply chunk"
        );
        // Every message decodes through RPC to the upper layer (ours also for the frames where
        // Wireshark deferred the RPC layer to the RDMA READ that completed the Call).
        let rpc = m.rpc.as_ref().unwrap_or_else(|| panic!("{ctx}: no RPC"));
        assert!(m.nfs.is_some(), "{ctx}: no NFS/NFSACL layer");
        assert_eq!(
            rpc.kind,
            if *dir == Some(Role::Client) {
                "call"
            } else {
                "reply"
            },
            "{ctx}"
        );
        if let Some((prog, proc_)) = row.rpc {
            assert_eq!((rpc.prog, rpc.proc_), (Some(prog), Some(proc_)), "{ctx}");
        }
    }
}

#[test]
fn every_message_agrees_with_the_recorded_wireshark_view() {
    let mut total = 0;
    for name in FIXTURES {
        let tsv = root().join(format!("fixtures/pcap-messages/{name}.wireshark.tsv"));
        let rows = parse_tsv(&std::fs::read_to_string(tsv).unwrap());
        assert!(rows.len() > 90, "{name}: only {} rows", rows.len());
        assert_agrees(name, &rows);
        total += rows.len();
    }
    assert_eq!(total, 99 + 102 + 252 + 252 + 244);
}

#[test]
fn every_siw_message_agrees_with_the_recorded_wireshark_view() {
    let mut total = 0;
    for name in SIW_FIXTURES {
        let tsv = root().join(format!("fixtures/pcap-messages/{name}.wireshark.tsv"));
        let rows = parse_tsv(&std::fs::read_to_string(tsv).unwrap());
        assert_agrees(name, &rows);
        total += rows.len();
    }
    assert_eq!(total, 92 + 120);
    // Between them: Read chunks (NFSv3 WRITE), Write chunks (READ), Reply chunks (NFSv4.1).
    let all: Vec<Row> = SIW_FIXTURES
        .iter()
        .flat_map(|name| {
            let tsv = root().join(format!("fixtures/pcap-messages/{name}.wireshark.tsv"));
            parse_tsv(&std::fs::read_to_string(tsv).unwrap())
        })
        .collect();
    assert!(all.iter().any(|r| r.reads > 0));
    assert!(all.iter().any(|r| r.writes > 0));
    assert!(all.iter().any(|r| r.reply > 0));
    // Nothing in them is RoCE, and both decode complete with no transport anomaly.
    for name in SIW_FIXTURES {
        let bytes = std::fs::read(root().join(format!("fixtures/pcap/{name}.pcap"))).unwrap();
        let capture = trace::capture::read_capture(&bytes).unwrap();
        assert!(capture
            .frames
            .iter()
            .all(|f| trace::link::roce_packet(f.link, &f.data).is_none()));
        let t = trace::trace_capture(&bytes, &Options::default()).unwrap();
        assert_eq!(trace::capture_status(&t).to_string(), "complete", "{name}");
    }
}

#[test]
fn read_replies_wireshark_marks_malformed_decode_in_full() {
    // Wireshark flags these frames "[Malformed Packet: NFS]": the READ data came by Write chunk.
    let ours = our_messages("nfs3-linux-6.1");
    for frame in [76u32, 268, 301, 342, 350] {
        let (_, m) = &ours[&frame];
        assert_eq!(m.error, None, "frame {frame}");
        let nfs = m.nfs.as_ref().unwrap();
        assert_eq!((nfs.program, nfs.proc_.as_str()), ("NFS3", "READ"));
        assert_eq!(nfs.status.as_deref(), Some("NFS3_OK"));
        let written = m.header.as_ref().unwrap().chunks().unwrap().writes[0][0].length;
        assert!(nfs
            .detail
            .as_deref()
            .unwrap()
            .contains(&format!("count={written} ")));
        assert_eq!(m.chunk_bytes, u64::from(written), "frame {frame}");
    }
}

/// Fails, not skips, without tshark: `just test` installs it (scripts/test-deps.sh), and a test
/// that passes when its oracle is missing would hide a decode that no longer agrees.
fn require_tshark() {
    let problem = match Command::new("tshark").arg("--version").output() {
        Ok(o) if o.status.success() => return,
        Ok(o) => format!("`tshark --version` {}", o.status),
        Err(e) => format!("tshark not found ({e})"),
    };
    panic!("{problem}: `just test-deps` installs tshark (scripts/test-deps.sh)");
}

#[test]
fn live_tshark_agrees() {
    require_tshark();
    for name in FIXTURES.into_iter().chain(SIW_FIXTURES) {
        let out = Command::new("sh")
            .arg(root().join("fixtures/pcap-messages/wireshark.sh"))
            .arg(root().join(format!("fixtures/pcap/{name}.pcap")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = parse_tsv(&String::from_utf8(out.stdout).unwrap());
        assert_agrees(name, &rows);
    }
}

#[test]
fn every_roce_packet_in_the_fixtures_has_a_valid_icrc() {
    for name in FIXTURES {
        let bytes = std::fs::read(root().join(format!("fixtures/pcap/{name}.pcap"))).unwrap();
        let capture = trace::capture::read_capture(&bytes).unwrap();
        let mut checked = 0;
        for frame in &capture.frames {
            let Some(p) = trace::link::roce_packet(frame.link, &frame.data) else {
                continue;
            };
            assert_eq!(
                trace::icrc::check(p.icrc_prefix, p.transport),
                Some(true),
                "{name} frame {}",
                frame.number
            );
            // A single flipped payload bit must break it.
            let mut bad = frame.data.to_vec();
            let last = bad.len() - 5;
            bad[last] ^= 1;
            let q = trace::link::roce_packet(frame.link, &bad).unwrap();
            assert_eq!(trace::icrc::check(q.icrc_prefix, q.transport), Some(false));
            checked += 1;
        }
        assert_eq!(
            checked,
            capture.frames.len(),
            "{name}: every frame is RoCEv2"
        );
    }
}

/// One row of Wireshark's NFSv4 view: a COMPOUND call or reply.
#[derive(Debug)]
struct Nfs4Row {
    frame: u32,
    xid: u32,
    reply: bool,
    opcodes: Vec<u32>,
    /// Reply only: the COMPOUND status, then each operation's.
    statuses: Vec<u32>,
}

fn parse_nfs4_tsv(text: &str) -> Vec<Nfs4Row> {
    let list = |s: &str| -> Vec<u32> {
        s.split(',')
            .filter(|v| !v.is_empty())
            .map(|v| v.parse().unwrap())
            .collect()
    };
    text.lines()
        .filter(|l| !l.starts_with("frame"))
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let xids: Vec<&str> = f[1].split(',').collect();
            let mut opcodes = list(f[3]);
            let mut statuses = list(f.get(4).copied().unwrap_or(""));
            // Wireshark dissects a READ reply whose data came by Write chunk twice, both
            // truncated ("Malformed"): every field appears once per pass.
            if xids.len() == 2 {
                opcodes.truncate(opcodes.len() / 2);
                statuses.truncate(statuses.len() / 2);
            }
            Nfs4Row {
                frame: f[0].parse().unwrap(),
                xid: u32::from_str_radix(xids[0].trim_start_matches("0x"), 16).unwrap(),
                reply: f[2].starts_with('1'),
                opcodes,
                statuses,
            }
        })
        .collect()
}

/// The operations of our COMPOUND summary: `NAME`, `NAME(args)` or `NAME:STATUS`, split on
/// spaces outside parentheses.
fn our_ops(detail: &str) -> Vec<(String, Option<String>)> {
    let mut ops = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in detail.chars().chain(std::iter::once(' ')) {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ' ' if depth == 0 => {
                if !current.is_empty() {
                    let (name, status) = match current.split_once(':') {
                        Some((n, s)) => (n.to_string(), Some(s.to_string())),
                        None => (current.clone(), None),
                    };
                    ops.push((name, status));
                    current.clear();
                }
                continue;
            }
            _ => {}
        }
        if depth == 0 && c != ')' {
            current.push(c);
        }
    }
    ops
}

fn assert_nfs4_agrees(name: &str, rows: &[Nfs4Row]) {
    let ours = our_messages(name);
    let by_xid: BTreeMap<(u32, bool), &Message> = ours
        .values()
        .filter_map(|(_, m)| {
            let rpc = m.rpc.as_ref()?;
            Some(((rpc.xid, rpc.kind == "reply"), m))
        })
        .collect();
    let compounds = ours
        .values()
        .filter(|(_, m)| m.nfs.as_ref().is_some_and(|n| n.proc_ == "COMPOUND"))
        .count();
    assert_eq!(
        compounds,
        rows.len(),
        "{name}: one Wireshark row per COMPOUND"
    );
    for row in rows {
        let ctx = format!("{name} frame {} xid {:#x}", row.frame, row.xid);
        let m = by_xid[&(row.xid, row.reply)];
        assert_eq!(m.error, None, "{ctx}");
        let nfs = m.nfs.as_ref().unwrap();
        let ops = our_ops(nfs.detail.as_deref().unwrap_or(""));
        let names: Vec<&str> = ops.iter().map(|(n, _)| n.as_str()).collect();
        let theirs: Vec<String> = row
            .opcodes
            .iter()
            .map(|op| wire::nfs4::op_name(*op).into_owned())
            .collect();
        // tshark 4.0 does not dissect GET_DIR_DELEGATION (46) and stops the COMPOUND there;
        // we decode it and the operations after it.
        let compared = match row.opcodes.last() {
            Some(46) if names.len() > theirs.len() => theirs.len(),
            _ => names.len(),
        };
        assert_eq!(&names[..compared], &theirs[..], "{ctx}: operations");
        if row.reply {
            let (compound, each) = row.statuses.split_first().unwrap();
            let status = |n: &u32| wire::nfs4::Nfsstat4(*n).name().into_owned();
            assert_eq!(
                nfs.status.as_deref(),
                Some(status(compound).as_str()),
                "{ctx}"
            );
            let failed: Vec<Option<String>> =
                each.iter().map(|s| (*s != 0).then(|| status(s))).collect();
            let ours: Vec<Option<String>> =
                ops.iter().take(compared).map(|(_, s)| s.clone()).collect();
            // Wireshark lists each READDIR entry's rdattr_error among the statuses too: compare
            // the operations' statuses up to the READDIR then.
            let upto = match row.opcodes.iter().position(|op| *op == 26) {
                Some(readdir) if failed.len() != ours.len() => readdir + 1,
                // Stopped at GET_DIR_DELEGATION: its status is not among Wireshark's.
                _ if compared < names.len() => failed.len(),
                _ => failed.len().max(ours.len()),
            };
            assert_eq!(
                ours.get(..upto),
                failed.get(..upto),
                "{ctx}: operation statuses"
            );
        }
    }
}

#[test]
fn every_nfs4_compound_agrees_with_the_recorded_wireshark_view() {
    let mut total = 0;
    for name in NFS41_FIXTURES {
        let tsv = root().join(format!("fixtures/pcap-messages/{name}.nfs4.tsv"));
        let rows = parse_nfs4_tsv(&std::fs::read_to_string(tsv).unwrap());
        assert_nfs4_agrees(name, &rows);
        total += rows.len();
    }
    assert_eq!(total, 248 + 248 + 240);
}

#[test]
fn live_tshark_agrees_on_nfs4() {
    require_tshark();
    for name in NFS41_FIXTURES {
        let out = Command::new("sh")
            .arg(root().join("fixtures/pcap-messages/wireshark-nfs4.sh"))
            .arg(root().join(format!("fixtures/pcap/{name}.pcap")))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_nfs4_agrees(
            name,
            &parse_nfs4_tsv(&String::from_utf8(out.stdout).unwrap()),
        );
    }
}

#[test]
fn every_nfs41_send_decodes_through_wire_message_and_re_encodes_byte_for_byte() {
    let mut moved_writes = 0;
    for name in NFS41_FIXTURES {
        for (_, m) in our_messages(name).values() {
            let hint = m
                .rpc
                .as_ref()
                .and_then(|r| match (r.prog, r.vers, r.proc_) {
                    (Some(prog), Some(vers), Some(proc_)) if r.kind == "reply" => {
                        Some(wire::message::CallProc::new(prog, vers, proc_))
                    }
                    _ => None,
                });
            let decoded = wire::message::decode_message_with(&m.payload, hint)
                .unwrap_or_else(|e| panic!("{name} xid {:?}: {e}", m.xid));
            assert_eq!(decoded.to_bytes(), m.payload, "{name} xid {:?}", m.xid);
            if let Some(nfs) = &decoded.nfs {
                assert!(nfs.violations.is_empty(), "{name}: {:?}", nfs.violations);
                if let Some(ddp) = nfs.ddp.as_ref().filter(|d| d.item == "WRITE4args.data") {
                    assert!(ddp.chunk_length_matches && ddp.position.is_some());
                    moved_writes += 1;
                }
            }
        }
    }
    // 32 WRITEs of 32 KiB per capture went by Read chunk, each at its data's XDR position.
    assert_eq!(moved_writes, 3 * 32);
}
