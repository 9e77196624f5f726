//! The RDMA suites (selftest, drc, kclient, bench-interop, v41, svcrdma-rules) are valid suite
//! files: they parse, each script exists and passes `sh -n`, extra files exist in the repository
//! (except the rig binary, which `just interop` builds), and the scenario cases cover the whole
//! client catalogue.

use std::path::{Path, PathBuf};
use std::process::Command;

use interop::cache::workspace_root;
use interop::suite::{Role, Suite};

fn suites_dir() -> PathBuf {
    workspace_root().join("vm-images/suites")
}

fn load(name: &str) -> Suite {
    Suite::load(&suites_dir().join(format!("{name}.toml"))).unwrap()
}

fn sh_syntax_ok(script: &Path) -> bool {
    Command::new("sh")
        .arg("-n")
        .arg(script)
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The scenario names of the client catalogue (what `rig scenarios --list` prints).
fn catalogue_scenarios() -> Vec<String> {
    client::scenarios::catalogue()
        .iter()
        .map(|s| s.name.to_owned())
        .collect()
}

/// Suite `name`, checked: it parses under its own name and every case's script exists and
/// passes `sh -n`.
fn checked_suite(name: &str) -> Suite {
    let suite = load(name);
    assert_eq!(suite.name, name);
    for case in &suite.cases {
        for script in Role::BOTH.iter().filter_map(|r| case.script(*r)) {
            let path = suites_dir().join(name).join(script);
            assert!(path.is_file(), "{name}: {script} missing");
            assert!(sh_syntax_ok(&path), "{name}: {script} fails sh -n");
        }
    }
    suite
}

/// The suite's extra files that come from the repository (the rig binary, built by `just
/// interop`, is left out), each checked to exist, with its path.
fn repository_extra_files<'a>(
    name: &str,
    suite: &'a Suite,
) -> Vec<(PathBuf, &'a interop::suite::ExtraFile)> {
    suite
        .extra_files
        .iter()
        .filter(|extra| !extra.from.starts_with("target"))
        .map(|extra| {
            let path = workspace_root().join(&extra.from);
            assert!(
                path.is_file(),
                "{name}: extra file {} missing",
                path.display()
            );
            (path, extra)
        })
        .collect()
}

#[test]
fn rdma_suites_parse_and_their_scripts_exist_and_are_valid_sh() {
    for name in ["selftest", "drc", "kclient", "bench-interop", "v41"] {
        let suite = checked_suite(name);
        for (path, _) in repository_extra_files(name, &suite) {
            assert!(sh_syntax_ok(&path), "{}: fails sh -n", path.display());
        }
    }
}

#[test]
fn scenario_cases_cover_every_policy_and_the_catalogue() {
    let selftest = load("selftest");
    let drc = load("drc");
    let scenarios_of = |suite: &Suite, prefix: &str| -> Vec<String> {
        suite
            .cases
            .iter()
            .filter_map(|c| c.name.strip_prefix(prefix).map(str::to_owned))
            .collect()
    };
    let nfsd = scenarios_of(&drc, "nfsd.");
    assert!(nfsd.len() >= 10, "{nfsd:?}");
    // `rig serve` has no export cache: what needs nfsd's runs against nfsd only.
    let kernel_only = |name: &String| {
        client::scenarios::catalogue().iter().any(|s| {
            s.name == name
                && s.requires.contains(&client::scenarios::Control::Hold(
                    client::scenarios::Hold::ExportCacheUpcall,
                ))
        })
    };
    let nfsd_in_selftest: Vec<String> = nfsd.iter().filter(|n| !kernel_only(n)).cloned().collect();
    assert!(
        nfsd_in_selftest.len() < nfsd.len(),
        "deferred is nfsd's only"
    );
    for policy in ["classic", "acked", "acked-mark"] {
        let ours = scenarios_of(&selftest, &format!("{policy}."));
        assert_eq!(
            ours, nfsd_in_selftest,
            "{policy} and nfsd run the same scenarios (but nfsd's own) in the same order"
        );
        let serve = selftest
            .cases
            .iter()
            .position(|c| c.name == format!("serve-{policy}"))
            .unwrap();
        let first = selftest
            .cases
            .iter()
            .position(|c| c.name.starts_with(&format!("{policy}.")))
            .unwrap();
        assert!(serve < first, "serve-{policy} must start the server first");
    }
    assert_eq!(
        nfsd,
        catalogue_scenarios(),
        "drc cases out of step with the client catalogue"
    );
}

