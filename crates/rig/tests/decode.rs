//! `rig decode` end to end: runs the built binary on real Linux Sends and crafted bad headers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use wire::svcrdma::{classify, classify_with, Profile, Rule};
use wirefuzz::rules::{KernelProfile, MEASURED_PROFILES};

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
    // One line per layer, then one per measured kernel profile.
    let mut expected = vec!["rpcrdma", "rpc", "nfs", "svcrdma"];
    expected.extend(std::iter::repeat_n("profile", MEASURED_PROFILES.len()));
    assert_eq!(prefixes, expected, "{out}");
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

/// Run `rig decode <args>` (the input is a file among the args); returns (exit code, stdout,
/// stderr).
fn rig_decode_args(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rig"))
        .arg("decode")
        .args(args)
        .output()
        .expect("rig runs");
    (
        out.status.code().expect("exit code"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

/// The measured profiles as the fixture files on disk say (not the binary's compiled-in copies),
/// by file stem.
fn measured_profiles_on_disk() -> Vec<(String, KernelProfile)> {
    let dir = fixture("svcrdma-profiles");
    let mut profiles: Vec<(String, KernelProfile)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap();
            (stem, KernelProfile::parse(&text).unwrap())
        })
        .collect();
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!profiles.is_empty());
    profiles
}

/// Every measured profile's answer to `bytes` in `v`, checked against the profile file: the
/// answer its table gives `rule` (the rule the header breaks), and the outcome and deciding
/// check of the kernel model built from the file.
fn assert_each_profile_answers(v: &Value, bytes: &[u8], rule: Rule) {
    let answers = v["svcrdma_profiles"].as_object().expect("svcrdma_profiles");
    let on_disk = measured_profiles_on_disk();
    let names: Vec<&str> = on_disk.iter().map(|(n, _)| n.as_str()).collect();
    let shown: Vec<&str> = answers.keys().map(String::as_str).collect();
    assert_eq!(shown, names, "every measured profile answers, by name");
    for (name, profile) in &on_disk {
        let a = &answers[name.as_str()];
        let expected = profile.expected(rule).unwrap().answer;
        assert_eq!(
            a["answer"],
            expected.name(),
            "{name} on {}: {a}",
            rule.name()
        );
        let verdict = classify_with(bytes, &profile.model("test").unwrap());
        assert_eq!(a["outcome"], verdict.outcome.name(), "{name}: {a}");
        assert_eq!(a["rule"], verdict.rule.name(), "{name}: {a}");
        assert!(a.get("file").is_none(), "{name} is compiled in: {a}");
    }
}

