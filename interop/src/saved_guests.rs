//! Saved guests: each kernel's server and client are booted once, saved by qemu (a migration
//! into a file) while their initramfs waits for its peer, and restored for every suite after.
//!
//! Why: under TCG a Debian kernel's boot costs about 7 CPU-seconds per guest (firmware, kernel
//! init, module loading) and a restore about 0.3 s; the default matrix starts 28 guests on 2
//! cores, and every suite of every kernel started from its first instruction.
//!
//! Architecture Invariant: a restored guest is the guest a cold boot gives but for its clock
//! (set from the RTC when it resumes) and uptime. What it wrote to its disk before it was saved
//! is kept beside its memory (a qcow2 over the shared rootfs, which restores open read-only
//! under qemu's temp overlay, so memory and disk always agree); it is saved before it mounts the
//! share or starts anything of a suite; and every input that could make the saved state differ
//! from a fresh boot — kernel image and initramfs (the image key), rootfs, qemu binary, machine
//! options, command line — is in the key.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cache::{cache_root, KeyBuilder};
use crate::guest::{dgram_netdev, qemu_command, Boot, Launch};
use crate::process::{wait_until, GroupChild};
use crate::progress::{Phase, Progress};
use crate::suite::Role;

/// Bump when what a saved guest holds or how it is restored changes (the qemu command shape,
/// the initramfs protocol), to make every saved pair stale.
pub const SAVED_GUEST_FORMAT: &str = "saved-guest-1";

/// Longest wait for a guest booted to be saved to say it is ready (a cold boot under load).
const READY_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a migration of a 256 MiB guest into a file may take.
const SAVE_TIMEOUT: Duration = Duration::from_secs(120);
/// A monitor reply larger than this is not qemu's human monitor.
const MONITOR_REPLY_LIMIT: usize = 1 << 20;

/// A kernel's saved server and client.
#[derive(Debug, Clone)]
pub struct SavedPair {
    dir: PathBuf,
    /// Per role (server, client): the saved state and the disk it wrote.
    states: [PathBuf; 2],
    disks: [PathBuf; 2],
}

fn role_index(role: Role) -> usize {
    match role {
        Role::Srv => 0,
        Role::Cli => 1,
    }
}

impl SavedPair {
    fn in_dir(dir: PathBuf) -> Self {
        let file = |role: Role, ext: &str| dir.join(format!("{}.{ext}", role.as_str()));
        SavedPair {
            states: [file(Role::Srv, "state"), file(Role::Cli, "state")],
            disks: [file(Role::Srv, "qcow2"), file(Role::Cli, "qcow2")],
            dir,
        }
    }

    /// How `role` starts from this pair: its saved state, over the disk it wrote.
    pub(crate) fn restore(&self, role: Role) -> Boot<'_> {
        Boot::Restore {
            state: self.state(role),
            disk: self.disk(role),
        }
    }

    /// The saved state of `role`, for `-incoming`.
    pub fn state(&self, role: Role) -> &Path {
        &self.states[role_index(role)]
    }

    /// The disk `role` wrote before it was saved.
    pub fn disk(&self, role: Role) -> &Path {
        &self.disks[role_index(role)]
    }

    fn is_complete(&self) -> bool {
        self.dir.join("complete").exists()
            && self.states.iter().chain(&self.disks).all(|p| p.exists())
    }

    /// Forget this pair (a restore failed with it); the next run saves a new one.
    pub fn remove(&self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The key of a launch's saved pair: everything that shapes the guest up to the moment it is
/// saved.
pub(crate) fn pair_key(launch: &Launch<'_>, qemu_version: &str) -> String {
    let rootfs_entry = launch
        .rootfs
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| launch.rootfs.display().to_string());
    KeyBuilder::new("saved-guest")
        .add("format", SAVED_GUEST_FORMAT.as_bytes())
        .add("kernel", launch.image.key.as_bytes())
        .add("rootfs", rootfs_entry.as_bytes())
        .add("qemu", qemu_version.as_bytes())
        .add("accel", launch.accel.as_bytes())
        .add("memory", launch.settings.memory_mib.to_string().as_bytes())
        .add("vcpus", launch.settings.vcpus.to_string().as_bytes())
        .add("cmdline", launch.image.cmdline.join(" ").as_bytes())
        .add("transport", launch.image.transport.as_str().as_bytes())
        .finish()
}

