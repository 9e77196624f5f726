//! The guest scripts that read nfsd's own statistics name procedures and operations by number
//! (`/proc/net/rpc/nfsd`'s `proc3` line is in procedure-number order; the v41 suite counts
//! `proc4ops` by operation number). Those names are wire's: these tests keep the scripts in step
//! with `Nfs3Proc` (RFC 1813 §3) and `nfs4::op_name` (RFC 8881 §16.2.3), so a script cannot
//! label a counter with the wrong procedure.

use wire::nfs3::Nfs3Proc;

fn script(path: &str) -> String {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The words of the first `split("…", …)` in `text` whose list contains `marker`.
fn split_list(text: &str, marker: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|l| l.contains("split(\"") && l.contains(marker))
        .unwrap_or_else(|| panic!("no split(\"...{marker}...\") line"));
    let list = line
        .split("split(\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    list.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn the_drc_guest_names_the_proc3_counters_as_wire_does() {
    let names = split_list(&script("vm-images/suites/drc/observe-nfsd.sh"), "getattr");
    let wire: Vec<String> = Nfs3Proc::ALL
        .iter()
        .map(|p| p.name().to_ascii_lowercase())
        .collect();
    assert_eq!(
        names, wire,
        "observe-nfsd.sh's proc3 names are out of step with wire::nfs3::Nfs3Proc (number order)"
    );
    // Number order: the list's index is the procedure number.
    for (number, proc_) in Nfs3Proc::ALL.iter().enumerate() {
        assert_eq!(*proc_ as usize, number);
    }
}

#[test]
fn the_v41_guest_names_the_operation_counters_as_wire_does() {
    let pairs = split_list(&script("vm-images/suites/v41/observe-nfsd.sh"), "sequence");
    assert!(pairs.len() >= 5, "{pairs:?}");
    for pair in pairs {
        let (number, name) = pair.split_once(':').unwrap_or_else(|| panic!("{pair}"));
        let number: u32 = number.parse().unwrap_or_else(|_| panic!("{pair}"));
        assert_eq!(
            name,
            wire::nfs4::op_name(number).to_ascii_lowercase(),
            "observe-nfsd.sh names operation {number} differently from wire::nfs4::op_name"
        );
    }
}