#[test]
fn kclient_compares_checksums_of_every_file_size() {
    let suite = load("kclient");
    for case in ["files-4k", "files-1m", "files-16m", "reconnect"] {
        let case = suite.cases.iter().find(|c| c.name == case).unwrap();
        assert_eq!(case.equal, ["md5_written", "md5_read"]);
    }
}

/// The NFSv4.1 session scenarios (`rig scenarios --v41 --list`; `rdma::v41::catalogue`, whose
/// own test pins the same five names).
const V41_SCENARIOS: [&str; 5] = [
    "v41-replay-after-ack",
    "v41-replay-in-progress",
    "v41-misordered",
    "v41-false-retry",
    "v41-after-reconnect",
];

#[test]
fn v41_runs_each_session_scenario_once_against_nfsd() {
    let suite = load("v41");
    let cases: Vec<&str> = suite
        .cases
        .iter()
        .filter_map(|c| c.name.strip_prefix("nfsd."))
        .collect();
    assert_eq!(cases, V41_SCENARIOS);
    for case in suite.cases.iter().filter(|c| c.name.starts_with("nfsd.")) {
        assert_eq!(case.client.as_deref(), Some("scenario.sh"), "{}", case.name);
        assert_eq!(
            case.server.as_deref(),
            Some("observe-nfsd.sh"),
            "{}",
            case.name
        );
    }
    // The client runs the NFSv4.1 catalogue, not the NFSv3 one.
    let script = std::fs::read_to_string(suites_dir().join("v41/scenario.sh")).unwrap();
    assert!(script.contains("--v41"), "{script}");
    let setup = std::fs::read_to_string(suites_dir().join("v41/setup-server.sh")).unwrap();
    assert!(
        setup.contains("fsid=0") && setup.contains("NFSD_GRACE_SECS=10"),
        "{setup}"
    );
    // The shared nfsd setup applies the short grace period when asked to.
    let library = std::fs::read_to_string(suites_dir().join("selftest/rig-suite.sh")).unwrap();
    assert!(
        library.contains("NFSD_GRACE_SECS") && library.contains("nfsv4gracetime"),
        "{library}"
    );
}

#[test]
fn svcrdma_rules_suite_is_valid_ships_every_profile_and_is_opt_in() {
    let name = "svcrdma-rules";
    let suite = checked_suite(name);
    let mut shipped = Vec::new();
    for (path, extra) in repository_extra_files(name, &suite) {
        match path.extension().and_then(|e| e.to_str()) {
            Some("sh") => assert!(sh_syntax_ok(&path), "{}: fails sh -n", path.display()),
            Some("toml") => {
                assert!(
                    extra.to.starts_with("etc/svcrdma-profiles/"),
                    "{}",
                    extra.to
                );
                shipped.push(path.file_name().unwrap().to_owned());
            }
            _ => panic!("{name}: unexpected extra file {}", path.display()),
        }
    }
    // Every kernel profile reaches the guest (the client picks one by `uname -r`).
    let mut profiles: Vec<_> =
        std::fs::read_dir(workspace_root().join("fixtures/svcrdma-profiles"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_str().is_some_and(|n| n.ends_with(".toml")))
            .collect();
    profiles.sort();
    shipped.sort();
    assert_eq!(shipped, profiles);
    let client = std::fs::read_to_string(suites_dir().join(name).join("rules-client.sh")).unwrap();
    assert!(client.contains("svcrdma-rules --target"), "{client}");
    assert!(client.contains("uname -r"), "{client}");
    // Opt-in: `just interop` without --suite does not run it.
    let main = std::fs::read_to_string(workspace_root().join("interop/src/main.rs")).unwrap();
    let defaults = main
        .lines()
        .find(|l| l.starts_with("const DEFAULT_SUITES"))
        .unwrap();
    assert!(!defaults.contains(name), "{defaults}");
}
