//! Fuzz target: the svcrdma rule model never panics, and agrees with the strict decoder both ways
//! where it claims to:
//! * whatever a kernel profile accepts decodes, except where the kernel's "non-zero = present"
//!   reading of a list discriminator accepts a value RFC 4506 §4.19 forbids;
//! * whatever the strict decoder refuses (that discriminator reading aside), every profile answers
//!   as the decoder's error maps to a wire answer (`Outcome::from(&DecodeError)`, the mapping the
//!   engine's responder uses), and whatever it decodes no profile refuses as malformed XDR (a
//!   short header, a bad version or procedure, a truncated list) — for Sends of at least the
//!   fixed 16 bytes that fit the Receive (shorter ones the model calls short before the decoder
//!   sees the version; longer ones overflow the Receive, which the decoder does not model).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wire::rpcrdma::{Header, Proc};
use wire::svcrdma::{classify, Outcome, Profile, Rule};
use wire::DecodeError;

/// The model's rules for a header that is not well-formed XDR (what the strict decoder refuses
/// too); RDMA_MSGP, which decodes but svcrdma refuses, is [`Rule::BadProc`] as well.
const MALFORMED_XDR: [Rule; 8] = [
    Rule::ShortHeader,
    Rule::BadVersion,
    Rule::BadProc,
    Rule::ReadListTruncated,
    Rule::WriteListTruncated,
    Rule::WriteSegmentsTruncated,
    Rule::ReplyChunkTruncated,
    Rule::ReplySegmentsTruncated,
];

fuzz_target!(|data: &[u8]| {
    let decoded = Header::decode_prefix(data);
    let discriminator = matches!(
        &decoded,
        Err(DecodeError::BadDiscriminant { field, .. }) if field.ends_with(".discriminator")
    );
    for profile in Profile::ALL {
        let model = profile.model();
        let verdict = classify(data, profile);
        if verdict.outcome == Outcome::Accept {
            if let Err(e) = &decoded {
                assert!(
                    discriminator,
                    "{profile} accepts ({:?}) what decode rejects: {e}",
                    verdict.rule
                );
            }
        }
        if data.len() < 16 || data.len() > model.max_req_size || discriminator {
            continue;
        }
        match &decoded {
            Err(e) => assert_eq!(
                verdict.outcome,
                Outcome::from(e),
                "{profile} answers {verdict} what decode rejects with {e}"
            ),
            Ok((header, _)) => {
                let msgp = verdict.rule == Rule::BadProc && header.proc() == Proc::Msgp;
                assert!(
                    msgp || !MALFORMED_XDR.contains(&verdict.rule),
                    "{profile} refuses as malformed ({verdict}) what decodes: {header:?}"
                );
            }
        }
    }
});
