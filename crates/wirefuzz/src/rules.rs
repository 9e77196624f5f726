//! The svcrdma rule catalogue: for every [`Rule`] a received header can trigger, one negative
//! case that breaks exactly that rule and one positive control of the same shape that must be
//! answered; the answer classes a rule run reports ([`Answer`]); and a kernel's expected answers
//! as data ([`KernelProfile`], one TOML file per kernel under `fixtures/svcrdma-profiles/`).
//!
//! The measured profiles are also compiled in ([`MEASURED_PROFILES`], `include_str!` of the
//! fixture files, so the `rig` binary a guest gets carries them) and become the kernel model
//! `rig serve --profile`, `rig fuzz-wire`'s `sim:`/`model:` targets and the engine's responder
//! answer by ([`kernel_model`], [`KernelProfile::model`]).
//!
//! Pure: cases are built from the generator at a fixed seed ([`RULES_SEED`]) or with the raw
//! builder, so their bytes never change between runs; nothing here sends, reads a file or a clock
//! (`rig svcrdma-rules` runs the cases and reads the profile files).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use wire::ddp::argument_position;
use wire::nfs3::{DdpData, FileHandle, Nfs3Call, StableHow, WriteArgs};
use wire::nfs_client::nfs3_call;
use wire::raw::{proc_value, RawBuilder};
use wire::svcrdma::{self, Answers, KernelModel, Outcome, Profile, Rule};

use crate::case::{Case, Observed};
use crate::generate::{
    generate_family_case, Family, FUZZ_FILE_HANDLE, UNREGISTERED_HANDLE, XID_BASE,
};

/// The generator seed every catalogue case is drawn with: the bytes of a rule's case are a
/// function of this seed and the first index whose case breaks that rule.
pub const RULES_SEED: u64 = 1;
/// Most generator indices tried per rule before the catalogue gives up (every family finds its
/// rule within the first few dozen draws; the bound only keeps a broken generator from looping).
pub const MAX_SEARCH_INDEX: u64 = 4096;
/// Family name of the cases built here with the raw builder (no generator family aims at them).
pub const RAW_FAMILY: &str = "svcrdma-rules";
/// Index of the raw-built cases (their XIDs stay clear of generated ones).
const RAW_INDEX: u64 = 0xff_fff0;

/// Every rule the catalogue has a negative case for, in report order: the header checks in
/// `svc_rdma_xdr_decode_req` order, then the Read chunk placement and Read-sink checks.
/// Left out: [`Rule::Accepted`] (the positive controls), and [`Rule::UncheckedReadChunkPosition`]
/// / [`Rule::UncheckedZeroSegcount`], which are not checks a header breaks but the 6.1 model's
/// name for *accepting* a header that breaks [`Rule::ReadChunkPastInline`] /
/// [`Rule::WriteSegcountZero`]; their negative cases are those rules' cases.
pub const CATALOGUE_RULES: [Rule; 21] = catalogue_rules();

/// [`Rule::ALL`] without the three rules no header breaks (see [`CATALOGUE_RULES`]), in its order.
const fn catalogue_rules() -> [Rule; 21] {
    let mut out = [Rule::Accepted; 21];
    let (mut from, mut to) = (0, 0);
    while from < Rule::ALL.len() {
        let rule = Rule::ALL[from];
        if !matches!(
            rule,
            Rule::Accepted | Rule::UncheckedReadChunkPosition | Rule::UncheckedZeroSegcount
        ) {
            out[to] = rule;
            to += 1;
        }
        from += 1;
    }
    assert!(
        to == out.len(),
        "every rule but the three is in the catalogue"
    );
    out
}

/// What a responder did with one case, as `rig svcrdma-rules` reports it (the executor's
/// [`Observed`] under the names the profile files use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// An RDMA_MSG / RDMA_NOMSG reply (whatever the RPC or NFS status inside).
    Reply,
    /// RDMA_ERROR / ERR_VERS; the connection stays up.
    ErrVers,
    /// RDMA_ERROR / ERR_CHUNK; the connection stays up (it served a NULL call after it).
    ErrChunk,
    /// No answer; the connection stays up.
    Drop,
    /// RDMA_ERROR / ERR_CHUNK, then the connection closed.
    ErrChunkThenClose,
    /// No answer; the connection closed.
    Close,
    /// No answer, and the NULL probe behind the case went unanswered on a live connection.
    /// No profile should expect it: it is how a wedged responder shows.
    Hang,
}

impl Answer {
    pub const ALL: [Answer; 7] = [
        Answer::Reply,
        Answer::ErrVers,
        Answer::ErrChunk,
        Answer::Drop,
        Answer::ErrChunkThenClose,
        Answer::Close,
        Answer::Hang,
    ];

