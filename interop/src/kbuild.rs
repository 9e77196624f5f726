//! Kernels built from source: Debian's `linux-source-*` package or a developer's tree, an ordered
//! patch series, and the rig's config fragments merged with the kernel's own `merge_config.sh`,
//! built out of tree and cached by identity (source, patches, fragments, compiler).
//!
//! Architecture Invariant: a second build with the same identity builds nothing (cache hit), and a
//! build that fails leaves no entry that could be taken for a finished one.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::cache::{workspace_root, Entry, KeyBuilder};
use crate::process::{run_logged, run_logged_with_heartbeat, tail};
use crate::progress::{Phase, Progress};

/// Where a source build's tree comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceTree {
    /// Debian's `linux-source-<v>` package (the .deb holds `usr/src/linux-source-<v>.tar.xz`).
    /// `sha256` is the signed index's checksum of `deb`, which the download verified: the key is
    /// taken from it, so a cached build needs neither the .deb nor a pass over its 146 MiB.
    DebianPackage {
        deb: PathBuf,
        version: String,
        sha256: String,
    },
    /// A local kernel tree, e.g. a developer's git checkout.
    Local(PathBuf),
}

/// What to build.
#[derive(Debug, Clone)]
pub struct SourceBuild {
    /// Name in progress lines and logs.
    pub name: String,
    pub tree: SourceTree,
    /// Patch files in the order they are applied.
    pub patches: Vec<PathBuf>,
    /// Config fragments in merge order (`rig.config` first).
    pub fragments: Vec<PathBuf>,
}

/// A finished build.
#[derive(Debug, Clone)]
pub struct BuiltKernel {
    pub bzimage: PathBuf,
    /// `lib/modules/<release>` from `make modules_install` (modules.builtin, modules.dep).
    pub modules_dir: PathBuf,
    pub release: String,
    pub key: String,
    /// The build log, kept with the cache entry.
    pub log: PathBuf,
    pub took: Option<Duration>,
}

/// The committed fragments directory.
pub fn fragments_dir() -> PathBuf {
    workspace_root().join("vm-images/kernel-config")
}

/// The committed patch series directory.
pub fn patches_dir() -> PathBuf {
    workspace_root().join("fixtures/kernel-patches")
}

/// A config fragment by name (`rig`, `kasan`, `debug`) or by path.
pub fn fragment_path(name_or_path: &str) -> Result<PathBuf> {
    let named = fragments_dir().join(format!("{name_or_path}.config"));
    let path = if named.is_file() {
        named.clone()
    } else {
        PathBuf::from(name_or_path)
    };
    ensure!(
        path.is_file(),
        "config fragment {name_or_path:?}: neither {} nor a file",
        named.display()
    );
    Ok(path)
}

/// The patch files of several series ([`series_patches`] of each), in the order given.
pub fn all_series_patches(names: &[String]) -> Result<Vec<PathBuf>> {
    Ok(names
        .iter()
        .map(|series| series_patches(series))
        .collect::<Result<Vec<_>>>()?
        .concat())
}

/// The patches of a series: a directory under `fixtures/kernel-patches` (by name) or any
/// directory (by path), its `*.patch` files in name order; or a single `.patch` file.
pub fn series_patches(name_or_path: &str) -> Result<Vec<PathBuf>> {
    let named = patches_dir().join(name_or_path);
    let path = if named.is_dir() {
        named.clone()
    } else {
        PathBuf::from(name_or_path)
    };
    if path.is_file() {
        return Ok(vec![path]);
    }
    ensure!(
        path.is_dir(),
        "patch series {name_or_path:?}: neither {} nor a file or directory",
        named.display()
    );
    let mut patches: Vec<PathBuf> = fs::read_dir(&path)
        .with_context(|| format!("reading {}", path.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "patch"))
        .collect();
    patches.sort();
    ensure!(
        !patches.is_empty(),
        "patch series {}: no *.patch files",
        path.display()
    );
    Ok(patches)
}

/// The `CONFIG_*` settings a fragment demands: `CONFIG_X=v` and `# CONFIG_X is not set`.
pub fn fragment_settings(text: &str) -> Vec<(String, Option<String>)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("# ") {
                let symbol = rest.strip_suffix(" is not set")?;
                symbol
                    .starts_with("CONFIG_")
                    .then(|| (symbol.to_owned(), None))
            } else if line.starts_with("CONFIG_") {
                let (symbol, value) = line.split_once('=')?;
                Some((symbol.to_owned(), Some(value.to_owned())))
            } else {
                None
            }
        })
        .collect()
}

