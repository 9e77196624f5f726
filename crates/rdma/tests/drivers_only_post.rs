//! Architecture Invariant (ARCHITECTURE.md, `crates/rdma`): the verbs driver posts what the engine
//! asks and feeds back what the hardware reports; it never decodes or rewrites an RPC-over-RDMA
//! header (the engine writes real rkeys and addresses into the headers it encodes, through
//! `rdma::memory`). No non-test source under crates/rdma/src names the transport header module.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The part of a source file that is not a unit-test module.
fn non_test(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

#[test]
fn no_rdma_source_decodes_or_encodes_a_transport_header() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 5, "found the sources under {}", src.display());
    let mut offenders = Vec::new();
    for file in files {
        // A module's tests file (`v41/tests.rs`) is test code.
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("readable source");
        for needle in ["rpcrdma::", "ChunkLists", "decode_chunk", "Header::decode"] {
            if non_test(&text).contains(needle) {
                offenders.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}
