//! `rig decode` end to end: runs the built binary on real Linux Sends and crafted bad headers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// Frame 76 of fixtures/pcap/nfs3-linux-6.1.pcap: nfsd's reply to a READ of an 18-byte file,
/// the data pushed through a Write chunk so only the length word of `data` is inline.
const READ_REPLY_LINUX_6_1: &str = "43bd883c000000010000004000000000000000000000000100000001\
000010860000001243bd883c02e73000000000000000000043bd883c00000001000000000000000000000000000000\
00000000000000000100000001000001a40000000100000000000000000000000000000012000000000000100000000\
00000000000000000000000000100000000000000026b0c3ceb21dafe006b0c3ce5188e9f006b0c3ce5188e9f000000\
00120000000100000012";

/// Frame 97 of the same capture: a 32 KiB UNSTABLE WRITE whose data is in a Read chunk at XDR
/// position 108.
const WRITE_CALL_LINUX_6_1: &str = "48bd883c000000010000008000000000000000010000006c0000108800\
00800048bd883c03c3e00000000000000000000000000048bd883c0000000000000002000186a30000000300000007\
00000001000000180000000000000003636c690000000000000000000000000000000000000000000000001401000101\
010000005c900ae603000000000000000000000000000000000080000000000000008000";

/// Run `rig decode --hex - <args>` with `hex` on stdin; returns (exit code, stdout).
fn rig_decode(hex: &str, args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rig"))
        .args(["decode", "--hex", "-"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rig");
    // A usage error exits before reading stdin; a broken pipe then is expected, not a failure.
    let _ = child.stdin.take().unwrap().write_all(hex.as_bytes());
    let out = child.wait_with_output().expect("rig exits");
    (
        out.status.code().expect("exit code"),
        String::from_utf8(out.stdout).unwrap(),
    )
}

fn rig_decode_json(hex: &str, args: &[&str]) -> (i32, Value) {
    let (code, stdout) = rig_decode(hex, args);
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    (code, v)
}

#[test]
fn read_reply_with_write_chunk_decodes_all_layers() {
    let (code, v) = rig_decode_json(READ_REPLY_LINUX_6_1, &["--call-proc", "nfs:3:READ"]);
    assert_eq!(code, 0, "{v}");
    let h = &v["rpcrdma"];
    assert_eq!(h["xid"], "0x43bd883c");
    assert_eq!(h["vers"], 1);
    assert_eq!(h["credits"], 64);
    assert_eq!(h["proc"], "RDMA_MSG");
    assert_eq!(h["reads"], serde_json::json!([]));
    assert_eq!(h["writes"][0][0]["handle"], 0x1086);
    assert_eq!(h["writes"][0][0]["length"], 18);
    assert_eq!(h["writes"][0][0]["offset"], 0x43bd_883c_02e7_3000_u64);
    assert!(h["reply"].is_null());
    assert_eq!(v["rpc"]["type"], "reply");
    assert_eq!(v["rpc"]["xid"], "0x43bd883c");
    assert_eq!(v["rpc"]["prog"], 100003);
    assert_eq!(v["rpc"]["proc"], 6);
    assert_eq!(v["nfs"]["proc"], "READ");
    assert_eq!(v["nfs"]["status"], "NFS3_OK");
    assert_eq!(v["nfs"]["res"]["count"], 18);
    assert_eq!(v["nfs"]["res"]["data"]["placement"], "chunk");
    assert_eq!(v["nfs"]["ddp"]["chunk_length"], 18);
    assert_eq!(v["nfs"]["ddp"]["chunk_length_matches"], true);
    assert_eq!(v["svcrdma"]["linux-6.1"], "accept");
    assert_eq!(v["svcrdma"]["linux-2026"], "accept");
}

#[test]
fn reply_without_call_proc_has_no_nfs_layer() {
    let (code, v) = rig_decode_json(READ_REPLY_LINUX_6_1, &[]);
    assert_eq!(code, 0);
    assert_eq!(v["rpc"]["type"], "reply");
    assert!(v["rpc"]["prog"].is_null());
    assert!(v["nfs"].is_null());
}

#[test]
fn write_call_with_read_chunk() {
    let (code, v) = rig_decode_json(WRITE_CALL_LINUX_6_1, &[]);
    assert_eq!(code, 0, "{v}");
    let read = &v["rpcrdma"]["reads"][0];
    assert_eq!(read["position"], 108);
    assert_eq!(read["length"], 32768);
    assert_eq!(v["rpc"]["type"], "call");
    assert_eq!(v["rpc"]["prog"], 100003);
    assert_eq!(v["rpc"]["vers"], 3);
    assert_eq!(v["rpc"]["proc"], 7);
    assert_eq!(v["rpc"]["cred"]["flavor"], "AUTH_SYS");
    assert_eq!(v["rpc"]["cred"]["machinename"], "cli");
    assert_eq!(v["nfs"]["proc"], "WRITE");
    assert_eq!(v["nfs"]["args"]["stable"], "UNSTABLE");
    assert_eq!(v["nfs"]["args"]["data"]["length"], 32768);
    assert_eq!(v["nfs"]["ddp"]["position"], 108);
}

#[test]
fn rejects_bad_version_with_rule_and_kernel_verdicts() {
    // xid, vers = 2, credits, RDMA_MSG, three empty lists
    let hex = "00000001 00000002 00000020 00000000 00000000 00000000 00000000";
    let (code, v) = rig_decode_json(hex, &[]);
    assert_eq!(code, 1);
    assert!(
        v["rule"].as_str().unwrap().starts_with("RFC 8166 §4.1"),
        "{v}"
    );
    assert_eq!(v["layer"], "rpcrdma");
    assert!(v["error"].as_str().unwrap().contains("rdma_vers"));
    assert_eq!(v["svcrdma"]["linux-6.1"], "err-vers");
    assert_eq!(v["svcrdma"]["linux-2026"], "err-vers");
}

#[test]
fn rejects_xid_mismatch_at_rpc_layer() {
    // Change the transport XID only: the inline RPC message still says 0x48bd883c.
    let hex = format!("48bd883d{}", &WRITE_CALL_LINUX_6_1[8..]);
    let (code, v) = rig_decode_json(&hex, &[]);
    assert_eq!(code, 1);
    assert_eq!(v["layer"], "rpc");
    assert!(v["rule"].as_str().unwrap().starts_with("RFC 8166 §4.1.1"));
    // svcrdma itself does not compare XIDs: the kernel would accept this header.
    assert_eq!(v["svcrdma"]["linux-6.1"], "accept");
    assert_eq!(v["rpcrdma"]["xid"], "0x48bd883d");
}

#[test]
fn text_format_is_one_line_per_layer() {
    let (code, out) = rig_decode(
        READ_REPLY_LINUX_6_1,
        &["--format", "text", "--call-proc", "100003:3:6"],
    );
    assert_eq!(code, 0);
    let prefixes: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(prefixes, ["rpcrdma", "rpc", "nfs", "svcrdma"], "{out}");
    assert!(out.contains("READ reply NFS3_OK"), "{out}");
    assert!(out.contains("via write chunk"), "{out}");
    assert!(out.contains("NFS v3 READ SUCCESS"), "{out}");
}

#[test]
fn bad_call_proc_is_a_usage_error() {
    let (code, _) = rig_decode(READ_REPLY_LINUX_6_1, &["--call-proc", "nfs:3"]);
    assert_eq!(code, 2);
}

/// Run `rig decode FILE` (raw bytes, JSON output).
fn rig_decode_file(path: &Path) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_rig"))
        .arg("decode")
        .arg(path)
        .output()
        .expect("rig runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {stdout}", path.display()));
    (out.status.code().expect("exit code"), v)
}

