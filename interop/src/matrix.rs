//! The kernel matrix (`vm-images/kernels.toml`) and the guest package list.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde::{Deserialize, Serialize};

/// How a Debian kernel is split into packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// `linux-image-<abi>-amd64` holds vmlinuz and the modules (6.x).
    Image,
    /// `linux-binary-<v>-amd64` holds vmlinuz, `linux-modules-<v>-amd64` the `.ko.xz` modules (7.x).
    Split,
}

/// One kernel of the matrix: a Debian binary package (`meta_package` + `layout`) or a kernel
/// built from Debian's source package (`source_package` + `source_version`), optionally patched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    /// Short name used on the command line and in reports (`linux-6.1`).
    pub name: String,
    /// Debian suite to take the kernel (or its source) from (`bookworm`, `trixie`, `sid`).
    pub suite: String,
    /// Meta-package whose `Depends:` names the versioned kernel package (binary entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_package: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// The resolved upstream version must start with this (guards against a suite moving on).
    pub version_prefix: String,
    /// Binary entries: an exact Debian version of `meta_package` (`6.1.176-1`) instead of the
    /// newest of the pockets, to test an older kernel while the archive still has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_version: Option<String>,
    /// Source entries: the Debian package holding the kernel source tarball (`linux-source-6.12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_package: Option<String>,
    /// Source entries: the exact package version, so a build is reproducible.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_version: Option<String>,
    /// Patch series applied in order: directories under `fixtures/kernel-patches/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<String>,
    /// Optional config fragments (`vm-images/kernel-config/<name>.config`) beyond `rig`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fragments: Vec<String>,
    /// Extra kernel command-line words (e.g. `nfsd.drc_mutation=acked-evict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cmdline: Vec<String>,
    /// The suites this entry runs (all when empty): a mutant kernel exists for the DRC suites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suites: Vec<String>,
    /// The soft-RDMA provider its guests bring up (default soft-RoCE).
    #[serde(default, skip_serializing_if = "Transport::is_default")]
    pub transport: Transport,
    /// Run only when named (`--kernel`, `just findings --kernel`, `just fuzz-wire ... <kernel>`):
    /// a test kernel for one question, never chosen by a suite or transport selection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explicit: bool,
}

/// The soft-RDMA provider a lane's guests run over: soft-RoCE (`rdma_rxe`, RoCEv2 over UDP
/// 4791) or soft-iWARP (`siw`, MPA/DDP/RDMAP over TCP). The guests learn it from the kernel
/// command line (`rig.transport=`) and bring up `<transport>0` on eth0.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[default]
    Rxe,
    Siw,
}

impl Transport {
    /// The word reports, the command line and `rig.transport=` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Rxe => "rxe",
            Transport::Siw => "siw",
        }
    }

    /// The kernel module (or built-in) that provides it.
    pub fn module(self) -> &'static str {
        match self {
            Transport::Rxe => "rdma_rxe",
            Transport::Siw => "siw",
        }
    }

    /// The kernel config option that builds [`Transport::module`].
    pub fn config_option(self) -> &'static str {
        match self {
            Transport::Rxe => "CONFIG_RDMA_RXE",
            Transport::Siw => "CONFIG_RDMA_SIW",
        }
    }

    /// The kernel command-line word that tells the guests.
    pub fn cmdline_word(self) -> String {
        format!("rig.transport={}", self.as_str())
    }

    fn is_default(&self) -> bool {
        *self == Transport::default()
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a matrix entry's kernel comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelOrigin<'a> {
    Binary {
        meta_package: &'a str,
        layout: Layout,
    },
    Source {
        package: &'a str,
        version: &'a str,
    },
}

/// The pockets a user of Debian `suite` installs kernels from: the release itself, its
/// `-updates` and its `-security` pocket (where stable kernel fixes reach users); unstable and
/// experimental have neither.
pub fn pockets_of(suite: &str) -> Vec<String> {
    match suite {
        "sid" | "unstable" | "experimental" | "rc-buggy" => vec![suite.to_owned()],
        _ => vec![
            suite.to_owned(),
            format!("{suite}-updates"),
            format!("{suite}-security"),
        ],
    }
}

/// A Debian version (policy §5.6.12): `[epoch:]upstream[-revision]`, the characters it allows.
fn is_debian_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 64
        && version.as_bytes()[0].is_ascii_digit()
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".+-~:".contains(&b))
}