    /// Stable name used in profile files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Answer::Reply => "reply",
            Answer::ErrVers => "err-vers",
            Answer::ErrChunk => "err-chunk",
            Answer::Drop => "drop",
            Answer::ErrChunkThenClose => "err-chunk-then-close",
            Answer::Close => "close",
            Answer::Hang => "hang",
        }
    }

    pub fn from_name(name: &str) -> Option<Answer> {
        Answer::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Whether `self`, observed, is the behaviour `expected` names. Exact, except that
    /// ERR_CHUNK-then-close and a bare close are one behaviour: the responder queues the
    /// ERR_CHUNK and closes, and whether that Send leaves before the close flushes it is timing
    /// (seen both ways on nfsd and on `rig serve` over rxe; fixtures/wire-fuzz/
    /// known-divergences.json, read-segment-oversized).
    pub fn satisfies(self, expected: Answer) -> bool {
        self == expected
            || matches!(
                (self, expected),
                (Answer::ErrChunkThenClose, Answer::Close)
                    | (Answer::Close, Answer::ErrChunkThenClose)
            )
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Observed> for Answer {
    fn from(observed: Observed) -> Answer {
        match observed {
            Observed::Reply => Answer::Reply,
            Observed::ErrVers => Answer::ErrVers,
            Observed::ErrChunk => Answer::ErrChunk,
            Observed::ErrChunkThenClose => Answer::ErrChunkThenClose,
            Observed::Drop => Answer::Drop,
            Observed::Disconnect => Answer::Close,
            Observed::Hang => Answer::Hang,
        }
    }
}

impl Answer {
    /// The responder outcome that gives this answer (`None` for [`Answer::Hang`], which no
    /// responder should be made to give).
    pub fn outcome(self) -> Option<Outcome> {
        Some(match self {
            Answer::Reply => Outcome::Accept,
            Answer::ErrVers => Outcome::ErrVers,
            Answer::ErrChunk => Outcome::ErrChunk,
            Answer::Drop => Outcome::Drop,
            Answer::ErrChunkThenClose => Outcome::ErrChunkThenClose,
            Answer::Close => Outcome::Disconnect,
            Answer::Hang => return None,
        })
    }
}

impl From<Outcome> for Answer {
    fn from(outcome: Outcome) -> Answer {
        Observed::from(outcome).into()
    }
}

/// Negative case or positive control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaseKind {
    /// Breaks the rule: answered as the kernel's profile says.
    Negative,
    /// The same shape, well formed: must be answered with a reply.
    Positive,
}

impl CaseKind {
    pub fn name(self) -> &'static str {
        match self {
            CaseKind::Negative => "negative",
            CaseKind::Positive => "positive",
        }
    }
}

impl fmt::Display for CaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One rule's pair of cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCases {
    pub rule: Rule,
    /// Breaks exactly `rule` (the linux-2026 model names `rule` for it).
    pub negative: Case,
    /// A well-formed call of the same base shape; every profile answers it.
    pub positive: Case,
    /// Why the negative case is not sent unless asked for (`--include-dangerous`): it has taken
    /// a kernel down.
    pub dangerous: Option<&'static str>,
}

impl RuleCases {
    pub fn case(&self, kind: CaseKind) -> &Case {
        match kind {
            CaseKind::Negative => &self.negative,
            CaseKind::Positive => &self.positive,
        }
    }

    /// What a kernel following `model` answers the negative case, as the rule model predicts.
    pub fn predicted(&self, model: &KernelModel) -> Answer {
        svcrdma::classify_with(&self.negative.bytes, model)
            .outcome
            .into()
    }
}

/// Why the catalogue could not be built (a generator change moved a rule out of reach).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogueError {
    /// No case of `family` within [`MAX_SEARCH_INDEX`] draws breaks `rule`.
    NoCase {
        rule: &'static str,
        family: &'static str,
    },
    /// No valid case of `base` within [`MAX_SEARCH_INDEX`] draws.
    NoControl { rule: &'static str, base: String },
}

impl fmt::Display for CatalogueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogueError::NoCase { rule, family } => write!(
                f,
                "no {family} case of seed {RULES_SEED} within {MAX_SEARCH_INDEX} draws breaks \
                 {rule}"
            ),
            CatalogueError::NoControl { rule, base } => write!(
                f,
                "no valid {base} call of seed {RULES_SEED} within {MAX_SEARCH_INDEX} draws (the \
                 control of {rule})"
            ),
        }
    }
}

impl std::error::Error for CatalogueError {}

/// Why a rule's negative case is dangerous, if it is.
fn danger(rule: Rule) -> Option<&'static str> {
    match rule {
        // fixtures/findings/linux-6.1-1-25: a Read chunk positioned inside another chunk's data
        // made 6.1.176's svcrdma copy inline ranges with an underflowed length ("BUG: unable to
        // handle page fault" in the nfsd thread); 6.1 has no decode-time position check.
        Rule::ReadChunksOverlap => Some(
            "Oops on 6.1.176 (page fault copying inline ranges around overlapping Read chunks; \
             fixtures/findings/linux-6.1-1-25)",
        ),
        // fixtures/findings/linux-6.1-1-499: a Read segment of ~4 GiB whose 32-bit page count
        // wraps to 0 reaches sg_alloc_table_chained with 0 entries: "kernel BUG at
        // lib/sg_pool.c:117" on 6.1.176. The family's lengths (u32::MAX - 0..0xffff) include
        // wrapping ones, so the rule's case is kept out of default runs whatever its length.
        Rule::ReadSegmentOversized => Some(
            "kernel BUG on 6.1.176 (Read segment page count wraps to 0: lib/sg_pool.c:117; \
             fixtures/findings/linux-6.1-1-499)",
        ),
        _ => None,
    }
}