/// `qemu-system-x86_64 --version`, asked once.
fn qemu_version() -> Option<&'static str> {
    static VERSION: OnceLock<Option<String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let output = crate::process::output_with_timeout(
                "qemu --version",
                {
                    let mut command = Command::new("qemu-system-x86_64");
                    command.arg("--version");
                    command
                },
                Duration::from_secs(30),
            )
            .ok()?;
            output
                .status
                .success()
                .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        })
        .as_deref()
}

/// One lock per key, so the suites of one kernel that start together save it once.
fn key_lock(key: &str) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<BTreeMap<String, Arc<Mutex<()>>>>> = OnceLock::new();
    let locks = LOCKS.get_or_init(Default::default);
    let mut locks = locks
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    locks.entry(key.to_owned()).or_default().clone()
}

/// Keys whose saving failed in this process: not tried again by the next suite.
fn failed_keys() -> &'static Mutex<BTreeSet<String>> {
    static FAILED: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    FAILED.get_or_init(Default::default)
}

/// The launch's saved pair: from the cache, or saved now (both guests booted side by side).
/// `None` when the kernel cannot be saved (no overlayfs) or saving failed; the caller then
/// boots cold. Reported on `progress` either way.
pub(crate) fn saved_pair(launch: &Launch<'_>, progress: &Progress) -> Option<SavedPair> {
    let name = &launch.image.name;
    let Some(version) = qemu_version() else {
        progress.done(
            Phase::Snapshot,
            name,
            "qemu --version failed: booting cold",
            None,
        );
        return None;
    };
    let key = pair_key(launch, version);
    let lock = key_lock(&key);
    let _held = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let saved_root = cache_root().join("saved-guests");
    let dir = saved_root.join(format!("{name}-{}", &key[..16.min(key.len())]));
    let pair = SavedPair::in_dir(dir.clone());
    if pair.is_complete() {
        return Some(pair);
    }
    if let Ok(reason) = fs::read_to_string(dir.join("unsupported")) {
        progress.done(
            Phase::Snapshot,
            name,
            &format!("cached: cannot be saved ({}), booting cold", reason.trim()),
            None,
        );
        return None;
    }
    if failed_keys()
        .lock()
        .map(|failed| failed.contains(&key))
        .unwrap_or(true)
    {
        return None;
    }
    let started = Instant::now();
    progress.start(
        Phase::Snapshot,
        name,
        "booting server and client to save them",
    );
    match save_pair(launch, &pair) {
        Ok(SaveOutcome::Saved) => {
            let pruned = remove_older_pairs(&saved_root, name, &dir);
            let size: u64 = pair
                .states
                .iter()
                .chain(&pair.disks)
                .filter_map(|p| fs::metadata(p).ok())
                .map(|m| m.len())
                .sum();
            progress.done(
                Phase::Snapshot,
                name,
                &format!(
                    "saved {} ({} MiB); every suite of this kernel restores it{}",
                    &key[..16.min(key.len())],
                    size >> 20,
                    if pruned > 0 {
                        format!(" (removed {pruned} older pair(s) of this kernel)")
                    } else {
                        String::new()
                    }
                ),
                Some(started.elapsed()),
            );
            Some(pair)
        }
        Ok(SaveOutcome::Unsupported(reason)) => {
            let _ = fs::write(dir.join("unsupported"), &reason);
            progress.done(
                Phase::Snapshot,
                name,
                &format!("cannot be saved ({reason}), booting cold"),
                Some(started.elapsed()),
            );
            None
        }
        Err(err) => {
            let _ = fs::remove_dir_all(&dir);
            if let Ok(mut failed) = failed_keys().lock() {
                failed.insert(key);
            }
            progress.done(
                Phase::Snapshot,
                name,
                &format!("saving failed, booting cold: {err:#}"),
                Some(started.elapsed()),
            );
            None
        }
    }
}

