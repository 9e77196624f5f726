//! The Send payloads extracted from the fixture captures (`rig trace extract`, committed under
//! `fixtures/pcap-messages/linux-<version>/NNNN-<kind>.bin`; they seed the fuzz corpus and the
//! bench) decode with `wire::rpcrdma::Header::decode_prefix` and `wire::message`, agree with
//! Wireshark's recorded view, and are exactly what the extractor produces from the captures now.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wire::message::{decode_message_with, CallProc};
use wire::rpcrdma::Header;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const FIXTURES: [(&str, &str); 2] = [
    ("nfs3-linux-6.1", "linux-6.1"),
    ("nfs3-linux-7.2", "linux-7.2"),
];

/// frame → TSV fields (xid, vers, credits, proc, reads, writes, reply, program, procedure).
fn wireshark(name: &str) -> BTreeMap<u32, Vec<String>> {
    let text = std::fs::read_to_string(
        root().join(format!("fixtures/pcap-messages/{name}.wireshark.tsv")),
    )
    .unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<String> = l
                .split('\t')
                .map(|s| s.split(',').next().unwrap_or("").to_string())
                .collect();
            (f[0].parse().unwrap(), f)
        })
        .collect()
}

fn committed(dir: &str) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(root().join("fixtures/pcap-messages").join(dir))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_extracted_message_decodes_and_agrees_with_wireshark() {
    for (name, dir) in FIXTURES {
        let rows = wireshark(name);
        let files = committed(dir);
        assert_eq!(files.len(), rows.len(), "{dir}: one file per message");
        // Calls seen so far, to give each reply its procedure (replies do not carry it).
        let mut calls: BTreeMap<u32, CallProc> = BTreeMap::new();
        for (file, bytes) in &files {
            let frame: u32 = file[..4].parse().unwrap();
            let row = &rows[&frame];
            let (header, _) = Header::decode_prefix(bytes).unwrap();
            let chunks = header.chunks().unwrap();
            let fields = [
                format!("{:#010x}", header.xid),
                header.vers.to_string(),
                header.credits.to_string(),
                (header.proc() as u32).to_string(),
                chunks.reads.len().to_string(),
                chunks.writes.len().to_string(),
                usize::from(chunks.reply.is_some()).to_string(),
            ];
            assert_eq!(&fields[..], &row[1..8], "{dir}/{file}");
            let is_call = file.contains("-call-");
            let hint = if is_call {
                None
            } else {
                calls.get(&header.xid).copied()
            };
            let decoded =
                decode_message_with(bytes, hint).unwrap_or_else(|e| panic!("{dir}/{file}: {e}"));
            assert_eq!(decoded.rpcrdma, header);
            if let Some(rpc) = &decoded.rpc {
                if let wire::rpc::RpcMessage::Call(c) = rpc {
                    calls.insert(c.xid, CallProc::new(c.prog, c.vers, c.proc_));
                }
                // Wireshark names the program when it decoded the RPC layer in this frame.
                if !row[8].is_empty() && is_call {
                    let wire::rpc::RpcMessage::Call(c) = rpc else {
                        panic!("{dir}/{file}: not a call")
                    };
                    assert_eq!(c.prog.to_string(), row[8], "{dir}/{file}");
                    assert_eq!(c.proc_.to_string(), row[9], "{dir}/{file}");
                }
            }
            // RDMA_MSG carries the RPC message inline; its upper layer must decode too.
            if file.contains("-msg-") && !is_call && hint.is_some() {
                assert!(decoded.nfs.is_some(), "{dir}/{file}: results not decoded");
            }
        }
    }
}

#[test]
fn committed_files_are_what_the_extractor_produces() {
    for (name, dir) in FIXTURES {
        let bytes = std::fs::read(root().join(format!("fixtures/pcap/{name}.pcap"))).unwrap();
        let t = trace::trace_capture(&bytes, &trace::Options::default()).unwrap();
        let produced: BTreeMap<String, Vec<u8>> = t
            .messages()
            .map(|(e, m)| {
                (
                    format!("{:04}-{}.bin", e.frame, m.kind(e.dir)),
                    m.payload.clone(),
                )
            })
            .collect();
        assert_eq!(
            produced,
            committed(dir),
            "{dir}: re-run `rig trace extract`"
        );
    }
}