/// The settings of `fragments` that the final `.config` does not hold (a symbol that
/// `olddefconfig` dropped because a dependency is missing, or a typo).
pub fn unmet_settings(fragments: &[String], config: &str) -> Vec<String> {
    let mut unmet = Vec::new();
    for fragment in fragments {
        for (symbol, value) in fragment_settings(fragment) {
            let held = match &value {
                Some(value) => config
                    .lines()
                    .any(|l| l.split_once('=') == Some((symbol.as_str(), value.as_str()))),
                // "not set" holds when the symbol is absent or explicitly unset.
                None => !config
                    .lines()
                    .any(|l| l.split_once('=').is_some_and(|(s, _)| s == symbol)),
            };
            if !held {
                unmet.push(match value {
                    Some(value) => format!("{symbol}={value}"),
                    None => format!("{symbol} unset"),
                });
            }
        }
    }
    unmet.sort();
    unmet.dedup();
    unmet
}

/// Most Kconfig files read when listing a tree's symbols (Linux 7.2 has about 1,900).
const MAX_KCONFIG_FILES: usize = 20_000;

/// The `CONFIG_` symbols a kernel tree's Kconfig files define (`config X`, `menuconfig X`).
pub fn kconfig_symbols(src: &Path) -> std::collections::HashSet<String> {
    let mut symbols = std::collections::HashSet::new();
    let mut dirs = vec![src.to_path_buf()];
    let mut files = 0;
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file()
                && entry.file_name().to_string_lossy().starts_with("Kconfig")
                && files < MAX_KCONFIG_FILES
            {
                files += 1;
                if let Ok(text) = fs::read_to_string(&path) {
                    symbols.extend(defined_symbols(&text));
                }
            }
        }
    }
    symbols
}

/// The symbols one Kconfig text defines, as `CONFIG_<name>`.
pub fn defined_symbols(kconfig: &str) -> Vec<String> {
    kconfig
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (Some("config" | "menuconfig"), Some(name)) => Some(format!("CONFIG_{name}")),
                _ => None,
            }
        })
        .collect()
}

/// Unmet settings ([`unmet_settings`]) split into those whose symbol the tree does not define
/// at all (a newer tree that removed it: 7.2 builds NFSv4.1 into NFS_V4 and has no
/// CONFIG_NFS_V4_1) and those it defines but dropped (a missing dependency, a failure).
pub fn split_unmet(
    unmet: Vec<String>,
    defined: &std::collections::HashSet<String>,
) -> (Vec<String>, Vec<String>) {
    unmet.into_iter().partition(|setting| {
        let symbol = setting.split(['=', ' ']).next().unwrap_or(setting.as_str());
        !defined.contains(symbol)
    })
}

/// Why `patch` refused a file: the `patching file` lines and every failed or rejected hunk.
pub fn patch_failure_summary(output: &str) -> String {
    let mut file = "";
    let mut lines = Vec::new();
    for line in output.lines() {
        if let Some(name) = line.strip_prefix("patching file ") {
            file = name.trim_matches(['\'', '"']);
        } else if line.contains("FAILED")
            || line.contains("malformed")
            || line.contains("Reversed (or previously applied)")
            || line.contains("can't find file")
            || line.contains("Only garbage")
        {
            lines.push(if file.is_empty() {
                line.trim().to_owned()
            } else {
                format!("{file}: {}", line.trim())
            });
        }
    }
    if lines.is_empty() {
        output.lines().last().unwrap_or("").trim().to_owned()
    } else {
        lines.join("; ")
    }
}

/// The first line of `gcc --version` (part of the key: another compiler is another kernel).
pub fn compiler_identity() -> Result<String> {
    let mut command = Command::new("gcc");
    command.arg("--version");
    let output = crate::process::output_with_timeout("gcc --version", command, SHORT_COMMAND)
        .context("running gcc --version")?;
    ensure!(output.status.success(), "gcc --version failed");
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned())
}

fn git(tree: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let mut command = Command::new("git");
    command.arg("-C").arg(tree).args(args);
    let output = crate::process::output_with_timeout("git", command, SHORT_COMMAND).ok()?;
    output.status.success().then_some(output.stdout)
}

