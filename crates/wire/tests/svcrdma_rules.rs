//! One test per svcrdma header rule: a malformed header built with `wire::raw`, classified under
//! each kernel profile, must get the kernel's answer (see `wire::svcrdma` for the code citations).

use wire::raw::{proc_value, RawBuilder};
use wire::rpcrdma::Header;
use wire::svcrdma::{classify, classify_with, KernelModel, Outcome, Profile, Rule, Verdict};
use wire::DecodeError;

const XID: u32 = 0x5eed_0001;

/// The fixed header of an RDMA_MSG call.
fn msg() -> RawBuilder {
    RawBuilder::new().fixed(XID, 1, 32, proc_value::MSG)
}

/// An ONC RPC v2 NFSv3 NULL call (RFC 5531 §9, AUTH_NONE), hand-encoded: 40 bytes.
fn null_call() -> Vec<u8> {
    RawBuilder::new()
        .words(&[XID, 0, 2, 100_003, 3, 0, 0, 0, 0, 0])
        .bytes()
}

fn verdict(rule: Rule) -> Verdict {
    Verdict::from(rule)
}

/// Assert the same verdict under every profile.
fn assert_all_profiles(bytes: &[u8], rule: Rule) {
    for profile in Profile::ALL {
        assert_eq!(classify(bytes, profile), verdict(rule), "{profile}");
    }
}

#[test]
fn rule_accepted_minimal_msg_with_null_call() {
    let bytes = msg().empty_lists().raw(&null_call()).bytes();
    assert_all_profiles(&bytes, Rule::Accepted);
    assert_eq!(
        classify(&bytes, Profile::Linux2026).outcome,
        Outcome::Accept
    );
}

#[test]
fn rule_receive_overflow_is_disconnect() {
    let header = msg().empty_lists().raw(&null_call());
    let fill = 4096 - header.len();
    let exactly_full = header.clone().raw(&vec![0; fill]).bytes();
    assert_all_profiles(&exactly_full, Rule::Accepted);
    let one_over = header.raw(&vec![0; fill + 1]).bytes();
    assert_all_profiles(&one_over, Rule::ReceiveOverflow);
    assert_eq!(
        classify(&one_over, Profile::Linux6_1).outcome,
        Outcome::Disconnect
    );
    // A server tuned to 64 KiB Receives takes it.
    let tuned = KernelModel {
        max_req_size: 65536,
        ..Profile::Linux6_1.model()
    };
    assert_eq!(classify_with(&one_over, &tuned), verdict(Rule::Accepted));
}

#[test]
fn rule_short_header_is_err_chunk() {
    let full = msg().bytes();
    for len in 0..16 {
        assert_all_profiles(&full[..len], Rule::ShortHeader);
    }
    assert_eq!(
        classify(&full[..15], Profile::Linux6_1).outcome,
        Outcome::ErrChunk
    );
}

#[test]
fn rule_bad_version_is_err_vers() {
    for vers in [0, 2, 0xffff_ffff] {
        let bytes = RawBuilder::new()
            .fixed(XID, vers, 32, proc_value::MSG)
            .empty_lists()
            .bytes();
        assert_all_profiles(&bytes, Rule::BadVersion);
        assert_eq!(
            classify(&bytes, Profile::Linux2026).outcome,
            Outcome::ErrVers
        );
    }
    // The version is checked before the procedure.
    let both_bad = RawBuilder::new().fixed(XID, 2, 32, 99).bytes();
    assert_all_profiles(&both_bad, Rule::BadVersion);
}

#[test]
fn rule_dropped_proc_done_and_error_are_dropped() {
    for proc_ in [proc_value::DONE, proc_value::ERROR] {
        // Anything may follow; it is never parsed.
        let bytes = RawBuilder::new()
            .fixed(XID, 1, 32, proc_)
            .words(&[0xffff_ffff; 3])
            .bytes();
        assert_all_profiles(&bytes, Rule::DroppedProc);
        assert_eq!(classify(&bytes, Profile::Linux6_1).outcome, Outcome::Drop);
    }
}

