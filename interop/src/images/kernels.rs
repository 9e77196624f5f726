//! The matrix's kernels as bootable images: each entry resolved, a Debian binary package unpacked,
//! a kernel found in the cache by its identity.

use super::*;

impl<'a> Builder<'a> {
    /// The base initramfs, then every selected kernel in matrix order: each Debian binary
    /// kernel in a thread of its own (distinct packages and cache entries); the source-built
    /// ones one after another, since the mutants share one source package and one build.
    pub(super) fn kernel_images(
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
                            let patches = all_series_patches(&spec.patches)?;
                            image.provenance = Provenance {
                                source: format!("{package} {version}"),
                                patches: spec.patches.clone(),
                                patchset_hash: patchset_of(&patches)?,
                                config: config_name(&spec.fragments),
                                compiler: compiler_identity().ok(),
                                key: image.key.clone(),
                                ..Provenance::default()
                            };
                            image
                        }
                    };
                    image.cmdline = spec.cmdline.clone();
                    image.suites = spec.suites.clone();
                    image.transport = spec.transport;
                    Ok(image)
                })
                .collect::<Result<Vec<_>>>()
        })?;
        if let Some(custom) = custom {
            let mut image = self.custom_kernel(custom, base_cpio, base_key)?;
            image.transport = custom.transport;
            image.origin = match &custom.kind {
                CustomKind::Prebuilt { image, .. } => format!("--kernel-image {}", image.display()),
                CustomKind::Source { tree, series, .. } => {
                    std::iter::once(format!("--kernel-src {}", tree.display()))
                        .chain(series.iter().map(SeriesName::describe))
                        .collect::<Vec<_>>()
                        .join(" + ")
                }
            };
            image.provenance = match &custom.kind {
                CustomKind::Prebuilt { image: path, .. } => Provenance {
                    source: format!("--kernel-image {}", path.display()),
                    config: "prebuilt".to_owned(),
                    key: image.key.clone(),
                    ..Provenance::default()
                },
                CustomKind::Source {
                    tree,
                    patches,
                    series,
                    fragments,
                } => Provenance {
                    source: format!("--kernel-src {}", tree.display()),
                    commit: tree_head(tree),
                    patches: series.iter().map(SeriesName::describe).collect(),
                    patchset_hash: patchset_of(patches)?,
                    message_id: series.iter().find_map(|s| s.message_id.clone()),
                    config: config_name(fragments),
                    compiler: compiler_identity().ok(),
                    key: image.key.clone(),
                },
            };
            images.push(image);
        }
        Ok(images)
    }

    pub(super) fn debian_kernel(
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
            image.provenance = Provenance {
                source: packages
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                config: "debian".to_owned(),
                key: image.key.clone(),
                ..Provenance::default()
            };
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
            spec.transport,
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

    pub(super) fn cached_kernel(
        &self,
        entry: &Entry,
        name: &str,
        key: &str,
    ) -> Result<Option<KernelImage>> {
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
            transport: Transport::default(),
            version: release,
            origin: String::new(),
            provenance: Default::default(),
        }))
    }
}

/// KCIDB's patchset hash over the patch files applied, in order (`mbox::patchset_hash`).
fn patchset_of(patches: &[PathBuf]) -> Result<String> {
    let bodies = patches
        .iter()
        .map(|p| fs::read(p).with_context(|| format!("{}", p.display())))
        .collect::<Result<Vec<_>>>()?;
    let bodies: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    Ok(crate::mbox::patchset_hash(&bodies))
}

/// A source build's configuration: the rig's fragment, then the optional ones.
fn config_name(fragments: &[String]) -> String {
    std::iter::once("rig")
        .chain(fragments.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("+")
}