/// Output that reached the capture's cap was cut: hashing it would miss changes past the cut.
fn whole(output: Vec<u8>, what: &str) -> Result<Vec<u8>> {
    ensure!(
        output.len() < crate::process::MAX_CAPTURED_OUTPUT,
        "{what}: more than {} bytes, too large to identify the tree by (build out of tree, or \
         commit the changes)",
        crate::process::MAX_CAPTURED_OUTPUT
    );
    Ok(output)
}

/// The HEAD commit of a git tree (`None` for a tree that is not a git checkout).
pub fn tree_head(tree: &Path) -> Option<String> {
    let head = git(tree, &["rev-parse", "HEAD"])?;
    let head = String::from_utf8_lossy(&head).trim().to_string();
    (!head.is_empty()).then_some(head)
}

/// A local tree's identity: HEAD plus the hash of its uncommitted diff and untracked file list
/// for a git checkout; else the paths, sizes and modification times of every file.
fn tree_identity(tree: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    if let Some(head) = git(tree, &["rev-parse", "HEAD"]) {
        let diff = whole(
            git(tree, &["diff", "HEAD"]).unwrap_or_default(),
            "git diff HEAD",
        )?;
        let untracked = whole(
            git(tree, &["ls-files", "--others", "--exclude-standard"]).unwrap_or_default(),
            "git ls-files --others",
        )?;
        let mut hasher = Sha256::new();
        hasher.update(&diff);
        hasher.update(&untracked);
        return Ok(format!(
            "git {} diff {}",
            String::from_utf8_lossy(&head).trim(),
            crate::cache::hex(&hasher.finalize())
        ));
    }
    let mut command = Command::new("find");
    command.arg(tree).args([
        "-type",
        "f",
        "-not",
        "-path",
        "*/.git/*",
        "-printf",
        "%P %s %T@\\n",
    ]);
    let listing = crate::process::output_with_timeout("find", command, LONG_COMMAND)
        .context("listing the kernel tree")?;
    ensure!(listing.status.success(), "find {} failed", tree.display());
    let listing = whole(listing.stdout, "the tree's file list")?;
    let mut lines: Vec<&[u8]> = listing.split(|b| *b == b'\n').collect();
    lines.sort_unstable();
    let mut hasher = Sha256::new();
    for line in lines {
        hasher.update(line);
        hasher.update(b"\n");
    }
    Ok(format!("files {}", crate::cache::hex(&hasher.finalize())))
}

/// The last make target named in the log (`CC fs/nfsd/nfscache.o` → that line), for heartbeats.
pub fn last_make_target(log_tail: &str) -> String {
    log_tail
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.len() <= 8 && w.chars().all(|c| c.is_ascii_uppercase()))
        })
        .unwrap_or("")
        .chars()
        .take(100)
        .collect()
}

/// Longest time one kernel build may take (a cold minimal build is ~10 min on 2 cores).
const BUILD_TIMEOUT: Duration = Duration::from_secs(3 * 3600);
/// How often a running build reports where it is.
const HEARTBEAT: Duration = Duration::from_secs(30);
/// A quick helper command (`gcc --version`, `git rev-parse`, `make kernelrelease`, one `patch`).
const SHORT_COMMAND: Duration = Duration::from_secs(120);
/// Listing a whole kernel tree (`find`, ~90k files; cold caches on a slow disk).
const LONG_COMMAND: Duration = Duration::from_secs(600);

impl SourceBuild {
    /// The cache key of this build.
    pub fn key(&self) -> Result<String> {
        let mut key = KeyBuilder::new("kernel-build");
        match &self.tree {
            SourceTree::DebianPackage {
                version, sha256, ..
            } => {
                key.add("package-version", version.as_bytes())
                    .add("package-sha256", sha256.as_bytes());
            }
            SourceTree::Local(tree) => {
                key.add("tree", tree_identity(tree)?.as_bytes());
            }
        }
        for patch in &self.patches {
            key.add_file(patch)?;
        }
        for fragment in &self.fragments {
            key.add_file(fragment)?;
        }
        key.add("compiler", compiler_identity()?.as_bytes());
        Ok(key.finish())
    }

    /// Whether a finished build with this key is in `cache` (then [`SourceBuild::build`] reads
    /// nothing of the tree).
    pub fn is_cached(&self, cache: &Path) -> Result<bool> {
        Ok(Entry::new(cache, "kernel-builds", &self.name, &self.key()?).is_complete())
    }