#[test]
fn rule_bad_proc_msgp_and_unknown_are_err_chunk() {
    let msgp = RawBuilder::new()
        .fixed(XID, 1, 32, proc_value::MSGP)
        .msgp(1024, 4096)
        .empty_lists()
        .bytes();
    assert!(Header::decode_prefix(&msgp).is_ok(), "MSGP is well-formed");
    assert_all_profiles(&msgp, Rule::BadProc);
    for proc_ in [5, 0x100, 0xffff_ffff] {
        let bytes = RawBuilder::new()
            .fixed(XID, 1, 32, proc_)
            .empty_lists()
            .bytes();
        assert_all_profiles(&bytes, Rule::BadProc);
    }
}

#[test]
fn rule_read_list_truncated_is_err_chunk() {
    let full = msg()
        .read(0, 0x11, 64, 0x1000)
        .end_list()
        .end_list()
        .no_reply()
        .bytes();
    assert_all_profiles(&full, Rule::Accepted);
    // Cut anywhere inside the Read list (from the first discriminator to its terminator).
    for cut in 16..(16 + 4 + 20 + 4) {
        assert_all_profiles(&full[..cut], Rule::ReadListTruncated);
    }
}

#[test]
fn rule_read_list_any_nonzero_discriminator_means_present() {
    // xdr_item_is_present() tests `*p != 0`, so 2 or 0xffffffff start an entry like 1 does;
    // the strict codec rejects what the kernel accepts.
    for disc in [2, 0xffff_ffff] {
        let bytes = msg()
            .discriminator(disc)
            .words(&[0, 0x11, 64])
            .hyper(0x1000)
            .end_list()
            .end_list()
            .no_reply()
            .bytes();
        assert_all_profiles(&bytes, Rule::Accepted);
        assert!(matches!(
            Header::decode_prefix(&bytes),
            Err(DecodeError::BadDiscriminant { value, .. }) if value == disc
        ));
    }
}

#[test]
fn rule_read_position_unaligned_is_err_chunk() {
    for position in [1, 2, 3, 6, 0xffff_ffff] {
        let bytes = msg()
            .read(position, 0x11, 64, 0)
            .end_list()
            .end_list()
            .no_reply()
            .raw(&null_call())
            .bytes();
        assert_all_profiles(&bytes, Rule::ReadPositionUnaligned);
    }
}

#[test]
fn rule_read_segment_oversized_is_err_chunk_on_2026_only() {
    let limit = Profile::Linux2026.model().max_chunk_bytes();
    let at_limit = msg().read(0, 0x11, limit, 0).empty_lists().bytes();
    // Exactly the budget: 2026 lets it through; 6.1 (budget 259 pages) overruns its Read sink.
    assert_eq!(
        classify(&at_limit, Profile::Linux2026),
        verdict(Rule::Accepted)
    );
    let over = msg().read(0, 0x11, limit + 1, 0).empty_lists().bytes();
    assert_eq!(
        classify(&over, Profile::Linux2026),
        verdict(Rule::ReadSegmentOversized)
    );
    assert_eq!(
        classify(&over, Profile::Linux6_1),
        verdict(Rule::ReadPagesOverrun)
    );
    assert_eq!(
        classify(&over, Profile::Linux6_1).outcome,
        Outcome::ErrChunkThenClose
    );
}

#[test]
fn rule_read_segment_length_is_checked_before_position() {
    let bytes = msg().read(6, 0x11, 0x0100_0000, 0).empty_lists().bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::ReadSegmentOversized)
    );
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::ReadPositionUnaligned)
    );
}

#[test]
fn rule_write_list_truncated_is_err_chunk() {
    let full = msg()
        .end_list()
        .write_chunk(1)
        .segment(0x22, 4096, 0)
        .end_list()
        .no_reply()
        .bytes();
    assert_all_profiles(&full, Rule::Accepted);
    // Missing first discriminator, missing segcount, missing terminator.
    for cut in [20, 24, 28 + 16] {
        assert_all_profiles(&full[..cut], Rule::WriteListTruncated);
    }
}

#[test]
fn rule_write_segcount_zero_is_err_chunk_on_2026_only() {
    let bytes = msg()
        .end_list()
        .write_chunk(0)
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::WriteSegcountZero)
    );
    // 6.1 takes it, leaving a ch_segcount == 0 chunk for pcl_for_each_segment() to walk.
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::UncheckedZeroSegcount)
    );
    assert_eq!(classify(&bytes, Profile::Linux6_1).outcome, Outcome::Accept);
    assert!(Header::decode_prefix(&bytes).is_ok(), "RFC-valid encoding");
}

