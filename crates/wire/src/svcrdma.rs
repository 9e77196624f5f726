//! Rule model of what Linux svcrdma does with an incoming RPC-over-RDMA call header, per kernel
//! profile: [`classify`] answers Accept, ERR_VERS, ERR_CHUNK, drop or disconnect, and names the
//! kernel check ([`Rule`]) that decided it.
//!
//! The model follows `svc_rdma_xdr_decode_req()` and its helpers in
//! `net/sunrpc/xprtrdma/svc_rdma_recvfrom.c` and `svc_rdma_pcl.c` check by check, including the
//! kernel's own parsing quirks (any non-zero list discriminator means "present"; lengths are summed
//! in 32-bit arithmetic), so it can predict the kernel's answer to malformed headers the strict
//! codec in [`crate::rpcrdma`] refuses outright.
//!
//! Profiles:
//! * [`Profile::Linux6_1`] — Debian 12's 6.1.y (6.1.120 and later, with the Dec 2024 backport of
//!   "svcrdma: Address an integer overflow" that caps segcount at `RPCSVC_MAXPAGES`). Since 5.11
//!   ("parsed chunk list") 6.1 accepts several Read chunks and Write chunks; the older
//!   `chcount < 2` limit does not apply.
//! * [`Profile::Linux2026`] — mainline with the May 2026 series "svcrdma: harden parsed chunk list
//!   against malformed wire values": zero segcount rejected, Read segment length capped at
//!   `rc_maxpages << PAGE_SHIFT`, and `pcl_check_read_chunk_positions()` at decode time.
//!
//! Not modelled: the reverse-direction (backchannel) reply path (needs an NFSv4.1 backchannel, so
//! never taken for NFSv3), and the exact page-offset arithmetic of the Read sink (the overrun
//! rule uses whole pages, so verdicts within a page of the limit may differ).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::ddp::{self, Accounting, Extent, PositionError};
use crate::error::DecodeError;
use crate::rpcrdma::{ReadChunk, ReadSegment, Segment, RPCRDMA_VERSION, SEGMENT_LEN};

/// Linux PAGE_SIZE on x86_64.
pub const PAGE_SIZE: u32 = 4096;
/// `svcrdma_max_req_size` default (`RPCRDMA_DEF_INLINE_THRESH`): bytes in each posted Receive.
pub const DEFAULT_MAX_REQ_SIZE: usize = 4096;
/// `RPCSVC_MAXPAYLOAD`: 1 MiB.
pub const RPCSVC_MAXPAYLOAD: u32 = 1024 * 1024;
/// `RPCSVC_MAXPAGES` (6.1): payload pages + 2 (request and reply heads) + 1 (splice slack).
pub const RPCSVC_MAXPAGES: u32 = RPCSVC_MAXPAYLOAD.div_ceil(PAGE_SIZE) + 2 + 1;

/// A kernel whose svcrdma header checks are modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Profile {
    /// Linux 6.1.y as shipped by Debian 12 (6.1.120+).
    Linux6_1,
    /// Mainline with the May 2026 svcrdma hardening series.
    Linux2026,
}

impl Profile {
    /// Every profile, oldest first.
    pub const ALL: [Profile; 2] = [Profile::Linux6_1, Profile::Linux2026];

