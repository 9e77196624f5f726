//! A private apt configuration for fetching Debian kernel packages without touching the host's
//! apt state (its own sources, lists and cache under the image cache), and explicit checksum
//! verification of every downloaded `.deb` against the SHA256 in the signed index.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, ensure, Context, Result};

use crate::cache::sha256_file;
use crate::matrix::{KernelOrigin, KernelSpec, Layout};
use crate::process::run_logged;

/// The keyring that signs the Debian archive; `signed-by` makes apt verify InRelease with it.
pub const DEBIAN_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// Used when the host names no Debian mirror.
pub const FALLBACK_MIRROR: &str = "http://deb.debian.org/debian";
/// Used when the host names no security mirror: Debian's `-security` pockets are served from
/// their own archive, never from the main mirror's path.
pub const FALLBACK_SECURITY_MIRROR: &str = "http://deb.debian.org/debian-security";

/// Whether `pocket` is a security pocket (`bookworm-security`), served by the security archive.
pub fn is_security_pocket(pocket: &str) -> bool {
    pocket.ends_with("-security")
}

/// The first archive URI of the host's sources that is (`security`) or is not the security
/// archive: deb822 `URIs:` first, then one-line `deb` lines, else `fallback`.
fn archive_from_sources(
    deb822: Option<&str>,
    one_line: Option<&str>,
    security: bool,
    fallback: &str,
) -> String {
    let wanted = |uri: &&str| uri.contains("security") == security;
    let from_deb822 = deb822.and_then(|text| {
        text.lines()
            .filter_map(|line| line.trim().strip_prefix("URIs:"))
            .flat_map(str::split_whitespace)
            .find(wanted)
    });
    let from_one_line = || {
        one_line.and_then(|text| {
            text.lines()
                .map(str::split_whitespace)
                .filter_map(|mut words| match words.next() {
                    Some("deb") => words.find(|w| w.contains("://")),
                    _ => None,
                })
                .find(wanted)
        })
    };
    from_deb822
        .or_else(from_one_line)
        .unwrap_or(fallback)
        .trim_end_matches('/')
        .to_owned()
}

/// The host's Debian mirror: the first non-security `URIs:` in deb822 sources, else the first
/// `deb` line of a one-line sources file, else [`FALLBACK_MIRROR`].
pub fn mirror_from_sources(deb822: Option<&str>, one_line: Option<&str>) -> String {
    archive_from_sources(deb822, one_line, false, FALLBACK_MIRROR)
}

/// The host's security mirror: the first `URIs:` (deb822) or `deb` URI (one-line) naming
/// `security`, else [`FALLBACK_SECURITY_MIRROR`].
pub fn security_mirror_from_sources(deb822: Option<&str>, one_line: Option<&str>) -> String {
    archive_from_sources(deb822, one_line, true, FALLBACK_SECURITY_MIRROR)
}

fn host_sources() -> (Option<String>, Option<String>) {
    (
        fs::read_to_string("/etc/apt/sources.list.d/debian.sources").ok(),
        fs::read_to_string("/etc/apt/sources.list").ok(),
    )
}

/// The host's mirror, read from /etc/apt.
pub fn host_mirror() -> String {
    let (deb822, one_line) = host_sources();
    mirror_from_sources(deb822.as_deref(), one_line.as_deref())
}

/// The host's security mirror, read from /etc/apt.
pub fn host_security_mirror() -> String {
    let (deb822, one_line) = host_sources();
    security_mirror_from_sources(deb822.as_deref(), one_line.as_deref())
}

/// One `Package:` stanza of `apt-cache show`, fields by name.
pub fn parse_first_stanza(text: &str) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.trim().is_empty() {
            if !fields.is_empty() {
                break;
            }
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some(value) = current.as_ref().and_then(|key| fields.get_mut(key)) {
                let value: &mut String = value;
                value.push('\n');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            fields.insert(key.to_owned(), value.trim().to_owned());
            current = Some(key.to_owned());
        }
    }
    fields
}