/// The generator family whose cases aim at `rule` (`None`: built with the raw builder).
fn family_of(rule: Rule) -> Option<Family> {
    Some(match rule {
        Rule::ReceiveOverflow => Family::InlineOverThreshold,
        Rule::ShortHeader => Family::ShortHeader,
        Rule::BadVersion => Family::Version,
        Rule::DroppedProc => Family::ProcDone,
        Rule::BadProc => Family::ProcUnknown,
        Rule::ReadListTruncated => Family::TruncatedReadList,
        Rule::ReadSegmentOversized => Family::ReadLengthHuge,
        Rule::ReadPositionUnaligned => Family::ReadPositionUnaligned,
        Rule::WriteListTruncated | Rule::WriteSegmentsTruncated => Family::TruncatedWriteList,
        Rule::WriteSegcountZero => Family::WriteSegcountZero,
        Rule::WriteSegcountOverLimit => Family::WriteSegcountHuge,
        Rule::ReplyChunkTruncated | Rule::ReplySegmentsTruncated => Family::TruncatedReplyChunk,
        Rule::ReplySegcountZero => Family::ReplySegcountZero,
        Rule::ReplySegcountOverLimit => Family::ReplySegcountHuge,
        Rule::CallChunkOversized => Family::ReadPositionZero,
        Rule::ReadChunkPastInline => Family::ReadPastInline,
        Rule::ReadChunksOverlap => Family::ReadOverlap,
        _ => return None,
    })
}

/// Whether `case` breaks exactly `rule`: the generator aimed it there and the linux-2026 model
/// (every check enabled) names that rule for it.
fn breaks(case: &Case, rule: Rule) -> bool {
    let addressable = match rule {
        // A Send shorter than 4 bytes has no XID to answer to (nfsd answers whatever its Receive
        // buffer held, our responder drops it): keep the one the rule is about, 4..16 bytes.
        Rule::ShortHeader => case.bytes.len() >= 4,
        _ => true,
    };
    addressable
        && case.target_rule == rule.name()
        && svcrdma::classify(&case.bytes, Profile::Linux2026).rule == rule
}

fn first_case(family: Family, accept: impl Fn(&Case) -> bool) -> Option<Case> {
    (0..MAX_SEARCH_INDEX)
        .map(|index| generate_family_case(family, RULES_SEED, index))
        .find(accept)
}

/// The negative case of `rule`.
fn negative_case(rule: Rule) -> Result<Case, CatalogueError> {
    match family_of(rule) {
        Some(family) => {
            first_case(family, |case| breaks(case, rule)).ok_or(CatalogueError::NoCase {
                rule: rule.name(),
                family: family.name(),
            })
        }
        None => {
            let case = raw_read_case(rule);
            if breaks(&case, rule) {
                Ok(case)
            } else {
                Err(CatalogueError::NoCase {
                    rule: rule.name(),
                    family: RAW_FAMILY,
                })
            }
        }
    }
}

/// The positive control of a negative case: a valid call of the same base, or for the inline
/// threshold, a call just under it (`inline-near-threshold`).
fn positive_case(rule: Rule, negative: &Case) -> Result<Case, CatalogueError> {
    let accepted = |case: &Case| {
        Profile::ALL
            .into_iter()
            .all(|p| svcrdma::classify(&case.bytes, p).rule == Rule::Accepted)
    };
    let found = match rule {
        Rule::ReceiveOverflow => first_case(Family::InlineNearThreshold, accepted),
        _ => first_case(Family::Valid, |case| {
            case.base == negative.base && accepted(case)
        }),
    };
    found.ok_or_else(|| CatalogueError::NoControl {
        rule: rule.name(),
        base: negative.base.clone(),
    })
}

