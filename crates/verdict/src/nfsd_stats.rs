//! What kernel nfsd counted during a case, from its own statistics read before and after:
//! `/proc/fs/nfsd/reply_cache_stats` and `/proc/net/rpc/nfsd` (the `rc`, `rpc`, `proc3`,
//! `proc4` and `proc4ops` lines), as the `key=value` deltas a case's kernel.txt records.
//!
//! The counters are named by wire's tables: `proc3` lists NFSv3 procedures in number order
//! (fs/nfsd/stats.c `nfsd_show` prints `svc_seq_show`'s per-version counts, one per procedure
//! of `nfsd_procedures3`), named by [`wire::nfs3::Nfs3Proc`]; `proc4ops` is indexed by operation
//! number, named by [`wire::nfs4::op_name`]. The text is the guest kernel's, read with bounded
//! effort: a line or value this does not understand counts as 0, never an error.

use std::collections::HashMap;

use wire::nfs3::Nfs3Proc;

/// Which counters a suite records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counters {
    /// The NFSv3 DRC suite (drc): the reply cache's counters, `rc`, `rpc` and every NFSv3
    /// procedure that ran (zero deltas left out), in the files' order.
    Nfs3,
    /// The NFSv4.1 session suite (v41): `rpc`, COMPOUNDs and the session operations the
    /// scenarios use (zero deltas kept), sorted by key.
    Nfs41,
}

/// The NFSv4 operations the v41 suite's deltas name (RFC 8881 §16.2.3 numbers).
const NFS41_OPS: [u32; 11] = [6, 15, 24, 28, 41, 42, 43, 44, 53, 57, 58];

/// Reply cache counters kept (a line whose name contains one of these).
const REPLY_CACHE_KEPT: [&str; 6] = [
    "hits",
    "misses",
    "not_cached",
    "num_entries",
    "payload",
    "acked_evictions",
];

/// The numeric prefix of a word, as awk reads a field as a number (`" 12x"` is 12; none is 0).
fn number(word: &str) -> i64 {
    let word = word.trim_start();
    let (sign, digits) = match word.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, word.strip_prefix('+').unwrap_or(word)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

/// `reply_cache_stats` as `name: value` lines: name → value (a later line of a name wins).
fn reply_cache(text: &str) -> HashMap<&str, i64> {
    text.lines()
        .map(|line| {
            let mut parts = line.split(':');
            let name = parts.next().unwrap_or_default();
            (name, number(parts.next().unwrap_or_default()))
        })
        .collect()
}

/// `/proc/net/rpc/nfsd` as lines of words: the first word → the numbers after it.
fn rpc_lines(text: &str) -> HashMap<&str, Vec<i64>> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            Some((name, words.map(number).collect()))
        })
        .collect()
}

/// The deltas of one counter line: `field` counts from 1 after the line's name.
fn field(values: Option<&Vec<i64>>, field: usize) -> i64 {
    values
        .and_then(|v| v.get(field.wrapping_sub(1)))
        .copied()
        .unwrap_or(0)
}

/// The deltas between two readings, in the order kernel.txt records them.
pub fn deltas(
    counters: Counters,
    before_reply_cache: &str,
    after_reply_cache: &str,
    before_rpc: &str,
    after_rpc: &str,
) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    let before = rpc_lines(before_rpc);
    if counters == Counters::Nfs3 {
        let cache_before = reply_cache(before_reply_cache);
        for line in after_reply_cache.lines() {
            let mut parts = line.split(':');
            let name = parts.next().unwrap_or_default();
            let value = number(parts.next().unwrap_or_default());
            let key = name.replace(' ', "_");
            if REPLY_CACHE_KEPT.iter().any(|kept| key.contains(kept)) {
                out.push((key, value - cache_before.get(name).copied().unwrap_or(0)));
            }
        }
    }
    for line in after_rpc.lines() {
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let after: Vec<i64> = words.map(number).collect();
        let was = before.get(name);
        let delta = |i: usize| field(Some(&after), i) - field(was, i);
        match (counters, name) {
            (Counters::Nfs3, "rc") => {
                out.push(("rc_hits".into(), delta(1)));
                out.push(("rc_misses".into(), delta(2)));
                out.push(("rc_nocache".into(), delta(3)));
            }
            (_, "rpc") => {
                out.push(("rpc_calls".into(), delta(1)));
                out.push(("rpc_badcalls".into(), delta(2)));
            }
            // "proc3 22 <null> <getattr> ...": the count, then one counter per procedure.
            (Counters::Nfs3, "proc3") => {
                for (number, proc_) in Nfs3Proc::ALL.iter().enumerate() {
                    if number + 2 > after.len() {
                        break;
                    }
                    let d = delta(number + 2);
                    if d != 0 {
                        out.push((format!("proc3_{}", proc_.name().to_ascii_lowercase()), d));
                    }
                }
            }
            // "proc4 2 <null> <compound>".
            (Counters::Nfs41, "proc4") => out.push(("proc4_compound".into(), delta(3))),
            // "proc4ops <n> <op 0> <op 1> ...": the counter of operation N is field N + 2.
            (Counters::Nfs41, "proc4ops") => {
                for op in NFS41_OPS {
                    let at = op as usize + 2;
                    if at <= after.len() {
                        let name = wire::nfs4::op_name(op).to_ascii_lowercase();
                        out.push((format!("proc4ops_{name}"), delta(at)));
                    }
                }
            }
            _ => {}
        }
    }
    if counters == Counters::Nfs41 {
        // Byte order, as `sort` in the C locale put the guest's lines.
        out.sort_by(|a, b| format!("{}={}", a.0, a.1).cmp(&format!("{}={}", b.0, b.1)));
    }
    out
}

