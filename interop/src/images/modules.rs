//! Each kernel's module set for the guests: the modules the suites need, with their dependencies,
//! from the kernel's own modules.dep, cached per kernel.

use super::*;

/// The modules a kernel must provide to run the suites over `transport`: the matrix's required
/// set and the transport's own module (rdma_rxe is in the set; siw is not in Debian's kernels).
pub(super) fn required_for(required: &[String], transport: Transport) -> Vec<String> {
    let mut all = required.to_vec();
    if !all.iter().any(|m| m == transport.module()) {
        all.push(transport.module().to_owned());
    }
    all
}

impl<'a> Builder<'a> {
    pub(super) fn wanted_modules(&self) -> Vec<String> {
        let sets = &self.matrix.modules;
        sets.required
            .iter()
            .chain(&sets.optional)
            .cloned()
            .collect()
    }

    /// Check the required modules, stage the wanted ones (decompressed) with their dependencies,
    /// and write `vmlinuz`, `initrd.img` and `release` into `entry`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn module_set(
        &self,
        entry: &Entry,
        name: &str,
        release: &str,
        modules_dir: &Path,
        vmlinuz: &Path,
        base_cpio: &Path,
        key: &str,
        transport: Transport,
    ) -> Result<KernelImage> {
        let check_started = Instant::now();
        let index = ModuleIndex::parse(
            &fs::read_to_string(modules_dir.join("modules.dep")).unwrap_or_default(),
            &fs::read_to_string(modules_dir.join("modules.builtin")).unwrap_or_default(),
        );
        let required = required_for(&self.matrix.modules.required, transport);
        let missing = index.missing(&required);
        if !missing.is_empty() {
            bail!(
                "kernel {name} ({release}) cannot run the suites over {transport}: missing {} (neither in modules.dep nor modules.builtin; enable {} / CONFIG_SUNRPC_XPRT_RDMA / CONFIG_NFSD)",
                missing.join(", "),
                transport.config_option()
            );
        }
        self.progress.done(
            Phase::KernelConfigCheck,
            name,
            &format!(
                "{} required modules present ({} known)",
                required.len(),
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
            transport: Transport::default(),
            version: release.to_owned(),
            origin: String::new(),
            provenance: Default::default(),
        })
    }
}