/// Whether a kernel whose entry lists `suites` runs `suite` (an empty list: every suite). The
/// matrix entry and the built image it becomes both answer through this.
pub fn runs_suite(suites: &[String], suite: &str) -> bool {
    suites.is_empty() || suites.iter().any(|s| s == suite)
}

/// Kernel command-line words we pass on: `key=value` or `key`, no shell or quoting characters.
pub fn is_cmdline_word(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 128
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._=,:-".contains(&b))
        && !word.starts_with('-')
}

/// Module names the guests need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleSets {
    pub required: Vec<String>,
    pub optional: Vec<String>,
}

/// The parsed matrix file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub guest_suite: String,
    #[serde(default)]
    pub mirror: Option<String>,
    /// The archive of the `-security` pockets (default: the host's, else deb.debian.org's).
    #[serde(default)]
    pub security_mirror: Option<String>,
    pub modules: ModuleSets,
    /// The transports a run covers when `--transport` is not given (absent: every transport an
    /// entry names).
    #[serde(default)]
    pub default_transports: Vec<Transport>,
    #[serde(rename = "kernel")]
    pub kernels: Vec<KernelSpec>,
}

/// Names that are safe in paths, apt arguments and shell words.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        && !name.starts_with(['.', '-'])
}

impl Matrix {
    /// Parse and validate matrix text.
    pub fn parse(text: &str) -> Result<Self> {
        let matrix: Matrix = toml::from_str(text).context("parsing kernel matrix")?;
        ensure!(
            !matrix.kernels.is_empty(),
            "kernel matrix lists no [[kernel]]"
        );
        ensure!(
            is_plain_name(&matrix.guest_suite),
            "bad guest_suite {:?}",
            matrix.guest_suite
        );
        let mut seen = BTreeSet::new();
        for kernel in &matrix.kernels {
            for (field, value) in [
                ("name", &kernel.name),
                ("suite", &kernel.suite),
                ("version_prefix", &kernel.version_prefix),
            ]
            .into_iter()
            .chain(kernel.meta_package.as_ref().map(|m| ("meta_package", m)))
            .chain(
                kernel
                    .source_package
                    .as_ref()
                    .map(|p| ("source_package", p)),
            ) {
                ensure!(
                    is_plain_name(value),
                    "kernel {:?}: bad {field} {value:?}",
                    kernel.name
                );
            }
            ensure!(
                seen.insert(kernel.name.as_str()),
                "kernel {:?} listed twice",
                kernel.name
            );
            kernel.origin()?;
            for version in kernel.source_version.iter().chain(&kernel.binary_version) {
                ensure!(
                    is_debian_version(version),
                    "kernel {:?}: bad Debian version {version:?}",
                    kernel.name
                );
            }
            for word in kernel
                .patches
                .iter()
                .chain(&kernel.fragments)
                .chain(&kernel.suites)
            {
                ensure!(
                    is_plain_name(word),
                    "kernel {:?}: bad name {word:?}",
                    kernel.name
                );
            }
            for word in &kernel.cmdline {
                ensure!(
                    is_cmdline_word(word),
                    "kernel {:?}: bad cmdline word {word:?}",
                    kernel.name
                );
            }
        }
        for module in matrix
            .modules
            .required
            .iter()
            .chain(&matrix.modules.optional)
        {
            ensure!(is_plain_name(module), "bad module name {module:?}");
        }
        Ok(matrix)
    }

    /// Read and parse a matrix file.
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    /// The kernels named in `names` (all when empty), in matrix order.
    pub fn select(&self, names: &[String]) -> Result<Vec<&KernelSpec>> {
        if names.is_empty() {
            return Ok(self.kernels.iter().collect());
        }
        for name in names {
            if !self.kernels.iter().any(|k| &k.name == name) {
                let known: Vec<&str> = self.kernels.iter().map(|k| k.name.as_str()).collect();
                bail!(
                    "unknown kernel {name:?}; the matrix has {}",
                    known.join(", ")
                );
            }
        }
        Ok(self
            .kernels
            .iter()
            .filter(|k| names.contains(&k.name))
            .collect())
    }
}

