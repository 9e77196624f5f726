//! Fuzz target: RFC 8797 CM private data decode never panics; decode → encode is identity on 8 bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::private_data::PrivateData;

fuzz_target!(|data: &[u8]| {
    let Ok(pd) = PrivateData::decode(data) else {
        return;
    };
    let bytes = pd.encode();
    assert_eq!(&bytes[..], &data[..bytes.len()]);
    assert_eq!(PrivateData::decode(&bytes).expect("re-decode"), pd);
});