fn fixture_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

#[test]
fn every_ok_fixture_decodes() {
    for path in fixture_files("ok") {
        let (code, v) = rig_decode_file(&path);
        assert_eq!(code, 0, "{}: {v}", path.display());
        let h = &v["rpcrdma"];
        assert!(
            h["xid"].as_str().unwrap().starts_with("0x"),
            "{}",
            path.display()
        );
        assert_eq!(h["xid"].as_str().unwrap().len(), 10);
        assert!(h["proc"].as_str().unwrap().starts_with("RDMA_"));
        assert!(h["reads"].is_array() && h["writes"].is_array());
        assert_eq!(v["svcrdma"].as_object().unwrap().len(), 2);
        // An inline RPC message is decoded exactly for RDMA_MSG.
        assert_eq!(
            h["proc"] == "RDMA_MSG",
            !v["rpc"].is_null(),
            "{}",
            path.display()
        );
    }
}

#[test]
fn every_err_fixture_is_rejected_with_a_rule() {
    for path in fixture_files("err") {
        let (code, v) = rig_decode_file(&path);
        assert_eq!(code, 1, "{}: {v}", path.display());
        let rule = v["rule"].as_str().unwrap();
        assert!(rule.starts_with("RFC "), "{}: {rule}", path.display());
        assert!(!v["error"].as_str().unwrap().is_empty());
        assert_eq!(v["svcrdma"].as_object().unwrap().len(), 2);
    }
}

