//! Architecture Invariant (ARCHITECTURE.md, `crates/verbs`): the FFI crate knows nothing of
//! RPC-over-RDMA. CM private data goes in and out as bytes; its RFC 8797 encoding is wire's,
//! applied by the engine and crates/rdma. So the library depends on no protocol crate (an
//! example may, as a dev-dependency).

#[test]
fn the_library_depends_on_no_protocol_crate() {
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .expect("readable manifest");
    let mut section = String::new();
    let mut offenders = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]" && line.starts_with("rpcrdma-") {
            offenders.push(line.to_string());
        }
    }
    assert!(offenders.is_empty(), "{offenders:?}");
}