/// From a `Depends:` value, the first package starting with `prefix` pinned with `(= version)`.
pub fn pinned_dependency(depends: &str, prefix: &str) -> Option<(String, String)> {
    depends
        .split(',')
        .flat_map(|alternatives| alternatives.split('|'))
        .find_map(|item| {
            let item = item.trim();
            let (name, rest) = item.split_once(' ').unwrap_or((item, ""));
            if !name.starts_with(prefix) {
                return None;
            }
            let version = rest
                .trim()
                .strip_prefix("(=")?
                .trim()
                .strip_suffix(')')?
                .trim();
            Some((name.to_owned(), version.to_owned()))
        })
}

/// A package pinned to one version, with the index's checksum.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PackageRef {
    pub name: String,
    pub version: String,
    /// Pool path from the index (`pool/main/l/linux-signed-amd64/...deb`).
    pub filename: String,
    pub sha256: String,
    pub size: u64,
}

impl PackageRef {
    /// Build from an `apt-cache show` stanza.
    pub fn from_stanza(fields: &BTreeMap<String, String>) -> Result<Self> {
        let get = |key: &str| {
            fields
                .get(key)
                .cloned()
                .with_context(|| format!("index stanza has no {key}: field"))
        };
        let sha256 = get("SHA256")?;
        ensure!(
            sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_hexdigit()),
            "bad SHA256 {sha256:?}"
        );
        Ok(PackageRef {
            name: get("Package")?,
            version: get("Version")?,
            filename: get("Filename")?,
            sha256: sha256.to_ascii_lowercase(),
            size: get("Size")?.parse().context("bad Size:")?,
        })
    }

    /// The `.deb` file name in the pool (no epoch), used as the local file name.
    pub fn deb_name(&self) -> &str {
        self.filename.rsplit('/').next().unwrap_or(&self.filename)
    }

    /// Where [`PrivateApt::download_verified`] puts this package in `debs`.
    pub fn deb_path(&self, debs: &Path) -> PathBuf {
        debs.join(self.deb_name())
    }
}

/// apt configured to use only files under `dir`.
#[derive(Debug, Clone)]
pub struct PrivateApt {
    dir: PathBuf,
}

/// Text of the private `apt.conf`: every state/cache/source path points inside `dir`; the dpkg
/// status is the host's, read-only (apt needs one; we never install).
pub fn apt_conf_text(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "Dir::Etc::sourcelist \"{d}/etc/sources.list\";\n\
         Dir::Etc::sourceparts \"{d}/etc/sources.list.d\";\n\
         Dir::Etc::preferencesparts \"{d}/etc/preferences.d\";\n\
         Dir::State::Lists \"{d}/lists\";\n\
         Dir::Cache \"{d}/cache\";\n\
         Dir::State::status \"/var/lib/dpkg/status\";\n\
         APT::Architecture \"amd64\";\n\
         Acquire::Languages \"none\";\n"
    )
}

/// The two archives a private apt reads: the main mirror and the security archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirrors {
    pub main: String,
    pub security: String,
}

impl Mirrors {
    /// The archive serving `pocket`.
    pub fn for_pocket(&self, pocket: &str) -> &str {
        if is_security_pocket(pocket) {
            &self.security
        } else {
            &self.main
        }
    }
}

/// One `deb [signed-by=...] mirror pocket main` line per pocket, each from its archive.
pub fn sources_list_text(mirrors: &Mirrors, pockets: &[String]) -> String {
    pockets
        .iter()
        .map(|pocket| {
            let mirror = mirrors.for_pocket(pocket);
            format!("deb [signed-by={DEBIAN_KEYRING}] {mirror} {pocket} main\n")
        })
        .collect()
}

/// The newest of `(pocket, package, version)` candidates by Debian version order (policy
/// §5.6.12, [`crate::changelog::compare_debian_versions`]: what apt would install); the first
/// listed wins a tie (the release pocket before its `-updates` and `-security` copies).
pub fn newest_candidate(
    candidates: Vec<(String, String, String)>,
) -> Option<(String, String, String)> {
    let mut newest: Option<(String, String, String)> = None;
    for candidate in candidates {
        let replace = newest.as_ref().is_none_or(|(_, _, version)| {
            crate::changelog::compare_debian_versions(&candidate.2, version).is_gt()
        });
        if replace {
            newest = Some(candidate);
        }
    }
    newest
}

