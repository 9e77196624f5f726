//! The image builder: host packages, kernel packages through the private apt configuration, the
//! guest rootfs (debootstrap → ext4, keyed by the package list), the initramfs base (static
//! busybox + mini-init) and a per-kernel module set, all cached under [`cache_root`].

mod built_kernels;
mod kernels;
mod modules;
mod packages;
mod rootfs;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::apt::{host_mirror, host_security_mirror, Mirrors, PackageRef, PrivateApt};
use crate::cache::{cache_root, disk_size, sha256_file, workspace_root, Entry, KeyBuilder};
use crate::host::{ensure_host_packages, ensure_kernel_build_packages};
use crate::kbuild::{
    all_series_patches, compiler_identity, fragment_path, tree_head, SourceBuild, SourceTree,
};
use crate::kmod::{missing_config_options, parse_show_depends, ModuleIndex, Provided};
use crate::matrix::{parse_package_list, KernelOrigin, KernelSpec, Matrix, Transport};
use crate::mbox::SeriesName;
use crate::process::run_logged;
use crate::progress::{human_size, Phase, Progress};
use crate::report::Provenance;

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct KernelImage {
    pub name: String,
    /// `uname -r` of this kernel (the modules directory name).
    pub release: String,
    pub vmlinuz: PathBuf,
    /// mini-init + busybox + this kernel's module set.
    pub initrd: PathBuf,
    pub key: String,
    /// Extra kernel command-line words (the matrix entry's `cmdline`, then `--kernel-cmdline`).
    pub cmdline: Vec<String>,
    /// The suites this kernel runs (all when empty).
    pub suites: Vec<String>,
    /// The soft-RDMA provider its guests bring up (`rig.transport=` on their command line).
    pub transport: Transport,
    /// The kernel's Debian version (`6.1.192-3`; a source build's source version; a developer's
    /// kernel: its release), what a report names beside the release.
    pub version: String,
    /// Where it came from: the pocket (`bookworm-security`), `source linux-source-6.12 +
    /// drc-mutants`, or the developer's image or tree.
    pub origin: String,
    /// The same as data (KCIDB's checkout and build).
    pub provenance: crate::report::Provenance,
}