    /// Build, or take the cached build with the same key.
    pub fn build(&self, cache: &Path, progress: &Progress) -> Result<BuiltKernel> {
        let key = self.key()?;
        let entry = Entry::new(cache, "kernel-builds", &self.name, &key);
        let log = entry.path("build.log");
        if entry.is_complete() {
            let release = fs::read_to_string(entry.path("release"))?.trim().to_owned();
            progress.done(
                Phase::KernelBuild,
                &self.name,
                &format!("cache hit {key} release {release} (nothing rebuilt)"),
                None,
            );
            return Ok(BuiltKernel {
                bzimage: entry.path("bzImage"),
                modules_dir: entry.path("install/lib/modules").join(&release),
                release,
                key,
                log,
                took: None,
            });
        }
        let started = Instant::now();
        entry.reset()?;
        progress.start(
            Phase::KernelBuild,
            &self.name,
            &format!("building {key} (log {})", log.display()),
        );
        let src = match &self.tree {
            SourceTree::DebianPackage { deb, .. } => {
                let src = entry.path("src");
                self.unpack_package(deb, &src, &entry, &log)?;
                src
            }
            SourceTree::Local(tree) if self.patches.is_empty() => tree.clone(),
            SourceTree::Local(tree) => {
                // Patches never touch the developer's tree: work on a copy without .git.
                let src = entry.path("src");
                fs::create_dir_all(&src)?;
                let copy = format!(
                    "tar -C '{}' --exclude=.git -cf - . | tar -C '{}' -xf -",
                    tree.display(),
                    src.display()
                );
                let mut command = Command::new("sh");
                command.args(["-c", &copy]);
                run_logged("copy kernel tree", command, &log, Duration::from_secs(1800))?;
                src
            }
        };
        self.apply_patches(&src, &log)?;
        let obj = entry.path("obj");
        fs::create_dir_all(&obj)?;
        let compiler = Compiler::for_entry(cache, &entry.dir);
        self.configure(&src, &obj, &compiler, &log, progress)?;
        compiler.zero_stats();
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut make = make_command(&src, &obj, &compiler);
        make.arg(format!("-j{jobs}")).args(["bzImage", "modules"]);
        let name = self.name.clone();
        run_logged_with_heartbeat("make", make, &log, BUILD_TIMEOUT, HEARTBEAT, |elapsed| {
            progress.start(
                Phase::KernelBuild,
                &name,
                &format!(
                    "make -j{jobs} running {:.0}s, last: {}",
                    elapsed.as_secs_f64(),
                    last_make_target(&tail(&log, 5))
                ),
            );
        })?;
        let ccache = compiler.stats();
        let mut kernelrelease = make_command(&src, &obj, &compiler);
        kernelrelease.args(["-s", "kernelrelease"]);
        let release = String::from_utf8(
            crate::process::output_with_timeout("make kernelrelease", kernelrelease, SHORT_COMMAND)
                .context("make kernelrelease")?
                .stdout,
        )?
        .trim()
        .to_owned();
        ensure!(!release.is_empty(), "make kernelrelease printed nothing");
        let install = entry.path("install");
        let mut modules_install = make_command(&src, &obj, &compiler);
        modules_install
            .arg("modules_install")
            .arg(format!("INSTALL_MOD_PATH={}", install.display()))
            .arg("INSTALL_MOD_STRIP=1");
        run_logged(
            "make modules_install",
            modules_install,
            &log,
            Duration::from_secs(900),
        )?;
        fs::copy(obj.join("arch/x86/boot/bzImage"), entry.path("bzImage"))
            .context("copying bzImage")?;
        fs::copy(obj.join(".config"), entry.path("config"))?;
        fs::write(entry.path("release"), &release)?;
        // The objects are ~1 GiB; the finished kernel and modules are all the runs need.
        fs::remove_dir_all(&obj)?;
        if matches!(self.tree, SourceTree::DebianPackage { .. }) || !self.patches.is_empty() {
            fs::remove_dir_all(&src)?;
        }
        let took = started.elapsed();
        entry.mark_complete(&format!(
            "{} {release} built in {:.0}s",
            self.name,
            took.as_secs_f64()
        ))?;
        progress.done(
            Phase::KernelBuild,
            &self.name,
            &format!(
                "built {key} release {release} with -j{jobs}{}",
                ccache.map_or_else(
                    || " (no ccache)".to_owned(),
                    |(hits, misses)| format!(", ccache {hits} hits {misses} misses")
                )
            ),
            Some(took),
        );
        Ok(BuiltKernel {
            bzimage: entry.path("bzImage"),
            modules_dir: install.join("lib/modules").join(&release),
            release,
            key,
            log,
            took: Some(took),
        })
    }

