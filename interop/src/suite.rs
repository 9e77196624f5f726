//! Suites as data (`vm-images/suites/<name>.toml`): cases with a server script, a client script,
//! a timeout, artifacts and result rules; rendered into the plan the guest driver executes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use serde::{Deserialize, Serialize};

/// Which guest a script runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Srv,
    Cli,
}

impl Role {
    pub const BOTH: [Role; 2] = [Role::Srv, Role::Cli];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Srv => "srv",
            Role::Cli => "cli",
        }
    }
}

/// A host-side capture check: tshark must find at least `min_frames` frames matching the filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapCheck {
    /// File in the share's `out/` directory.
    pub file: String,
    pub display_filter: String,
    pub min_frames: u64,
    /// The cases whose traffic the filter looks for: when `--case` picks none of them (only
    /// `rping`, say), the capture holds no such frames and the check is not made. Empty: always.
    #[serde(default)]
    pub after_cases: Vec<String>,
}

impl PcapCheck {
    /// Whether the check applies to a run of these cases.
    pub fn applies_to<'a>(&self, mut cases: impl Iterator<Item = &'a str>) -> bool {
        self.after_cases.is_empty() || cases.any(|case| self.after_cases.iter().any(|c| c == case))
    }
}

/// Checks the host makes after the guests power off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostChecks {
    /// Scan both guests' dmesg and consoles for WARN/BUG/Oops/KASAN/hung task.
    #[serde(default)]
    pub dmesg: bool,
    #[serde(default)]
    pub pcap: Option<PcapCheck>,
}

/// A host file copied into the share before boot (the hook for later suites' binaries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraFile {
    /// Relative to the workspace root (or absolute).
    pub from: PathBuf,
    /// Relative to the share root (`/rig` in the guests).
    pub to: String,
}

/// One case: a step both guests run in lock step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub client: Option<String>,
    pub timeout_secs: u64,
    /// RESULT keys whose values must all be equal across the case's RESULT lines (checksums).
    #[serde(default)]
    pub equal: Vec<String>,
    /// Files in `out/` this case produces, listed in the report.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// The client starts without waiting for the server's ready marker (independent setup).
    #[serde(default)]
    pub concurrent: bool,
    /// Runs even when `--case` picks other cases: setup, server start/stop, teardown.
    #[serde(default)]
    pub always: bool,
}

impl Case {
    /// The script for `role`, if this case runs anything there.
    pub fn script(&self, role: Role) -> Option<&str> {
        match role {
            Role::Srv => self.server.as_deref(),
            Role::Cli => self.client.as_deref(),
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }
}

/// A parsed suite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub boot_timeout_secs: u64,
    #[serde(default)]
    pub extra_files: Vec<ExtraFile>,
    #[serde(default)]
    pub host_checks: HostChecks,
    #[serde(rename = "case")]
    pub cases: Vec<Case>,
}

/// Limits that keep a typo from producing an hour-long run.
const MAX_CASE_TIMEOUT_SECS: u64 = 3600;
const MAX_CASES: usize = 200;

fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !s.starts_with(['.', '-'])
}

