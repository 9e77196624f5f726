//! Writes the fuzz seed corpus (`fuzz/seeds/<target>/`) from the committed fixtures, named by kind.
//!
//! `rpcrdma_header` and `svcrdma_classify` read `fixtures/{ok,err}` and `fixtures/pcap-messages/*`
//! directly (scripts/fuzz.sh passes them as extra corpus dirs); the targets below need the upper
//! layers cut out of real Send payloads, which this does. Run from the workspace root:
//! `cargo run -p rpcrdma-wire --example gen_fuzz_seeds`.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use wire::nfs3::Nfs3Proc;
use wire::rpc::{RpcMessage, NFS_PROGRAM};
use wire::rpcrdma::{Body, Header};

fn main() -> std::io::Result<()> {
    let out = Path::new("fuzz/seeds");
    for target in ["rpc_message", "nfs3", "private_data"] {
        let dir = out.join(target);
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
    }
    let mut written = 0;
    for kernel in ["linux-6.1", "linux-7.2"] {
        let mut files: Vec<_> = fs::read_dir(Path::new("fixtures/pcap-messages").join(kernel))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "bin"))
            .collect();
        files.sort();
        // Replies carry no procedure: remember each call's by xid, in capture order.
        let mut call_proc: HashMap<u32, u32> = HashMap::new();
        for path in files {
            let bytes = fs::read(&path)?;
            let Ok((header, used)) = Header::decode_prefix(&bytes) else {
                continue;
            };
            if !matches!(header.body, Body::Msg(_)) {
                continue;
            }
            let rpc = &bytes[used..];
            let Ok((message, rpc_used)) = RpcMessage::decode_prefix(rpc) else {
                continue;
            };
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            let name = format!("{kernel}-{stem}.bin");
            fs::write(out.join("rpc_message").join(&name), rpc)?;
            written += 1;
            let (proc_, reply) = match &message {
                RpcMessage::Call(c) if c.prog == NFS_PROGRAM && c.vers == 3 => {
                    call_proc.insert(c.xid, c.proc_);
                    (c.proc_, false)
                }
                RpcMessage::Reply(r) => match call_proc.get(&r.xid) {
                    Some(&p) => (p, true),
                    None => continue,
                },
                _ => continue,
            };
            let Some(index) = Nfs3Proc::ALL.iter().position(|p| *p as u32 == proc_) else {
                continue;
            };
            let moved = header
                .chunks()
                .is_some_and(|c| !c.writes.is_empty() || c.reads.iter().any(|r| r.position != 0));
            // Selector byte, as fuzz_targets/nfs3.rs reads it: proc index, 0x40 moved, 0x80 reply.
            let selector =
                index as u8 | if moved { 0x40 } else { 0 } | if reply { 0x80 } else { 0 };
            let mut seed = vec![selector];
            seed.extend_from_slice(&rpc[rpc_used..]);
            fs::write(out.join("nfs3").join(&name), seed)?;
            written += 1;
        }
    }
    let private_data = [
        (
            "rfc8797-linux-client-4k.bin",
            [0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3],
        ),
        (
            "rfc8797-no-invalidate-1k.bin",
            [0xf6, 0xab, 0x0e, 0x18, 1, 0, 0, 0],
        ),
        (
            "rfc8797-bad-magic.bin",
            [0xf6, 0xab, 0x0e, 0x19, 1, 1, 3, 3],
        ),
        (
            "rfc8797-version-2.bin",
            [0xf6, 0xab, 0x0e, 0x18, 2, 1, 3, 3],
        ),
    ];
    for (name, bytes) in private_data {
        fs::write(out.join("private_data").join(name), bytes)?;
        written += 1;
    }
    println!("wrote {written} seeds under {}", out.display());
    Ok(())
}