#[test]
fn rule_write_segcount_over_limit_is_err_chunk() {
    for segcount in [1_000_000, 0x1000_0000, u32::MAX] {
        let bytes = msg()
            .end_list()
            .write_chunk(segcount)
            .segments(2, 4096)
            .end_list()
            .no_reply()
            .bytes();
        assert_all_profiles(&bytes, Rule::WriteSegcountOverLimit);
    }
    // 260 is over 6.1's RPCSVC_MAXPAGES (259) but within 2026's rc_maxpages (260), where the
    // segments then fail to fit in the buffer.
    let bytes = msg().end_list().write_chunk(260).segments(2, 4096).bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::WriteSegcountOverLimit)
    );
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::WriteSegmentsTruncated)
    );
}

#[test]
fn rule_write_segments_truncated_is_err_chunk() {
    let bytes = msg()
        .end_list()
        .write_chunk(3)
        .segments(2, 4096)
        .end_list()
        .no_reply()
        .bytes();
    // The claimed third segment swallows the terminators: 16 bytes wanted, 8 left.
    assert_all_profiles(&bytes, Rule::WriteSegmentsTruncated);
}

#[test]
fn rule_reply_chunk_truncated_is_err_chunk() {
    let bytes = msg().end_list().end_list().bytes();
    assert_all_profiles(&bytes, Rule::ReplyChunkTruncated);
    let no_segcount = msg().end_list().end_list().word(1).bytes();
    assert_all_profiles(&no_segcount, Rule::ReplyChunkTruncated);
}

#[test]
fn rule_reply_segcount_zero_is_err_chunk_on_2026_only() {
    let bytes = RawBuilder::new()
        .fixed(XID, 1, 32, proc_value::NOMSG)
        .end_list()
        .end_list()
        .reply_chunk(0)
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::ReplySegcountZero)
    );
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::UncheckedZeroSegcount)
    );
}

#[test]
fn rule_reply_segcount_over_limit_is_err_chunk() {
    let bytes = msg()
        .end_list()
        .end_list()
        .reply_chunk(0x8000_0000)
        .segments(1, 4096)
        .bytes();
    assert_all_profiles(&bytes, Rule::ReplySegcountOverLimit);
}

#[test]
fn rule_reply_segments_truncated_is_err_chunk() {
    let bytes = msg()
        .end_list()
        .end_list()
        .reply_chunk(2)
        .segment(0x33, 4096, 0)
        .bytes();
    assert_all_profiles(&bytes, Rule::ReplySegmentsTruncated);
}

#[test]
fn rule_call_chunk_oversized_is_err_chunk_on_2026() {
    // Two Position-Zero segments, each within the per-segment cap, summing past the budget.
    let limit = Profile::Linux2026.model().max_chunk_bytes();
    let bytes = RawBuilder::new()
        .fixed(XID, 1, 32, proc_value::NOMSG)
        .read(0, 0x11, limit, 0)
        .read(0, 0x12, 4096, 0x10_0000)
        .empty_lists()
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::CallChunkOversized)
    );
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::ReadPagesOverrun)
    );
}

#[test]
fn rule_read_chunk_past_inline_is_err_chunk_on_2026() {
    // The inline NULL call is 40 bytes; a chunk at position 1000 points past it.
    let bytes = msg()
        .read(1000, 0x11, 4096, 0)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::ReadChunkPastInline)
    );
    // 6.1 splits the Receive buffer at the unchecked position.
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::UncheckedReadChunkPosition)
    );
    // At the end of the inline body is fine (a trailing data item).
    let at_end = msg()
        .read(40, 0x11, 4096, 0)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_all_profiles(&at_end, Rule::Accepted);
}