/// New kernel log lines: the lines of `after` beyond those of `before` (0 when the ring buffer
/// wrapped and fewer are left).
pub fn new_log_lines(before: &str, after: &str) -> usize {
    after.lines().count().saturating_sub(before.lines().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RCS_BEFORE: &str = "max entries:           2048\nnum entries:           3\n\
        hash buckets:          64\nmem usage:             1000\ncache hits:            1\n\
        cache misses:          10\nnot cached:            20\npayload misses:        0\n";
    const RCS_AFTER: &str = "max entries:           2048\nnum entries:           5\n\
        hash buckets:          64\nmem usage:             2000\ncache hits:            2\n\
        cache misses:          13\nnot cached:            21\npayload misses:        0\n";
    const RPC_BEFORE: &str = "rc 1 10 20\nfh 0 0 0 0 0\nrpc 31 0 0 0 0\n\
        proc3 22 1 5 0 7 0 0 0 0 0 0 0 0 2 0 0 0 0 0 1 1 0 0\n\
        proc4 2 1 100\nproc4ops 76 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 4\n";
    const RPC_AFTER: &str = "rc 2 13 21\nfh 0 0 0 0 0\nrpc 37 1 0 0 0\n\
        proc3 22 1 6 0 8 0 0 0 0 0 0 0 0 4 0 0 0 0 0 1 1 0 0\n\
        proc4 2 1 103\nproc4ops 76 0 0 0 0 0 0 1 0 0 0 0 0 0 0 0 6\n";

    fn text(deltas: &[(String, i64)]) -> String {
        deltas.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    }

    #[test]
    fn nfsv3_deltas_are_the_reply_cache_then_rc_rpc_and_each_procedure_that_ran() {
        let d = deltas(Counters::Nfs3, RCS_BEFORE, RCS_AFTER, RPC_BEFORE, RPC_AFTER);
        assert_eq!(
            text(&d),
            "num_entries=2\ncache_hits=1\ncache_misses=3\nnot_cached=1\npayload_misses=0\n\
             rc_hits=1\nrc_misses=3\nrc_nocache=1\nrpc_calls=6\nrpc_badcalls=1\n\
             proc3_getattr=1\nproc3_lookup=1\nproc3_remove=2\n"
        );
    }

    #[test]
    fn nfsv41_deltas_name_the_session_operations_sorted() {
        let d = deltas(Counters::Nfs41, "", "", RPC_BEFORE, RPC_AFTER);
        let keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "proc4_compound",
                "proc4ops_create",
                "proc4ops_lookup",
                "rpc_badcalls",
                "rpc_calls"
            ]
        );
        assert_eq!(d[0].1, 3);
        assert_eq!(d[2].1, 2);
    }

    #[test]
    fn text_it_does_not_understand_counts_as_zero() {
        assert_eq!(number("  12x"), 12);
        assert_eq!(number("x"), 0);
        assert_eq!(number("-3"), -3);
        let d = deltas(Counters::Nfs3, "", "cache hits\n", "", "rc x\nproc3\n");
        assert_eq!(
            text(&d),
            "cache_hits=0\nrc_hits=0\nrc_misses=0\nrc_nocache=0\n"
        );
        assert_eq!(new_log_lines("a\nb\n", "a\n"), 0);
        assert_eq!(new_log_lines("a\n", "a\nb\nc"), 2);
    }
}
