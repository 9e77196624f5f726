//! Fuzz target: RPC-over-RDMA header decode never panics, and decode → encode → decode is identity.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::rpcrdma::Header;
use wire::Xdr;

fuzz_target!(|data: &[u8]| {
    let Ok((header, used)) = Header::decode_prefix(data) else {
        return;
    };
    let bytes = header.to_bytes();
    // The encoding is canonical (no padding, strict discriminators), so it reproduces the input.
    assert_eq!(
        bytes,
        &data[..used],
        "re-encoding differs from the decoded bytes"
    );
    assert_eq!(header.encoded_len(), used);
    let (again, again_used) = Header::decode_prefix(&bytes).expect("re-decode of our own encoding");
    assert_eq!(again, header);
    assert_eq!(again_used, used);
});
