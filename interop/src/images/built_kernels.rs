//! Kernels that are not a Debian binary: built from a Debian source package or a local tree (with
//! patch series and config fragments), or a custom image and its modules given on the command line.

use super::*;

impl<'a> Builder<'a> {
    /// A matrix entry built from Debian's source package, with its patch series.
    pub(super) fn source_kernel(
        &self,
        spec: &KernelSpec,
        package: &str,
        version: &str,
        base_cpio: &Path,
        base_key: &str,
    ) -> Result<KernelImage> {
        let source = self.apt()?.package(package, version)?;
        let patches = all_series_patches(&spec.patches)?;
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
        self.built_kernel(&spec.name, &build, base_cpio, base_key, spec.transport)
    }

    /// `rig` first, then the named optional fragments.
    pub(super) fn fragments(&self, names: &[String]) -> Result<Vec<PathBuf>> {
        std::iter::once("rig")
            .chain(names.iter().map(String::as_str))
            .map(fragment_path)
            .collect()
    }

    /// Build (or reuse) `build`, then its module set and initramfs under `name`.
    pub(super) fn built_kernel(
        &self,
        name: &str,
        build: &SourceBuild,
        base_cpio: &Path,
        base_key: &str,
        transport: Transport,
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
            transport,
        )
    }

    pub(super) fn custom_kernel(
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
                ..
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
                return self.built_kernel(
                    &custom.name,
                    &build,
                    base_cpio,
                    base_key,
                    custom.transport,
                );
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
            custom.transport,
        )?;
        self.progress.done(
            Phase::Modules,
            &custom.name,
            &format!("built {key} release {release}"),
            Some(started.elapsed()),
        );
        Ok(image)
    }
}
