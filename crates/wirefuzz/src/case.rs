//! One fuzz case and its file format: a small JSON document with the Send bytes in hex, the
//! mutation that made them, the svcrdma rule they aim at, the expected outcome per kernel
//! profile, and the memory regions the case registers.
//!
//! Handles (STags) and offsets (virtual addresses) are only known once a target registers the
//! regions, so the bytes carry placeholders and a list of [`Relocation`]s: the executor patches
//! each named word with the real handle / adds the region's base address before sending.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use wire::svcrdma::{self, Profile};

/// Marks a case file; bumped if the layout changes incompatibly.
pub const CASE_FORMAT: &str = "rpcrdma-rig wire-fuzz case v1";
/// Largest Send a case may carry (a loaded file is untrusted input).
pub const MAX_CASE_BYTES: usize = 64 * 1024;
/// Most regions one case registers.
pub const MAX_REGIONS: usize = 8;
/// Largest region one case registers.
pub const MAX_REGION_BYTES: u32 = 1 << 20;
/// Most relocations one case carries.
pub const MAX_RELOCATIONS: usize = 64;
/// Largest case file accepted by [`Case::from_json`].
pub const MAX_CASE_FILE_BYTES: usize = 4 * MAX_CASE_BYTES + MAX_REGION_BYTES as usize * 2 + 8192;

/// What a region is registered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegionAccess {
    /// Source of a Read chunk: the responder RDMA Reads it.
    RemoteRead,
    /// Sink of a Write or Reply chunk: the responder RDMA Writes it.
    RemoteWrite,
}

/// One memory region the case registers before its Send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub length: u32,
    pub access: RegionAccess,
    /// Initial contents: `data` if given (e.g. an RPC call carried in a Position-Zero Read
    /// chunk), else `length` bytes of `fill`.
    pub fill: u8,
    pub data: Option<Vec<u8>>,
}

impl Region {
    /// The bytes to register.
    pub fn contents(&self) -> Vec<u8> {
        let mut bytes = self.data.clone().unwrap_or_default();
        bytes.resize(self.length as usize, self.fill);
        bytes
    }
}

/// Which word of the bytes depends on a region's registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RelocField {
    /// The 32-bit handle at `at` becomes the region's handle.
    Handle,
    /// The 64-bit offset at `at` gets the region's base address added (wrapping, so offsets
    /// meant to lie outside the region stay outside).
    Offset,
}

/// A word to patch once region `region` is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relocation {
    pub at: usize,
    pub region: usize,
    pub field: RelocField,
}

impl Relocation {
    /// The two words of an RDMA segment at `at` (handle, then the offset 8 bytes on) that
    /// point into `region`.
    pub fn segment(at: usize, region: usize) -> [Relocation; 2] {
        [
            Relocation {
                at,
                region,
                field: RelocField::Handle,
            },
            Relocation {
                at: at + 8,
                region,
                field: RelocField::Offset,
            },
        ]
    }
}

/// Cut a case's bytes to `len`, keeping only the relocations whose word still fits.
pub(crate) fn cut_at(bytes: &mut Vec<u8>, relocations: &mut Vec<Relocation>, len: usize) {
    if bytes.len() <= len {
        return;
    }
    bytes.truncate(len);
    relocations.retain(|r| {
        let width = match r.field {
            RelocField::Handle => 4,
            RelocField::Offset => 8,
        };
        r.at + width <= len
    });
}

/// Where a target put a registered region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionKey {
    pub handle: u32,
    /// The address offset 0 of the region has on the wire (0 for zero-based MRs).
    pub base: u64,
}

/// An outcome as seen from the requester's side of the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Observed {
    /// An RDMA_MSG/RDMA_NOMSG reply (whatever the RPC or NFS status inside).
    Reply,
    /// RDMA_ERROR with ERR_VERS.
    ErrVers,
    /// RDMA_ERROR with ERR_CHUNK.
    ErrChunk,
    /// RDMA_ERROR with ERR_CHUNK, then the connection closed.
    #[serde(rename = "err-chunk+close")]
    ErrChunkThenClose,
    /// Nothing came back, and a NULL probe afterwards was answered.
    Drop,
    /// Nothing came back and the connection closed.
    Disconnect,
    /// Nothing came back and the NULL probe was not answered either, on a live connection.
    Hang,
}

impl Observed {
    pub const ALL: [Observed; 7] = [
        Observed::Reply,
        Observed::ErrVers,
        Observed::ErrChunk,
        Observed::ErrChunkThenClose,
        Observed::Drop,
        Observed::Disconnect,
        Observed::Hang,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Observed::Reply => "reply",
            Observed::ErrVers => "err-vers",
            Observed::ErrChunk => "err-chunk",
            Observed::ErrChunkThenClose => "err-chunk+close",
            Observed::Drop => "drop",
            Observed::Disconnect => "disconnect",
            Observed::Hang => "hang",
        }
    }

    pub fn from_name(name: &str) -> Option<Observed> {
        Observed::ALL.into_iter().find(|o| o.name() == name)
    }
}