    fn unpack_package(&self, deb: &Path, src: &Path, entry: &Entry, log: &Path) -> Result<()> {
        let extract = entry.path("extract");
        let mut dpkg = Command::new("dpkg-deb");
        dpkg.arg("-x").arg(deb).arg(&extract);
        run_logged("dpkg-deb -x", dpkg, log, Duration::from_secs(600))?;
        let usr_src = extract.join("usr/src");
        let tarball = fs::read_dir(&usr_src)
            .with_context(|| format!("{}: no usr/src", deb.display()))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".tar.xz"))
            .with_context(|| format!("{}: no usr/src/*.tar.xz", deb.display()))?;
        fs::create_dir_all(src)?;
        let mut untar = Command::new("tar");
        untar
            .arg("-C")
            .arg(src)
            .args(["--strip-components=1", "-xf"])
            .arg(&tarball);
        run_logged(
            "tar -x kernel source",
            untar,
            log,
            Duration::from_secs(1200),
        )?;
        fs::remove_dir_all(&extract)?;
        Ok(())
    }

    fn apply_patches(&self, src: &Path, log: &Path) -> Result<()> {
        for patch in &self.patches {
            let mut command = Command::new("patch");
            command
                .args(["-p1", "--forward", "--batch", "-d"])
                .arg(src)
                .arg("-i")
                .arg(patch);
            let output = crate::process::output_with_timeout("patch", command, SHORT_COMMAND)
                .context("running patch (Debian package `patch`)")?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            let mut file = fs::OpenOptions::new().create(true).append(true).open(log)?;
            std::io::Write::write_all(
                &mut file,
                format!("== patch {}\n{text}", patch.display()).as_bytes(),
            )?;
            if !output.status.success() {
                bail!(
                    "patch {} does not apply: {}",
                    patch.display(),
                    patch_failure_summary(&text)
                );
            }
        }
        Ok(())
    }

    fn configure(
        &self,
        src: &Path,
        obj: &Path,
        compiler: &Compiler,
        log: &Path,
        progress: &Progress,
    ) -> Result<()> {
        let started = Instant::now();
        let mut allno = make_command(src, obj, compiler);
        allno.arg("allnoconfig");
        run_logged("make allnoconfig", allno, log, Duration::from_secs(300))?;
        let mut merge = Command::new(src.join("scripts/kconfig/merge_config.sh"));
        merge
            .current_dir(src)
            .arg("-m")
            .arg("-O")
            .arg(obj)
            .arg(obj.join(".config"))
            .args(&self.fragments);
        run_logged("merge_config.sh", merge, log, Duration::from_secs(300))?;
        let mut olddef = make_command(src, obj, compiler);
        olddef.arg("olddefconfig");
        run_logged("make olddefconfig", olddef, log, Duration::from_secs(300))?;
        let config = fs::read_to_string(obj.join(".config"))?;
        let fragments: Vec<String> = self
            .fragments
            .iter()
            .map(fs::read_to_string)
            .collect::<Result<_, _>>()?;
        let unmet = unmet_settings(&fragments, &config);
        let (not_in_tree, dropped) = if unmet.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            split_unmet(unmet, &kconfig_symbols(src))
        };
        ensure!(
            dropped.is_empty(),
            "{}: the kernel config does not hold {} after olddefconfig (a dependency is missing)",
            self.name,
            dropped.join(", ")
        );
        let absent = if not_in_tree.is_empty() {
            String::new()
        } else {
            format!(
                " (not defined in this tree, skipped: {})",
                not_in_tree.join(", ")
            )
        };
        progress.done(
            Phase::KernelConfigCheck,
            &self.name,
            &format!(
                "allnoconfig + {} fragment(s): every setting holds{absent}",
                self.fragments.len()
            ),
            Some(started.elapsed()),
        );
        Ok(())
    }
}

/// Where ccache keeps the kernel builds' objects (shared by every build, unlike the per-key
/// cache entries), and how large it may grow.
const CCACHE_SUBDIR: &str = "ccache";
const CCACHE_MAX_SIZE: &str = "8G";

