//! The image builder: host packages, kernel packages through the private apt configuration, the
//! guest rootfs (debootstrap → ext4, keyed by the package list), the initramfs base (static
//! busybox + mini-init) and a per-kernel module set, all cached under [`cache_root`].

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::apt::{host_mirror, host_security_mirror, Mirrors, PackageRef, PrivateApt};
use crate::cache::{cache_root, disk_size, sha256_file, workspace_root, Entry, KeyBuilder};
use crate::host::{ensure_host_packages, ensure_kernel_build_packages};
use crate::kbuild::{fragment_path, series_patches, SourceBuild, SourceTree};
use crate::kmod::{missing_config_options, parse_show_depends, ModuleIndex, Provided};
use crate::matrix::{parse_package_list, KernelOrigin, KernelSpec, Matrix};
use crate::process::run_logged;
use crate::progress::{human_size, Phase, Progress};

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
    /// The kernel's Debian version (`6.1.192-3`; a source build's source version; a developer's
    /// kernel: its release), what a report names beside the release.
    pub version: String,
    /// Where it came from: the pocket (`bookworm-security`), `source linux-source-6.12 +
    /// drc-mutants`, or the developer's image or tree.
    pub origin: String,
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

    /// The base initramfs, then every selected kernel in matrix order: each Debian binary
    /// kernel in a thread of its own (distinct packages and cache entries); the source-built
    /// ones one after another, since the mutants share one source package and one build.
    fn kernel_images(
        &self,
        selected: &[KernelSpec],
        custom: Option<&CustomKernel>,
    ) -> Result<Vec<KernelImage>> {
        let (base_cpio, base_key) = self.initramfs_base()?;
        let (base_cpio, base_key) = (base_cpio.as_path(), base_key.as_str());
        let origins = selected
            .iter()
            .map(KernelSpec::origin)
            .collect::<Result<Vec<_>>>()?;
        let mut images = std::thread::scope(|scope| {
            let mut binaries: std::collections::VecDeque<_> = selected
                .iter()
                .zip(&origins)
                .filter(|(_, origin)| matches!(origin, KernelOrigin::Binary { .. }))
                .map(|(spec, _)| scope.spawn(move || self.debian_kernel(spec, base_cpio, base_key)))
                .collect();
            selected
                .iter()
                .zip(&origins)
                .map(|(spec, origin)| {
                    let mut image = match origin {
                        KernelOrigin::Binary { .. } => {
                            let thread = binaries
                                .pop_front()
                                .context("a binary kernel without its builder thread")?;
                            joined(thread.join(), &spec.name)?
                        }
                        KernelOrigin::Source { package, version } => {
                            let mut image =
                                self.source_kernel(spec, package, version, base_cpio, base_key)?;
                            image.version = (*version).to_owned();
                            image.origin = std::iter::once(format!("source {package}"))
                                .chain(spec.patches.iter().cloned())
                                .chain(spec.fragments.iter().cloned())
                                .collect::<Vec<_>>()
                                .join(" + ");
                            image
                        }
                    };
                    image.cmdline = spec.cmdline.clone();
                    image.suites = spec.suites.clone();
                    Ok(image)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        if let Some(custom) = custom {
            let mut image = self.custom_kernel(custom, base_cpio, base_key)?;
            image.origin = match &custom.kind {
                CustomKind::Prebuilt { image, .. } => format!("--kernel-image {}", image.display()),
                CustomKind::Source { tree, .. } => format!("--kernel-src {}", tree.display()),
            };
            images.push(image);
        }
        Ok(images)
    }

    /// Download (or reuse) the package `name` at `version` from the matrix's pockets, checked
    /// against the signed index: e.g. the `linux-base` package whose changelog a 7.x kernel's
    /// packages point to.
    pub fn fetch_package(&mut self, name: &str, version: &str) -> Result<PathBuf> {
        if self.apt.is_none() {
            self.open_apt()?;
        }
        let package = self.apt()?.package(name, version)?;
        self.download(&package, name)
    }

    fn open_apt(&mut self) -> Result<()> {
        let mut suites: Vec<String> = vec![self.matrix.guest_suite.clone()];
        for pocket in self.matrix.kernels.iter().flat_map(KernelSpec::pockets) {
            if !suites.contains(&pocket) {
                suites.push(pocket);
            }
        }
        let mirrors = Mirrors {
            main: self.mirror.clone(),
            security: self.security_mirror.clone(),
        };
        let apt = PrivateApt::new(&self.cache.join("apt"), &mirrors, &suites)?;
        let started = Instant::now();
        let updated = apt.update_if_stale(APT_INDEX_MAX_AGE)?;
        let what = if updated {
            format!(
                "updated {} from {} and {}",
                suites.join(" "),
                self.mirror,
                self.security_mirror
            )
        } else {
            "fresh (< 6 h), reused".to_owned()
        };
        self.progress
            .done(Phase::AptIndex, "apt", &what, Some(started.elapsed()));
        self.apt = Some(apt);
        Ok(())
    }

    fn apt(&self) -> Result<&PrivateApt> {
        self.apt.as_ref().context("apt not initialised")
    }

    fn download(&self, package: &PackageRef, subject: &str) -> Result<PathBuf> {
        let started = Instant::now();
        let debs = self.cache.join("debs");
        let cached = package.deb_path(&debs).is_file();
        let path = self.apt()?.download_verified(package, &debs)?;
        let what = format!(
            "{} {} {} sha256 {}… verified{}",
            package.name,
            package.version,
            human_size(package.size),
            &package.sha256[..12],
            if cached { " (cached)" } else { "" }
        );
        self.progress
            .done(Phase::FetchKernel, subject, &what, Some(started.elapsed()));
        Ok(path)
    }

    /// debootstrap → trimmed tree → ext4 image; keyed by package list, init, suite and mirror.
    fn rootfs(&self) -> Result<PathBuf> {
        let packages_file = self.inputs.join("guest-packages.txt");
        let init_file = self.inputs.join("guest/rig-init");
        let packages = parse_package_list(&fs::read_to_string(&packages_file)?)?;
        let key = KeyBuilder::new("rootfs")
            .add_file(&packages_file)?
            .add_file(&init_file)?
            .add("suite", self.matrix.guest_suite.as_bytes())
            .add("mirror", self.mirror.as_bytes())
            .finish();
        let entry = Entry::new(&self.cache, "rootfs", &self.matrix.guest_suite, &key);
        let image = entry.path("rootfs.ext4");
        if entry.is_complete() {
            self.progress.done(
                Phase::Rootfs,
                &self.matrix.guest_suite,
                &format!("cached {key} ({})", human_size(disk_size(&image))),
                None,
            );
            return Ok(image);
        }
        ensure!(
            nix::unistd::geteuid().is_root(),
            "building the rootfs needs root (debootstrap, mke2fs -d of a root-owned tree)"
        );
        let started = Instant::now();
        self.progress.start(
            Phase::Rootfs,
            &self.matrix.guest_suite,
            &format!(
                "debootstrap {} packages (slowest step, ~35 s)",
                packages.len()
            ),
        );
        entry.reset()?;
        let scratch = Scratch::new("rootfs", &entry)?;
        let tree = scratch.path().join("tree");
        let debootstrap_cache = self.cache.join("debootstrap-cache");
        fs::create_dir_all(&debootstrap_cache)?;
        let mut debootstrap = Command::new("debootstrap");
        debootstrap
            .arg("--variant=minbase")
            .arg(format!("--include={}", packages.join(",")))
            .arg(format!("--cache-dir={}", debootstrap_cache.display()))
            .arg(&self.matrix.guest_suite)
            .arg(&tree)
            .arg(&self.mirror);
        run_logged(
            "debootstrap",
            debootstrap,
            &entry.path("debootstrap.log"),
            Duration::from_secs(1200),
        )?;
        // Docs, manuals and package caches are dead weight in a test guest.
        for dir in [
            "usr/share/doc",
            "usr/share/man",
            "usr/share/info",
            "usr/share/locale",
            "usr/share/lintian",
            "var/cache/apt",
            "var/lib/apt/lists",
        ] {
            let path = tree.join(dir);
            if path.exists() {
                fs::remove_dir_all(&path)?;
            }
        }
        let init = tree.join("init");
        fs::copy(&init_file, &init)?;
        set_mode(&init, 0o755)?;
        for dir in ["rig", "proc", "sys", "dev", "run", "tmp", "mnt"] {
            fs::create_dir_all(tree.join(dir))?;
        }
        fs::write(tree.join("etc/hostname"), "rig\n")?;
        fs::write(tree.join("etc/fstab"), "")?;
        let tree_size = disk_size(&tree);
        let mut mke2fs = Command::new("mke2fs");
        mke2fs
            .args(["-q", "-t", "ext4", "-L", "rigroot", "-d"])
            .arg(&tree)
            .arg(&image)
            .arg("512M");
        run_logged(
            "mke2fs",
            mke2fs,
            &entry.path("mke2fs.log"),
            Duration::from_secs(300),
        )?;
        fs::remove_dir_all(&tree)?;
        entry.mark_complete(&format!("rootfs {key}"))?;
        self.progress.done(
            Phase::Rootfs,
            &self.matrix.guest_suite,
            &format!(
                "built {key}: tree {} → ext4 {} (sparse 512M)",
                human_size(tree_size),
                human_size(disk_size(&image))
            ),
            Some(started.elapsed()),
        );
        Ok(image)
    }

    /// The initramfs part shared by all kernels: static busybox and mini-init.
    fn initramfs_base(&self) -> Result<(PathBuf, String)> {
        let package = self
            .apt()?
            .package_in_suite("busybox-static", &self.matrix.guest_suite)?;
        let mini_init = self.inputs.join("guest/mini-init");
        let key = KeyBuilder::new("initramfs-base")
            .add("busybox-static", package.sha256.as_bytes())
            .add_file(&mini_init)?
            .finish();
        let entry = Entry::new(&self.cache, "initramfs", "base", &key);
        let cpio = entry.path("base.cpio");
        if entry.is_complete() {
            self.progress
                .done(Phase::Initramfs, "base", &format!("cached {key}"), None);
            return Ok((cpio, key));
        }
        let started = Instant::now();
        let deb = self.download(&package, "busybox")?;
        entry.reset()?;
        let extract = entry.path("extract");
        extract_deb(&deb, &extract, &entry.path("extract.log"))?;
        let stage = entry.path("stage");
        fs::create_dir_all(stage.join("bin"))?;
        fs::create_dir_all(stage.join("usr/lib"))?;
        std::os::unix::fs::symlink("usr/lib", stage.join("lib"))?;
        fs::copy(extract.join("bin/busybox"), stage.join("bin/busybox"))?;
        fs::copy(&mini_init, stage.join("init"))?;
        set_mode(&stage.join("init"), 0o755)?;
        write_cpio(&stage, ".", &cpio)?;
        fs::remove_dir_all(&extract)?;
        fs::remove_dir_all(&stage)?;
        entry.mark_complete(&format!("initramfs base {key}"))?;
        self.progress.done(
            Phase::Initramfs,
            "base",
            &format!("built {key} ({})", human_size(disk_size(&cpio))),
            Some(started.elapsed()),
        );
        Ok((cpio, key))
    }

    fn wanted_modules(&self) -> Vec<String> {
        let sets = &self.matrix.modules;
        sets.required
            .iter()
            .chain(&sets.optional)
            .cloned()
            .collect()
    }

    fn debian_kernel(
        &self,
        spec: &KernelSpec,
        base_cpio: &Path,
        base_key: &str,
    ) -> Result<KernelImage> {
        let resolved = self.apt()?.resolve_kernel(spec)?;
        self.progress.done(
            Phase::FetchKernel,
            &spec.name,
            &format!(
                "resolved {} from {} (newest of {})",
                resolved.version,
                resolved.pocket,
                spec.pockets().join(" ")
            ),
            None,
        );
        let packages = &resolved.packages;
        let mut key = KeyBuilder::new("kernel");
        key.add("spec", spec.key_material().as_bytes())
            .add("modules", format!("{:?}", self.matrix.modules).as_bytes())
            .add("base", base_key.as_bytes());
        for package in packages {
            key.add(&package.name, package.sha256.as_bytes());
        }
        let key = key.finish();
        let entry = Entry::new(&self.cache, "kernels", &spec.name, &key);
        let provenance = |mut image: KernelImage| {
            image.version = resolved.version.clone();
            image.origin = resolved.pocket.clone();
            image
        };
        if let Some(image) = self.cached_kernel(&entry, &spec.name, &key)? {
            return Ok(provenance(image));
        }
        let debs: Vec<PathBuf> = packages
            .iter()
            .map(|p| self.download(p, &spec.name))
            .collect::<Result<_>>()?;
        let started = Instant::now();
        entry.reset()?;
        let scratch = Scratch::new(&spec.name, &entry)?;
        let extract = scratch.path().join("extract");
        for deb in &debs {
            extract_deb(deb, &extract, &entry.path("extract.log"))?;
        }
        let modules_dir =
            only_subdir(&[extract.join("lib/modules"), extract.join("usr/lib/modules")])
                .with_context(|| {
                    format!("{}: no lib/modules/<release> in the packages", spec.name)
                })?;
        let release = file_name(&modules_dir);
        let vmlinuz = [
            extract.join(format!("boot/vmlinuz-{release}")),
            modules_dir.join("vmlinuz"),
        ]
        .into_iter()
        .find(|p| p.is_file())
        .with_context(|| format!("{}: no vmlinuz in the packages", spec.name))?;
        let config = extract.join(format!("boot/config-{release}"));
        if config.is_file() {
            let missing = missing_config_options(&fs::read_to_string(&config)?);
            ensure!(
                missing.is_empty(),
                "{}: kernel config lacks {} (needs =y or =m)",
                spec.name,
                missing.join(", ")
            );
        }
        // Our own extracted copy: depmod may write into it.
        run_depmod(&entry, &modules_dir, &release)?;
        let image = self.module_set(
            &entry,
            &spec.name,
            &release,
            &modules_dir,
            &vmlinuz,
            base_cpio,
            &key,
        )?;
        drop(scratch);
        self.progress.done(
            Phase::Modules,
            &spec.name,
            &format!("built {key} release {release}"),
            Some(started.elapsed()),
        );
        Ok(provenance(image))
    }

    /// A matrix entry built from Debian's source package, with its patch series.
    fn source_kernel(
        &self,
        spec: &KernelSpec,
        package: &str,
        version: &str,
        base_cpio: &Path,
        base_key: &str,
    ) -> Result<KernelImage> {
        let source = self.apt()?.package(package, version)?;
        let patches = spec
            .patches
            .iter()
            .map(|series| series_patches(series))
            .collect::<Result<Vec<_>>>()?
            .concat();
        // Entries that share source, patches and fragments share one build (the mutants do).
        let mut build_name = package.to_owned();
        for part in spec.patches.iter().chain(&spec.fragments) {
            build_name.push('+');
            build_name.push_str(part);
        }
        let build = SourceBuild {
            name: build_name,
            tree: SourceTree::DebianPackage {
                deb: source.deb_path(&self.cache.join("debs")),
                version: version.to_owned(),
                sha256: source.sha256.clone(),
            },
            patches,
            fragments: self.fragments(&spec.fragments)?,
        };
        // The source package (146 MiB) is fetched only for a build that is not cached yet.
        if !build.is_cached(&self.cache)? {
            self.download(&source, &spec.name)?;
        }
        self.built_kernel(&spec.name, &build, base_cpio, base_key)
    }

    /// `rig` first, then the named optional fragments.
    fn fragments(&self, names: &[String]) -> Result<Vec<PathBuf>> {
        std::iter::once("rig")
            .chain(names.iter().map(String::as_str))
            .map(fragment_path)
            .collect()
    }

    /// Build (or reuse) `build`, then its module set and initramfs under `name`.
    fn built_kernel(
        &self,
        name: &str,
        build: &SourceBuild,
        base_cpio: &Path,
        base_key: &str,
    ) -> Result<KernelImage> {
        let installed = ensure_kernel_build_packages(&self.log("kernel-build-packages.log"))?;
        if !installed.is_empty() {
            self.progress.done(
                Phase::HostPackages,
                "kernel-build",
                &format!("installed {}", installed.join(" ")),
                None,
            );
        }
        let built = build.build(&self.cache, self.progress)?;
        let mut key = KeyBuilder::new("source-kernel");
        key.add("build", built.key.as_bytes())
            .add("modules", format!("{:?}", self.matrix.modules).as_bytes())
            .add("base", base_key.as_bytes())
            .add("release", built.release.as_bytes());
        let key = key.finish();
        let entry = Entry::new(&self.cache, "kernels", name, &key);
        if let Some(image) = self.cached_kernel(&entry, name, &key)? {
            return Ok(image);
        }
        entry.reset()?;
        fs::copy(&built.log, entry.path("build.log"))?;
        self.module_set(
            &entry,
            name,
            &built.release,
            &built.modules_dir,
            &built.bzimage,
            base_cpio,
            &key,
        )
    }

    fn custom_kernel(
        &self,
        custom: &CustomKernel,
        base_cpio: &Path,
        base_key: &str,
    ) -> Result<KernelImage> {
        let (image, modules_dir) = match &custom.kind {
            CustomKind::Prebuilt { image, modules_dir } => (image, modules_dir),
            CustomKind::Source {
                tree,
                patches,
                fragments,
            } => {
                let tree = tree
                    .canonicalize()
                    .with_context(|| format!("--kernel-src {}", tree.display()))?;
                ensure!(
                    tree.join("Makefile").is_file() && tree.join("Kconfig").is_file(),
                    "--kernel-src {}: not a kernel tree (no Makefile and Kconfig)",
                    tree.display()
                );
                let build = SourceBuild {
                    name: custom.name.clone(),
                    tree: SourceTree::Local(tree),
                    patches: patches.clone(),
                    fragments: self.fragments(fragments)?,
                };
                return self.built_kernel(&custom.name, &build, base_cpio, base_key);
            }
        };
        let modules_dir = modules_dir
            .canonicalize()
            .with_context(|| format!("--modules-dir {}", modules_dir.display()))?;
        let dep = modules_dir.join("modules.dep");
        ensure!(
            dep.is_file(),
            "{} has no modules.dep: run `make modules_install` (it runs depmod) or depmod -b",
            modules_dir.display()
        );
        let release = file_name(&modules_dir);
        let mut key = KeyBuilder::new("custom-kernel");
        key.add("image", sha256_file(image)?.as_bytes())
            .add_file(&dep)?
            .add("modules", format!("{:?}", self.matrix.modules).as_bytes())
            .add("base", base_key.as_bytes())
            .add("release", release.as_bytes());
        let builtin = modules_dir.join("modules.builtin");
        if builtin.is_file() {
            key.add_file(&builtin)?;
        }
        let key = key.finish();
        let entry = Entry::new(&self.cache, "kernels", &custom.name, &key);
        if let Some(image) = self.cached_kernel(&entry, &custom.name, &key)? {
            return Ok(image);
        }
        let started = Instant::now();
        entry.reset()?;
        let image = self.module_set(
            &entry,
            &custom.name,
            &release,
            &modules_dir,
            image,
            base_cpio,
            &key,
        )?;
        self.progress.done(
            Phase::Modules,
            &custom.name,
            &format!("built {key} release {release}"),
            Some(started.elapsed()),
        );
        Ok(image)
    }

    fn cached_kernel(&self, entry: &Entry, name: &str, key: &str) -> Result<Option<KernelImage>> {
        if !entry.is_complete() {
            return Ok(None);
        }
        let release = fs::read_to_string(entry.path("release"))?.trim().to_owned();
        let initrd = entry.path("initrd.img");
        self.progress.done(
            Phase::Modules,
            name,
            &format!(
                "cached {key} release {release} initrd {}",
                human_size(disk_size(&initrd))
            ),
            None,
        );
        Ok(Some(KernelImage {
            name: name.to_owned(),
            release: release.clone(),
            vmlinuz: entry.path("vmlinuz"),
            initrd,
            key: key.to_owned(),
            cmdline: Vec::new(),
            suites: Vec::new(),
            version: release,
            origin: String::new(),
        }))
    }

    /// Check the required modules, stage the wanted ones (decompressed) with their dependencies,
    /// and write `vmlinuz`, `initrd.img` and `release` into `entry`.
    #[allow(clippy::too_many_arguments)]
    fn module_set(
        &self,
        entry: &Entry,
        name: &str,
        release: &str,
        modules_dir: &Path,
        vmlinuz: &Path,
        base_cpio: &Path,
        key: &str,
    ) -> Result<KernelImage> {
        let check_started = Instant::now();
        let index = ModuleIndex::parse(
            &fs::read_to_string(modules_dir.join("modules.dep")).unwrap_or_default(),
            &fs::read_to_string(modules_dir.join("modules.builtin")).unwrap_or_default(),
        );
        let missing = index.missing(&self.matrix.modules.required);
        if !missing.is_empty() {
            bail!(
                "kernel {name} ({release}) cannot run the suites: missing {} (neither in modules.dep nor modules.builtin; enable CONFIG_RDMA_RXE / CONFIG_SUNRPC_XPRT_RDMA / CONFIG_NFSD)",
                missing.join(", ")
            );
        }
        self.progress.done(
            Phase::KernelConfigCheck,
            name,
            &format!(
                "{} required modules present ({} known)",
                self.matrix.modules.required.len(),
                index.len()
            ),
            Some(check_started.elapsed()),
        );
        // modprobe wants <base>/lib/modules/<release>; point a symlink at the real tree.
        let full = entry.path("full");
        fs::create_dir_all(full.join("lib/modules"))?;
        let link = full.join("lib/modules").join(release);
        std::os::unix::fs::symlink(modules_dir, &link)?;
        let mut files = BTreeSet::new();
        for module in self.wanted_modules() {
            if !matches!(index.lookup(&module), Some(Provided::Loadable(_))) {
                continue;
            }
            // A module modprobe cannot resolve prints nothing; its absence is reported by the
            // guests' own modprobe, so the status is not checked here.
            let mut modprobe = Command::new("modprobe");
            modprobe
                .arg("-d")
                .arg(&full)
                .args(["-S", release, "--show-depends", &module]);
            let output = crate::process::output_with_timeout(
                "modprobe --show-depends",
                modprobe,
                Duration::from_secs(60),
            )?;
            files.extend(parse_show_depends(&String::from_utf8_lossy(&output.stdout)));
        }
        // A kernel with every driver built in (a developer's config, our source builds) has no
        // loadable module to stage: modules.builtin alone lets the guests' modprobe succeed.
        let stage = entry.path("stage");
        let stage_modules = stage.join("usr/lib/modules").join(release);
        fs::create_dir_all(&stage_modules)?;
        // The rootfs is merged-/usr: the cpio must never carry a real ./lib directory.
        std::os::unix::fs::symlink("usr/lib", stage.join("lib"))?;
        let prefix = link.display().to_string();
        for file in &files {
            let relative = file
                .strip_prefix(&prefix)
                .map(|r| r.trim_start_matches('/'))
                .with_context(|| format!("modprobe printed a path outside the tree: {file}"))?;
            let (relative, decompressor) = match relative.rsplit_once('.') {
                Some((stem, "xz")) => (stem, Some("xz")),
                Some((stem, "zst")) => (stem, Some("zstd")),
                Some((stem, "gz")) => (stem, Some("gzip")),
                _ => (relative, None),
            };
            let target = stage_modules.join(relative);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            match decompressor {
                Some(tool) => {
                    let mut command = Command::new(tool);
                    command.args(["-dc", file]);
                    let bytes = crate::process::output_with_timeout(
                        tool,
                        command,
                        std::time::Duration::from_secs(120),
                    )
                    .with_context(|| format!("running {tool}"))?;
                    ensure!(bytes.status.success(), "{tool} -dc {file} failed");
                    // The capture stops at its cap: a module that large would be cut, not kept.
                    ensure!(
                        bytes.stdout.len() < crate::process::MAX_CAPTURED_OUTPUT,
                        "{tool} -dc {file}: more than {} bytes decompressed",
                        crate::process::MAX_CAPTURED_OUTPUT
                    );
                    fs::write(&target, bytes.stdout)?;
                }
                None => {
                    fs::copy(file, &target)?;
                }
            }
        }
        for meta in [
            "modules.builtin",
            "modules.builtin.modinfo",
            "modules.order",
        ] {
            let source = modules_dir.join(meta);
            if source.is_file() {
                fs::copy(&source, stage_modules.join(meta))?;
            }
        }
        depmod(&stage, release)?;
        let modules_cpio = entry.path("modules.cpio");
        write_cpio(&stage, "./usr", &modules_cpio)?;
        // The kernel unpacks concatenated newc archives in order.
        let mut initrd = fs::read(base_cpio)?;
        initrd.extend(fs::read(&modules_cpio)?);
        fs::write(entry.path("initrd.img"), initrd)?;
        fs::copy(vmlinuz, entry.path("vmlinuz"))?;
        fs::write(entry.path("release"), release)?;
        fs::write(
            entry.path("modules.txt"),
            files.iter().map(|f| format!("{f}\n")).collect::<String>(),
        )?;
        fs::remove_dir_all(&stage)?;
        fs::remove_dir_all(&full)?;
        entry.mark_complete(&format!("{name} {release} {} modules", files.len()))?;
        self.progress.done(
            Phase::Initramfs,
            name,
            &format!(
                "{} modules, initrd {}, vmlinuz {}",
                files.len(),
                human_size(disk_size(&entry.path("initrd.img"))),
                human_size(disk_size(&entry.path("vmlinuz")))
            ),
            None,
        );
        Ok(KernelImage {
            name: name.to_owned(),
            release: release.to_owned(),
            vmlinuz: entry.path("vmlinuz"),
            initrd: entry.path("initrd.img"),
            key: key.to_owned(),
            cmdline: Vec::new(),
            suites: Vec::new(),
            version: release.to_owned(),
            origin: String::new(),
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