impl KernelImage {
    /// Whether this kernel runs `suite`.
    pub fn runs_suite(&self, suite: &str) -> bool {
        crate::matrix::runs_suite(&self.suites, suite)
    }
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Images {
    pub rootfs: PathBuf,
    pub kernels: Vec<KernelImage>,
}

/// A kernel built outside Debian (`--kernel-image` + `--modules-dir`).
#[derive(Debug, Clone)]
pub struct CustomKernel {
    pub name: String,
    pub kind: CustomKind,
    /// The soft-RDMA provider its guests run over (`--transport`, default rxe).
    pub transport: Transport,
}

/// A developer's kernel: already built, or a tree the harness builds.
#[derive(Debug, Clone)]
pub enum CustomKind {
    Prebuilt {
        image: PathBuf,
        /// The `lib/modules/<release>` directory (`make modules_install` output, with modules.dep).
        modules_dir: PathBuf,
    },
    Source {
        tree: PathBuf,
        /// Patch files in apply order.
        patches: Vec<PathBuf>,
        /// The mailbox series among them.
        series: Vec<crate::mbox::SeriesName>,
        /// Optional fragments (by name or path) beyond `rig`.
        fragments: Vec<String>,
    },
}

/// A directory for a bulky throwaway tree (debootstrap's tree, an unpacked kernel package with
/// its ~4000 modules): in /dev/shm when that is a tmpfs that allows exec and has room, else in
/// the cache entry. On a cold cache dpkg's fsyncs and the unpacked modules were what the image
/// phase waited for; in memory they never reach the disk. Removed when dropped, on every path.
struct Scratch(PathBuf);

/// Room /dev/shm must have left for a scratch tree (an unpacked kernel is ~600 MiB).
const SCRATCH_MIN_FREE: u64 = 2 << 30;

impl Scratch {
    fn new(name: &str, entry: &Entry) -> Result<Scratch> {
        let shm = Path::new("/dev/shm");
        let dir = if memory_scratch_usable(shm) {
            shm.join(format!("rig-images-{}-{name}", std::process::id()))
        } else {
            entry.path("scratch")
        };
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Scratch(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Whether `dir` is a tmpfs mount point without `noexec` (debootstrap runs the tree's binaries)
/// with [`SCRATCH_MIN_FREE`] available.
fn memory_scratch_usable(dir: &Path) -> bool {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    is_exec_tmpfs(&mounts, &dir.to_string_lossy())
        && nix::sys::statvfs::statvfs(dir).is_ok_and(|stat| {
            stat.blocks_available().saturating_mul(stat.fragment_size()) >= SCRATCH_MIN_FREE
        })
}

/// Whether the mount table (`/proc/self/mounts` text) mounts a tmpfs at `point` without `noexec`.
fn is_exec_tmpfs(mounts: &str, point: &str) -> bool {
    mounts.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        matches!(fields.as_slice(), [_, at, "tmpfs", options, ..]
            if *at == point && !options.split(',').any(|o| o == "noexec"))
    })
}

/// A builder thread's result; a panic in it becomes an error naming what it built.
fn joined<T>(outcome: std::thread::Result<Result<T>>, what: &str) -> Result<T> {
    outcome.unwrap_or_else(|_| {
        Err(anyhow::anyhow!(
            "building {what}: the builder thread panicked"
        ))
    })
}

/// Where the declarative inputs live (`vm-images/`).
pub fn vm_images_dir() -> PathBuf {
    workspace_root().join("vm-images")
}

/// The builder's state for one command.
pub struct Builder<'a> {
    cache: PathBuf,
    inputs: PathBuf,
    pub matrix: Matrix,
    mirror: String,
    security_mirror: String,
    progress: &'a Progress,
    apt: Option<PrivateApt>,
}

/// How long downloaded apt indexes are trusted before `apt-get update` runs again.
const APT_INDEX_MAX_AGE: Duration = Duration::from_secs(6 * 3600);

impl<'a> Builder<'a> {
    pub fn new(progress: &'a Progress) -> Result<Self> {
        let inputs = vm_images_dir();
        let matrix = Matrix::load(&inputs.join("kernels.toml"))?;
        let mirror = matrix.mirror.clone().unwrap_or_else(host_mirror);
        let security_mirror = matrix
            .security_mirror
            .clone()
            .unwrap_or_else(host_security_mirror);
        let cache = cache_root();
        fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
        Ok(Builder {
            cache,
            inputs,
            matrix,
            mirror,
            security_mirror,
            progress,
            apt: None,
        })
    }

    fn log(&self, name: &str) -> PathBuf {
        let dir = self.cache.join("logs");
        let _ = fs::create_dir_all(&dir);
        dir.join(name)
    }

