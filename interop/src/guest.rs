//! How one guest starts: the run's settings every guest shares, the guests' addresses, and the
//! qemu command line of a cold, saved or restored guest. The runner starts guests with it and
//! the saved pairs ([`crate::saved_guests`]) are keyed by it, so it belongs to neither.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;

use crate::images::KernelImage;
use crate::suite::Role;

/// qemu acceleration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AccelChoice {
    /// KVM if a probe boot reaches userspace, else TCG.
    Auto,
    Kvm,
    Tcg,
}

/// Settings shared by every kernel's run.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub accel: AccelChoice,
    pub memory_mib: u32,
    pub vcpus: u32,
    /// Extra host files for the share (`from`, `to` relative to the share).
    pub extra_files: Vec<(PathBuf, String)>,
    pub out_root: PathBuf,
    /// Boot every guest from scratch instead of restoring the kernel's saved pair
    /// ([`crate::saved_guests`]).
    pub cold_boot: bool,
    /// The wire's iWARP accept fence ([`crate::wire::IWARP_ACCEPT_FENCE`]; zero: none, to
    /// reproduce the siw race it keeps the suites out of).
    pub iwarp_accept_fence: std::time::Duration,
}

pub(crate) const SERVER_IP: &str = "10.99.0.1/24";
pub(crate) const CLIENT_IP: &str = "10.99.0.2/24";

/// A role's address (with prefix), its peer's bare address and its MAC.
pub(crate) fn addresses(role: Role) -> (&'static str, &'static str, &'static str) {
    let bare = |ip: &'static str| ip.split('/').next().unwrap_or(ip);
    match role {
        Role::Srv => (SERVER_IP, bare(CLIENT_IP), "52:54:00:99:00:01"),
        Role::Cli => (CLIENT_IP, bare(SERVER_IP), "52:54:00:99:00:02"),
    }
}

/// How a guest starts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Boot<'a> {
    /// From the kernel's first instruction.
    Cold,
    /// Booted to be saved: `rig.snapshot=1` makes the initramfs wait for its peer, the
    /// monitor socket is where the host asks qemu to save it, and `disk` (a qcow2 over the
    /// rootfs) keeps what the guest wrote before.
    Save { monitor: &'a Path, disk: &'a Path },
    /// Restored from a state qemu saved with the disk it wrote (read-only under qemu's temp
    /// overlay); the guest resumes where [`Boot::Save`] left it.
    Restore { state: &'a Path, disk: &'a Path },
}

/// What both guests of one run share.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Launch<'a> {
    pub image: &'a KernelImage,
    pub rootfs: &'a Path,
    pub settings: &'a RunSettings,
    pub accel: &'a str,
    pub share: &'a Path,
    pub boot: Boot<'a>,
}

/// Quote `text` for `sh -c` (qemu's `exec:` migration runs its command through the shell).
/// The qemu command both the KVM probe and the guests start from: `accel` with `cpu`, `vcpus`
/// (qemu's default when `None`) and `memory_mib`, no default devices, display or reboot, and
/// `image`'s kernel and initramfs.
pub(crate) fn qemu_booting(
    image: &KernelImage,
    accel: &str,
    cpu: &str,
    vcpus: Option<u32>,
    memory_mib: u32,
) -> Command {
    let mut qemu = Command::new("qemu-system-x86_64");
    qemu.args(["-accel", accel, "-cpu", cpu, "-M", "pc"]);
    if let Some(vcpus) = vcpus {
        qemu.args(["-smp", &vcpus.to_string()]);
    }
    qemu.args(["-m", &memory_mib.to_string()])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(&image.vmlinuz)
        .arg("-initrd")
        .arg(&image.initrd);
    qemu
}

pub(crate) fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The qemu command of one guest. A saved guest must be restored by the same command but for
/// its console, share and wire, so everything else here is part of the saved pair's key
/// ([`crate::saved_guests::SAVED_GUEST_FORMAT`]).
pub(crate) fn qemu_command(
    launch: &Launch<'_>,
    role: Role,
    console: &Path,
    netdev: &str,
) -> Command {
    let Launch {
        image,
        rootfs,
        settings,
        accel,
        share,
        boot,
    } = *launch;
    let (ip, peer, mac) = addresses(role);
    let cpu = if accel == "kvm" { "host" } else { "max" };
    let mut qemu = qemu_booting(image, accel, cpu, Some(settings.vcpus), settings.memory_mib);
    // snapshot=on: both guests share one read-only base; their writes go to temp overlays.
    // A saved guest's own writes stay in its qcow2, which a restore only reads.
    qemu.arg("-drive")
        .arg(match boot {
            Boot::Cold => format!("file={},format=raw,if=virtio,snapshot=on", rootfs.display()),
            Boot::Save { disk, .. } => format!("file={},format=qcow2,if=virtio", disk.display()),
            Boot::Restore { disk, .. } => format!(
                "file={},format=qcow2,if=virtio,snapshot=on",
                disk.display()
            ),
        })
        .arg("-append")
        // no_timer_check: under an overloaded TCG host the kernel's IO-APIC timer check can
        // miss ticks and panic ("IO-APIC + timer doesn't work"), seen with 6 guests on 2 cores.
        // watchdog_thresh=60: a vCPU starved by the host for 20 s tripped the default 20 s
        // soft-lockup detector (seen at load 14); a real lockup still shows after 120 s.
        .arg(format!(
            "console=ttyS0 quiet panic=-1 no_timer_check watchdog_thresh=60 rig.name={} rig.ip={ip} rig.peer={peer} {}{}{}",
            role.as_str(),
            image.transport.cmdline_word(),
            if matches!(boot, Boot::Save { .. }) {
                " rig.snapshot=1"
            } else {
                ""
            },
            image
                .cmdline
                .iter()
                .map(|word| format!(" {word}"))
                .collect::<String>()
        ))
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-virtfs")
        .arg(format!(
            "local,path={},mount_tag=rig,security_model=none,id=rig",
            share.display()
        ))
        .args(["-netdev", netdev])
        .args(["-device", &format!("virtio-net-pci,netdev=n0,mac={mac}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match boot {
        Boot::Cold => {}
        Boot::Save { monitor, .. } => {
            qemu.arg("-monitor")
                .arg(format!("unix:{},server=on,wait=off", monitor.display()));
        }
        Boot::Restore { state, .. } => {
            qemu.arg("-incoming").arg(format!(
                "exec:cat {}",
                shell_quoted(&state.display().to_string())
            ));
        }
    }
    qemu
}

/// One end of the guests' wire: a qemu `dgram` netdev between two unix sockets.
pub(crate) fn dgram_netdev(local: &Path, remote: &Path) -> String {
    format!(
        "dgram,id=n0,local.type=unix,local.path={},remote.type=unix,remote.path={}",
        local.display(),
        remote.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_in_a_restored_state_path_stays_inside_the_shell_word() {
        assert_eq!(shell_quoted("/a b/it's"), "'/a b/it'\\''s'");
    }
}