/// How a build compiles: through ccache when the host has it (`ccache gcc`, objects kept under
/// the cache's `ccache/`, paths inside the entry made relative so that another commit of the same
/// tree, in another entry, hits), else `gcc` itself. ccache changes nothing in the output, so the
/// build key does not name it.
#[derive(Debug, Clone)]
struct Compiler {
    ccache: Option<(PathBuf, PathBuf)>,
}

impl Compiler {
    fn for_entry(cache: &Path, entry_dir: &Path) -> Compiler {
        Compiler {
            // ccache wants an absolute base directory (RIG_VM_CACHE may be relative).
            ccache: crate::host::find_tool("ccache").map(|_| {
                let absolute =
                    |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
                (absolute(&cache.join(CCACHE_SUBDIR)), absolute(entry_dir))
            }),
        }
    }

    /// ccache's hit and miss counts so far (`ccache --print-stats`), when it is used.
    fn stats(&self) -> Option<(u64, u64)> {
        let (dir, _) = self.ccache.as_ref()?;
        let mut command = Command::new("ccache");
        command.arg("--print-stats").env("CCACHE_DIR", dir);
        let output =
            crate::process::output_with_timeout("ccache --print-stats", command, SHORT_COMMAND)
                .ok()?;
        Some(ccache_counts(&String::from_utf8_lossy(&output.stdout)))
    }

    /// Zero ccache's counts, so [`Compiler::stats`] after a build is that build's.
    fn zero_stats(&self) {
        if let Some((dir, _)) = &self.ccache {
            let mut command = Command::new("ccache");
            command.arg("--zero-stats").env("CCACHE_DIR", dir);
            let _ =
                crate::process::output_with_timeout("ccache --zero-stats", command, SHORT_COMMAND);
        }
    }
}

/// Hits (direct and preprocessed) and misses in `ccache --print-stats` (`name\tvalue` lines).
fn ccache_counts(text: &str) -> (u64, u64) {
    let count = |names: &[&str]| -> u64 {
        text.lines()
            .filter_map(|l| l.split_once('\t'))
            .filter(|(k, _)| names.contains(k))
            .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
            .sum()
    };
    (
        count(&["direct_cache_hit", "preprocessed_cache_hit"]),
        count(&["cache_miss"]),
    )
}