/// The cases no generator family aims at, built with the raw builder: an NFSv3 WRITE whose data
/// item is moved to Read chunks at its XDR position (RFC 8166 §3.4.4), each segment under the
/// 2026 per-segment cap, together over the page budget. Handles are unregistered raw values, as
/// the generator's own oversized cases use: the kernel refuses these while building the Read
/// sink, before any RDMA Read is posted.
/// - [`Rule::ReadChunkOversized`]: one chunk of two segments (same position) over the cap.
/// - [`Rule::ReadPagesOverrun`]: two chunks, each within the cap, the second placed right after
///   the first in the unreduced stream, over the budget together.
fn raw_read_case(rule: Rule) -> Case {
    let xid = XID_BASE | RAW_INDEX as u32;
    let model = Profile::Linux2026.model();
    let cap = model.max_chunk_bytes();
    // Two 4-byte-aligned halves of a bit more than the cap (`cap / 2 + 4 KiB` each).
    let half = (cap / 2 + 4096) & !3;
    let args = Nfs3Call::Write(WriteArgs {
        file: FileHandle(FUZZ_FILE_HANDLE.to_vec()),
        offset: 0,
        count: 2 * half,
        stable: StableHow::FileSync,
        data: DdpData::Moved { length: 2 * half },
    });
    let call = nfs3_call(xid, &args);
    let position = argument_position(call.len());
    let handle = UNREGISTERED_HANDLE | 0xe0;
    let second_position = match rule {
        Rule::ReadPagesOverrun => position + half,
        _ => position,
    };
    let bytes = RawBuilder::new()
        .fixed(xid, 1, 32, proc_value::MSG)
        .read(position, handle, half, 0)
        .read(second_position, handle + 1, half, 0)
        .end_list()
        .end_list()
        .no_reply()
        .raw(&call)
        .bytes();
    Case {
        seed: RULES_SEED,
        index: RAW_INDEX,
        family: RAW_FAMILY.to_string(),
        base: "write".to_string(),
        target_rule: rule.name().to_string(),
        xid,
        private_data: None,
        regions: Vec::new(),
        relocations: Vec::new(),
        bytes,
    }
}

/// The whole catalogue, in [`CATALOGUE_RULES`] order.
pub fn catalogue() -> Result<Vec<RuleCases>, CatalogueError> {
    CATALOGUE_RULES
        .into_iter()
        .map(|rule| {
            let negative = negative_case(rule)?;
            let positive = positive_case(rule, &negative)?;
            Ok(RuleCases {
                rule,
                negative,
                positive,
                dangerous: danger(rule),
            })
        })
        .collect()
}

/// XID of the follow-up NULL call ([`follow_up_null`]).
pub const FOLLOW_UP_XID: u32 = 0x5752_0000;

/// A plain NFS NULL call sent on the same connection after a case answered ERR_CHUNK: answered
/// there, the connection outlived the ERR_CHUNK (`err-chunk`); not answered, or only after a
/// reconnect, it closed behind it (`err-chunk-then-close`). The executor's own probe travels
/// right behind the case and can be answered before a deferred close takes effect, so it alone
/// does not tell the two apart.
pub fn follow_up_null() -> Case {
    let call = nfs3_call(FOLLOW_UP_XID, &Nfs3Call::Null);
    Case {
        seed: RULES_SEED,
        index: RAW_INDEX + 1,
        family: "follow-up".to_string(),
        base: "null".to_string(),
        target_rule: Rule::Accepted.name().to_string(),
        xid: FOLLOW_UP_XID,
        private_data: None,
        regions: Vec::new(),
        relocations: Vec::new(),
        bytes: RawBuilder::new()
            .fixed(FOLLOW_UP_XID, 1, 8, proc_value::MSG)
            .empty_lists()
            .raw(&call)
            .bytes(),
    }
}

/// Whether `rule` is checked while the Read list is parsed or processed: the rules after which
/// 6.12 and 7.2 were seen closing the connection behind the ERR_CHUNK.
pub fn is_read_list_rule(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::ReadListTruncated
            | Rule::ReadSegmentOversized
            | Rule::ReadPositionUnaligned
            | Rule::CallChunkOversized
            | Rule::ReadChunkPastInline
            | Rule::ReadChunkOversized
            | Rule::ReadChunksOverlap
            | Rule::ReadPagesOverrun
    )
}

/// Marks a profile file; bumped if the layout changes incompatibly.
pub const PROFILE_FORMAT: &str = "rpcrdma-rig svcrdma profile v1";
/// Longest string field of a profile (notes included) accepted.
pub const MAX_PROFILE_STRING: usize = 4096;

/// One rule's expected answer in a kernel profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expected {
    pub answer: Answer,
    /// Other answers suite runs saw this kernel give the same case, depending on timing: the
    /// suite accepts them ([`Expected::accepts`]); the kernel model answers [`Expected::answer`].
    pub also: Vec<Answer>,
    /// Confirmed by a suite run against this kernel (`false`: predicted or inferred).
    pub measured: bool,
    /// Where the value came from.
    pub note: String,
}

/// An expected answer and its timing alternatives as one text: `err-chunk|err-chunk-then-close`.
pub fn answers_text(answer: Answer, also: &[Answer]) -> String {
    std::iter::once(answer)
        .chain(also.iter().copied())
        .map(Answer::name)
        .collect::<Vec<_>>()
        .join("|")
}

impl Expected {
    /// [`answers_text`] of this entry.
    pub fn answers_text(&self) -> String {
        answers_text(self.answer, &self.also)
    }

