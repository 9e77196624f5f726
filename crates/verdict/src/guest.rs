//! The guest-to-host result record: one JSON line per RESULT a suite's guest reports, written by
//! `rig guest` from rig's own typed outputs and read back by interop with the same type.
//!
//! A guest reports a case as `RESULT <json>` lines on its console log, the JSON being a
//! [`GuestResult`] of schema [`GUEST_RESULT_SCHEMA`]. Suites whose guests never run rig (the
//! kernel client's, smoke's shell steps) still write `RESULT case=... key=value` words
//! (vm-images/guest/lib.sh `rig_result`); interop reads both into one record. The field values
//! are the words the snapshots record: [`word`] and [`squeezed`] make them from rig's values
//! exactly as the suites' shell made them before (so a baseline does not change with the writer).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The version of [`GuestResult`]'s JSON. A reader refuses other versions: a guest built from
/// another tree must fail the case loudly, not be misread.
pub const GUEST_RESULT_SCHEMA: u32 = 1;

/// The prefix of a result line on a guest's console.
pub const RESULT_PREFIX: &str = "RESULT ";

/// Longest result line read (the guests are under test, not trusted).
pub const MAX_RESULT_LINE: usize = 16 << 10;

/// Most fields in one result.
pub const MAX_FIELDS: usize = 64;

/// One RESULT of one role of one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestResult {
    /// [`GUEST_RESULT_SCHEMA`].
    pub schema: u32,
    /// The case, as the suite's TOML names it.
    pub case: String,
    /// The guest's role (`srv`, `cli`).
    pub role: String,
    /// `pass`, `fail` or `skip`.
    pub verdict: String,
    /// What the case observed, as words the snapshots and reasons show.
    pub fields: BTreeMap<String, String>,
}

/// Why a `RESULT {...}` line was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuestResultError {
    /// Longer than [`MAX_RESULT_LINE`].
    TooLong(usize),
    /// Not a [`GuestResult`] (the serde error).
    Json(String),
    /// Another schema version than [`GUEST_RESULT_SCHEMA`].
    Schema(u32),
    /// More than [`MAX_FIELDS`] fields.
    TooManyFields(usize),
}

impl fmt::Display for GuestResultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestResultError::TooLong(n) => {
                write!(f, "result line of {n} bytes (limit {MAX_RESULT_LINE})")
            }
            GuestResultError::Json(e) => write!(f, "result line: {e}"),
            GuestResultError::Schema(v) => write!(
                f,
                "result schema {v}, this reader knows {GUEST_RESULT_SCHEMA}"
            ),
            GuestResultError::TooManyFields(n) => {
                write!(f, "result with {n} fields (limit {MAX_FIELDS})")
            }
        }
    }
}

impl std::error::Error for GuestResultError {}

impl GuestResult {
    /// A result of this schema.
    pub fn new(case: &str, role: &str, verdict: &str) -> GuestResult {
        GuestResult {
            schema: GUEST_RESULT_SCHEMA,
            case: case.to_string(),
            role: role.to_string(),
            verdict: verdict.to_string(),
            fields: BTreeMap::new(),
        }
    }

    /// Set one field (a later value for the same key replaces the earlier, as in the
    /// `key=value` form).
    pub fn field(&mut self, key: &str, value: impl Into<String>) -> &mut GuestResult {
        self.fields.insert(key.to_string(), value.into());
        self
    }

    /// The console line: [`RESULT_PREFIX`] and the JSON on one line.
    pub fn to_line(&self) -> String {
        // A struct of strings and a map of strings always serialises.
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{RESULT_PREFIX}{json}")
    }

    /// Read the JSON after [`RESULT_PREFIX`], bounded and of this schema.
    pub fn parse(json: &str) -> Result<GuestResult, GuestResultError> {
        if json.len() > MAX_RESULT_LINE {
            return Err(GuestResultError::TooLong(json.len()));
        }
        let result: GuestResult =
            serde_json::from_str(json).map_err(|e| GuestResultError::Json(e.to_string()))?;
        if result.schema != GUEST_RESULT_SCHEMA {
            return Err(GuestResultError::Schema(result.schema));
        }
        if result.fields.len() > MAX_FIELDS {
            return Err(GuestResultError::TooManyFields(result.fields.len()));
        }
        Ok(result)
    }
}

/// A value as one word: each run of blanks, tabs and `=` becomes one `_` (what the suites'
/// `verdict_scan` did to a verdict's strings). Other underscores are kept.
pub fn word(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut in_run = false;
    for c in value.chars() {
        if matches!(c, ' ' | '\t' | '=') {
            if !in_run {
                out.push('_');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out
}

/// A reason as one word, the way `tr -s ' \t\n=' '_'` made one: blanks, tabs, newlines and `=`
/// become `_`, then every run of `_` (including underscores already there) is one `_`.
pub fn squeezed(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        let c = if matches!(c, ' ' | '\t' | '\n' | '=') {
            '_'
        } else {
            c
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    out
}

/// A JSON string value as its pretty-printed text shows it, without the quotes: escapes kept
/// (`\"`, `\n`). The suites read strings from that text, and the recorded words have the
/// escapes in them.
pub fn json_text(value: &str) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_line_reads_back_as_written() {
        let mut result = GuestResult::new("acked.after-ack", "cli", "pass");
        result
            .field("statuses", "NFS3_OK,NFS3ERR_NOENT")
            .field("note", "has blanks = and \"quotes\"");
        let line = result.to_line();
        let json = line.strip_prefix(RESULT_PREFIX).unwrap();
        assert!(!json.contains('\n'));
        assert_eq!(GuestResult::parse(json).unwrap(), result);
    }

    #[test]
    fn another_schema_unknown_keys_and_oversized_lines_are_refused() {
        let mut result = GuestResult::new("c", "cli", "pass");
        result.schema = 2;
        let json = serde_json::to_string(&result).unwrap();
        assert_eq!(GuestResult::parse(&json), Err(GuestResultError::Schema(2)));
        let extra = r#"{"schema":1,"case":"c","role":"cli","verdict":"pass","fields":{},"x":1}"#;
        assert!(matches!(
            GuestResult::parse(extra),
            Err(GuestResultError::Json(_))
        ));
        let long = format!("{{\"case\":\"{}\"}}", "a".repeat(MAX_RESULT_LINE));
        assert!(matches!(
            GuestResult::parse(&long),
            Err(GuestResultError::TooLong(_))
        ));
        let mut wide = GuestResult::new("c", "cli", "pass");
        for i in 0..=MAX_FIELDS {
            wide.field(&format!("k{i}"), "v");
        }
        let json = serde_json::to_string(&wide).unwrap();
        assert_eq!(
            GuestResult::parse(&json),
            Err(GuestResultError::TooManyFields(MAX_FIELDS + 1))
        );
    }

    #[test]
    fn words_are_made_as_the_shell_made_them() {
        // verdict_scan: gsub(/[ \t=]+/, "_"), underscores kept.
        assert_eq!(word("a  b=\tc__d"), "a_b_c__d");
        // tr -s ' \t\n=' '_': every run of underscores squeezed too.
        assert_eq!(squeezed("a  b=\tc__d\ne"), "a_b_c_d_e");
        assert_eq!(json_text("say \"x\"\n"), "say \\\"x\\\"\\n");
    }
}