    /// Stable name used on the command line and in snapshots.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Linux6_1 => "linux-6.1",
            Profile::Linux2026 => "linux-2026",
        }
    }

    /// The kernel constants and answers of this profile, with nfsd's default 1 MiB maximum
    /// payload.
    pub fn model(self) -> KernelModel {
        match self {
            Profile::Linux6_1 => KernelModel {
                name: self.name(),
                profile: self,
                max_req_size: DEFAULT_MAX_REQ_SIZE,
                maxpages: RPCSVC_MAXPAGES,
                answers: self.answers(),
            },
            Profile::Linux2026 => KernelModel::with_max_payload(self, RPCSVC_MAXPAYLOAD),
        }
    }

    /// What this profile answers each rule: every rule's own outcome ([`Rule::outcome`]), and
    /// on 6.1 none of the 2026 decode-time checks ([`Rule::HARDENING_2026`] answered
    /// [`Outcome::Accept`], i.e. not checked).
    pub fn answers(self) -> Answers {
        match self {
            Profile::Linux6_1 => Rule::HARDENING_2026
                .into_iter()
                .fold(Answers::of_rules(), |a, rule| a.with(rule, Outcome::Accept)),
            Profile::Linux2026 => Answers::of_rules(),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Error for an unknown profile name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProfile(pub String);

impl fmt::Display for UnknownProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        write!(
            f,
            "unknown kernel profile {:?} (known: {})",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownProfile {}

impl FromStr for Profile {
    type Err = UnknownProfile;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownProfile(s.to_owned()))
    }
}

/// The constants one kernel applies and what it answers each rule. Build with
/// [`Profile::model`] (the two modelled kernels) or from a measured profile's answers
/// (`wirefuzz::rules`: `fixtures/svcrdma-profiles/`), adjust with
/// [`KernelModel::with_max_payload`] when the server's nfsd payload limit is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelModel {
    /// The profile's name (`linux-2026`, or a measured kernel's, e.g. `debian-6.12.117`).
    pub name: &'static str,
    /// The modelled kernel whose constants this one uses.
    pub profile: Profile,
    /// Receive buffer size (`svcrdma_max_req_size`, sysctl 4096..=65536); a larger Send fails the
    /// Receive with a local length error.
    pub max_req_size: usize,
    /// Page budget per request: `RPCSVC_MAXPAGES` (6.1) or `rc_maxpages = svc_serv_maxpages()`
    /// (2026). Bounds Write/Reply segcount and, in 2026, Read segment and chunk lengths.
    pub maxpages: u32,
    /// What this kernel answers each rule ([`KernelModel::answer`]); a check of
    /// [`Rule::HARDENING_2026`] answered [`Outcome::Accept`] is one this kernel does not make.
    pub answers: Answers,
}

/// A kernel's answer to each [`Rule`], indexed by the rule: the 2026 model's
/// ([`Rule::outcome`]) unless a profile says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Answers([Outcome; Rule::ALL.len()]);

impl Answers {
    /// Every rule answered with its own outcome ([`Rule::outcome`]).
    pub fn of_rules() -> Answers {
        Answers(Rule::ALL.map(Rule::outcome))
    }

    /// `self` with `rule` answered `outcome`. The rules no header breaks ([`Rule::Accepted`],
    /// the `Unchecked*` ones) always answer [`Outcome::Accept`] and are left as they are.
    #[must_use]
    pub fn with(mut self, rule: Rule, outcome: Outcome) -> Answers {
        if rule.outcome() != Outcome::Accept {
            self.0[rule as usize] = outcome;
        }
        self
    }

    /// The answer to `rule`.
    pub fn get(&self, rule: Rule) -> Outcome {
        self.0[rule as usize]
    }
}

impl KernelModel {
    /// The 2026 page budget for an nfsd whose maximum payload is `max_payload` bytes:
    /// `svc_serv_maxpages() = DIV_ROUND_UP(sv_max_mesg, PAGE_SIZE) + 2 + 1` with
    /// `sv_max_mesg = roundup(max_payload + PAGE_SIZE, PAGE_SIZE)`. nfsd picks its payload from RAM
    /// (`nfsd_get_default_max_blksize`: a 256 MiB guest gets 64 KiB), so small VMs have a much
    /// smaller budget than the 1 MiB default. Answers as `profile` does.
    pub fn with_max_payload(profile: Profile, max_payload: u32) -> KernelModel {
        let sv_max_mesg = max_payload.saturating_add(PAGE_SIZE).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        KernelModel {
            name: profile.name(),
            profile,
            max_req_size: DEFAULT_MAX_REQ_SIZE,
            maxpages: sv_max_mesg.div_ceil(PAGE_SIZE) + 2 + 1,
            answers: profile.answers(),
        }
    }

    /// What this kernel answers a header that breaks `rule`: the one place a rule becomes a wire
    /// answer ([`classify_with`]; the engine's responder and the wire fuzzer's model runner go
    /// through it).
    pub fn answer(&self, rule: Rule) -> Outcome {
        self.answers.get(rule)
    }

    /// Whether this kernel makes the decode-time check of `rule` (one of
    /// [`Rule::HARDENING_2026`]): a profile that answers it with a reply does not.
    fn checks(&self, rule: Rule) -> bool {
        self.answer(rule) != Outcome::Accept
    }

    /// The Read chunk budget of one request: every page it owns (`maxpages` pages), the one limit
    /// on what a responder pulls. The Read sink overruns past it (6.1 and 2026), and the engine's
    /// responder refuses more ([`crate::ddp::plan`]).
    pub fn read_budget(&self) -> u64 {
        u64::from(self.maxpages) * u64::from(PAGE_SIZE)
    }