impl KernelSpec {
    /// Binary or source, checked: exactly one of the two field groups is complete.
    pub fn origin(&self) -> Result<KernelOrigin<'_>> {
        match (
            &self.meta_package,
            self.layout,
            &self.source_package,
            &self.source_version,
        ) {
            (Some(meta_package), Some(layout), None, None) if self.patches.is_empty() => {
                Ok(KernelOrigin::Binary {
                    meta_package,
                    layout,
                })
            }
            (None, None, Some(package), Some(version)) if self.binary_version.is_none() => {
                ensure!(
                    version.starts_with(&self.version_prefix),
                    "kernel {:?}: source_version {version} does not start with {}",
                    self.name,
                    self.version_prefix
                );
                Ok(KernelOrigin::Source { package, version })
            }
            _ => bail!(
                "kernel {:?}: give either meta_package + layout (a Debian binary kernel) or \
                 source_package + source_version (built from source; patches only there)",
                self.name
            ),
        }
    }

    /// The pockets this entry's packages are resolved from ([`pockets_of`] its suite).
    pub fn pockets(&self) -> Vec<String> {
        pockets_of(&self.suite)
    }

    /// Whether a run over `chosen` transports (`--transport`; empty: the matrix's
    /// `default_transports`, and when those are empty too, every transport) covers this entry.
    pub fn runs_over(&self, chosen: &[Transport], defaults: &[Transport]) -> bool {
        let chosen = if chosen.is_empty() { defaults } else { chosen };
        chosen.is_empty() || chosen.contains(&self.transport)
    }

    /// Whether this entry runs `suite` (entries without a `suites` list run every suite).
    pub fn runs_suite(&self, suite: &str) -> bool {
        runs_suite(&self.suites, suite)
    }

    /// Whether a run that names no kernel picks this entry for one of `suites` over `chosen`
    /// transports: never an `explicit` one.
    pub fn selected_for<'a>(
        &self,
        mut suites: impl Iterator<Item = &'a str>,
        chosen: &[Transport],
        defaults: &[Transport],
    ) -> bool {
        !self.explicit && suites.any(|s| self.runs_suite(s)) && self.runs_over(chosen, defaults)
    }

    /// Canonical text of this entry, for its cache key.
    pub fn key_material(&self) -> String {
        toml::to_string(self).unwrap_or_else(|_| format!("{self:?}"))
    }
}

/// Parse a package list: one Debian package name per line, `#` comments, blank lines ignored.
pub fn parse_package_list(text: &str) -> Result<Vec<String>> {
    let mut packages = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        // Debian policy §5.6.1: lower case letters, digits, + - . ; at least two characters.
        let valid = line.len() >= 2
            && line
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"+-.".contains(&b))
            && line.as_bytes()[0].is_ascii_alphanumeric();
        ensure!(
            valid,
            "line {}: not a Debian package name: {line:?}",
            number + 1
        );
        packages.push(line.to_owned());
    }
    ensure!(!packages.is_empty(), "package list is empty");
    Ok(packages)
}

#[cfg(test)]
mod tests {

    #[test]
    fn explicit_entries_are_never_chosen_by_suite_or_transport() {
        let matrix = Matrix::load(&crate::images::vm_images_dir().join("kernels.toml")).unwrap();
        let chosen = |suite: &str, transports: &[Transport]| -> Vec<&str> {
            matrix
                .kernels
                .iter()
                .filter(|k| {
                    k.selected_for(
                        std::iter::once(suite),
                        transports,
                        &matrix.default_transports,
                    )
                })
                .map(|k| k.name.as_str())
                .collect()
        };
        assert_eq!(
            chosen("wire-fuzz", &[Transport::Siw]),
            ["linux-6.1-siw", "linux-6.12-siw", "linux-7.x-siw"]
        );
        assert!(!chosen("wire-fuzz", &[]).contains(&"linux-6.12-siw-close-race"));
        let race = matrix
            .kernels
            .iter()
            .find(|k| k.name == "linux-6.12-siw-close-race")
            .unwrap();
        assert!(race.explicit && race.runs_suite("wire-fuzz"));
    }
    use super::*;

