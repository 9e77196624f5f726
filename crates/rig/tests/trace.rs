//! `rig trace` end to end on the fixture captures: show (text, raw, jsonl), diff exit codes, and
//! extract.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../fixtures/pcap/{name}.pcap"))
}

/// Run `rig trace <args>`; returns (exit code, stdout, stderr).
fn rig_trace(args: &[&std::ffi::OsStr]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rig"))
        .arg("trace")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn show_jsonl_has_one_object_per_message_with_the_contract_fields() {
    let path = fixture("nfs3-linux-6.1");
    let (code, out, err) = rig_trace(&[
        "show".as_ref(),
        path.as_os_str(),
        "--format".as_ref(),
        "jsonl".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let objs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), 99);
    for o in &objs {
        for key in [
            "frame", "dir", "xid", "vers", "credits", "proc", "reads", "writes", "reply", "rpc",
            "nfs", "error",
        ] {
            assert!(o.get(key).is_some(), "missing {key} in {o}");
        }
        assert_eq!(o["error"], Value::Null, "{o}");
        let xid = o["xid"].as_str().unwrap();
        assert!(xid.starts_with("0x") && xid.len() == 10, "{xid}");
    }
    // Frame 76: nfsd's READ reply, data through a Write chunk of 18 bytes.
    let read_reply = objs.iter().find(|o| o["frame"] == 76).unwrap();
    assert_eq!(read_reply["dir"], "server");
    assert_eq!(read_reply["xid"], "0x43bd883c");
    assert_eq!(read_reply["proc"], "RDMA_MSG");
    assert_eq!(read_reply["credits"], 64);
    assert_eq!(read_reply["writes"][0][0]["length"], 18);
    assert_eq!(read_reply["writes"][0][0]["handle"], 0x1086);
    assert_eq!(read_reply["reply"], Value::Null);
    assert_eq!(read_reply["rpc"]["type"], "reply");
    assert_eq!(read_reply["rpc"]["prog"], 100003);
    assert_eq!(read_reply["rpc"]["proc"], 6);
    assert_eq!(read_reply["nfs"]["program"], "NFS3");
    assert_eq!(read_reply["nfs"]["proc"], "READ");
    assert_eq!(read_reply["nfs"]["status"], "NFS3_OK");
    assert_eq!(read_reply["call_frame"], 73);
    // Frame 97: a WRITE call whose data the server pulled by RDMA Read (position 108).
    let write_call = objs.iter().find(|o| o["frame"] == 97).unwrap();
    assert_eq!(write_call["dir"], "client");
    assert_eq!(write_call["reads"][0]["position"], 108);
    assert_eq!(write_call["reads"][0]["length"], 32768);
    assert_eq!(write_call["nfs"]["proc"], "WRITE");
    assert_eq!(write_call["chunk_bytes"], 32768);
}

#[test]
fn show_text_normalises_and_raw_keeps_volatile_values() {
    let path = fixture("nfs3-linux-7.2");
    let (code, norm, _) = rig_trace(&["show".as_ref(), path.as_os_str()]);
    assert_eq!(code, 0);
    assert!(
        norm.contains("c2 C RDMA_MSG x1 cr=128 NFS3 NULL call\n"),
        "{norm}"
    );
    assert!(!norm.contains("0x"), "normalised text has no raw values");
    let (code, raw, _) = rig_trace(&["show".as_ref(), path.as_os_str(), "--raw".as_ref()]);
    assert_eq!(code, 0);
    assert!(raw.contains("xid=0xdabb5450"), "{raw}");
    assert_eq!(raw.lines().count(), norm.lines().count());
}

#[test]
fn diff_exits_0_when_same_and_1_with_real_differences() {
    let a = fixture("nfs3-linux-6.1");
    let b = fixture("nfs3-linux-7.2");
    let (code, out, _) = rig_trace(&["diff".as_ref(), a.as_os_str(), a.as_os_str()]);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, out, _) = rig_trace(&["diff".as_ref(), a.as_os_str(), b.as_os_str()]);
    assert_eq!(code, 1);
    assert!(out.contains("# S credits: {64} -> {128}"), "{out}");
    // 6.1's client looked up names that 7.2's did not (negative dentries), and 7.2's capture
    // has the RMDIR and the disconnect that 6.1's capture cut off.
    assert!(
        out.contains("-c2 C RDMA_MSG x30 cr=128 NFS3 LOOKUP call name=a"),
        "{out}"
    );
    assert!(
        out.contains("+c2 C RDMA_MSG x51 cr=128 NFS3 RMDIR call"),
        "{out}"
    );
    assert!(out.contains("+c2 C CM_DREQ"), "{out}");
    let changed = out.lines().filter(|l| l.starts_with(['+', '-'])).count();
    assert!(
        changed < 40,
        "diff is short: {changed} changed lines\n{out}"
    );
}