    /// [`accepts`] of this entry.
    pub fn accepts(&self, observed: Answer) -> bool {
        accepts(self.answer, &self.also, observed)
    }
}

/// Whether `observed` is the behaviour expected: `answer` or one of its timing alternatives
/// `also`, each compared by [`Answer::satisfies`].
pub fn accepts(answer: Answer, also: &[Answer], observed: Answer) -> bool {
    observed.satisfies(answer) || also.iter().any(|&a| observed.satisfies(a))
}

/// A kernel's expected answers to the catalogue's negative cases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelProfile {
    /// Short name, e.g. `debian-6.1.176`.
    pub kernel: String,
    /// The `uname -r` this profile applies to (empty: a reference profile, matched by no guest).
    pub release: String,
    /// Where the table as a whole came from.
    pub note: String,
    /// Rule name → expected answer, one entry per [`CATALOGUE_RULES`] rule.
    pub rules: BTreeMap<String, Expected>,
}

/// Why a profile file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileError {
    /// Not TOML of the profile's shape (the parser's message).
    Syntax(String),
    /// `format` is not [`PROFILE_FORMAT`].
    Format(String),
    /// A rule name the catalogue does not know.
    UnknownRule(String),
    /// An answer name that is not one of [`Answer::ALL`].
    UnknownAnswer { rule: String, answer: String },
    /// A catalogue rule without an entry.
    MissingRule(&'static str),
    /// A string longer than [`MAX_PROFILE_STRING`].
    TooLong { field: String, len: usize },
    /// A rule expected to hang: no responder can be built to answer so.
    HangExpected(&'static str),
    /// More timing alternatives (`also`) than there are answers.
    TooManyAlternatives { rule: String, count: usize },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::Syntax(why) => write!(f, "not a svcrdma profile: {why}"),
            ProfileError::Format(found) => {
                write!(f, "format {found:?}, expected {PROFILE_FORMAT:?}")
            }
            ProfileError::UnknownRule(rule) => write!(f, "unknown rule {rule:?}"),
            ProfileError::UnknownAnswer { rule, answer } => {
                let names: Vec<&str> = Answer::ALL.iter().map(|a| a.name()).collect();
                write!(
                    f,
                    "rule {rule}: unknown answer {answer:?} (known: {})",
                    names.join(", ")
                )
            }
            ProfileError::MissingRule(rule) => write!(f, "no entry for rule {rule}"),
            ProfileError::TooLong { field, len } => write!(
                f,
                "{field}: {len} bytes, more than the {MAX_PROFILE_STRING}-byte limit"
            ),
            ProfileError::TooManyAlternatives { rule, count } => write!(
                f,
                "rule {rule}: {count} alternatives in `also`, more than the {} answers",
                Answer::ALL.len()
            ),
            ProfileError::HangExpected(rule) => write!(
                f,
                "rule {rule}: expected \"hang\", which no responder is built to answer"
            ),
        }
    }
}

impl std::error::Error for ProfileError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    format: String,
    kernel: String,
    release: String,
    #[serde(default)]
    note: String,
    rules: BTreeMap<String, EntryFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    expected: String,
    #[serde(default)]
    also: Vec<String>,
    measured: bool,
    #[serde(default)]
    note: String,
}

fn bounded(field: &str, value: String) -> Result<String, ProfileError> {
    if value.len() > MAX_PROFILE_STRING {
        return Err(ProfileError::TooLong {
            field: field.to_string(),
            len: value.len(),
        });
    }
    Ok(value)
}

/// A TOML string value, quoted and escaped by the `toml` crate that also parses it.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

impl KernelProfile {
    /// Parse and check a profile file's text (the caller bounds its size).
    pub fn parse(text: &str) -> Result<KernelProfile, ProfileError> {
        let file: ProfileFile =
            toml::from_str(text).map_err(|e| ProfileError::Syntax(e.to_string()))?;
        if file.format != PROFILE_FORMAT {
            return Err(ProfileError::Format(
                file.format.chars().take(MAX_PROFILE_STRING).collect(),
            ));
        }
        let mut rules = BTreeMap::new();
        for (name, entry) in file.rules {
            if !CATALOGUE_RULES.iter().any(|r| r.name() == name) {
                return Err(ProfileError::UnknownRule(
                    name.chars().take(MAX_PROFILE_STRING).collect(),
                ));
            }
            let answer_named = |answer: &str| {
                Answer::from_name(answer).ok_or_else(|| ProfileError::UnknownAnswer {
                    rule: name.clone(),
                    answer: answer.chars().take(MAX_PROFILE_STRING).collect(),
                })
            };
            let answer = answer_named(&entry.expected)?;
            if entry.also.len() > Answer::ALL.len() {
                return Err(ProfileError::TooManyAlternatives {
                    rule: name.clone(),
                    count: entry.also.len(),
                });
            }
            let also = entry
                .also
                .iter()
                .map(|a| answer_named(a))
                .collect::<Result<Vec<_>, _>>()?;
            let note = bounded(&format!("rules.{name}.note"), entry.note)?;
            rules.insert(
                name,
                Expected {
                    answer,
                    also,
                    measured: entry.measured,
                    note,
                },
            );
        }
        if let Some(missing) = CATALOGUE_RULES
            .iter()
            .find(|r| !rules.contains_key(r.name()))
        {
            return Err(ProfileError::MissingRule(missing.name()));
        }
        Ok(KernelProfile {
            kernel: bounded("kernel", file.kernel)?,
            release: bounded("release", file.release)?,
            note: bounded("note", file.note)?,
            rules,
        })
    }