/// Whether apt-cache's complaint means "the configured pockets do not list it" (`E: No packages
/// found`, `E: Release 'x' for 'p' was not found`, `E: Version 'v' for 'p' was not found`).
fn apt_says_not_listed(stderr: &str) -> bool {
    stderr.contains("No packages found") || stderr.contains("was not found")
}

/// A matrix entry resolved to packages: the newest of its pockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKernel {
    /// The packages holding vmlinuz and the modules.
    pub packages: Vec<PackageRef>,
    /// The kernel's Debian version (`6.1.192-3`): the pinned linux-image package's.
    pub version: String,
    /// The pocket it came from (`bookworm-security`).
    pub pocket: String,
}

impl PrivateApt {
    /// Create (or refresh the configuration of) the private apt tree under `dir`.
    pub fn new(dir: &Path, mirrors: &Mirrors, pockets: &[String]) -> Result<Self> {
        for sub in [
            "lists/partial",
            "cache/archives/partial",
            "etc/sources.list.d",
            "etc/preferences.d",
        ] {
            fs::create_dir_all(dir.join(sub))?;
        }
        let sources = sources_list_text(mirrors, pockets);
        let sources_path = dir.join("etc/sources.list");
        if fs::read_to_string(&sources_path).ok().as_deref() != Some(sources.as_str()) {
            fs::write(&sources_path, sources)?;
            // New sources: the lists on disk and the memoised answers no longer match.
            let _ = fs::remove_file(dir.join("updated"));
            let _ = fs::remove_dir_all(dir.join("show-memo"));
        }
        fs::write(dir.join("apt.conf"), apt_conf_text(dir))?;
        Ok(PrivateApt {
            dir: dir.to_owned(),
        })
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command
            .env("APT_CONFIG", self.dir.join("apt.conf"))
            .env("LC_ALL", "C");
        command
    }