    /// [`KernelModel::read_budget`] as the 2026 checks compute it for one Read segment or chunk:
    /// `rc_maxpages << PAGE_SHIFT` in 32 bits.
    pub fn max_chunk_bytes(&self) -> u32 {
        self.maxpages.wrapping_mul(PAGE_SIZE)
    }
}

/// What svcrdma does with the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Outcome {
    /// The header passes; the RPC message goes on to the RPC layer (after any RDMA Reads).
    Accept,
    /// RDMA_ERROR / ERR_VERS (low = high = 1); the connection stays up.
    ErrVers,
    /// RDMA_ERROR / ERR_CHUNK; the connection stays up.
    ErrChunk,
    /// RDMA_ERROR / ERR_CHUNK, then the transport is closed (Read-list processing failed).
    ErrChunkThenClose,
    /// Silently dropped; no reply, connection stays up.
    Drop,
    /// No reply; the connection is closed.
    Disconnect,
}

impl Outcome {
    /// Stable lower-case name for snapshots and reports.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Accept => "accept",
            Outcome::ErrVers => "err-vers",
            Outcome::ErrChunk => "err-chunk",
            Outcome::ErrChunkThenClose => "err-chunk+close",
            Outcome::Drop => "drop",
            Outcome::Disconnect => "disconnect",
        }
    }
}

/// What an RFC 8166 Responder answers for a header the strict codec rejected, mirroring the
/// Linux choices (rustls-style mapping from a decode error to a wire outcome):
/// a bad `rdma_vers` gets ERR_VERS (RFC 8166 §4.5.1); a malformed RDMA_ERROR is never answered
/// (an error must not provoke an error); everything else gets ERR_CHUNK (RFC 8166 §4.5.2).
impl From<&DecodeError> for Outcome {
    fn from(err: &DecodeError) -> Outcome {
        match err {
            DecodeError::UnsupportedVersion { .. } => Outcome::ErrVers,
            DecodeError::MalformedErrorBody(_) => Outcome::Drop,
            _ => Outcome::ErrChunk,
        }
    }
}

/// The svcrdma rule of a Read chunk out of place ([`crate::ddp`]).
impl From<&PositionError> for Rule {
    fn from(err: &PositionError) -> Rule {
        match err {
            PositionError::Unaligned { .. } => Rule::ReadPositionUnaligned,
            PositionError::PastStream { .. } => Rule::ReadChunkPastInline,
            PositionError::Overlap { .. } => Rule::ReadChunksOverlap,
            PositionError::ChunkOversized { .. } => Rule::ReadChunkOversized,
            PositionError::CallChunkOversized { .. } => Rule::CallChunkOversized,
        }
    }
}

/// Which check decided the outcome. `Unchecked*` rules accept a message that a later kernel
/// rejects: the hazard the 2026 series fixed is live on that profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Rule {
    /// All checks passed.
    Accepted,
    /// The Send was larger than the posted Receive buffer.
    ReceiveOverflow,
    /// Fewer than the four fixed words.
    ShortHeader,
    /// `rdma_vers` is not 1.
    BadVersion,
    /// RDMA_DONE or RDMA_ERROR from the client.
    DroppedProc,
    /// RDMA_MSGP or an undefined `rdma_proc`.
    BadProc,
    /// The Read list ends mid-entry or lacks a terminator.
    ReadListTruncated,
    /// (2026) A Read segment longer than `rc_maxpages << PAGE_SHIFT`.
    ReadSegmentOversized,
    /// A non-zero Read position that is not a multiple of 4.
    ReadPositionUnaligned,
    /// The Write list ends mid-entry or lacks a terminator.
    WriteListTruncated,
    /// (2026) A Write chunk with segcount 0.
    WriteSegcountZero,
    /// A Write chunk segcount above the page budget.
    WriteSegcountOverLimit,
    /// A Write chunk's segments do not fit in the received bytes.
    WriteSegmentsTruncated,
    /// The Reply chunk discriminator is missing.
    ReplyChunkTruncated,
    /// (2026) A Reply chunk with segcount 0.
    ReplySegcountZero,
    /// A Reply chunk segcount above the page budget.
    ReplySegcountOverLimit,
    /// The Reply chunk's segments do not fit in the received bytes.
    ReplySegmentsTruncated,
    /// (2026) The Position-Zero Read chunk is longer than the page budget.
    CallChunkOversized,
    /// (2026) A Read chunk starts beyond the inline body (or the Call chunk).
    ReadChunkPastInline,
    /// (2026) A Read chunk is longer than the page budget.
    ReadChunkOversized,
    /// (2026) Two Read chunks overlap.
    ReadChunksOverlap,
    /// The Read sink needs more pages than the request has (Read-list processing).
    ReadPagesOverrun,
    /// (6.1) Accepted although a Read chunk starts past the inline body: the Read path computes
    /// inline ranges from it unchecked (out-of-bounds copy / length underflow).
    UncheckedReadChunkPosition,
    /// (6.1) Accepted with a zero-segment Write/Reply chunk: `pcl_for_each_segment()` underflows.
    UncheckedZeroSegcount,
}