    /// Build (or reuse) everything for `kernels` and an optional custom kernel.
    pub fn build(&mut self, kernels: &[String], custom: Option<&CustomKernel>) -> Result<Images> {
        let started = Instant::now();
        let installed = ensure_host_packages(&self.log("host-packages.log"))?;
        let what = if installed.is_empty() {
            "all present".to_owned()
        } else {
            format!("installed {}", installed.join(" "))
        };
        self.progress
            .done(Phase::HostPackages, "host", &what, Some(started.elapsed()));
        let selected: Vec<KernelSpec> = self.matrix.select(kernels)?.into_iter().cloned().collect();
        let selected = if custom.is_some() && kernels.is_empty() {
            Vec::new()
        } else {
            selected
        };
        self.open_apt()?;
        // debootstrap, the slowest single step, runs beside the kernels' downloads and module
        // sets (network, xz and depmod): on a cold cache they overlap instead of adding up.
        let this = &*self;
        let (rootfs, kernels) = std::thread::scope(|scope| {
            let rootfs = scope.spawn(|| this.rootfs());
            let kernels = this.kernel_images(&selected, custom);
            (joined(rootfs.join(), "rootfs"), kernels)
        });
        Ok(Images {
            rootfs: rootfs?,
            kernels: kernels?,
        })
    }
}

/// `dpkg-deb -x`, bounded: a kernel package unpacks in seconds; a hang must not stall the build.
fn extract_deb(deb: &Path, into: &Path, log: &Path) -> Result<()> {
    let mut command = Command::new("dpkg-deb");
    command.arg("-x").arg(deb).arg(into);
    run_logged("dpkg-deb -x", command, log, Duration::from_secs(300))
}

fn run_depmod(entry: &Entry, modules_dir: &Path, release: &str) -> Result<()> {
    let base = entry.path("depmod-base");
    fs::create_dir_all(base.join("lib/modules"))?;
    std::os::unix::fs::symlink(modules_dir, base.join("lib/modules").join(release))?;
    depmod(&base, release)?;
    fs::remove_dir_all(&base)?;
    Ok(())
}

/// `depmod -b base release`, bounded, its stderr in the error when it fails.
fn depmod(base: &Path, release: &str) -> Result<()> {
    let mut command = Command::new("depmod");
    command.arg("-b").arg(base).arg(release);
    let output = crate::process::output_with_timeout("depmod", command, Duration::from_secs(300))?;
    ensure!(
        output.status.success(),
        "depmod -b {} {release} failed ({}): {}",
        base.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

/// The single subdirectory of the first of `parents` that has one.
fn only_subdir(parents: &[PathBuf]) -> Option<PathBuf> {
    parents.iter().find_map(|parent| {
        let dirs: Vec<PathBuf> = fs::read_dir(parent)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        match dirs.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        }
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// `cd dir && find <root> | cpio -o -H newc > out`, bounded. The file list goes through a file
/// beside `out` (not a pipe) so that a failing `find` is not hidden by `cpio`'s status.
fn write_cpio(dir: &Path, root: &str, out: &Path) -> Result<()> {
    let mut command = Command::new("sh");
    command
        .args([
            "-c",
            r#"cd "$1" && find "$2" > "$3.list" && cpio -o -H newc --quiet < "$3.list" > "$3"; rc=$?; rm -f "$3.list"; exit $rc"#,
            "sh",
        ])
        .arg(dir)
        .arg(root)
        .arg(out);
    let output = crate::process::output_with_timeout("cpio", command, Duration::from_secs(300))?;
    ensure!(
        output.status.success(),
        "writing {} from {} failed ({}): {}",
        out.display(),
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_goes_to_memory_only_on_an_exec_tmpfs_mount_point() {
        let mounts = "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n\
                      /dev/vda / ext4 rw,relatime 0 0\n\
                      tmpfs /run tmpfs rw,noexec,size=1g 0 0\n";
        assert!(is_exec_tmpfs(mounts, "/dev/shm"));
        assert!(
            !is_exec_tmpfs(mounts, "/run"),
            "noexec: debootstrap could not run the tree"
        );
        assert!(!is_exec_tmpfs(mounts, "/"), "not a tmpfs");
        assert!(!is_exec_tmpfs(mounts, "/dev"), "not a mount point");
        assert!(!is_exec_tmpfs("", "/dev/shm"));
    }

    #[test]
    fn write_cpio_archives_the_tree_under_root() {
        let dir = std::env::temp_dir().join(format!("rig-cpio-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let stage = dir.join("stage");
        fs::create_dir_all(stage.join("usr/lib/modules/6.1")).unwrap();
        fs::write(
            stage.join("usr/lib/modules/6.1/modules.order"),
            "rdma_rxe.ko\n",
        )
        .unwrap();
        fs::write(stage.join("outside"), "not under ./usr").unwrap();
        let out = dir.join("modules.cpio");
        write_cpio(&stage, "./usr", &out).unwrap();
        let mut list = Command::new("cpio");
        list.arg("-it").arg("-F").arg(&out);
        let listed =
            crate::process::output_with_timeout("cpio -t", list, Duration::from_secs(30)).unwrap();
        let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        assert!(
            names.contains(&"usr/lib/modules/6.1/modules.order".to_owned()),
            "{names:?}"
        );
        assert!(!names.iter().any(|n| n.contains("outside")));
        assert!(!dir.join("modules.cpio.list").exists());
        // A root that does not exist fails with find's message, not an empty archive.
        let err = write_cpio(&stage, "./missing", &dir.join("bad.cpio")).unwrap_err();
        assert!(format!("{err:#}").contains("missing"), "{err:#}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
