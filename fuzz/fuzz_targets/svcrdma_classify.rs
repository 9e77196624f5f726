//! Fuzz target: the svcrdma rule model never panics, and agrees with the strict decoder: whatever a
//! kernel profile accepts decodes, except where the kernel's "non-zero = present" reading of a list
//! discriminator accepts a value RFC 4506 §4.19 forbids.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::rpcrdma::Header;
use wire::svcrdma::{classify, Outcome, Profile};
use wire::DecodeError;

fuzz_target!(|data: &[u8]| {
    let decoded = Header::decode_prefix(data);
    for profile in Profile::ALL {
        let verdict = classify(data, profile);
        if verdict.outcome != Outcome::Accept {
            continue;
        }
        match &decoded {
            Ok(_) => {}
            Err(DecodeError::BadDiscriminant { field, .. })
                if field.ends_with(".discriminator") => {}
            Err(e) => panic!(
                "{profile} accepts ({:?}) what decode rejects: {e}",
                verdict.rule
            ),
        }
    }
});