impl Rule {
    /// The decode-time checks of the 2026 hardening series: a kernel without them (linux-6.1,
    /// or a measured profile that answers one with a reply) lets such a header through to the
    /// later checks.
    pub const HARDENING_2026: [Rule; 7] = [
        Rule::ReadSegmentOversized,
        Rule::WriteSegcountZero,
        Rule::ReplySegcountZero,
        Rule::CallChunkOversized,
        Rule::ReadChunkPastInline,
        Rule::ReadChunkOversized,
        Rule::ReadChunksOverlap,
    ];

    /// Every rule the model knows, in declaration order (`rule as usize` is its index).
    pub const ALL: [Rule; 24] = [
        Rule::Accepted,
        Rule::ReceiveOverflow,
        Rule::ShortHeader,
        Rule::BadVersion,
        Rule::DroppedProc,
        Rule::BadProc,
        Rule::ReadListTruncated,
        Rule::ReadSegmentOversized,
        Rule::ReadPositionUnaligned,
        Rule::WriteListTruncated,
        Rule::WriteSegcountZero,
        Rule::WriteSegcountOverLimit,
        Rule::WriteSegmentsTruncated,
        Rule::ReplyChunkTruncated,
        Rule::ReplySegcountZero,
        Rule::ReplySegcountOverLimit,
        Rule::ReplySegmentsTruncated,
        Rule::CallChunkOversized,
        Rule::ReadChunkPastInline,
        Rule::ReadChunkOversized,
        Rule::ReadChunksOverlap,
        Rule::ReadPagesOverrun,
        Rule::UncheckedReadChunkPosition,
        Rule::UncheckedZeroSegcount,
    ];

