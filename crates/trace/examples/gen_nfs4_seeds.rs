//! Writes the seeds of the `nfs4` fuzz target (`fuzz/seeds/nfs4/`) from the NFSv4.1 fixture
//! captures: the COMPOUND bodies of their RDMA_MSG Sends, one per (direction, placement, 8-byte
//! length class) per capture.
//!
//! Each seed is the target's selector followed by the body (fuzz/fuzz_targets/nfs4.rs reads it):
//! `0x00` a call, `0x80` a reply, both inline; `0x02 n (position length)×n` a call reduced by
//! its Read chunks; `0x83 n (length)×n` a reply whose results went to Write chunks. The transport
//! and RPC headers are decoded by `wire` (the same decoders the engine uses), the capture by this
//! crate. Run from the workspace root:
//! `cargo run -p rpcrdma-trace --example gen_nfs4_seeds [OUT_DIR]` (default `fuzz/seeds/nfs4`).

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use trace::{trace_capture, Options};
use wire::rpc::RpcMessage;
use wire::rpcrdma::{total_length, Body, Header};

/// The captures the seeds come from, and the prefix of each one's seed names.
const CAPTURES: [&str; 2] = ["nfs41-linux-6.1", "nfs41-linux-7.x"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("fuzz/seeds/nfs4"));
    fs::create_dir_all(&out)?;
    let mut written = 0;
    for capture in CAPTURES {
        written += seeds_of(capture, &out)?;
    }
    println!("wrote {written} seeds under {}", out.display());
    Ok(())
}

/// Writes the seeds of `fixtures/pcap/<capture>.pcap` to `out`; returns how many.
fn seeds_of(capture: &str, out: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let path = Path::new("fixtures/pcap").join(format!("{capture}.pcap"));
    let bytes = fs::read(&path)?;
    let options = Options {
        check_icrc: true,
        ..Default::default()
    };
    let trace = trace_capture(&bytes, &options).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut seen = HashSet::new();
    let mut compounds = HashSet::new();
    for (event, message) in trace.messages() {
        let Some(seed) = seed_of(&message.payload, &mut compounds) else {
            continue;
        };
        // The sequence ids differ in every COMPOUND: one seed per direction, placement and
        // 8-byte length class is what the corpus needs.
        if !seen.insert(seed.key) {
            continue;
        }
        let name = format!("{capture}-{:04}.bin", event.frame);
        fs::write(out.join(name), seed.bytes)?;
    }
    Ok(seen.len())
}

/// A seed and what makes it distinct: (is a call, has moved data, body length / 8).
struct Seed {
    key: (bool, bool, usize),
    bytes: Vec<u8>,
}

/// The seed of one Send payload: `None` unless it is an RDMA_MSG carrying an NFSv4 COMPOUND
/// (program 100003, version 4, procedure 1) or a reply to one; `compounds` holds the XIDs of the
/// COMPOUND calls seen so far, which is how a reply is known as one.
fn seed_of(payload: &[u8], compounds: &mut HashSet<u32>) -> Option<Seed> {
    let (header, used) = Header::decode_prefix(payload).ok()?;
    let Body::Msg(chunks) = &header.body else {
        return None;
    };
    let rpc = &payload[used..];
    let (message, rpc_used) = RpcMessage::decode_prefix(rpc).ok()?;
    let call = match &message {
        RpcMessage::Call(c) if c.prog == wire::rpc::NFS_PROGRAM && c.vers == 4 && c.proc_ == 1 => {
            compounds.insert(c.xid);
            true
        }
        RpcMessage::Reply(r) if compounds.contains(&r.xid) => false,
        _ => return None,
    };
    let body = &rpc[rpc_used..];
    let mut selector = Vec::new();
    if call {
        // Read segments at a non-zero position carry data moved out of the call's body.
        let moved: Vec<_> = chunks.reads.iter().filter(|r| r.position != 0).collect();
        if moved.is_empty() {
            selector.push(0x00);
        } else {
            selector.extend([0x02, u8::try_from(moved.len()).ok()?]);
            for read in &moved {
                selector.extend(read.position.to_be_bytes());
                selector.extend(read.target.length.to_be_bytes());
            }
        }
    } else {
        let moved: Vec<u32> = chunks
            .writes
            .iter()
            .map(|chunk| u32::try_from(total_length(chunk)))
            .collect::<Result<Vec<u32>, _>>()
            .ok()?
            .into_iter()
            .filter(|&length| length != 0)
            .collect();
        if moved.is_empty() {
            selector.push(0x80);
        } else {
            selector.extend([0x83, u8::try_from(moved.len()).ok()?]);
            for length in &moved {
                selector.extend(length.to_be_bytes());
            }
        }
    }
    let key = (call, selector.len() > 1, body.len() / 8);
    selector.extend_from_slice(body);
    Some(Seed {
        key,
        bytes: selector,
    })
}