impl fmt::Display for Observed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<svcrdma::Outcome> for Observed {
    fn from(outcome: svcrdma::Outcome) -> Observed {
        match outcome {
            svcrdma::Outcome::Accept => Observed::Reply,
            svcrdma::Outcome::ErrVers => Observed::ErrVers,
            svcrdma::Outcome::ErrChunk => Observed::ErrChunk,
            svcrdma::Outcome::ErrChunkThenClose => Observed::ErrChunkThenClose,
            svcrdma::Outcome::Drop => Observed::Drop,
            svcrdma::Outcome::Disconnect => Observed::Disconnect,
        }
    }
}

/// A kernel profile's predicted answer, as stored in a case file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    pub outcome: Observed,
    pub rule: String,
}

/// One reproducible fuzz case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub seed: u64,
    pub index: u64,
    /// Mutation family name, e.g. `read-overlap`.
    pub family: String,
    /// The valid call it mutates: `null`, `getattr`, `write`, `read`, `readdir`.
    pub base: String,
    /// The svcrdma rule ([`svcrdma::Rule::name`]) the case aims at under linux-2026.
    pub target_rule: String,
    /// XID of the transport header (replies are matched on it).
    pub xid: u32,
    /// RFC 8797 private data to connect with; `None` = connect without any.
    pub private_data: Option<Vec<u8>>,
    pub regions: Vec<Region>,
    pub relocations: Vec<Relocation>,
    /// The Send payload with placeholder handles and zero-based offsets.
    pub bytes: Vec<u8>,
}

/// Why a case file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFileError(pub String);

impl fmt::Display for CaseFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad case file: {}", self.0)
    }
}

impl std::error::Error for CaseFileError {}

impl Case {
    /// What each kernel profile's svcrdma would answer (the rule model; handles do not matter
    /// to it, so the placeholder bytes are classified as they are).
    pub fn expected(&self) -> BTreeMap<&'static str, Expectation> {
        Profile::ALL
            .into_iter()
            .map(|profile| {
                let verdict = svcrdma::classify(&self.bytes, profile);
                (
                    profile.name(),
                    Expectation {
                        outcome: verdict.outcome.into(),
                        rule: verdict.rule.name().to_string(),
                    },
                )
            })
            .collect()
    }

    /// The bytes to send once the regions are registered at `keys` (one per region, in order).
    /// Relocations were validated on construction/load, so none is out of range here; a short
    /// `keys` leaves the remaining placeholders as they are.
    pub fn wire_bytes(&self, keys: &[RegionKey]) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        for reloc in &self.relocations {
            let Some(key) = keys.get(reloc.region) else {
                continue;
            };
            match reloc.field {
                RelocField::Handle => {
                    if let Some(slot) = bytes.get_mut(reloc.at..reloc.at.saturating_add(4)) {
                        if slot.len() == 4 {
                            slot.copy_from_slice(&key.handle.to_be_bytes());
                        }
                    }
                }
                RelocField::Offset => {
                    if let Some(slot) = bytes.get_mut(reloc.at..reloc.at.saturating_add(8)) {
                        if let Ok(word) = <[u8; 8]>::try_from(&*slot) {
                            let relocated = u64::from_be_bytes(word).wrapping_add(key.base);
                            slot.copy_from_slice(&relocated.to_be_bytes());
                        }
                    }
                }
            }
        }
        bytes
    }

    /// Check the limits and that every relocation names a region and lies inside the bytes.
    pub fn validate(&self) -> Result<(), CaseFileError> {
        if self.bytes.len() > MAX_CASE_BYTES {
            return Err(CaseFileError(format!(
                "{} bytes exceed the {MAX_CASE_BYTES}-byte limit",
                self.bytes.len()
            )));
        }
        if self.regions.len() > MAX_REGIONS {
            return Err(CaseFileError(format!(
                "{} regions exceed the limit of {MAX_REGIONS}",
                self.regions.len()
            )));
        }
        for region in &self.regions {
            let data_len = region.data.as_ref().map_or(0, Vec::len);
            if region.length > MAX_REGION_BYTES || data_len > region.length as usize {
                return Err(CaseFileError(format!(
                    "region of {} bytes ({data_len} data bytes) is out of bounds",
                    region.length
                )));
            }
        }
        if self.relocations.len() > MAX_RELOCATIONS {
            return Err(CaseFileError("too many relocations".into()));
        }
        if self.private_data.as_ref().is_some_and(|p| p.len() > 256) {
            return Err(CaseFileError("private data longer than 256 bytes".into()));
        }
        for reloc in &self.relocations {
            let width = match reloc.field {
                RelocField::Handle => 4,
                RelocField::Offset => 8,
            };
            if reloc.region >= self.regions.len()
                || reloc
                    .at
                    .checked_add(width)
                    .is_none_or(|end| end > self.bytes.len())
            {
                return Err(CaseFileError(format!(
                    "relocation {reloc:?} outside the bytes or regions"
                )));
            }
        }
        Ok(())
    }

    /// The case file: pretty JSON, one field per line, hex for bytes.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_file()).unwrap_or_default()
    }

    /// One-line JSON (for the case log).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(&self.to_file()).unwrap_or_default()
    }

    fn to_file(&self) -> CaseFile {
        CaseFile {
            format: CASE_FORMAT.to_string(),
            seed: self.seed,
            index: self.index,
            family: self.family.clone(),
            base: self.base.clone(),
            target_rule: self.target_rule.clone(),
            xid: self.xid,
            private_data: self.private_data.as_deref().map(wire::hex::encode),
            regions: self
                .regions
                .iter()
                .map(|r| RegionFile {
                    length: r.length,
                    access: r.access,
                    fill: r.fill,
                    data: r.data.as_deref().map(wire::hex::encode),
                })
                .collect(),
            relocations: self.relocations.clone(),
            bytes: wire::hex::encode(&self.bytes),
            expected: self
                .expected()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }

    /// Parse a case file (or one case-log line). `expected` is informational and recomputed.
    pub fn from_json(text: &str) -> Result<Case, CaseFileError> {
        if text.len() > MAX_CASE_FILE_BYTES {
            return Err(CaseFileError("file too large".into()));
        }
        let file: CaseFile =
            serde_json::from_str(text).map_err(|e| CaseFileError(e.to_string()))?;
        if file.format != CASE_FORMAT {
            return Err(CaseFileError(format!("unknown format {:?}", file.format)));
        }
        let hex = |field: &str, s: &str| {
            wire::hex::decode(s).map_err(|e| CaseFileError(format!("{field} is not hex: {e}")))
        };
        let mut regions = Vec::new();
        for r in file.regions.iter().take(MAX_REGIONS + 1) {
            regions.push(Region {
                length: r.length,
                access: r.access,
                fill: r.fill,
                data: r
                    .data
                    .as_deref()
                    .map(|d| hex("region data", d))
                    .transpose()?,
            });
        }
        let case = Case {
            seed: file.seed,
            index: file.index,
            family: file.family,
            base: file.base,
            target_rule: file.target_rule,
            xid: file.xid,
            private_data: file
                .private_data
                .as_deref()
                .map(|p| hex("private_data", p))
                .transpose()?,
            regions,
            relocations: file.relocations,
            bytes: hex("bytes", &file.bytes)?,
        };
        case.validate()?;
        Ok(case)
    }
}

