//! Host prerequisites: the tools the builder and runner call, and the Debian packages providing
//! them. Missing packages are installed when we are root, else the exact command is printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::process::run_logged;

/// (tool, Debian package providing it).
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("qemu-system-x86_64", "qemu-system-x86"),
    // The saved guests' disks (qcow2 over the shared rootfs, interop/src/saved_guests.rs).
    ("qemu-img", "qemu-utils"),
    ("debootstrap", "debootstrap"),
    ("cpio", "cpio"),
    ("mke2fs", "e2fsprogs"),
    ("depmod", "kmod"),
    ("modprobe", "kmod"),
    ("dpkg-deb", "dpkg"),
    // Kernel changelogs (interop/src/changelog.rs: the fix status of `just findings`).
    ("tar", "tar"),
    ("gzip", "gzip"),
    ("apt-get", "apt"),
    ("gpgv", "gpgv"),
    ("xz", "xz-utils"),
    ("zstd", "zstd"),
    ("tshark", "tshark"),
];

/// (tool or header, Debian package): what building a kernel from source needs, checked only when
/// a source-built kernel is selected. Paths are checked as files, bare names as tools.
pub const KERNEL_BUILD_TOOLS: &[(&str, &str)] = &[
    ("gcc", "gcc"),
    ("make", "make"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("patch", "patch"),
    ("perl", "perl"),
    ("/usr/include/gelf.h", "libelf-dev"),
    ("/usr/include/openssl/ssl.h", "libssl-dev"),
    // Another commit of the same tree rebuilds only what changed (kbuild::Compiler).
    ("ccache", "ccache"),
];

/// The keyring apt and debootstrap verify the archive with.
pub const KEYRING_PACKAGE: (&str, &str) = (
    "/usr/share/keyrings/debian-archive-keyring.gpg",
    "debian-archive-keyring",
);

/// Find an executable on `PATH` or in the sbin directories (not always on a user's PATH).
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The packages to install, given which tools are present (deduplicated, sorted).
pub fn missing_packages(
    tool_present: impl Fn(&str) -> bool,
    keyring_present: bool,
) -> Vec<&'static str> {
    let mut packages: Vec<&'static str> = HOST_TOOLS
        .iter()
        .filter(|(tool, _)| !tool_present(tool))
        .map(|(_, package)| *package)
        .collect();
    if !keyring_present {
        packages.push(KEYRING_PACKAGE.1);
    }
    packages.sort_unstable();
    packages.dedup();
    packages
}

/// The command a user should run to install `packages`.
pub fn install_command(packages: &[&str]) -> String {
    format!(
        "sudo apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    )
}

/// Make sure the host tools exist: install them as root, else fail with the command to run.
/// Returns the packages installed.
///
/// apt may remove a tool while installing another: on a fresh machine of ours the backported
/// qemu-utils (qemu-img 10.0) went when Debian 12's qemu-system-x86 7.2 came in, and every saved
/// guest then failed to start ("saving failed, booting cold"). So the tools are checked again
/// after the install, what went missing is installed once more (apt then picks the version that
/// fits), and a tool still missing is an error naming it.
pub fn ensure_host_packages(log: &Path) -> Result<Vec<&'static str>> {
    let missing_now = || {
        missing_packages(
            |tool| find_tool(tool).is_some(),
            Path::new(KEYRING_PACKAGE.0).is_file(),
        )
    };
    let mut installed = install_packages(missing_now(), log)?;
    let removed = missing_now();
    if removed.is_empty() {
        return Ok(installed);
    }
    installed.extend(install_packages(removed, log)?);
    let still = missing_now();
    if !still.is_empty() {
        bail!(
            "host packages still missing after installing them (apt removed them again?): {}",
            still.join(" ")
        );
    }
    Ok(installed)
}

/// The packages a kernel build needs that are missing, installed the same way.
pub fn ensure_kernel_build_packages(log: &Path) -> Result<Vec<&'static str>> {
    let mut missing: Vec<&'static str> = KERNEL_BUILD_TOOLS
        .iter()
        .filter(|(what, _)| {
            if what.starts_with('/') {
                !Path::new(what).is_file()
            } else {
                find_tool(what).is_none()
            }
        })
        .map(|(_, package)| *package)
        .collect();
    missing.sort_unstable();
    missing.dedup();
    install_packages(missing, log)
}

fn install_packages(missing: Vec<&'static str>, log: &Path) -> Result<Vec<&'static str>> {
    if missing.is_empty() {
        return Ok(missing);
    }
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "missing host packages: {}\nrun: {}",
            missing.join(" "),
            install_command(&missing)
        );
    }
    let mut install = Command::new("apt-get");
    install
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive");
    run_logged("apt-get install", install, log, Duration::from_secs(900))?;
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_missing_tools_to_deduplicated_packages() {
        let present = |tool: &str| !matches!(tool, "depmod" | "modprobe" | "qemu-system-x86_64");
        assert_eq!(missing_packages(present, true), ["kmod", "qemu-system-x86"]);
        assert_eq!(
            missing_packages(|_| true, false),
            ["debian-archive-keyring"]
        );
        assert!(missing_packages(|_| true, true).is_empty());
    }

    #[test]
    fn install_command_is_copy_pasteable() {
        assert_eq!(
            install_command(&["cpio", "debootstrap"]),
            "sudo apt-get install -y --no-install-recommends cpio debootstrap"
        );
    }

    #[test]
    fn finds_sh_but_not_nonsense() {
        assert!(find_tool("sh").is_some());
        assert!(find_tool("definitely-not-a-tool-xyz").is_none());
    }
}
