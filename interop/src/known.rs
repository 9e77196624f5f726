//! Known findings as the suites match kernel-log lines against them: an unfixed fault that
//! `fixtures/findings/findings.toml` marks `known = true` over one transport (read by
//! `findings::known_problems`), matched by the dmesg check (`results::dmesg_outcome`) and, through
//! the file the runner shares, by the wire-fuzz guest watch. Apart from `findings` so the result
//! checks need no part of the replay machinery.

/// Where the findings live, relative to the workspace.
pub const FINDINGS_FILE: &str = "fixtures/findings/findings.toml";

/// A known finding as the suites match it: its name, the kind its kernel-log line is reported
/// as, and the text that line holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownProblem {
    pub finding: String,
    pub kind: kernel_log::Kind,
    pub signature: String,
}

/// The known finding `line` is, if any: a line reported as the finding's kind that holds its
/// signature.
pub fn known_problem<'a>(line: &str, known: &'a [KnownProblem]) -> Option<&'a KnownProblem> {
    let kind = kernel_log::classify(line, kernel_log::Reader::DmesgCheck)?;
    known
        .iter()
        .find(|k| k.kind == kind && line.contains(&k.signature))
}

/// The guest watch's `etc/kernel-watch-known.txt`, one known finding per line: the `grep -E`
/// pattern of its kind's markers, a tab, and its signature (a fixed string, `grep -F`). The watch
/// sets a line aside only when it matches both.
pub fn kernel_watch_known_file(known: &[KnownProblem]) -> String {
    known
        .iter()
        .map(|k| {
            format!(
                "{}\t{}\n",
                kernel_log::kind_pattern(k.kind, kernel_log::Reader::WireFuzzWatch),
                k.signature
            )
        })
        .collect()
}