    /// Stable kebab-case name (used in test names, snapshots and reports).
    pub fn name(self) -> &'static str {
        match self {
            Rule::Accepted => "accepted",
            Rule::ReceiveOverflow => "receive-overflow",
            Rule::ShortHeader => "short-header",
            Rule::BadVersion => "bad-version",
            Rule::DroppedProc => "dropped-proc",
            Rule::BadProc => "bad-proc",
            Rule::ReadListTruncated => "read-list-truncated",
            Rule::ReadSegmentOversized => "read-segment-oversized",
            Rule::ReadPositionUnaligned => "read-position-unaligned",
            Rule::WriteListTruncated => "write-list-truncated",
            Rule::WriteSegcountZero => "write-segcount-zero",
            Rule::WriteSegcountOverLimit => "write-segcount-over-limit",
            Rule::WriteSegmentsTruncated => "write-segments-truncated",
            Rule::ReplyChunkTruncated => "reply-chunk-truncated",
            Rule::ReplySegcountZero => "reply-segcount-zero",
            Rule::ReplySegcountOverLimit => "reply-segcount-over-limit",
            Rule::ReplySegmentsTruncated => "reply-segments-truncated",
            Rule::CallChunkOversized => "call-chunk-oversized",
            Rule::ReadChunkPastInline => "read-chunk-past-inline",
            Rule::ReadChunkOversized => "read-chunk-oversized",
            Rule::ReadChunksOverlap => "read-chunks-overlap",
            Rule::ReadPagesOverrun => "read-pages-overrun",
            Rule::UncheckedReadChunkPosition => "unchecked-read-chunk-position",
            Rule::UncheckedZeroSegcount => "unchecked-zero-segcount",
        }
    }

    /// The kernel function whose check this is.
    pub fn kernel_check(self) -> &'static str {
        match self {
            Rule::Accepted => "svc_rdma_xdr_decode_req",
            Rule::ReceiveOverflow => "svc_rdma_wc_receive (IB_WC_LOC_LEN_ERR)",
            Rule::ShortHeader | Rule::BadVersion | Rule::DroppedProc | Rule::BadProc => {
                "svc_rdma_xdr_decode_req"
            }
            Rule::ReadListTruncated | Rule::ReadSegmentOversized | Rule::ReadPositionUnaligned => {
                "xdr_count_read_segments"
            }
            Rule::WriteListTruncated => "xdr_count_write_chunks",
            Rule::WriteSegcountZero
            | Rule::WriteSegcountOverLimit
            | Rule::WriteSegmentsTruncated
            | Rule::ReplySegcountZero
            | Rule::ReplySegcountOverLimit
            | Rule::ReplySegmentsTruncated => "xdr_check_write_chunk",
            Rule::ReplyChunkTruncated => "xdr_check_reply_chunk",
            Rule::CallChunkOversized
            | Rule::ReadChunkPastInline
            | Rule::ReadChunkOversized
            | Rule::ReadChunksOverlap => "pcl_check_read_chunk_positions",
            Rule::ReadPagesOverrun => "svc_rdma_build_read_segment",
            Rule::UncheckedReadChunkPosition => {
                "svc_rdma_read_data_item / svc_rdma_copy_inline_range"
            }
            Rule::UncheckedZeroSegcount => "pcl_for_each_segment (svc_rdma_get_inv_rkey)",
        }
    }

    /// The RFC section the offending header breaks (or, for limits, the section defining the
    /// field the kernel bounds).
    pub fn rfc(self) -> &'static str {
        match self {
            Rule::Accepted => "RFC 8166 §4",
            Rule::ReceiveOverflow => "RFC 8166 §3.3.2 (inline threshold)",
            Rule::ShortHeader => "RFC 8166 §4.1 (fixed header fields)",
            Rule::BadVersion => "RFC 8166 §4.1.2, §4.5.1",
            Rule::DroppedProc => "RFC 8166 §4.6.2 (RDMA_DONE), §4.5 (RDMA_ERROR)",
            Rule::BadProc => "RFC 8166 §4.1.4, §4.6.1 (RDMA_MSGP)",
            Rule::ReadListTruncated
            | Rule::WriteListTruncated
            | Rule::ReplyChunkTruncated
            | Rule::WriteSegmentsTruncated
            | Rule::ReplySegmentsTruncated => "RFC 8166 §4.5.2 (XDR errors)",
            Rule::ReadSegmentOversized | Rule::ReadChunkOversized | Rule::CallChunkOversized => {
                "RFC 8166 §3.4.5 (Read chunks)"
            }
            Rule::ReadPositionUnaligned
            | Rule::ReadChunkPastInline
            | Rule::ReadChunksOverlap
            | Rule::UncheckedReadChunkPosition => "RFC 8166 §3.4.4 (chunk position)",
            Rule::WriteSegcountZero
            | Rule::WriteSegcountOverLimit
            | Rule::ReplySegcountZero
            | Rule::ReplySegcountOverLimit
            | Rule::UncheckedZeroSegcount => "RFC 8166 §3.4.6 (Write chunks)",
            Rule::ReadPagesOverrun => "RFC 8166 §4.5.3 (Responder operational errors)",
        }
    }

    /// The wire outcome this rule produces on the 2026 model (a kernel's own:
    /// [`KernelModel::answer`]).
    pub fn outcome(self) -> Outcome {
        match self {
            Rule::Accepted | Rule::UncheckedReadChunkPosition | Rule::UncheckedZeroSegcount => {
                Outcome::Accept
            }
            Rule::ReceiveOverflow => Outcome::Disconnect,
            Rule::BadVersion => Outcome::ErrVers,
            Rule::DroppedProc => Outcome::Drop,
            Rule::ReadPagesOverrun => Outcome::ErrChunkThenClose,
            _ => Outcome::ErrChunk,
        }
    }
}

/// The model's answer for one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Verdict {
    pub outcome: Outcome,
    pub rule: Rule,
}

impl From<Rule> for Verdict {
    fn from(rule: Rule) -> Verdict {
        Verdict {
            outcome: rule.outcome(),
            rule,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.outcome.name(), self.rule.name())
    }
}

/// Classify one received Send payload (`bytes` = the whole Receive) as `profile` would, with
/// the profile's default constants.
pub fn classify(bytes: &[u8], profile: Profile) -> Verdict {
    classify_with(bytes, &profile.model())
}