#[test]
fn rule_read_chunk_past_call_chunk_is_err_chunk_on_2026() {
    // With a Call chunk the bound is the Call chunk's length (the RPC message is in it).
    let bytes = RawBuilder::new()
        .fixed(XID, 1, 32, proc_value::NOMSG)
        .read(0, 0x11, 256, 0)
        .read(512, 0x12, 4096, 0x1000)
        .empty_lists()
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::ReadChunkPastInline)
    );
    let inside = RawBuilder::new()
        .fixed(XID, 1, 32, proc_value::NOMSG)
        .read(0, 0x11, 1024, 0)
        .read(512, 0x12, 4096, 0x1000)
        .empty_lists()
        .bytes();
    assert_all_profiles(&inside, Rule::Accepted);
}

#[test]
fn rule_read_chunks_overlap_is_err_chunk_on_2026() {
    // Chunk at 8 of 100 bytes runs into the chunk at 12 (positions count the unreduced stream).
    let bytes = msg()
        .read(8, 0x11, 100, 0)
        .read(12, 0x12, 100, 0x1000)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::ReadChunksOverlap)
    );
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::UncheckedReadChunkPosition)
    );
    // Wire order does not matter: the kernel sorts chunks by position.
    let reversed = msg()
        .read(12, 0x12, 100, 0x1000)
        .read(8, 0x11, 100, 0)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_eq!(
        classify(&reversed, Profile::Linux2026),
        verdict(Rule::ReadChunksOverlap)
    );
    // Adjacent, non-overlapping chunks are fine: second position = 8 + 100 rounded by the client.
    let adjacent = msg()
        .read(8, 0x11, 100, 0)
        .read(108, 0x12, 100, 0x1000)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_all_profiles(&adjacent, Rule::Accepted);
    // One XDR word too long is already an overlap.
    let by_one_word = msg()
        .read(8, 0x11, 104, 0)
        .read(108, 0x12, 100, 0x1000)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_eq!(
        classify(&by_one_word, Profile::Linux2026),
        verdict(Rule::ReadChunksOverlap)
    );
}

#[test]
fn rule_read_chunk_oversized_is_err_chunk_on_2026() {
    // One chunk of two segments at the same position, each under the cap, together over it.
    let limit = Profile::Linux2026.model().max_chunk_bytes();
    let bytes = msg()
        .read(8, 0x11, limit, 0)
        .read(8, 0x12, 4096, 0x10_0000)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_eq!(
        classify(&bytes, Profile::Linux2026),
        verdict(Rule::ReadChunkOversized)
    );
    assert_eq!(
        classify(&bytes, Profile::Linux6_1),
        verdict(Rule::ReadPagesOverrun)
    );
}

#[test]
fn rule_read_pages_overrun_is_err_chunk_then_close() {
    // Two well-placed chunks of 200 pages each: every per-chunk check passes, the sum does not
    // fit the request's pages.
    let len = 200 * 4096;
    let bytes = msg()
        .read(4, 0x11, len, 0)
        .read(4 + len, 0x12, len, 0x1000_0000)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert_all_profiles(&bytes, Rule::ReadPagesOverrun);
    assert_eq!(
        classify(&bytes, Profile::Linux2026).outcome,
        Outcome::ErrChunkThenClose
    );
}

#[test]
fn rule_budget_follows_nfsd_payload_size() {
    // A 256 MiB guest: nfsd serves 64 KiB payloads, so rc_maxpages is 20 on 2026 kernels.
    let small = KernelModel::with_max_payload(Profile::Linux2026, 64 * 1024);
    let bytes = msg()
        .end_list()
        .write_chunk(21)
        .segments(21, 4096)
        .end_list()
        .no_reply()
        .bytes();
    assert_eq!(
        classify_with(&bytes, &small),
        verdict(Rule::WriteSegcountOverLimit)
    );
    assert_all_profiles(&bytes, Rule::Accepted);
}

/// Deterministic xorshift so the corpus below is the same on every run.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn valid_messages() -> Vec<Vec<u8>> {
    vec![
        msg().empty_lists().raw(&null_call()).bytes(),
        msg()
            .read(40, 0x11, 8192, 0x1000)
            .end_list()
            .write_chunk(2)
            .segments(2, 4096)
            .end_list()
            .reply_chunk(1)
            .segments(1, 1024)
            .raw(&null_call())
            .bytes(),
        RawBuilder::new()
            .fixed(XID, 1, 8, proc_value::NOMSG)
            .read(0, 0x11, 512, 0)
            .end_list()
            .end_list()
            .reply_chunk(1)
            .segments(1, 4096)
            .bytes(),
    ]
}