#[derive(Serialize, Deserialize)]
struct RegionFile {
    length: u32,
    access: RegionAccess,
    fill: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct CaseFile {
    format: String,
    seed: u64,
    index: u64,
    family: String,
    base: String,
    target_rule: String,
    xid: u32,
    #[serde(default)]
    private_data: Option<String>,
    regions: Vec<RegionFile>,
    relocations: Vec<Relocation>,
    bytes: String,
    #[serde(default)]
    expected: BTreeMap<String, Expectation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Case {
        Case {
            seed: 1,
            index: 2,
            family: "valid".into(),
            base: "write".into(),
            target_rule: "accepted".into(),
            xid: 0x1234,
            private_data: Some(vec![0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3]),
            regions: vec![Region {
                length: 16,
                access: RegionAccess::RemoteRead,
                fill: 0xaa,
                data: Some(vec![1, 2]),
            }],
            relocations: vec![
                Relocation {
                    at: 0,
                    region: 0,
                    field: RelocField::Handle,
                },
                Relocation {
                    at: 4,
                    region: 0,
                    field: RelocField::Offset,
                },
            ],
            bytes: vec![0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 8],
        }
    }

    #[test]
    fn case_files_round_trip() {
        let case = sample();
        assert_eq!(Case::from_json(&case.to_json()), Ok(case.clone()));
        assert_eq!(Case::from_json(&case.to_json_line()), Ok(case));
    }

    #[test]
    fn relocations_patch_handles_and_add_bases() {
        let case = sample();
        let key = RegionKey {
            handle: 0xabcd_0001,
            base: 0x7f00_0000_0000,
        };
        assert_eq!(
            case.wire_bytes(&[key]),
            vec![0xab, 0xcd, 0, 1, 0, 0, 0x7f, 0, 0, 0, 0, 8]
        );
        assert_eq!(case.regions[0].contents()[..3], [1, 2, 0xaa]);
    }

    #[test]
    fn refuses_relocations_outside_the_bytes_and_bad_hex() {
        let mut case = sample();
        case.relocations[1].at = 8;
        assert!(case.validate().is_err());
        let text = sample().to_json().replace("\"0000000700", "\"000000070");
        let err = Case::from_json(&text).unwrap_err();
        assert!(err.0.contains("bytes is not hex"), "{err:?}");
    }

    #[test]
    fn observed_names_round_trip() {
        for o in Observed::ALL {
            assert_eq!(Observed::from_name(o.name()), Some(o));
            let json = serde_json::to_string(&o).unwrap();
            assert_eq!(json, format!("\"{}\"", o.name()));
        }
    }
}