    /// The expected answer for `rule` (every catalogue rule has one once parsed).
    pub fn expected(&self, rule: Rule) -> Option<&Expected> {
        self.rules.get(rule.name())
    }

    /// The kernel model that answers every catalogue rule as this profile expects
    /// ([`KernelModel::answer`]), named `name`, with the 2026 model's constants (1 MiB nfsd
    /// payload: 260 pages; 6.1's `RPCSVC_MAXPAGES` is one page less, which moves only cases
    /// within a page of the limit). A rule answered with a reply is a check the kernel does not
    /// make ([`Rule::HARDENING_2026`]): the header goes on to the later checks.
    pub fn model(&self, name: &'static str) -> Result<KernelModel, ProfileError> {
        let mut answers = Answers::of_rules();
        for rule in CATALOGUE_RULES {
            let expected = self
                .expected(rule)
                .ok_or(ProfileError::MissingRule(rule.name()))?;
            let outcome = expected
                .answer
                .outcome()
                .ok_or(ProfileError::HangExpected(rule.name()))?;
            answers = answers.with(rule, outcome);
        }
        Ok(KernelModel {
            name,
            answers,
            ..Profile::Linux2026.model()
        })
    }

    /// The profile as its TOML file: header, then one table per rule in catalogue order (rules
    /// outside the catalogue cannot be in a parsed profile, and are left out).
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# svcrdma rule profile: the answer this kernel's svcrdma gives each rule's negative\n\
             # case (crates/wirefuzz/src/rules.rs), checked by `rig svcrdma-rules --profile`.\n\
             # measured = true: confirmed by a svcrdma-rules suite run against this kernel.\n",
        );
        out.push_str(&format!("format = {}\n", toml_string(PROFILE_FORMAT)));
        out.push_str(&format!("kernel = {}\n", toml_string(&self.kernel)));
        out.push_str(&format!("release = {}\n", toml_string(&self.release)));
        out.push_str(&format!("note = {}\n", toml_string(&self.note)));
        for rule in CATALOGUE_RULES {
            let Some(entry) = self.rules.get(rule.name()) else {
                continue;
            };
            out.push_str(&format!(
                "\n[rules.{}]\nexpected = {}\n",
                rule.name(),
                toml_string(entry.answer.name())
            ));
            if !entry.also.is_empty() {
                let also: Vec<String> = entry.also.iter().map(|a| toml_string(a.name())).collect();
                out.push_str(&format!("also = [{}]\n", also.join(", ")));
            }
            out.push_str(&format!(
                "measured = {}\nnote = {}\n",
                entry.measured,
                toml_string(&entry.note)
            ));
        }
        out
    }
}

/// The measured kernel profiles compiled into the binary: (name, the fixture file's text).
/// Each name is its file's stem and its `kernel` field (tests check both, and that the text is
/// the fixture file's).
pub const MEASURED_PROFILES: [(&str, &str); 6] = [
    (
        "debian-6.1.176",
        include_str!("../../../fixtures/svcrdma-profiles/debian-6.1.176.toml"),
    ),
    (
        "debian-6.1.192",
        include_str!("../../../fixtures/svcrdma-profiles/debian-6.1.192.toml"),
    ),
    (
        "debian-6.12.117",
        include_str!("../../../fixtures/svcrdma-profiles/debian-6.12.117.toml"),
    ),
    (
        "debian-6.12.118",
        include_str!("../../../fixtures/svcrdma-profiles/debian-6.12.118.toml"),
    ),
    (
        "debian-7.2.13",
        include_str!("../../../fixtures/svcrdma-profiles/debian-7.2.13.toml"),
    ),
    (
        "mainline-2026",
        include_str!("../../../fixtures/svcrdma-profiles/mainline-2026.toml"),
    ),
];

/// A profile name neither modelled nor measured.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileNameError {
    /// No profile of this name (the known ones are in the message).
    Unknown(String),
    /// The embedded profile of this name does not parse (a test keeps this from shipping).
    Embedded {
        name: &'static str,
        error: ProfileError,
    },
}

impl fmt::Display for ProfileNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileNameError::Unknown(name) => {
                let names: Vec<&str> = profile_names().collect();
                write!(
                    f,
                    "unknown kernel profile {name:?} (known: {})",
                    names.join(", ")
                )
            }
            ProfileNameError::Embedded { name, error } => {
                write!(f, "embedded profile {name}: {error}")
            }
        }
    }
}