/// Remove the pairs saved for kernel `name` under other keys (a pair is 80-320 MiB and any change
/// to the kernel, initramfs or command line makes a new one); how many were removed.
fn remove_older_pairs(saved_root: &Path, name: &str, keep: &Path) -> usize {
    let Ok(entries) = fs::read_dir(saved_root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let file_name = entry.file_name().to_string_lossy().into_owned();
        // `<name>-<16 hex digits>`: "linux-6.12" must not take "linux-6.12-acked-evict-…".
        let same_kernel = file_name.rsplit_once('-').is_some_and(|(kernel, key)| {
            kernel == name && key.len() == 16 && key.chars().all(|c| c.is_ascii_hexdigit())
        });
        if same_kernel && path != keep && fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

enum SaveOutcome {
    Saved,
    Unsupported(String),
}

/// Boot both roles with `rig.snapshot=1` and save each into the pair's directory.
fn save_pair(launch: &Launch<'_>, pair: &SavedPair) -> Result<SaveOutcome> {
    let dir = &pair.dir;
    if dir.exists() {
        fs::remove_dir_all(dir)?;
    }
    fs::create_dir_all(dir)?;
    // Short and private: unix socket paths are limited to 108 bytes.
    let scratch = nix::unistd::mkdtemp(&std::env::temp_dir().join("rig-save-XXXXXX"))
        .context("creating a private directory for the save")?;
    let share = scratch.join("share");
    fs::create_dir_all(&share)?;
    let outcomes = std::thread::scope(|scope| {
        let handles: Vec<_> = Role::BOTH
            .iter()
            .map(|&role| {
                let (scratch, share) = (&scratch, &share);
                scope.spawn(move || save_guest(launch, role, pair, scratch, share))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("saving thread panicked")))
            })
            .collect::<Vec<_>>()
    });
    let _ = fs::remove_dir_all(&scratch);
    let mut unsupported = None;
    for outcome in outcomes {
        match outcome? {
            SaveOutcome::Saved => {}
            SaveOutcome::Unsupported(reason) => unsupported = Some(reason),
        }
    }
    if let Some(reason) = unsupported {
        return Ok(SaveOutcome::Unsupported(reason));
    }
    fs::write(dir.join("complete"), SAVED_GUEST_FORMAT)?;
    Ok(SaveOutcome::Saved)
}

/// Boot one guest to its "ready" line on a fresh qcow2 over the rootfs, migrate it into its
/// state file, and stop it.
fn save_guest(
    launch: &Launch<'_>,
    role: Role,
    pair: &SavedPair,
    scratch: &Path,
    share: &Path,
) -> Result<SaveOutcome> {
    let monitor = scratch.join(format!("{}.mon", role.as_str()));
    let console = pair.dir.join(format!("{}.console", role.as_str()));
    let state = pair.state(role);
    let disk = pair.disk(role);
    let partial = pair.dir.join(format!("{}.state.partial", role.as_str()));
    // qemu-img resolves a relative backing file against the qcow2's directory.
    let rootfs = fs::canonicalize(launch.rootfs)
        .with_context(|| format!("rootfs {}", launch.rootfs.display()))?;
    let mut create = Command::new("qemu-img");
    create
        .args(["create", "-q", "-f", "qcow2", "-F", "raw", "-b"])
        .arg(&rootfs)
        .arg(disk);
    let created =
        crate::process::output_with_timeout("qemu-img create", create, Duration::from_secs(60))?;
    if !created.status.success() {
        bail!(
            "qemu-img create {}: {}",
            disk.display(),
            String::from_utf8_lossy(&created.stderr).trim()
        );
    }
    let launch = Launch {
        share,
        boot: Boot::Save {
            monitor: &monitor,
            disk,
        },
        ..*launch
    };
    // Nothing listens at the remote end: the guest's pings go nowhere until it is restored.
    let netdev = dgram_netdev(
        &scratch.join(format!("{}.sock", role.as_str())),
        &scratch.join("nobody.sock"),
    );
    let command = qemu_command(&launch, role, &console, &netdev);
    let mut child = GroupChild::spawn(
        &format!("qemu {} {} (to save)", launch.image.name, role.as_str()),
        command,
    )?;
    let result = (|| {
        let mut said = String::new();
        let ready = wait_until(READY_TIMEOUT, Duration::from_millis(100), || {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "qemu exited before the guest was ready ({status}); console:\n{}",
                    crate::process::tail(&console, 20)
                );
            }
            said = fs::read_to_string(&console).unwrap_or_default();
            Ok(said.contains("rig-snapshot: ready") || said.contains("rig-snapshot: unsupported"))
        })?;
        if !ready {
            bail!(
                "the guest did not get ready to be saved within {}s; console:\n{}",
                READY_TIMEOUT.as_secs(),
                crate::process::tail(&console, 20)
            );
        }
        if let Some(line) = said
            .lines()
            .find(|line| line.starts_with("rig-snapshot: unsupported"))
        {
            return Ok(SaveOutcome::Unsupported(
                line.trim_start_matches("rig-snapshot: ").to_owned(),
            ));
        }
        let mut hmp = Monitor::connect(&monitor)?;
        hmp.command("migrate_set_parameter max-bandwidth 8G")?;
        hmp.command(&format!(
            "migrate -d \"exec:cat > {}\"",
            shell_word(&partial)?
        ))?;
        let mut last = String::new();
        let done = wait_until(SAVE_TIMEOUT, Duration::from_millis(100), || {
            last = hmp.command("info migrate")?;
            if last.contains("Migration status: failed")
                || last.contains("Migration status: cancelled")
            {
                bail!("qemu could not save the guest:\n{last}");
            }
            Ok(last.contains("Migration status: completed"))
        })?;
        if !done {
            bail!(
                "saving did not finish within {}s:\n{last}",
                SAVE_TIMEOUT.as_secs()
            );
        }
        let _ = hmp.command("quit");
        fs::rename(&partial, state)?;
        Ok(SaveOutcome::Saved)
    })();
    // qemu quits after the save; a qemu that does not (or a save that failed) is killed here.
    let _ = child.wait_timeout(Duration::from_secs(10));
    child.kill_group();
    result
}