/// A Read chunk placed past the inline message: the check 6.1 lacks and the later kernels answer
/// differently (the profiles disagree), so each kernel's own answer must show under its name.
#[test]
fn read_chunk_past_inline_gets_each_measured_kernels_answer() {
    let path = fixture("ok/msg-read-chunk-past-inline.bin");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        classify(&bytes, Profile::Linux2026).rule,
        Rule::ReadChunkPastInline,
        "the fixture breaks the rule the test is about"
    );
    let (code, v) = rig_decode_file(&path);
    assert_eq!(code, 0, "{v}");
    assert_each_profile_answers(&v, &bytes, Rule::ReadChunkPastInline);
    // The model verdicts keep their keys and values beside the profiles.
    assert_eq!(v["svcrdma"]["linux-2026"], "err-chunk");
    assert_eq!(v["svcrdma"]["linux-6.1"], "accept");

    // Known difference: 6.1.176 makes no decode-time position check, 6.12.117 does.
    let (code, text, _) = rig_decode_args(&["--format", "text", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    let line = |kernel: &str| {
        let answer = &v["svcrdma_profiles"][kernel];
        let line = format!(
            "profile {kernel}: {} (rule {})",
            answer["outcome"].as_str().unwrap(),
            answer["rule"].as_str().unwrap()
        );
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        line
    };
    let old = line("debian-6.1.176");
    let new = line("debian-6.12.117");
    assert_ne!(
        v["svcrdma_profiles"]["debian-6.1.176"]["answer"],
        v["svcrdma_profiles"]["debian-6.12.117"]["answer"],
        "{old} / {new}"
    );
    for (name, _) in MEASURED_PROFILES {
        line(name);
    }
}

#[test]
fn bad_version_gets_each_measured_kernels_answer() {
    // xid, vers = 2, credits, RDMA_MSG, three empty lists
    let hex = "00000001 00000002 00000020 00000000 00000000 00000000 00000000";
    let bytes: Vec<u8> = wire::hex::decode(&hex.replace(' ', "")).unwrap();
    let (code, v) = rig_decode_json(hex, &[]);
    assert_eq!(code, 1, "{v}");
    assert_each_profile_answers(&v, &bytes, Rule::BadVersion);
}

#[test]
fn profile_option_narrows_to_the_named_kernels() {
    let path = fixture("ok/msg-read-chunk-past-inline.bin");
    let path = path.to_str().unwrap();
    let (code, out, err) = rig_decode_args(&[
        "--profile",
        "debian-6.12.117",
        "--profile",
        "linux-6.1",
        "--profile",
        "debian-6.12.117",
        path,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let shown: Vec<&String> = v["svcrdma_profiles"].as_object().unwrap().keys().collect();
    assert_eq!(shown, ["debian-6.12.117", "linux-6.1"], "{v}");
    assert_eq!(v["svcrdma_profiles"]["linux-6.1"]["outcome"], "accept");
    assert_eq!(
        v["svcrdma_profiles"]["linux-6.1"]["rule"],
        "unchecked-read-chunk-position"
    );
    // The model verdicts are not narrowed.
    assert_eq!(v["svcrdma"].as_object().unwrap().len(), 2);
}

#[test]
fn unknown_profile_name_is_a_usage_error_listing_the_known_names() {
    let path = fixture("ok/msg-null.bin");
    let (code, out, err) = rig_decode_args(&["--profile", "debian-5.10.0", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("\"debian-5.10.0\""), "{err}");
    for name in Profile::ALL
        .iter()
        .map(|p| p.name())
        .chain(MEASURED_PROFILES.iter().map(|(n, _)| *n))
    {
        assert!(err.contains(name), "{name} in {err}");
    }
}

/// A developer's fresh profile: the 6.1.176 table with the position check answered ERR_CHUNK,
/// as a backport would; shown beside the compiled-in profiles, under its own kernel name.
#[test]
fn profile_option_reads_a_profile_file() {
    let dir = std::env::temp_dir().join(format!("rig-decode-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = std::fs::read_to_string(fixture("svcrdma-profiles/debian-6.1.176.toml")).unwrap();
    let entry = "[rules.read-chunk-past-inline]\nexpected = \"reply\"";
    assert!(base.contains(entry));
    let fresh = base
        .replace("kernel = \"debian-6.1.176\"", "kernel = \"debian-6.1.999\"")
        .replace(
            entry,
            "[rules.read-chunk-past-inline]\nexpected = \"err-chunk\"",
        );
    let file = dir.join("debian-6.1.999.toml");
    std::fs::write(&file, fresh).unwrap();
    let bin = fixture("ok/msg-read-chunk-past-inline.bin");
    let (code, out, err) = rig_decode_args(&[
        "--profile",
        "debian-6.1.176",
        "--profile",
        file.to_str().unwrap(),
        bin.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let answers = v["svcrdma_profiles"].as_object().unwrap();
    assert_eq!(answers.len(), 2, "{v}");
    assert_eq!(answers["debian-6.1.176"]["answer"], "reply");
    assert_eq!(answers["debian-6.1.999"]["answer"], "err-chunk");
    assert_eq!(answers["debian-6.1.999"]["rule"], "read-chunk-past-inline");
    assert_eq!(answers["debian-6.1.999"]["file"], file.to_str().unwrap());

    // The same kernel compiled in and from a file: both shown, the file's under its path too.
    let copy = dir.join("copy.toml");
    std::fs::write(&copy, &base).unwrap();
    let (code, out, err) = rig_decode_args(&[
        "--profile",
        "debian-6.1.176",
        "--profile",
        copy.to_str().unwrap(),
        bin.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let from_file = format!("debian-6.1.176 ({})", copy.display());
    assert_eq!(
        v["svcrdma_profiles"][&from_file],
        serde_json::json!({"outcome": "accept", "answer": "reply",
                           "rule": "unchecked-read-chunk-position",
                           "file": copy.to_str().unwrap()}),
        "{v}"
    );

    // A file that is not a profile is an error naming it.
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        base.replace(entry, "[rules.read-chunk-past-inline]\nexpected = 7"),
    )
    .unwrap();
    let (code, out, err) =
        rig_decode_args(&["--profile", bad.to_str().unwrap(), bin.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains(bad.to_str().unwrap()), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
