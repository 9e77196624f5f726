//! Debian packages fetched through the private apt configuration: the index opened once, each
//! package downloaded into the cache with its checksum from the signed index.

use super::*;

impl<'a> Builder<'a> {
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

    pub(super) fn open_apt(&mut self) -> Result<()> {
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

    pub(super) fn apt(&self) -> Result<&PrivateApt> {
        self.apt.as_ref().context("apt not initialised")
    }

    pub(super) fn download(&self, package: &PackageRef, subject: &str) -> Result<PathBuf> {
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
}