impl std::error::Error for ProfileNameError {}

/// Every profile name [`kernel_model`] knows: the modelled ones, then the measured ones.
pub fn profile_names() -> impl Iterator<Item = &'static str> {
    Profile::ALL
        .into_iter()
        .map(Profile::name)
        .chain(MEASURED_PROFILES.iter().map(|(name, _)| *name))
}

/// The embedded measured profile `name`, parsed.
pub fn measured_profile(name: &str) -> Option<Result<KernelProfile, ProfileError>> {
    MEASURED_PROFILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| KernelProfile::parse(text))
}

/// The kernel model of a profile name: a modelled one (`linux-6.1`, `linux-2026`: the svcrdma
/// model's switches) or a measured one (`debian-6.12.117`, ...: [`KernelProfile::model`] of the
/// embedded file).
pub fn kernel_model(name: &str) -> Result<KernelModel, ProfileNameError> {
    if let Ok(profile) = name.parse::<Profile>() {
        return Ok(profile.model());
    }
    let (name, text) = MEASURED_PROFILES
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| ProfileNameError::Unknown(name.chars().take(64).collect()))?;
    KernelProfile::parse(text)
        .and_then(|profile| profile.model(name))
        .map_err(|error| ProfileNameError::Embedded { name, error })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_a_negative_case_that_breaks_it_and_an_accepted_control() {
        let catalogue = catalogue().unwrap();
        assert_eq!(catalogue.len(), CATALOGUE_RULES.len());
        for entry in &catalogue {
            let rule = entry.rule;
            assert_eq!(
                svcrdma::classify(&entry.negative.bytes, Profile::Linux2026).rule,
                rule,
                "{}",
                rule.name()
            );
            for profile in Profile::ALL {
                assert_eq!(
                    svcrdma::classify(&entry.positive.bytes, profile).rule,
                    Rule::Accepted,
                    "{} control on {profile}",
                    rule.name()
                );
            }
            entry.negative.validate().unwrap();
            entry.positive.validate().unwrap();
        }
    }

    #[test]
    fn the_catalogue_is_stable() {
        // Same bytes every time: a profile measured once stays meaningful.
        assert_eq!(catalogue().unwrap(), catalogue().unwrap());
    }

    #[test]
    fn only_the_two_kernel_crashers_are_dangerous() {
        let dangerous: Vec<Rule> = catalogue()
            .unwrap()
            .into_iter()
            .filter(|e| e.dangerous.is_some())
            .map(|e| e.rule)
            .collect();
        assert_eq!(
            dangerous,
            [Rule::ReadSegmentOversized, Rule::ReadChunksOverlap]
        );
    }

    #[test]
    fn answers_map_from_the_executor_and_the_model() {
        assert_eq!(Answer::from(Observed::Disconnect), Answer::Close);
        assert_eq!(
            Answer::from(Outcome::ErrChunkThenClose),
            Answer::ErrChunkThenClose
        );
        assert_eq!(Answer::from(Outcome::Accept), Answer::Reply);
        for answer in Answer::ALL {
            assert_eq!(Answer::from_name(answer.name()), Some(answer));
        }
        assert!(Answer::Close.satisfies(Answer::ErrChunkThenClose));
        // A timing alternative is accepted beside the expected answer, nothing else is.
        let expected = Expected {
            answer: Answer::ErrChunk,
            also: vec![Answer::ErrChunkThenClose],
            measured: true,
            note: String::new(),
        };
        assert!(expected.accepts(Answer::ErrChunk));
        assert!(expected.accepts(Answer::ErrChunkThenClose));
        assert!(expected.accepts(Answer::Close));
        assert!(!expected.accepts(Answer::Reply));
        assert!(!Expected {
            also: Vec::new(),
            ..expected
        }
        .accepts(Answer::ErrChunkThenClose));
        assert!(!Answer::ErrChunk.satisfies(Answer::ErrChunkThenClose));
        assert!(!Answer::Reply.satisfies(Answer::ErrChunk));
    }

    fn sample_profile() -> KernelProfile {
        let rules = CATALOGUE_RULES
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                (
                    rule.name().to_string(),
                    Expected {
                        answer: Answer::ALL[i % Answer::ALL.len()],
                        also: if i % 3 == 0 {
                            vec![Answer::ALL[(i + 1) % Answer::ALL.len()]]
                        } else {
                            Vec::new()
                        },
                        measured: i % 2 == 0,
                        note: format!("note \"{i}\" \\ with\ttabs"),
                    },
                )
            })
            .collect();
        KernelProfile {
            kernel: "debian-6.1.176".into(),
            release: "6.1.0-50-amd64".into(),
            note: "test".into(),
            rules,
        }
    }

    #[test]
    fn profiles_round_trip_through_toml() {
        let profile = sample_profile();
        let text = profile.to_toml();
        assert_eq!(KernelProfile::parse(&text).unwrap(), profile);
    }

    #[test]
    fn bad_profiles_are_refused_with_the_bad_value() {
        let good = sample_profile().to_toml();
        let unknown = good.replace("[rules.bad-version]", "[rules.bad-versoin]");
        assert_eq!(
            KernelProfile::parse(&unknown),
            Err(ProfileError::UnknownRule("bad-versoin".into()))
        );
        let answer = good.replacen("expected = \"reply\"", "expected = \"maybe\"", 1);
        assert!(matches!(
            KernelProfile::parse(&answer),
            Err(ProfileError::UnknownAnswer { answer, .. }) if answer == "maybe"
        ));
        let also = good.replacen("also = [\"", "also = [\"sometimes\", \"", 1);
        assert!(matches!(
            KernelProfile::parse(&also),
            Err(ProfileError::UnknownAnswer { answer, .. }) if answer == "sometimes"
        ));
        let many = vec!["\"reply\""; Answer::ALL.len() + 1].join(", ");
        let too_many = good.replacen("also = [", &format!("also = [{many}, "), 1);
        assert!(matches!(
            KernelProfile::parse(&too_many),
            Err(ProfileError::TooManyAlternatives { .. })
        ));
        let format = good.replace(PROFILE_FORMAT, "v0");
        assert_eq!(
            KernelProfile::parse(&format),
            Err(ProfileError::Format("v0".into()))
        );
        let cut = good
            .split("\n[rules.read-pages-overrun]")
            .next()
            .unwrap()
            .to_string();
        assert_eq!(
            KernelProfile::parse(&cut),
            Err(ProfileError::MissingRule("read-pages-overrun"))
        );
        assert!(matches!(
            KernelProfile::parse("format = ["),
            Err(ProfileError::Syntax(_))
        ));
        let long = good.replacen(
            "note = \"test\"",
            &format!("note = \"{}\"", "x".repeat(5000)),
            1,
        );
        assert!(matches!(
            KernelProfile::parse(&long),
            Err(ProfileError::TooLong { len: 5000, .. })
        ));
    }

    #[test]
    fn the_embedded_profiles_are_the_fixture_files_and_name_themselves() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/svcrdma-profiles");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = MEASURED_PROFILES
            .iter()
            .map(|(name, _)| format!("{name}.toml"))
            .collect();
        assert_eq!(embedded, on_disk, "every fixture profile is embedded");
        for (name, text) in MEASURED_PROFILES {
            let file = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
            assert_eq!(text, file, "{name}: embedded copy differs from the fixture");
            let profile = KernelProfile::parse(text).unwrap();
            assert_eq!(profile.kernel, name);
            assert_eq!(kernel_model(name).unwrap().name, name);
        }
    }

    #[test]
    fn a_measured_model_answers_each_rule_as_its_profile_says() {
        for (name, _) in MEASURED_PROFILES {
            let profile = measured_profile(name).unwrap().unwrap();
            let model = kernel_model(name).unwrap();
            for rule in CATALOGUE_RULES {
                let expected = profile.expected(rule).unwrap().answer;
                assert_eq!(
                    Answer::from(model.answer(rule)),
                    expected,
                    "{} on {name}",
                    rule.name()
                );
            }
        }
        // The modelled names still resolve, unknown ones are refused with the known names.
        assert_eq!(
            kernel_model("linux-6.1").unwrap(),
            Profile::Linux6_1.model()
        );
        let err = kernel_model("linux-5.4").unwrap_err().to_string();
        assert!(err.contains("linux-2026, debian-6.1.176"), "{err}");
        // A profile expecting a hang cannot become a responder (the sample's seventh rule).
        assert_eq!(
            sample_profile().model("x"),
            Err(ProfileError::HangExpected(CATALOGUE_RULES[6].name()))
        );
    }

    /// The guest's `kernel_profile` (wire-fuzz-lib.sh) picks, for each measured kernel's
    /// `uname -r`, that kernel's profile, and the reference for a kernel the matrix lacks.
    #[test]
    fn the_guest_picks_the_measured_profile_of_its_kernel() {
        let lib = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../vm-images/suites/wire-fuzz/wire-fuzz-lib.sh"
        );
        let pick = |release: &str| {
            // The library's function body alone, with uname answering `release`.
            let text = std::fs::read_to_string(lib).unwrap();
            let start = text.find("kernel_profile() {").unwrap();
            let end = start + text[start..].find("\n}\n").unwrap() + 3;
            let script = format!(
                "uname() {{ echo {release}; }}\n{}kernel_profile\n",
                &text[start..end]
            );
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        for (name, text) in MEASURED_PROFILES {
            let release = KernelProfile::parse(text).unwrap().release;
            if !release.is_empty() {
                assert_eq!(pick(&release), name, "uname -r {release}");
                assert!(kernel_model(name).is_ok());
            }
        }
        assert_eq!(pick("6.19.0-rc1"), "mainline-2026");
    }
}