#[test]
fn classify_accept_implies_decode_ok_apart_from_the_discriminator_quirk() {
    // Mutate valid messages word by word; whenever a kernel profile accepts, the strict codec
    // must decode the header too, except where the kernel's "non-zero = present" reading
    // accepts a discriminator the RFC forbids.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut accepted = 0;
    for base in valid_messages() {
        assert!(Header::decode_prefix(&base).is_ok());
        for word in 0..base.len() / 4 {
            for _ in 0..16 {
                let mut bytes = base.clone();
                let value = match xorshift(&mut state) % 4 {
                    0 => 0,
                    1 => 1,
                    2 => xorshift(&mut state) as u32 & 0xff,
                    _ => xorshift(&mut state) as u32,
                };
                bytes[word * 4..word * 4 + 4].copy_from_slice(&value.to_be_bytes());
                for profile in Profile::ALL {
                    if classify(&bytes, profile).outcome != Outcome::Accept {
                        continue;
                    }
                    accepted += 1;
                    match Header::decode_prefix(&bytes) {
                        Ok(_) => {}
                        Err(DecodeError::BadDiscriminant { field, .. }) => {
                            assert!(field.ends_with(".discriminator"), "{field} {bytes:02x?}")
                        }
                        Err(e) => panic!("{profile} accepts what decode rejects: {e} {bytes:02x?}"),
                    }
                }
            }
        }
    }
    assert!(
        accepted > 100,
        "the corpus exercises acceptance ({accepted})"
    );
}

#[test]
fn decode_error_mapping_agrees_with_the_kernel_on_fixed_header_errors() {
    let cases = [
        RawBuilder::new().fixed(XID, 2, 1, 0).bytes(),
        RawBuilder::new().fixed(XID, 1, 1, 7).empty_lists().bytes(),
        msg().bytes()[..10].to_vec(),
        msg().read(3, 1, 1, 1).empty_lists().bytes()[..30].to_vec(),
        msg().end_list().write_chunk(2).segments(1, 64).bytes(),
    ];
    for bytes in cases {
        let err = Header::decode_prefix(&bytes).unwrap_err();
        for profile in Profile::ALL {
            assert_eq!(
                Outcome::from(&err),
                classify(&bytes, profile).outcome,
                "{err} under {profile}"
            );
        }
    }
}

#[test]
fn classify_never_panics_on_noise() {
    let mut state = 0x0123_4567_89ab_cdefu64;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20_000 {
        let len = (xorshift(&mut state) % 160) as usize;
        let mut bytes = Vec::with_capacity(len);
        // Small words hit discriminators and counts more often than uniform noise would.
        while bytes.len() < len {
            let word = match xorshift(&mut state) % 3 {
                0 => (xorshift(&mut state) % 3) as u32,
                1 => 1,
                _ => xorshift(&mut state) as u32,
            };
            bytes.extend_from_slice(&word.to_be_bytes());
        }
        bytes.truncate(len);
        if bytes.len() >= 8 {
            bytes[4..8].copy_from_slice(&1u32.to_be_bytes());
        }
        for profile in Profile::ALL {
            seen.insert(classify(&bytes, profile).rule);
        }
    }
    // The noise reaches deep rules, not just the header checks.
    assert!(seen.contains(&Rule::Accepted));
    assert!(seen.contains(&Rule::WriteSegmentsTruncated));
    assert!(seen.len() >= 8, "{seen:?}");
}

#[test]
fn rule_accepted_several_read_and_write_chunks_since_5_11() {
    // The pre-5.11 `chcount < 2` limit (one Read position, one Write chunk) is gone in 6.1:
    // the parsed-chunk-list code takes any number of each.
    let bytes = msg()
        .read(40, 0x11, 512, 0)
        .read(552, 0x12, 512, 0x1000)
        .end_list()
        .write_chunk(2)
        .segments(2, 4096)
        .write_chunk(1)
        .segments(1, 4096)
        .end_list()
        .no_reply()
        .raw(&null_call())
        .bytes();
    assert!(Header::decode_prefix(&bytes).is_ok());
    assert_all_profiles(&bytes, Rule::Accepted);
}
