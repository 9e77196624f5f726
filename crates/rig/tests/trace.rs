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