    /// `apt-get update` unless the lists are younger than `max_age`. Returns true if it ran.
    pub fn update_if_stale(&self, max_age: Duration) -> Result<bool> {
        let stamp = self.dir.join("updated");
        let fresh = fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age < max_age);
        if fresh {
            return Ok(false);
        }
        let mut update = self.command("apt-get");
        update.args(["-q", "update"]);
        run_logged(
            "apt-get update",
            update,
            &self.dir.join("update.log"),
            Duration::from_secs(300),
        )?;
        // New lists: forget every memoised `apt-cache show` answer.
        let _ = fs::remove_dir_all(self.dir.join("show-memo"));
        fs::write(stamp, "")?;
        Ok(true)
    }

    /// The first index stanza for `spec` (`name/suite` or `name=version`). Answers are memoised
    /// on disk until the next `apt-get update` (apt-cache takes ~2 s per call on three suites).
    pub fn show(&self, spec: &str) -> Result<BTreeMap<String, String>> {
        self.show_if_listed(spec)?
            .with_context(|| format!("apt-cache show {spec}: not in the private apt's pockets"))
    }

    /// Like [`PrivateApt::show`], but a package or version that the configured pockets do not
    /// list is `None` (memoised too: a pocket without the kernel is asked once per update),
    /// while any other apt failure stays an error.
    pub fn show_if_listed(&self, spec: &str) -> Result<Option<BTreeMap<String, String>>> {
        let memo_dir = self.dir.join("show-memo");
        let memo = memo_dir.join(spec.replace('/', "@"));
        let text = match fs::read_to_string(&memo) {
            Ok(text) => text,
            Err(_) => {
                let mut command = self.command("apt-cache");
                command.args(["show", spec]);
                let output = crate::process::output_with_timeout(
                    "apt-cache show",
                    command,
                    std::time::Duration::from_secs(120),
                )
                .context("running apt-cache show")?;
                let stderr = String::from_utf8_lossy(&output.stderr);
                let text = if output.status.success() {
                    String::from_utf8_lossy(&output.stdout).into_owned()
                } else if apt_says_not_listed(&stderr) {
                    String::new()
                } else {
                    bail!("apt-cache show {spec} failed: {}", stderr.trim());
                };
                fs::create_dir_all(&memo_dir)?;
                fs::write(&memo, &text)?;
                text
            }
        };
        let fields = parse_first_stanza(&text);
        Ok((!fields.is_empty()).then_some(fields))
    }

    /// A package pinned as `name=version`.
    pub fn package(&self, name: &str, version: &str) -> Result<PackageRef> {
        PackageRef::from_stanza(&self.show(&format!("{name}={version}"))?)
    }

    /// The newest version of `name` in `suite`.
    pub fn package_in_suite(&self, name: &str, suite: &str) -> Result<PackageRef> {
        PackageRef::from_stanza(&self.show(&format!("{name}/{suite}"))?)
    }

    /// Resolve a matrix entry to the packages holding its vmlinuz and modules: the newest
    /// version its meta-package pins in any of the entry's pockets (what `apt upgrade` on a
    /// system with all of them gives a user), or the entry's pinned `binary_version`.
    pub fn resolve_kernel(&self, spec: &KernelSpec) -> Result<ResolvedKernel> {
        let KernelOrigin::Binary {
            meta_package,
            layout,
        } = spec.origin()?
        else {
            bail!("{}: a source entry has no binary packages", spec.name);
        };
        let mut candidates = Vec::new();
        for pocket in spec.pockets() {
            let query = match &spec.binary_version {
                Some(version) => format!("{meta_package}={version}"),
                None => format!("{meta_package}/{pocket}"),
            };
            if let Some(meta) = self.show_if_listed(&query)? {
                let depends = meta.get("Depends").cloned().unwrap_or_default();
                let (image, version) =
                    pinned_dependency(&depends, "linux-image-").with_context(|| {
                        format!(
                            "{}: {meta_package} in {pocket} has no pinned linux-image-* dependency",
                            spec.name
                        )
                    })?;
                candidates.push((pocket.clone(), image, version));
            }
            if spec.binary_version.is_some() {
                // A pinned version is looked up across every configured pocket at once.
                break;
            }
        }
        let (pocket, image, version) = newest_candidate(candidates).with_context(|| {
            format!(
                "{}: {meta_package}{} is in none of {}",
                spec.name,
                spec.binary_version
                    .as_ref()
                    .map(|v| format!(" {v}"))
                    .unwrap_or_default(),
                spec.pockets().join(", ")
            )
        })?;
        ensure!(
            version.starts_with(&spec.version_prefix),
            "{}: {meta_package} in {pocket} is now {version}, the matrix expects {}*",
            spec.name,
            spec.version_prefix
        );
        let pocket = if spec.binary_version.is_some() {
            self.pocket_of(&image, &version, &spec.pockets())?
                .unwrap_or_else(|| format!("pinned {version}"))
        } else {
            pocket
        };
        let image_stanza = self.show(&format!("{image}={version}"))?;
        let image_depends = image_stanza.get("Depends").cloned().unwrap_or_default();
        let packages = match layout {
            Layout::Image => vec![PackageRef::from_stanza(&image_stanza)?],
            Layout::Split => {
                let mut packages = Vec::new();
                for prefix in ["linux-binary-", "linux-modules-"] {
                    let (name, version) =
                        pinned_dependency(&image_depends, prefix).with_context(|| {
                            format!("{}: {image} does not depend on {prefix}*", spec.name)
                        })?;
                    packages.push(self.package(&name, &version)?);
                }
                packages
            }
        };
        Ok(ResolvedKernel {
            packages,
            version,
            pocket,
        })
    }

    /// The first of `pockets` whose newest `name` is `version` (where a pinned kernel is
    /// still published), if any.
    fn pocket_of(&self, name: &str, version: &str, pockets: &[String]) -> Result<Option<String>> {
        for pocket in pockets {
            if let Some(stanza) = self.show_if_listed(&format!("{name}/{pocket}"))? {
                if stanza.get("Version").map(String::as_str) == Some(version) {
                    return Ok(Some(pocket.clone()));
                }
            }
        }
        Ok(None)
    }

    /// Download `package` into `debs` (reusing a verified copy) and check its SHA256 against the
    /// index. Returns the local path.
    pub fn download_verified(&self, package: &PackageRef, debs: &Path) -> Result<PathBuf> {
        fs::create_dir_all(debs)?;
        let target = package.deb_path(debs);
        if target.is_file() && sha256_file(&target)? == package.sha256 {
            return Ok(target);
        }
        // apt-get download names files with an escaped epoch; use an empty scratch dir and
        // take the one file it produced.
        let scratch = debs.join(format!(".download-{}", package.name));
        if scratch.exists() {
            fs::remove_dir_all(&scratch)?;
        }
        fs::create_dir_all(&scratch)?;
        let mut download = self.command("apt-get");
        download
            .args(["-q", "download"])
            .arg(format!("{}={}", package.name, package.version))
            .current_dir(&scratch);
        run_logged(
            &format!("apt-get download {}", package.name),
            download,
            &debs.join("download.log"),
            Duration::from_secs(600),
        )?;
        let fetched: Vec<PathBuf> = fs::read_dir(&scratch)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "deb"))
            .collect();
        let [file] = fetched.as_slice() else {
            bail!(
                "apt-get download {} produced {} files",
                package.name,
                fetched.len()
            );
        };
        let actual = sha256_file(file)?;
        // Explicit check against the signed index (apt verified it too; this makes it visible).
        ensure!(
            actual == package.sha256,
            "{}: SHA256 mismatch: index says {}, file has {actual}",
            package.name,
            package.sha256
        );
        fs::rename(file, &target)?;
        fs::remove_dir_all(&scratch)?;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEB822: &str = "Types: deb\n# http://snapshot.debian.org/...\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\n";

    #[test]
    fn mirror_prefers_deb822_then_one_line_then_fallback() {
        assert_eq!(
            mirror_from_sources(Some(DEB822), None),
            "http://deb.debian.org/debian"
        );
        let only_security = "URIs: http://security.debian.org/debian-security\n";
        let one_line = "deb [arch=amd64] http://mirror.example/debian/ bookworm main\n";
        assert_eq!(
            mirror_from_sources(Some(only_security), Some(one_line)),
            "http://mirror.example/debian"
        );
        assert_eq!(mirror_from_sources(None, None), FALLBACK_MIRROR);
    }

    const STANZA: &str = "Package: linux-image-7.2.13+deb14-amd64\nSource: linux-signed-amd64 (7.2.13-1)\nVersion: 7.2.13-1\nDepends: dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool, linux-base-7.2.13+deb14-amd64 (= 7.2.13-1), linux-binary-7.2.13+deb14-amd64 (= 7.2.13-1), linux-modules-7.2.13+deb14-amd64 (= 7.2.13-1)\nDescription: Linux 7.2\n continued line\nFilename: pool/main/l/linux-signed-amd64/linux-image-7.2.13+deb14-amd64_7.2.13-1_amd64.deb\nSize: 1892\nSHA256: 28dc3dd3c1446246ced2f9e4bf4e93475aae3815d03eaedebe20b168cb944b10\n\nPackage: second-stanza\n";

    #[test]
    fn first_stanza_fields_and_continuations() {
        let fields = parse_first_stanza(STANZA);
        assert_eq!(fields["Version"], "7.2.13-1");
        assert_eq!(fields["Description"], "Linux 7.2\ncontinued line");
        assert!(!fields.values().any(|v| v.contains("second-stanza")));
    }

    #[test]
    fn pinned_dependencies_for_split_layout() {
        let fields = parse_first_stanza(STANZA);
        let depends = &fields["Depends"];
        assert_eq!(
            pinned_dependency(depends, "linux-binary-"),
            Some(("linux-binary-7.2.13+deb14-amd64".into(), "7.2.13-1".into()))
        );
        assert_eq!(
            pinned_dependency(depends, "linux-modules-"),
            Some(("linux-modules-7.2.13+deb14-amd64".into(), "7.2.13-1".into()))
        );
        // initramfs-tools has a (>= ...) constraint, not a pin.
        assert_eq!(pinned_dependency(depends, "initramfs-tools"), None);
        assert_eq!(
            pinned_dependency("linux-image-6.1.0-50-amd64 (= 6.1.176-1)", "linux-image-"),
            Some(("linux-image-6.1.0-50-amd64".into(), "6.1.176-1".into()))
        );
    }

    #[test]
    fn package_ref_from_stanza_checks_the_hash_field() {
        let package = PackageRef::from_stanza(&parse_first_stanza(STANZA)).unwrap();
        assert_eq!(package.size, 1892);
        assert_eq!(
            package.deb_name(),
            "linux-image-7.2.13+deb14-amd64_7.2.13-1_amd64.deb"
        );
        let broken = STANZA.replace("SHA256: 28dc", "SHA256: zzdc");
        assert!(PackageRef::from_stanza(&parse_first_stanza(&broken)).is_err());
        let missing = STANZA.replace("SHA256:", "MD5sum:");
        assert!(PackageRef::from_stanza(&parse_first_stanza(&missing)).is_err());
    }

    #[test]
    fn private_config_points_only_inside_its_dir() {
        let dir = tempfile::tempdir().unwrap();
        let mirrors = Mirrors {
            main: "http://m/debian".into(),
            security: "http://m/debian-security".into(),
        };
        PrivateApt::new(
            dir.path(),
            &mirrors,
            &["bookworm".into(), "bookworm-security".into(), "sid".into()],
        )
        .unwrap();
        let conf = fs::read_to_string(dir.path().join("apt.conf")).unwrap();
        for line in conf
            .lines()
            .filter(|l| l.starts_with("Dir::") && !l.contains("status"))
        {
            assert!(line.contains(&dir.path().display().to_string()), "{line}");
        }
        let sources = fs::read_to_string(dir.path().join("etc/sources.list")).unwrap();
        assert_eq!(
            sources,
            format!(
                "deb [signed-by={DEBIAN_KEYRING}] http://m/debian bookworm main\n\
                 deb [signed-by={DEBIAN_KEYRING}] http://m/debian-security bookworm-security main\n\
                 deb [signed-by={DEBIAN_KEYRING}] http://m/debian sid main\n"
            )
        );
    }

    #[test]
    fn security_mirror_comes_from_the_sources_naming_security() {
        assert_eq!(
            security_mirror_from_sources(Some(DEB822), None),
            "http://deb.debian.org/debian-security"
        );
        let one_line = "deb http://ftp.de.debian.org/debian bookworm main\n\
                        deb http://security.debian.org/debian-security/ bookworm-security main\n";
        assert_eq!(
            security_mirror_from_sources(None, Some(one_line)),
            "http://security.debian.org/debian-security"
        );
        assert_eq!(
            security_mirror_from_sources(None, Some("deb http://m/debian bookworm main\n")),
            FALLBACK_SECURITY_MIRROR
        );
        let mirrors = Mirrors {
            main: "http://m/debian".into(),
            security: "http://s/debian-security".into(),
        };
        assert_eq!(
            mirrors.for_pocket("bookworm-security"),
            "http://s/debian-security"
        );
        assert_eq!(mirrors.for_pocket("bookworm-updates"), "http://m/debian");
    }

    #[test]
    fn the_newest_pocket_wins_by_debian_version_order() {
        let candidate = |pocket: &str, version: &str| {
            (
                pocket.to_owned(),
                format!("linux-image-{pocket}"),
                version.to_owned(),
            )
        };
        // What bookworm offered on 2026-12-03: 6.1.176-1 in the release, 6.1.192-3 in security.
        let newest = newest_candidate(vec![
            candidate("bookworm", "6.1.176-1"),
            candidate("bookworm-security", "6.1.192-3"),
        ])
        .unwrap();
        assert_eq!(
            (newest.0.as_str(), newest.2.as_str()),
            ("bookworm-security", "6.1.192-3")
        );
        // Debian order, not string order: -10 after -3, ~ before the release it precedes.
        let newest = newest_candidate(vec![
            candidate("a", "6.1.192-10"),
            candidate("b", "6.1.192-3"),
            candidate("c", "6.1.192-10~deb12u1"),
        ])
        .unwrap();
        assert_eq!(newest.0, "a");
        // A tie keeps the first listed pocket.
        let newest = newest_candidate(vec![
            candidate("trixie", "6.12.118-1"),
            candidate("trixie-security", "6.12.118-1"),
        ])
        .unwrap();
        assert_eq!(newest.0, "trixie");
        assert_eq!(newest_candidate(Vec::new()), None);
    }

    #[test]
    fn apt_not_listed_is_told_from_other_failures() {
        assert!(apt_says_not_listed(
            "E: Release 'bookworm-updates' for 'linux-image-amd64' was not found"
        ));
        assert!(apt_says_not_listed("E: No packages found"));
        assert!(!apt_says_not_listed(
            "E: Could not open lock file /x/lists/lock - open (13: Permission denied)"
        ));
    }
}
