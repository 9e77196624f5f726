//! What every guest boots into: the shared rootfs and the initramfs base, built into the cache keyed
//! by their inputs.

use super::*;

impl<'a> Builder<'a> {
    /// debootstrap → trimmed tree → ext4 image; keyed by package list, init, suite and mirror.
    pub(super) fn rootfs(&self) -> Result<PathBuf> {
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
    pub(super) fn initramfs_base(&self) -> Result<(PathBuf, String)> {
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
}