impl Suite {
    pub fn parse(text: &str) -> Result<Self> {
        let suite: Suite = toml::from_str(text).context("parsing suite")?;
        ensure!(is_word(&suite.name), "bad suite name {:?}", suite.name);
        ensure!(
            !suite.cases.is_empty() && suite.cases.len() <= MAX_CASES,
            "a suite needs 1..={MAX_CASES} cases"
        );
        ensure!(
            (1..=MAX_CASE_TIMEOUT_SECS).contains(&suite.boot_timeout_secs),
            "boot_timeout_secs out of range"
        );
        let mut names = std::collections::BTreeSet::new();
        for case in &suite.cases {
            ensure!(is_word(&case.name), "bad case name {:?}", case.name);
            ensure!(
                names.insert(&case.name),
                "case {:?} listed twice",
                case.name
            );
            ensure!(
                (1..=MAX_CASE_TIMEOUT_SECS).contains(&case.timeout_secs),
                "case {}: timeout_secs out of range",
                case.name
            );
            ensure!(
                case.server.is_some() || case.client.is_some(),
                "case {} runs nothing",
                case.name
            );
            for script in Role::BOTH.iter().filter_map(|r| case.script(*r)) {
                ensure!(is_word(script), "case {}: bad script {script:?}", case.name);
            }
            for artifact in &case.artifacts {
                ensure!(
                    is_word(artifact),
                    "case {}: bad artifact {artifact:?}",
                    case.name
                );
            }
        }
        if let Some(check) = &suite.host_checks.pcap {
            for case in &check.after_cases {
                ensure!(
                    names.contains(case),
                    "pcap check: after_cases names {case:?}, which is not a case of this suite"
                );
            }
        }
        for extra in &suite.extra_files {
            ensure!(
                !extra.to.is_empty()
                    && !extra.to.starts_with('/')
                    && extra
                        .to
                        .split('/')
                        .all(|part| part != ".." && !part.is_empty()),
                "extra file destination {:?} must be a relative path inside the share",
                extra.to
            );
        }
        Ok(suite)
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// The plan the guest driver reads: one TAB-separated line per case,
    /// `name timeout <suite>/<server-script>|- <suite>/<client-script>|- sync|concurrent`.
    pub fn plan(&self) -> String {
        let script = |s: Option<&str>| {
            s.map(|s| format!("{}/{s}", self.name))
                .unwrap_or_else(|| "-".to_owned())
        };
        self.cases
            .iter()
            .map(|case| {
                format!(
                    "{}\t{}\t{}\t{}\t{}\n",
                    case.name,
                    case.timeout_secs,
                    script(case.server.as_deref()),
                    script(case.client.as_deref()),
                    if case.concurrent {
                        "concurrent"
                    } else {
                        "sync"
                    }
                )
            })
            .collect()
    }

    pub fn boot_timeout(&self) -> Duration {
        Duration::from_secs(self.boot_timeout_secs)
    }

    /// Upper bound for a whole run: boot + every case + slack for collection and power-off.
    pub fn run_timeout(&self) -> Duration {
        let cases: u64 = self.cases.iter().map(|c| c.timeout_secs).sum();
        Duration::from_secs(self.boot_timeout_secs + cases + 30)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
name = "mini"
boot_timeout_secs = 60
[host_checks]
dmesg = true
pcap = { file = "srv.pcap", display_filter = "rpcordma", min_frames = 1 }
[[case]]
name = "setup"
server = "setup-server.sh"
client = "setup-client.sh"
timeout_secs = 30
concurrent = true
[[case]]
name = "nfs3"
client = "nfs3.sh"
timeout_secs = 100
equal = ["md5_written", "md5_read"]
"#;

    #[test]
    fn the_pcap_check_applies_only_after_one_of_its_cases() {
        let with = SAMPLE.replace(
            "min_frames = 1 }",
            "min_frames = 1, after_cases = [\"nfs3\"] }",
        );
        let check = Suite::parse(&with).unwrap().host_checks.pcap.unwrap();
        assert!(check.applies_to(["setup", "nfs3"].into_iter()));
        assert!(!check.applies_to(["setup"].into_iter()));
        let always = Suite::parse(SAMPLE).unwrap().host_checks.pcap.unwrap();
        assert!(always.applies_to(["setup"].into_iter()));
        let unknown = SAMPLE.replace(
            "min_frames = 1 }",
            "min_frames = 1, after_cases = [\"nfs4\"] }",
        );
        let err = Suite::parse(&unknown).unwrap_err();
        assert!(format!("{err:#}").contains("\"nfs4\""), "{err:#}");
    }

    #[test]
    fn parses_cases_and_host_checks() {
        let suite = Suite::parse(SAMPLE).unwrap();
        assert_eq!(suite.cases.len(), 2);
        assert!(suite.host_checks.dmesg);
        assert_eq!(suite.host_checks.pcap.as_ref().unwrap().min_frames, 1);
        assert_eq!(suite.cases[1].script(Role::Srv), None);
        assert_eq!(suite.cases[1].script(Role::Cli), Some("nfs3.sh"));
        assert_eq!(suite.run_timeout(), Duration::from_secs(60 + 130 + 30));
    }

    #[test]
    fn plan_lines_name_scripts_relative_to_the_share() {
        let suite = Suite::parse(SAMPLE).unwrap();
        assert_eq!(
            suite.plan(),
            "setup\t30\tmini/setup-server.sh\tmini/setup-client.sh\tconcurrent\nnfs3\t100\t-\tmini/nfs3.sh\tsync\n"
        );
    }

    #[test]
    fn rejects_bad_suites() {
        let no_scripts = SAMPLE.replace("client = \"nfs3.sh\"\n", "");
        assert!(Suite::parse(&no_scripts).is_err());
        let traversal = SAMPLE.replace("nfs3.sh", "../../etc/passwd");
        assert!(Suite::parse(&traversal).is_err());
        let huge_timeout = SAMPLE.replace("timeout_secs = 100", "timeout_secs = 999999");
        assert!(Suite::parse(&huge_timeout).is_err());
        let duplicate = SAMPLE.replace("name = \"nfs3\"", "name = \"setup\"");
        assert!(Suite::parse(&duplicate).is_err());
        let escaping_extra = format!(
            "{}\n",
            SAMPLE.replace(
                "boot_timeout_secs = 60",
                "boot_timeout_secs = 60\nextra_files = [{ from = \"x\", to = \"../x\" }]"
            )
        );
        assert!(Suite::parse(&escaping_extra).is_err());
    }

    #[test]
    fn committed_smoke_suite_is_valid_and_its_scripts_exist() {
        let root = crate::cache::workspace_root().join("vm-images/suites");
        let suite = Suite::load(&root.join("smoke.toml")).unwrap();
        let names: Vec<&str> = suite.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["setup", "rping", "nfs3", "nfs41", "fileops", "teardown"]
        );
        for case in &suite.cases {
            for script in Role::BOTH.iter().filter_map(|r| case.script(*r)) {
                assert!(
                    root.join("smoke").join(script).is_file(),
                    "{script} missing"
                );
            }
        }
    }
}