#[test]
fn ineligible_read_chunk_is_reported_not_fatal() {
    // A NULL call carrying Read chunks at positions 8 and 12 (overlapping): svcrdma's 2026
    // position checks reject it; our decoder reports both chunks as RFC 8267 violations.
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/ok/msg-read-chunks-overlap.bin");
    let (code, v) = rig_decode_file(&path);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["nfs"]["proc"], "NULL");
    let violations = v["nfs"]["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 2, "{v}");
    assert!(violations[0]["rule"]
        .as_str()
        .unwrap()
        .starts_with("RFC 8267 §4"));
    assert_eq!(v["svcrdma"]["linux-2026"], "err-chunk");
}

/// Every Send extracted from the Linux captures (`NNNN-{call,reply}-{msg,nomsg}-{prog}-{proc}.bin`)
/// decodes through all layers; replies get their procedure from the file name, as a trace would
/// from the matching call.
#[test]
fn every_linux_send_decodes_to_the_named_procedure() {
    let mut decoded_replies = 0;
    for kernel in ["linux-6.1", "linux-7.2"] {
        for path in fixture_files(&format!("pcap-messages/{kernel}")) {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            let parts: Vec<&str> = stem.split('-').collect();
            let [_, direction, transport, prog, proc_] = parts[..] else {
                panic!("unexpected fixture name {stem}")
            };
            let prog = prog.trim_end_matches('3');
            let hint = format!("{prog}:3:{proc_}");
            let (code, v) = {
                let out = Command::new(env!("CARGO_BIN_EXE_rig"))
                    .args(["decode", "--call-proc", &hint])
                    .arg(&path)
                    .output()
                    .expect("rig runs");
                let stdout = String::from_utf8(out.stdout).unwrap();
                let v: Value = serde_json::from_str(&stdout).unwrap();
                (out.status.code().unwrap(), v)
            };
            assert_eq!(code, 0, "{stem}: {v}");
            assert!(v["nfs"]["violations"].is_null(), "{stem}: {v}");
            match transport {
                "msg" => {
                    assert_eq!(v["rpc"]["type"], direction, "{stem}");
                    assert_eq!(v["nfs"]["type"], direction, "{stem}");
                    assert_eq!(v["nfs"]["proc"], proc_.to_ascii_uppercase(), "{stem}");
                    if direction == "reply" {
                        decoded_replies += 1;
                        assert!(v["nfs"]["status"].is_string() || proc_ == "null", "{stem}");
                    }
                    if stem.ends_with("reply-msg-nfs3-read") && v["nfs"]["status"] == "NFS3_OK" {
                        // nfsd returns READ data through the client's Write chunk.
                        assert_eq!(v["nfs"]["ddp"]["chunk"], "write", "{stem}");
                        assert_eq!(v["nfs"]["ddp"]["chunk_length_matches"], true, "{stem}");
                    }
                }
                "nomsg" => {
                    assert_eq!(v["rpcrdma"]["proc"], "RDMA_NOMSG");
                    assert!(v["rpc"].is_null());
                }
                other => panic!("{stem}: transport {other}"),
            }
        }
    }
    assert!(decoded_replies > 50, "{decoded_replies}");
}

/// The text rendering of every data-driven fixture, snapshotted: a change to any layer's
/// decoder or to the svcrdma model shows up as a reviewable diff.
#[test]
fn fixtures_text_snapshot() {
    let mut all = String::new();
    for dir in ["ok", "err"] {
        for path in fixture_files(dir) {
            let out = Command::new(env!("CARGO_BIN_EXE_rig"))
                .args(["decode", "--format", "text"])
                .arg(&path)
                .output()
                .expect("rig runs");
            let name = path.file_name().unwrap().to_string_lossy();
            all += &format!("== {dir}/{name} (exit {})\n", out.status.code().unwrap());
            all += &String::from_utf8(out.stdout).unwrap();
        }
    }
    insta::assert_snapshot!("fixtures_text", all);
}