/// [`classify`] with explicit kernel constants.
pub fn classify_with(bytes: &[u8], model: &KernelModel) -> Verdict {
    let rule = match check(bytes, model) {
        Ok(()) => Rule::Accepted,
        Err(rule) => rule,
    };
    Verdict {
        outcome: model.answer(rule),
        rule,
    }
}

/// The kernel's `xdr_inline_decode` over the Receive buffer: a cursor that fails when fewer
/// bytes remain than asked for.
struct KernelStream<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl KernelStream<'_> {
    fn word(&mut self) -> Option<u32> {
        let b = self.bytes.get(self.pos..self.pos.checked_add(4)?)?;
        self.pos += 4;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn hyper(&mut self) -> Option<u64> {
        let hi = self.word()?;
        let lo = self.word()?;
        Some((u64::from(hi) << 32) | u64::from(lo))
    }

    fn skip(&mut self, len: usize) -> Option<()> {
        let end = self.pos.checked_add(len)?;
        (end <= self.bytes.len()).then(|| self.pos = end)
    }
}

/// A Read chunk's length as the kernel's parsed chunk list holds it: `pcl_set_read_segment`'s
/// 32-bit `ch_length += length`, which is the exact sum taken mod 2^32.
fn kernel_length(chunk: &ReadChunk) -> u32 {
    chunk.length() as u32
}

fn check(bytes: &[u8], model: &KernelModel) -> Result<(), Rule> {
    // svc_rdma_wc_receive: a Send longer than the posted Receive completes with a local length
    // error; the Receive is flushed and the transport closed (RFC 8166 §3.3.2: the Requester MUST
    // NOT exceed the Responder's inline threshold).
    if bytes.len() > model.max_req_size {
        return Err(Rule::ReceiveOverflow);
    }
    let mut s = KernelStream { bytes, pos: 0 };

    // svc_rdma_xdr_decode_req: xdr_inline_decode(rpcrdma_fixed_maxsz) fails -> -EINVAL -> ERR_CHUNK.
    if bytes.len() < 16 {
        return Err(Rule::ShortHeader);
    }
    let _xid = s.word();
    let vers = s.word();
    let _credits = s.word(); // never checked by svcrdma
    let proc_ = s.word();
    // RFC 8166 §4.1.2 / §4.5.1: vers != 1 -> -EPROTONOSUPPORT -> ERR_VERS (low = high = 1).
    if vers != Some(RPCRDMA_VERSION) {
        return Err(Rule::BadVersion);
    }
    match proc_ {
        Some(0 | 1) => {}
        // RDMA_DONE and RDMA_ERROR: out_drop, return 0 (silently dropped).
        Some(3 | 4) => return Err(Rule::DroppedProc),
        // RDMA_MSGP (RFC 8166 §4.6.1: no longer supported) and undefined values: out_proc, -EINVAL.
        _ => return Err(Rule::BadProc),
    }

    let reads = check_read_list(&mut s, model)?;
    let zero_segcount = check_write_list(&mut s, model)?;
    let zero_segcount = check_reply_chunk(&mut s, model)? || zero_segcount;
    let inline_len = bytes.len() - s.pos;

    let positions = check_read_chunk_positions(&reads, inline_len, model);
    // 2026 pcl_check_read_chunk_positions, rule by rule as far as the kernel makes it.
    if let Err(rule) = positions {
        if model.checks(rule) {
            return Err(rule);
        }
    }
    // svc_rdma_build_read_segment: the Read sink is rq_pages; more pages than the request owns
    // hits the overrun guard -> -EINVAL -> ERR_CHUNK, then svc_xprt_deferred_close.
    let read_bytes: u64 = reads.iter().map(|c| u64::from(kernel_length(c))).sum();
    if read_bytes > model.read_budget() {
        return Err(Rule::ReadPagesOverrun);
    }
    if positions.is_err() {
        return Err(Rule::UncheckedReadChunkPosition);
    }
    if zero_segcount {
        return Err(Rule::UncheckedZeroSegcount);
    }
    Ok(())
}

