//! Trace normalisation: volatile values become stable symbols so snapshots diff cleanly.
//!
//! `xid=0x…` becomes `xid=X1`, `X2`, … and `h=0x…` becomes `h=H1`, … in order of first
//! appearance; everything else is kept verbatim.

use std::collections::BTreeMap;

fn replace_prefixed(
    line: &str,
    prefix: &str,
    symbol: char,
    table: &mut BTreeMap<String, String>,
) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(prefix) {
        let (before, after) = rest.split_at(at + prefix.len());
        out.push_str(before);
        let end = after
            .find(|c: char| !(c.is_ascii_hexdigit() || c == 'x'))
            .unwrap_or(after.len());
        let value = &after[..end];
        if value.starts_with("0x") {
            let next = table.len() + 1;
            let sym = table
                .entry(value.to_string())
                .or_insert_with(|| format!("{symbol}{next}"));
            out.push_str(sym);
        } else {
            out.push_str(value);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Normalise a whole trace.
pub fn normalise(lines: &[String]) -> Vec<String> {
    let mut xids = BTreeMap::new();
    let mut handles = BTreeMap::new();
    lines
        .iter()
        .map(|line| {
            let line = replace_prefixed(line, "xid=", 'X', &mut xids);
            replace_prefixed(&line, "h=", 'H', &mut handles)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_follow_first_appearance() {
        let lines = vec![
            "cli send RDMA_MSG xid=0x1002 cr=8 write[h=0x1003/16]".to_string(),
            "srv recv RDMA_MSG xid=0x1002 read@0:h=0x1001/4".to_string(),
            "srv reject xid=? short header".to_string(),
        ];
        assert_eq!(
            normalise(&lines),
            vec![
                "cli send RDMA_MSG xid=X1 cr=8 write[h=H1/16]",
                "srv recv RDMA_MSG xid=X1 read@0:h=H2/4",
                "srv reject xid=? short header",
            ]
        );
    }
}