#[test]
fn extract_writes_one_file_per_message() {
    let dir = std::env::temp_dir().join(format!("rig-trace-extract-{}", std::process::id()));
    let path = fixture("nfs3-linux-6.1");
    let (code, _, err) = rig_trace(&["extract".as_ref(), path.as_os_str(), dir.as_os_str()]);
    assert_eq!(code, 0, "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 99);
    assert_eq!(names[0], "0033-call-msg-nfs3-null.bin");
    assert!(names.contains(&"0076-reply-msg-nfs3-read.bin".to_string()));
    assert!(names.contains(&"0086-reply-nomsg-nfsacl-getacl.bin".to_string()));
    let bytes = std::fs::read(dir.join("0076-reply-msg-nfs3-read.bin")).unwrap();
    assert_eq!(&bytes[..4], &[0x43, 0xbd, 0x88, 0x3c]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_and_non_capture_files_are_usage_errors() {
    let (code, _, err) = rig_trace(&["show".as_ref(), "/nonexistent.pcap".as_ref()]);
    assert_eq!(code, 2, "{err}");
    let cargo_toml = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let (code, _, err) = rig_trace(&["show".as_ref(), cargo_toml.as_os_str()]);
    assert_eq!(code, 2);
    assert!(err.contains("not a pcap or pcapng file"), "{err}");
}

/// A pcap (microsecond, Ethernet) of `frames`.
fn write_pcap(frames: &[(std::time::Duration, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for word in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    // version is two u16s (2, 4): written above as one little-endian word.
    for (t, d) in frames {
        for word in [
            t.as_secs() as u32,
            t.subsec_micros(),
            d.len() as u32,
            d.len() as u32,
        ] {
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.extend_from_slice(d);
    }
    out
}

/// The 7.2 fixture with RC-level recovery added: Sends retransmitted with their PSNs, an RNR NAK
/// and its retry, a SEND_FIRST lost on the wire and recovered by go-back-N after a NAK.
fn with_rc_retransmissions() -> Vec<(std::time::Duration, Vec<u8>)> {
    let bytes = std::fs::read(fixture("nfs3-linux-7.2")).unwrap();
    let a: Vec<_> = trace::capture::read_capture(&bytes)
        .unwrap()
        .frames
        .into_iter()
        .map(|f| (f.time, f.data.into_owned()))
        .collect();
    let span = |d: &[u8]| {
        let p = trace::link::roce_packet(trace::capture::LinkType::Ethernet, d).unwrap();
        let start = p.transport.as_ptr() as usize - d.as_ptr() as usize;
        (start, start + p.transport.len())
    };
    let opcode = |d: &[u8]| d[span(d).0];
    // An ACK from the server (frame 34) as a NAK (0x60 PSN sequence error, 0x20 RNR) of `psn`.
    let nak = |syndrome: u8, psn: u32| {
        let (time, mut d) = a[33].clone();
        assert_eq!(opcode(&d), 0x11);
        let (start, end) = span(&d);
        d[start + 12] = syndrome;
        d[start + 9..start + 12].copy_from_slice(&psn.to_be_bytes()[1..]);
        let p = trace::link::roce_packet(trace::capture::LinkType::Ethernet, &d).unwrap();
        let crc = trace::icrc::compute(p.icrc_prefix, p.transport).unwrap();
        d[end - 4..end].copy_from_slice(&crc.to_le_bytes());
        (time, d)
    };
    assert_eq!((opcode(&a[99].1), opcode(&a[100].1)), (0x00, 0x02));
    let mut b = Vec::new();
    for n in 1..=a.len() {
        let frame = a[n - 1].clone();
        match n {
            100 => continue,
            _ => b.push(frame.clone()),
        }
        match n {
            36 => b.push(a[34].clone()),
            37 => {
                b.push(nak(0x20, 16775165));
                b.push(frame);
            }
            40 => b.push(a[32].clone()),
            101 => {
                b.push(nak(0x60, 16775182));
                b.push(a[99].clone());
                b.push(frame);
            }
            _ => {}
        }
    }
    b
}

#[test]
fn diff_of_captures_differing_only_by_rc_retransmissions_is_empty() {
    let dir = std::env::temp_dir().join(format!("rig-trace-rc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let busy = dir.join("busy.pcap");
    std::fs::write(&busy, write_pcap(&with_rc_retransmissions())).unwrap();
    let quiet = fixture("nfs3-linux-7.2");
    let (code, out, err) = rig_trace(&["diff".as_ref(), quiet.as_os_str(), busy.as_os_str()]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(err.contains("transport differs (not compared)"), "{err}");
    // One level down the retransmissions are there.
    let (code, out, _) = rig_trace(&[
        "diff".as_ref(),
        quiet.as_os_str(),
        busy.as_os_str(),
        "--level".as_ref(),
        "transport".as_ref(),
    ]);
    assert_eq!(code, 1);
    for line in [
        "+c2 C ! DUPLICATE SEND_ONLY",
        "+c2 S ! RNR_NAK timer=0",
        "+c2 S ! NAK PSN_SEQUENCE_ERROR",
        "+c2 C ! OUT_OF_SEQUENCE SEND_LAST",
    ] {
        assert!(out.contains(line), "{line}:\n{out}");
    }
    let (code, shown, _) = rig_trace(&["show".as_ref(), busy.as_os_str()]);
    assert_eq!(code, 0);
    assert!(
        shown.ends_with(
            "transport: duplicates=4 naks=1 rnr_naks=1 out_of_sequence=1 gaps=0 late_fills=0 \
             unmatched=0 orphans=0 incomplete=0 bad_icrc=0 lost_psns=0\ncapture: complete\n"
        ),
        "{shown}"
    );
    assert!(!shown.contains(" ! "));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn status_and_require_complete_flag_an_incomplete_capture_with_exit_3() {
    let cut = fixture("nfs3-linux-6.1");
    let whole = fixture("nfs3-linux-7.2");
    let (code, out, _) = rig_trace(&["status".as_ref(), cut.as_os_str()]);
    assert_eq!(code, 3);
    assert!(
        out.ends_with(
            "capture: incomplete (no disconnect after the last message on 1 of 1 connections)\n"
        ),
        "{out}"
    );
    let (code, out, _) = rig_trace(&[
        "status".as_ref(),
        whole.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["complete"], true);
    assert_eq!(v["capture"]["capture"], "complete");
    assert_eq!(v["transport"]["duplicates"], 0);
    assert_eq!(v["connections"], 1);
    let (code, out, _) = rig_trace(&[
        "status".as_ref(),
        cut.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["complete"], false);
    assert_eq!(v["capture"]["reasons"][0]["reason"], "no_disconnect");
    // show prints the status either way; it fails on it only when asked to.
    let (code, out, _) = rig_trace(&["show".as_ref(), cut.as_os_str()]);
    assert_eq!(code, 0);
    assert!(out.contains("\ncapture: incomplete (no disconnect"));
    let (code, _, _) = rig_trace(&[
        "show".as_ref(),
        cut.as_os_str(),
        "--require-complete".as_ref(),
    ]);
    assert_eq!(code, 3);
    let (code, _, _) = rig_trace(&[
        "diff".as_ref(),
        whole.as_os_str(),
        cut.as_os_str(),
        "--require-complete".as_ref(),
    ]);
    assert_eq!(code, 3);
}