/// `xdr_check_read_list` -> `xdr_count_read_segments`, then `pcl_alloc_call`/`pcl_alloc_read`
/// grouping ([`crate::rpcrdma::group`]). Returns the chunks sorted by position (position 0 = the Call chunk);
/// the kernel's length of each is [`kernel_length`].
fn check_read_list(s: &mut KernelStream<'_>, model: &KernelModel) -> Result<Vec<ReadChunk>, Rule> {
    let mut reads: Vec<ReadSegment> = Vec::new();
    let mut present = s.word().ok_or(Rule::ReadListTruncated)?;
    // xdr_item_is_present: any non-zero discriminator counts as "present". Each pass consumes at
    // least 24 bytes of a buffer of at most max_req_size, so the loop is bounded.
    while present != 0 {
        let position = s.word().ok_or(Rule::ReadListTruncated)?;
        let handle = s.word().ok_or(Rule::ReadListTruncated)?;
        let length = s.word().ok_or(Rule::ReadListTruncated)?;
        let offset = s.hyper().ok_or(Rule::ReadListTruncated)?;
        // 2026: `length > rc_maxpages << PAGE_SHIFT` -> false (checked before the position).
        if model.checks(Rule::ReadSegmentOversized) && length > model.max_chunk_bytes() {
            return Err(Rule::ReadSegmentOversized);
        }
        // RFC 8166 §3.4.4: XDR positions are 4-byte aligned; `position & 3` -> false.
        ddp::check_aligned(position).map_err(|e| Rule::from(&e))?;
        reads.push(ReadSegment {
            position,
            target: Segment {
                handle,
                length,
                offset,
            },
        });
        present = s.word().ok_or(Rule::ReadListTruncated)?;
    }
    Ok(crate::rpcrdma::group(&reads))
}

/// `xdr_check_write_list` -> `xdr_count_write_chunks`. Returns whether a zero-segment chunk was
/// accepted.
fn check_write_list(s: &mut KernelStream<'_>, model: &KernelModel) -> Result<bool, Rule> {
    let mut zero_segcount = false;
    let mut present = s.word().ok_or(Rule::WriteListTruncated)?;
    // Bounded: each pass consumes at least 8 bytes.
    while present != 0 {
        zero_segcount |= check_write_chunk(s, model, ChunkKind::Write)?;
        present = s.word().ok_or(Rule::WriteListTruncated)?;
    }
    Ok(zero_segcount)
}

/// `xdr_check_reply_chunk`. Returns whether a zero-segment chunk was accepted.
fn check_reply_chunk(s: &mut KernelStream<'_>, model: &KernelModel) -> Result<bool, Rule> {
    match s.word().ok_or(Rule::ReplyChunkTruncated)? {
        0 => Ok(false),
        _ => check_write_chunk(s, model, ChunkKind::Reply),
    }
}

#[derive(Clone, Copy)]
enum ChunkKind {
    Write,
    Reply,
}

/// `xdr_check_write_chunk`: segcount range check, then the segments must fit in the buffer.
fn check_write_chunk(
    s: &mut KernelStream<'_>,
    model: &KernelModel,
    kind: ChunkKind,
) -> Result<bool, Rule> {
    let (truncated, zero, over, segments) = match kind {
        ChunkKind::Write => (
            Rule::WriteListTruncated,
            Rule::WriteSegcountZero,
            Rule::WriteSegcountOverLimit,
            Rule::WriteSegmentsTruncated,
        ),
        ChunkKind::Reply => (
            Rule::ReplyChunkTruncated,
            Rule::ReplySegcountZero,
            Rule::ReplySegcountOverLimit,
            Rule::ReplySegmentsTruncated,
        ),
    };
    let segcount = s.word().ok_or(truncated)?;
    // 2026 (CVE fix "Reject Write/Reply chunks with segcount 0"): a zero segcount describes no
    // remote buffer and made pcl_for_each_segment() walk off the chunk.
    if segcount == 0 && model.checks(zero) {
        return Err(zero);
    }
    // "arbitrary but sensible limit": segcount > RPCSVC_MAXPAGES (6.1.120+) / rc_maxpages (2026).
    if segcount > model.maxpages {
        return Err(over);
    }
    // "A bogus segcount causes this buffer overflow check to fail."
    s.skip(segcount as usize * SEGMENT_LEN).ok_or(segments)?;
    Ok(segcount == 0)
}