/// A path as one word inside the double quotes of a monitor command that qemu passes to
/// `sh -c`: only characters that need no quoting in either.
fn shell_word(path: &Path) -> Result<String> {
    let text = path.display().to_string();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c))
    {
        Ok(text)
    } else {
        bail!(
            "cannot save a guest under {text}: the path must be plain (letters, digits, /._-+,:@); set RIG_VM_CACHE"
        )
    }
}

/// qemu's human monitor over its unix socket: a command, then its output up to the next prompt.
struct Monitor {
    stream: UnixStream,
}

impl Monitor {
    fn connect(path: &Path) -> Result<Self> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(stream) => break stream,
                Err(err) if Instant::now() >= deadline => {
                    return Err(err).with_context(|| format!("monitor {}", path.display()))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut monitor = Monitor { stream };
        monitor.read_to_prompt()?;
        Ok(monitor)
    }

    fn command(&mut self, line: &str) -> Result<String> {
        self.stream.write_all(format!("{line}\n").as_bytes())?;
        self.read_to_prompt()
    }

    fn read_to_prompt(&mut self) -> Result<String> {
        let mut reply = Vec::new();
        let mut chunk = [0u8; 4096];
        while !reply.ends_with(b"(qemu) ") {
            let n = self
                .stream
                .read(&mut chunk)
                .context("reading qemu's monitor")?;
            if n == 0 {
                bail!("qemu closed its monitor");
            }
            reply.extend_from_slice(&chunk[..n]);
            if reply.len() > MONITOR_REPLY_LIMIT {
                bail!("qemu's monitor said more than {MONITOR_REPLY_LIMIT} bytes");
            }
        }
        Ok(String::from_utf8_lossy(&reply).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_pair_removes_only_older_pairs_of_its_own_kernel() {
        let root = tempfile::tempdir().unwrap();
        let names = [
            "linux-6.12-0123456789abcdef",
            "linux-6.12-fedcba9876543210",
            "linux-6.12-acked-evict-0123456789abcdef",
            "linux-6.1-0123456789abcdef",
            "linux-6.12-notakey",
        ];
        for name in names {
            fs::create_dir_all(root.path().join(name)).unwrap();
        }
        let keep = root.path().join("linux-6.12-fedcba9876543210");
        assert_eq!(remove_older_pairs(root.path(), "linux-6.12", &keep), 1);
        let mut left: Vec<_> = fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "linux-6.1-0123456789abcdef",
                "linux-6.12-acked-evict-0123456789abcdef",
                "linux-6.12-fedcba9876543210",
                "linux-6.12-notakey",
            ]
        );
    }

    #[test]
    fn plain_paths_pass_and_others_are_refused() {
        assert_eq!(
            shell_word(Path::new(
                "/w/target/vm/saved-guests/linux-6.12-ab/srv.state.partial"
            ))
            .unwrap(),
            "/w/target/vm/saved-guests/linux-6.12-ab/srv.state.partial"
        );
        for bad in ["/a b/x", "/a'b", "/a\"b", "/a;b", "/a$b", "/a`b`"] {
            assert!(shell_word(Path::new(bad)).is_err(), "{bad}");
        }
    }
}
