//! Fuzz target: ONC RPC message decode never panics; decode → encode → decode is identity.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::rpc::RpcMessage;
use wire::Xdr;

fuzz_target!(|data: &[u8]| {
    let Ok((message, _used)) = RpcMessage::decode_prefix(data) else {
        return;
    };
    let bytes = message.to_bytes();
    let (again, used) = RpcMessage::decode_prefix(&bytes).expect("re-decode of our own encoding");
    assert_eq!(again, message);
    assert_eq!(used, bytes.len());
});