    const SAMPLE: &str = r#"
guest_suite = "bookworm"
[modules]
required = ["rdma_rxe", "rpcrdma", "nfsd"]
optional = ["virtio_net"]
[[kernel]]
name = "linux-6.1"
suite = "bookworm"
meta_package = "linux-image-amd64"
layout = "image"
version_prefix = "6.1."
[[kernel]]
name = "linux-7.x"
suite = "sid"
meta_package = "linux-image-amd64"
layout = "split"
version_prefix = "7."
"#;

    #[test]
    fn parses_entries_and_layouts() {
        let matrix = Matrix::parse(SAMPLE).unwrap();
        assert_eq!(matrix.kernels.len(), 2);
        assert_eq!(matrix.kernels[0].layout, Some(Layout::Image));
        assert_eq!(matrix.kernels[1].layout, Some(Layout::Split));
        assert_eq!(matrix.kernels[1].suite, "sid");
        assert_eq!(matrix.modules.required, ["rdma_rxe", "rpcrdma", "nfsd"]);
        assert_eq!(matrix.mirror, None);
    }

    #[test]
    fn the_committed_matrix_parses_with_three_debian_kernels_an_old_6_1_siw_lanes_mutants_and_a_kasan_lane(
    ) {
        let path = crate::cache::workspace_root().join("vm-images/kernels.toml");
        let matrix = Matrix::load(&path).unwrap();
        let names: Vec<&str> = matrix.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "linux-6.1",
                "linux-6.12",
                "linux-7.x",
                "linux-6.1.176",
                "linux-6.1-siw",
                "linux-6.12-siw",
                "linux-7.x-siw",
                "linux-6.12-acked-evict",
                "linux-6.12-no-checksum",
                "linux-6.12-inprog-doit",
                "linux-6.12-acked-evict-siw",
                "linux-6.12-siw-close-race",
                "linux-6.12-siw-close-flush",
                "linux-6.12-kasan"
            ]
        );
        let named = |name: &str| matrix.kernels.iter().find(|k| k.name == name).unwrap();
        // The KASAN lane and the pinned 6.1.176 are wire fuzzing only (findings replays): the
        // default suites never build them.
        let kasan = named("linux-6.12-kasan");
        assert_eq!(kasan.fragments, ["kasan"]);
        let old = named("linux-6.1.176");
        assert_eq!(old.binary_version.as_deref(), Some("6.1.176-1"));
        for kernel in [kasan, old] {
            assert!(kernel.runs_suite("wire-fuzz"));
            for suite in ["smoke", "selftest", "drc", "kclient"] {
                assert!(!kernel.runs_suite(suite), "{} {suite}", kernel.name);
            }
        }
        // Each line's siw lane is built from that line's source package at the version its
        // binary entry tests (Debian's kernels do not ship siw), and runs every suite.
        for (line, binary_release) in [
            ("linux-6.1", "6.1.192"),
            ("linux-6.12", "6.12.118"),
            ("linux-7.x", "7.2.13"),
        ] {
            let siw = named(&format!("{line}-siw"));
            assert_eq!(siw.transport, Transport::Siw);
            assert!(
                matches!(siw.origin().unwrap(), KernelOrigin::Source { version, .. } if version.starts_with(binary_release))
            );
            assert!(
                siw.suites.is_empty() && siw.patches.is_empty(),
                "{}",
                siw.name
            );
            assert_eq!(siw.suite, named(line).suite);
        }
        assert_eq!(
            named("linux-6.12-acked-evict-siw").cmdline,
            named("linux-6.12-acked-evict").cmdline
        );
        assert!(matrix
            .kernels
            .iter()
            .filter(|k| k.transport == Transport::Rxe)
            .all(|k| !k.name.ends_with("-siw")));
        // Without --transport a run covers the matrix's default transports; --transport picks.
        let siw = named("linux-6.1-siw");
        let rxe = named("linux-6.1");
        let defaults = &matrix.default_transports;
        assert_eq!(
            siw.runs_over(&[], defaults),
            defaults.is_empty() || defaults.contains(&Transport::Siw)
        );
        assert!(siw.runs_over(&[Transport::Siw], defaults));
        assert!(!rxe.runs_over(&[Transport::Siw], defaults));
        assert!(rxe.runs_over(&[Transport::Rxe, Transport::Siw], defaults));
        assert!(siw.runs_over(&[], &[]) && rxe.runs_over(&[], &[]));
        // The three lines resolve from the pockets users install from.
        assert_eq!(matrix.kernels[0].pockets(), pockets_of("bookworm"));
        assert!(matrix.kernels[0]
            .pockets()
            .contains(&"bookworm-security".to_owned()));
        assert!(matrix
            .kernels
            .iter()
            .any(|k| k.layout == Some(Layout::Split)));
    }

    #[test]
    fn select_keeps_matrix_order_and_rejects_unknown() {
        let matrix = Matrix::parse(SAMPLE).unwrap();
        let all = matrix.select(&[]).unwrap();
        assert_eq!(all.len(), 2);
        let one = matrix.select(&["linux-7.x".to_owned()]).unwrap();
        assert_eq!(one[0].name, "linux-7.x");
        let err = matrix.select(&["linux-5.10".to_owned()]).unwrap_err();
        assert!(err.to_string().contains("linux-6.1, linux-7.x"), "{err}");
    }

    #[test]
    fn rejects_duplicates_unknown_fields_and_unsafe_names() {
        let duplicate = SAMPLE.replace("linux-7.x", "linux-6.1");
        assert!(Matrix::parse(&duplicate).is_err());
        let unknown_field = SAMPLE.replace("layout = \"split\"", "layout = \"split\"\nflavour = 1");
        assert!(Matrix::parse(&unknown_field).is_err());
        let bad_layout = SAMPLE.replace("layout = \"split\"", "layout = \"tarball\"");
        assert!(Matrix::parse(&bad_layout).is_err());
        let shell_word = SAMPLE.replace("name = \"linux-6.1\"", "name = \"x; rm -rf /\"");
        assert!(Matrix::parse(&shell_word).is_err());
        let empty =
            "guest_suite = \"bookworm\"\nkernel = []\n[modules]\nrequired=[]\noptional=[]\n";
        assert!(Matrix::parse(empty).is_err());
    }

    #[test]
    fn key_material_differs_per_entry() {
        let matrix = Matrix::parse(SAMPLE).unwrap();
        assert_ne!(
            matrix.kernels[0].key_material(),
            matrix.kernels[1].key_material()
        );
        assert!(matrix.kernels[0].key_material().contains("linux-6.1"));
    }

    #[test]
    fn package_list_skips_comments_and_validates_names() {
        let list =
            parse_package_list("# guest\nkmod\n\nnfs-common # NFS client\nlibstdc++6\n").unwrap();
        assert_eq!(list, ["kmod", "nfs-common", "libstdc++6"]);
        assert!(parse_package_list("Kmod\n").is_err());
        assert!(parse_package_list("kmod,rpcbind\n").is_err());
        assert!(parse_package_list("# nothing\n").is_err());
    }

    #[test]
    fn stable_suites_resolve_from_release_updates_and_security() {
        assert_eq!(
            pockets_of("bookworm"),
            ["bookworm", "bookworm-updates", "bookworm-security"]
        );
        assert_eq!(pockets_of("sid"), ["sid"]);
        let matrix = Matrix::parse(SAMPLE).unwrap();
        assert_eq!(matrix.kernels[0].pockets(), pockets_of("bookworm"));
        assert_eq!(matrix.kernels[1].pockets(), ["sid"]);
    }

    #[test]
    fn a_pinned_binary_version_is_checked_and_excludes_a_source_entry() {
        let pinned = format!(
            "{SAMPLE}\n[[kernel]]\nname = \"linux-6.1-old\"\nsuite = \"bookworm\"\n\
             meta_package = \"linux-image-amd64\"\nlayout = \"image\"\n\
             version_prefix = \"6.1.\"\nbinary_version = \"6.1.176-1\"\n"
        );
        let matrix = Matrix::parse(&pinned).unwrap();
        let old = matrix.kernels.last().unwrap();
        assert_eq!(old.binary_version.as_deref(), Some("6.1.176-1"));
        assert!(matches!(old.origin().unwrap(), KernelOrigin::Binary { .. }));
        let bad = pinned.replace("6.1.176-1", "6.1.176 1;rm");
        assert!(Matrix::parse(&bad).is_err());
    }
}