fn make_command(src: &Path, obj: &Path, compiler: &Compiler) -> Command {
    let mut make = Command::new("make");
    make.arg("-C")
        .arg(src)
        .arg(format!("O={}", obj.display()))
        // Reproducible: no host name, user or time in the image's version string.
        .env("KBUILD_BUILD_USER", "rig")
        .env("KBUILD_BUILD_HOST", "rpcrdma-rig")
        .env("KBUILD_BUILD_TIMESTAMP", "2026-01-01");
    if let Some((dir, base)) = &compiler.ccache {
        make.arg("CC=ccache gcc")
            .env("CCACHE_DIR", dir)
            .env("CCACHE_BASEDIR", base)
            .env("CCACHE_NOHASHDIR", "true")
            .env("CCACHE_MAXSIZE", CCACHE_MAX_SIZE);
    }
    make
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_compiles_through_ccache_only_when_told_where() {
        let with = Compiler {
            ccache: Some(("/c/ccache".into(), "/c/kernel-builds/k-1".into())),
        };
        let make = make_command(Path::new("/src"), Path::new("/obj"), &with);
        let args: Vec<String> = make
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"CC=ccache gcc".to_owned()), "{args:?}");
        let envs: Vec<(String, String)> = make
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        assert!(envs.contains(&(
            "CCACHE_BASEDIR".to_owned(),
            "/c/kernel-builds/k-1".to_owned()
        )));
        assert!(envs.contains(&("CCACHE_DIR".to_owned(), "/c/ccache".to_owned())));
        let without = make_command(
            Path::new("/src"),
            Path::new("/obj"),
            &Compiler { ccache: None },
        );
        assert!(!without
            .get_args()
            .any(|a| a.to_string_lossy().starts_with("CC=")));
        assert!(!without
            .get_envs()
            .any(|(k, _)| k.to_string_lossy().starts_with("CCACHE")));
    }

    #[test]
    fn ccache_counts_sum_direct_and_preprocessed_hits() {
        let text = "cache_miss\t12\ndirect_cache_hit\t300\ndirect_cache_miss\t12\n\
                    preprocessed_cache_hit\t5\nlocal_storage_hit\t305\n";
        assert_eq!(ccache_counts(text), (305, 12));
        assert_eq!(ccache_counts(""), (0, 0));
    }

    #[test]
    fn fragment_settings_take_values_and_unset_lines() {
        let settings = fragment_settings(
            "# comment\nCONFIG_A=y\nCONFIG_B=8\n# CONFIG_C is not set\nnot a line\n",
        );
        assert_eq!(
            settings,
            [
                ("CONFIG_A".to_owned(), Some("y".to_owned())),
                ("CONFIG_B".to_owned(), Some("8".to_owned())),
                ("CONFIG_C".to_owned(), None),
            ]
        );
    }

    #[test]
    fn a_setting_whose_symbol_the_tree_lacks_is_skipped_not_failed() {
        let kconfig = "config NFS_V4\n\ttristate \"NFS\"\nmenuconfig RDMA_SIW\n\tconfigure\n";
        let defined: std::collections::HashSet<String> =
            defined_symbols(kconfig).into_iter().collect();
        assert_eq!(
            defined,
            ["CONFIG_NFS_V4", "CONFIG_RDMA_SIW"]
                .map(String::from)
                .into()
        );
        let unmet = vec![
            "CONFIG_NFS_V4=y".to_owned(),
            "CONFIG_NFS_V4_1=y".to_owned(),
            "CONFIG_GONE unset".to_owned(),
        ];
        let (absent, dropped) = split_unmet(unmet, &defined);
        assert_eq!(absent, ["CONFIG_NFS_V4_1=y", "CONFIG_GONE unset"]);
        assert_eq!(dropped, ["CONFIG_NFS_V4=y"]);
    }

    #[test]
    fn unmet_settings_name_each_dropped_symbol() {
        let fragment = "CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n".to_owned();
        let config = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=y\n";
        assert_eq!(
            unmet_settings(std::slice::from_ref(&fragment), config),
            ["CONFIG_B=y", "CONFIG_C unset"]
        );
        assert!(unmet_settings(&[fragment], "CONFIG_A=y\nCONFIG_B=y\n").is_empty());
    }

    #[test]
    fn the_committed_rig_fragment_needs_what_the_suites_need() {
        let text = fs::read_to_string(fragments_dir().join("rig.config")).unwrap();
        let settings = fragment_settings(&text);
        for symbol in [
            "CONFIG_RDMA_RXE",
            "CONFIG_SUNRPC_XPRT_RDMA",
            "CONFIG_NFSD",
            "CONFIG_NFS_FS",
            "CONFIG_KPROBE_EVENTS",
            "CONFIG_9P_FS",
            "CONFIG_VIRTIO_NET",
        ] {
            assert!(
                settings
                    .iter()
                    .any(|(s, v)| s == symbol && v.as_deref() == Some("y")),
                "{symbol} missing from rig.config"
            );
        }
    }

    #[test]
    fn patch_failures_name_the_file_and_hunk() {
        let output = "patching file fs/nfsd/nfscache.c\nHunk #1 succeeded at 40.\n\
                      Hunk #2 FAILED at 120.\n1 out of 2 hunks FAILED -- saving rejects\n";
        let summary = patch_failure_summary(output);
        assert!(
            summary.starts_with("fs/nfsd/nfscache.c: Hunk #2 FAILED at 120."),
            "{summary}"
        );
    }

    #[test]
    fn committed_series_are_found_in_order() {
        let patches = series_patches("drc-mutants").unwrap();
        let names: Vec<String> = patches
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3);
        assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
        assert!(series_patches("no-such-series").is_err());
    }

    #[test]
    fn heartbeat_names_the_last_make_target() {
        let log = "  CC      fs/nfsd/nfscache.o\n  LD      vmlinux.o\nmake[2]: something\n";
        assert_eq!(last_make_target(log), "LD      vmlinux.o");
    }

    #[test]
    fn local_tree_identity_follows_the_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("Makefile"), "a").unwrap();
        let first = tree_identity(dir.path()).unwrap();
        assert_eq!(first, tree_identity(dir.path()).unwrap());
        fs::write(dir.path().join("Kconfig"), "b").unwrap();
        assert_ne!(first, tree_identity(dir.path()).unwrap());
    }
}