/// `pcl_check_read_chunk_positions` (2026): the Read chunk position rule ([`ddp::stream_len`],
/// [`ddp::place`]) in the kernel's unsigned 32-bit arithmetic, each chunk within
/// `rc_maxpages << PAGE_SHIFT`.
fn check_read_chunk_positions(
    chunks: &[ReadChunk],
    inline_len: usize,
    model: &KernelModel,
) -> Result<(), Rule> {
    let max_len = u64::from(model.max_chunk_bytes());
    let (call_chunk, others) = ddp::split_call_chunk(chunks);
    let call_chunk = call_chunk.map(|c| u64::from(kernel_length(c)));
    let inline_len = u32::try_from(inline_len).unwrap_or(u32::MAX) as usize;
    let extents: Vec<Extent> = others
        .iter()
        .map(|c| Extent {
            position: c.position,
            length: kernel_length(c).into(),
        })
        .collect();
    ddp::stream_len(call_chunk, inline_len, max_len)
        .and_then(|stream| ddp::place(&extents, stream, max_len, Accounting::Kernel32))
        .map(drop)
        .map_err(|e| Rule::from(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_parse_back() {
        for profile in Profile::ALL {
            assert_eq!(profile.name().parse::<Profile>(), Ok(profile));
            assert_eq!(profile.to_string(), profile.name());
        }
        let err = "linux-5.4".parse::<Profile>().unwrap_err();
        assert!(err.to_string().contains("linux-6.1, linux-2026"));
    }

    #[test]
    fn kernel_constants() {
        // RPCSVC_MAXPAGES with 4 KiB pages: 256 payload pages + 3.
        assert_eq!(RPCSVC_MAXPAGES, 259);
        assert_eq!(Profile::Linux6_1.model().maxpages, 259);
        // 2026: sv_max_mesg = 1 MiB + 4 KiB -> 257 pages + 3.
        assert_eq!(Profile::Linux2026.model().maxpages, 260);
        assert_eq!(Profile::Linux2026.model().max_chunk_bytes(), 260 * 4096);
        // A 256 MiB guest's nfsd serves 64 KiB payloads: 17 + 3 pages.
        assert_eq!(
            KernelModel::with_max_payload(Profile::Linux2026, 64 * 1024).maxpages,
            20
        );
    }

    #[test]
    fn decode_errors_map_to_wire_outcomes() {
        let vers = DecodeError::UnsupportedVersion { value: 2 };
        assert_eq!(Outcome::from(&vers), Outcome::ErrVers);
        let errcode = DecodeError::MalformedErrorBody(Box::new(DecodeError::BadDiscriminant {
            field: "rdma_err",
            value: 9,
            rule: "x",
        }));
        assert_eq!(Outcome::from(&errcode), Outcome::Drop);
        let trunc = DecodeError::Truncated {
            field: "read_segment.position",
            needed: 4,
            available: 0,
        };
        assert_eq!(Outcome::from(&trunc), Outcome::ErrChunk);
        // A field named like the version field elsewhere is not the version (typed, not by name).
        let other = DecodeError::BadValue {
            field: "rdma_vers",
            value: 2,
            rule: "x",
        };
        assert_eq!(Outcome::from(&other), Outcome::ErrChunk);
    }

    #[test]
    fn rules_index_their_answers_and_profiles_answer_as_modelled() {
        for (i, rule) in Rule::ALL.into_iter().enumerate() {
            assert_eq!(rule as usize, i, "{rule:?}");
            assert_eq!(Profile::Linux2026.model().answer(rule), rule.outcome());
            let on_6_1 = Profile::Linux6_1.model().answer(rule);
            if Rule::HARDENING_2026.contains(&rule) {
                assert_eq!(on_6_1, Outcome::Accept, "{rule:?}");
            } else {
                assert_eq!(on_6_1, rule.outcome(), "{rule:?}");
            }
        }
        // The rules no header breaks keep answering Accept whatever a profile says.
        let answers = Answers::of_rules().with(Rule::Accepted, Outcome::ErrChunk);
        assert_eq!(answers.get(Rule::Accepted), Outcome::Accept);
        let answers = Answers::of_rules().with(Rule::ReadChunksOverlap, Outcome::Disconnect);
        assert_eq!(answers.get(Rule::ReadChunksOverlap), Outcome::Disconnect);
    }

    #[test]
    fn every_rule_has_names_and_citations() {
        let rules = Rule::ALL;
        let mut names: Vec<&str> = rules.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), rules.len(), "rule names are unique");
        for rule in rules {
            assert!(rule.rfc().starts_with("RFC 8166 §"), "{rule:?}");
            assert!(!rule.kernel_check().is_empty());
        }
    }
}
