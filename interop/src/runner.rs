//! The runner: boots a server and a client guest per kernel on a private virtual wire, runs a
//! suite's plan in them, collects results, pcaps and dmesg through a 9p share, and judges cases.
//!
//! Architecture Invariant: the guests' network is a qemu `dgram` netdev from each guest to the
//! rig's relay (crate::wire), unix sockets in a private temporary directory, so no packet ever
//! reaches a host interface and every frame passes the relay; every qemu runs
//! in its own process group (see [`crate::process`]) and is killed on every exit path.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use crate::cache::{cache_root, sha256_file, KeyBuilder};
use crate::guest::{dgram_netdev, qemu_booting, qemu_command, Boot, Launch};
pub use crate::guest::{AccelChoice, RunSettings};
use crate::images::{vm_images_dir, KernelImage};
use crate::known::KnownProblem;
use crate::process::{wait_until, GroupChild};
use crate::progress::{Phase, Progress};
use crate::report::{Artifact, KernelRun};
use crate::results::{
    dmesg_outcome, evaluate_case, parse_result_lines, parse_step_lines, scan_kernel_log,
    CaseOutcome, Verdict,
};
use crate::suite::{PcapCheck, Role, Suite};
use crate::wire::WireRelay;

/// The relay's capture of the whole pair's wire, and what it counted, in each run directory.
pub const WIRE_CAPTURE: &str = "wire.pcapng";
pub const WIRE_REPORT: &str = "wire.json";

/// Longest wait for a restored pair's drivers to start (restores took 2-8 s with six guests on
/// two cores) before it is given up for a cold boot.
const RESTORE_BOOT_TIMEOUT: Duration = Duration::from_secs(90);

/// An exclusive lock on the output directory for the life of a run: two runs writing the same
/// `runs/<kernel>/<suite>` directories would corrupt each other's results. The kernel drops the
/// lock when the process dies, however it dies.
#[derive(Debug)]
pub struct OutputLock {
    _lock: nix::fcntl::Flock<fs::File>,
}

/// Take the output directory's lock, or fail at once if another run holds it.
pub fn lock_output(out_root: &Path) -> Result<OutputLock> {
    use nix::fcntl::{Flock, FlockArg};
    fs::create_dir_all(out_root)?;
    let file = fs::File::create(out_root.join(".lock"))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(OutputLock { _lock: lock }),
        Err((_, errno)) => bail!(
            "another interop run is using {} ({errno}); wait for it or set RIG_INTEROP_OUT",
            out_root.display()
        ),
    }
}

/// Name of a run's private wire directory under the temp dir: one per process, kernel and
/// suite, since `--jobs` may run several suites of one kernel side by side.
fn wire_dir_name(pid: u32, kernel: &str, suite: &str) -> String {
    format!("rig-wire-{pid}-{kernel}-{suite}")
}

/// Remove wire directories left by runs that were killed (their pid no longer exists).
fn remove_stale_wire_dirs(temp: &Path) {
    let Ok(entries) = fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("rig-wire-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// How long the KVM probe waits for the guest's userspace.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the KVM probe waits for the kernel's banner (`earlyprintk`).
const PROBE_SILENT_LIMIT: Duration = Duration::from_secs(5);

/// Does KVM boot this kernel to userspace? Probed once per kernel and host kernel, then cached.
pub fn probe_kvm(image: &KernelImage, progress: &Progress) -> Result<bool> {
    if fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        progress.done(
            Phase::KvmProbe,
            &image.name,
            "no usable /dev/kvm → tcg",
            None,
        );
        return Ok(false);
    }
    let host_release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let key = KeyBuilder::new("kvm-probe")
        .add("kernel", image.key.as_bytes())
        .add("host", host_release.as_bytes())
        .finish();
    let dir = cache_root().join("kvm-probe");
    fs::create_dir_all(&dir)?;
    let verdict_file = dir.join(format!("{}-{key}", image.name));
    if let Ok(verdict) = fs::read_to_string(&verdict_file) {
        let works = verdict.trim() == "kvm";
        progress.done(
            Phase::KvmProbe,
            &image.name,
            &format!(
                "cached: kvm {}",
                if works { "works" } else { "fails → tcg" }
            ),
            None,
        );
        return Ok(works);
    }
    let started = Instant::now();
    let console = dir.join(format!("{}-{key}.console", image.name));
    let _ = fs::remove_file(&console);
    let mut qemu = qemu_booting(image, "kvm", "host", None, 256);
    qemu.args([
        "-append",
        "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 no_timer_check rig.probe=1",
    ])
    .arg("-serial")
    .arg(format!("file:{}", console.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut child = GroupChild::spawn("kvm-probe", qemu)?;
    // `earlyprintk` makes a kernel that runs at all print its banner within its first
    // milliseconds; one KVM cannot run (the host's PVM variant) gets as far as the real-mode
    // setup's "Probing EDD" and prints nothing more, so no banner after PROBE_SILENT_LIMIT ends
    // the probe instead of the whole PROBE_TIMEOUT.
    let mut silent = false;
    let reached = wait_until(PROBE_TIMEOUT, Duration::from_millis(100), || {
        let text = fs::read_to_string(&console).unwrap_or_default();
        silent = !text.contains("Linux version") && started.elapsed() >= PROBE_SILENT_LIMIT;
        Ok(silent || text.contains("rig-probe: userspace reached"))
    })? && !silent;
    child.kill_group();
    fs::write(&verdict_file, if reached { "kvm" } else { "tcg" })?;
    let verdict = if reached {
        "kvm works".to_owned()
    } else if silent {
        format!(
            "kvm: no kernel banner in {} s → tcg",
            PROBE_SILENT_LIMIT.as_secs()
        )
    } else {
        format!(
            "kvm did not reach userspace in {} s → tcg",
            PROBE_TIMEOUT.as_secs()
        )
    };
    progress.done(
        Phase::KvmProbe,
        &image.name,
        &verdict,
        Some(started.elapsed()),
    );
    Ok(reached)
}

/// A running guest.
struct Guest {
    role: Role,
    child: GroupChild,
    console: PathBuf,
}

/// Copy a directory's regular files (one level) into `to`.
fn copy_files(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        if path.is_file() {
            fs::copy(&path, to.join(path.file_name().unwrap_or_default()))?;
        }
    }
    Ok(())
}

/// Fill the share: driver, helpers, the suite's scripts, the plan, extra files, and
/// `etc/kernel-watch-known.txt` (the known findings over this lane's transport, kind pattern and
/// signature: the wire-fuzz watch goes on past their lines; empty when there are none).
fn prepare_share(
    share: &Path,
    suite: &Suite,
    settings: &RunSettings,
    known: &[KnownProblem],
) -> Result<()> {
    if share.exists() {
        fs::remove_dir_all(share)?;
    }
    fs::create_dir_all(share.join("out/sync"))?;
    let guest = vm_images_dir().join("guest");
    for file in ["driver.sh", "lib.sh"] {
        fs::copy(guest.join(file), share.join(file))?;
    }
    copy_files(
        &vm_images_dir().join("suites").join(&suite.name),
        &share.join(&suite.name),
    )?;
    fs::write(share.join("plan"), suite.plan())?;
    let extras = suite
        .extra_files
        .iter()
        .map(|e| (e.from.clone(), e.to.clone()))
        .chain(settings.extra_files.iter().cloned());
    for (from, to) in extras {
        let from = crate::cache::resolve_workspace_path(&from);
        let target = share.join(&to);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(&from, &target)
            .with_context(|| format!("extra file {} → share/{to}", from.display()))?;
    }
    fs::create_dir_all(share.join("etc"))?;
    fs::write(
        share.join("etc/kernel-watch-known.txt"),
        crate::known::kernel_watch_known_file(known),
    )?;
    Ok(())
}

/// The guest's `uname -r` from its console's `rig-init: PID1 ... kernel=<release>` line.
pub fn release_from_console(console: &str) -> Option<String> {
    console
        .lines()
        .find_map(|line| line.split("kernel=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
}

/// Boot both guests for `image`, run `suite`, and judge it. Harness failures end up in
/// `KernelRun::error`; they never leave a qemu behind.
pub fn run_kernel(
    image: &KernelImage,
    rootfs: &Path,
    suite: &Suite,
    settings: &RunSettings,
    progress: &Progress,
) -> KernelRun {
    let started = Instant::now();
    let accel = match settings.accel {
        AccelChoice::Tcg => Ok("tcg"),
        AccelChoice::Kvm => Ok("kvm"),
        AccelChoice::Auto => probe_kvm(image, progress).map(|kvm| if kvm { "kvm" } else { "tcg" }),
    };
    let run_dir = settings
        .out_root
        .join("runs")
        .join(&image.name)
        .join(&suite.name);
    let mut run = KernelRun {
        kernel: image.name.clone(),
        release: image.release.clone(),
        version: image.version.clone(),
        origin: image.origin.clone(),
        provenance: image.provenance.clone(),
        accel: accel
            .as_ref()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "none".into()),
        suite: suite.name.clone(),
        wall_ms: 0,
        boot_ms: None,
        cases: Vec::new(),
        artifacts: Vec::new(),
        error: None,
        attempt: 1,
        guest_died: None,
        transport: image.transport,
        retried_after: None,
        gate: None,
    };
    // The known findings over this lane's transport, read once: the share carries them to the
    // guest watch and the dmesg check judges by them.
    let known = crate::findings::load_findings()
        .map(|all| crate::findings::known_problems(&all, image.transport));
    let result = accel.and_then(|accel| {
        let known = known.as_deref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        boot_and_wait(
            image, rootfs, suite, settings, progress, accel, known, &run_dir, &mut run,
        )
    });
    if let Err(err) = result {
        run.error = Some(format!("{err:#}"));
    }
    // Unreadable findings already failed the run above; judge with none known (stricter).
    if let Err(err) = judge(suite, &run_dir, known.as_deref().unwrap_or(&[]), &mut run) {
        run.error
            .get_or_insert(format!("collecting results: {err:#}"));
    }
    run.wall_ms = started.elapsed().as_millis() as u64;
    progress.done(
        Phase::Collect,
        &image.name,
        &format!(
            "{} {} ({} cases)",
            suite.name,
            if run.passed() { "PASS" } else { "FAIL" },
            run.cases.len()
        ),
        Some(started.elapsed()),
    );
    run
}

#[allow(clippy::too_many_arguments)]
fn boot_and_wait(
    image: &KernelImage,
    rootfs: &Path,
    suite: &Suite,
    settings: &RunSettings,
    progress: &Progress,
    accel: &str,
    known: &[KnownProblem],
    run_dir: &Path,
    run: &mut KernelRun,
) -> Result<()> {
    let share = run_dir.join("share");
    prepare_share(&share, suite, settings, known)?;
    // unix socket paths are limited to 108 bytes: keep them short, under /tmp.
    remove_stale_wire_dirs(&std::env::temp_dir());
    let sockets =
        std::env::temp_dir().join(wire_dir_name(std::process::id(), &image.name, &suite.name));
    if sockets.exists() {
        fs::remove_dir_all(&sockets)?;
    }
    fs::create_dir_all(&sockets)?;
    let srv_sock = sockets.join("srv.sock");
    let cli_sock = sockets.join("cli.sock");
    let launch = Launch {
        image,
        rootfs,
        settings,
        accel,
        share: &share,
        boot: Boot::Cold,
    };
    // The kernel's saved pair, when there is one (made by the first suite that needs it).
    let saved = if settings.cold_boot || accel != "tcg" {
        None
    } else {
        crate::saved_guests::saved_pair(&launch, progress)
    };
    // Start the pair, follow it to the end, and stop it; the guests stay for their consoles.
    let attempt = |boots: [Boot<'_>; 2], how: &str, boot_timeout: Duration, run: &mut KernelRun| {
        let boot_started = Instant::now();
        // The relay first: its sockets are the guests' remotes, and it must hear the first frame.
        let relay = WireRelay::start(
            &sockets,
            (&srv_sock, &cli_sock),
            &run_dir.join(WIRE_CAPTURE),
            settings.iwarp_accept_fence,
        )?;
        let wire = [
            (srv_sock.as_path(), relay.server_remote.as_path()),
            (cli_sock.as_path(), relay.client_remote.as_path()),
        ];
        let mut guests = start_pair(&launch, boots, run_dir, wire, &image.name)?;
        let result = supervise(
            &mut guests,
            suite,
            &share,
            progress,
            (&image.name, how, boot_started, boot_timeout),
            run,
        );
        for guest in &mut guests {
            guest.child.kill_group();
        }
        let report = relay.stop()?;
        fs::write(
            run_dir.join(WIRE_REPORT),
            serde_json::to_string_pretty(&report)? + "\n",
        )?;
        anyhow::Ok((guests, result))
    };
    let (guests, result) = match &saved {
        None => attempt(
            [Boot::Cold, Boot::Cold],
            "cold boot",
            suite.boot_timeout(),
            run,
        )?,
        Some(saved) => {
            // A restored pair is up in seconds even under load; one that is not, hung, and is
            // better booted cold than waited for.
            let boots = [saved.restore(Role::Srv), saved.restore(Role::Cli)];
            let timeout = suite.boot_timeout().min(RESTORE_BOOT_TIMEOUT);
            let (guests, result) = attempt(boots, "restored the saved pair", timeout, run)?;
            match result {
                // A restore that never reached the drivers (and no kernel died): the saved pair
                // is not usable with this qemu; drop it and boot from scratch once.
                Err(err) if run.boot_ms.is_none() && run.guest_died.is_none() => {
                    progress.done(
                        Phase::Boot,
                        &image.name,
                        &format!(
                            "restoring the saved pair failed ({err:#}); removed it, booting cold"
                        ),
                        None,
                    );
                    saved.remove();
                    prepare_share(&share, suite, settings, known)?;
                    attempt(
                        [Boot::Cold, Boot::Cold],
                        "cold boot",
                        suite.boot_timeout(),
                        run,
                    )?
                }
                result => (guests, result),
            }
        }
    };
    let _ = fs::remove_dir_all(&sockets);
    for guest in &guests {
        if let Some(release) = fs::read_to_string(&guest.console)
            .ok()
            .as_deref()
            .and_then(release_from_console)
        {
            run.release = release;
        }
    }
    result
}

/// Start the server's qemu, wait for its end of the wire, then the client's; each sends to its
/// `remote`, the relay's socket on its side (crate::wire).
fn start_pair(
    launch: &Launch<'_>,
    boots: [Boot<'_>; 2],
    run_dir: &Path,
    [(srv_sock, srv_remote), (cli_sock, cli_remote)]: [(&Path, &Path); 2],
    kernel: &str,
) -> Result<Vec<Guest>> {
    let mut guests = Vec::new();
    for ((role, local, remote), boot) in [
        (Role::Srv, srv_sock, srv_remote),
        (Role::Cli, cli_sock, cli_remote),
    ]
    .into_iter()
    .zip(boots)
    {
        let console = run_dir.join(format!("{}.console", role.as_str()));
        let _ = fs::remove_file(&console);
        let _ = fs::remove_file(local);
        let launch = Launch { boot, ..*launch };
        let command = qemu_command(&launch, role, &console, &dgram_netdev(local, remote));
        let child = GroupChild::spawn(&format!("qemu {kernel} {}", role.as_str()), command)?;
        // The server's socket must exist before the client starts sending to it.
        if role == Role::Srv
            && !wait_until(Duration::from_secs(10), Duration::from_millis(20), || {
                Ok(local.exists())
            })?
        {
            bail!("server qemu did not create {} within 10 s", local.display());
        }
        guests.push(Guest {
            role,
            child,
            console,
        });
    }
    Ok(guests)
}

/// Wait for boot, follow STEP lines as progress, and wait for both guests to power off.
fn supervise(
    guests: &mut [Guest],
    suite: &Suite,
    share: &Path,
    progress: &Progress,
    (kernel, how, boot_started, boot_timeout): (&str, &str, Instant, Duration),
    run: &mut KernelRun,
) -> Result<()> {
    let out = share.join("out");
    let booted = wait_until(boot_timeout, Duration::from_millis(100), || {
        for guest in guests.iter_mut() {
            if let Some(status) = guest.child.try_wait()? {
                run.guest_died = guest_death_of(guest);
                bail!(
                    "{} qemu exited during boot ({status}); console:\n{}",
                    guest.role.as_str(),
                    crate::process::tail(&guest.console, 20)
                );
            }
        }
        Ok(Role::BOTH
            .iter()
            .all(|r| out.join(format!("{}.driver.log", r.as_str())).exists()))
    })?;
    if !booted {
        bail!(
            "guests did not start their drivers within {}s (accel {}); server console:\n{}",
            boot_timeout.as_secs(),
            run.accel,
            crate::process::tail(&guests[0].console, 20)
        );
    }
    run.boot_ms = Some(boot_started.elapsed().as_millis() as u64);
    progress.done(
        Phase::Boot,
        kernel,
        &format!("both guests up ({}, {how})", run.accel),
        Some(boot_started.elapsed()),
    );
    let deadline = suite.run_timeout();
    // STEP lines already printed, per role (each guest appends to its own file).
    let mut reported = [0usize; 2];
    // A heartbeat when nothing was reported for 15 s: the case in progress and for how long.
    let mut last_line = Instant::now();
    let mut last_step = String::from("setup");
    // Per guest: whether its console was read for a kernel death after its qemu exited.
    let mut console_read = vec![false; guests.len()];
    let finished = wait_until(deadline, Duration::from_millis(250), || {
        for (index, role) in Role::BOTH.iter().enumerate() {
            let text = fs::read_to_string(out.join(format!("steps.{}", role.as_str())))
                .unwrap_or_default();
            let steps = parse_step_lines(&text);
            for step in steps.iter().skip(reported[index]) {
                let phase = if step.case == "setup" {
                    Phase::Setup
                } else {
                    Phase::Case
                };
                progress.done(
                    phase,
                    kernel,
                    &format!("{} {} rc={}", step.case, step.role, step.rc),
                    Some(Duration::from_millis(step.ms)),
                );
            }
            if steps.len() > reported[index] {
                last_line = Instant::now();
                if let Some(step) = steps.last() {
                    last_step.clone_from(&step.case);
                }
            }
            reported[index] = reported[index].max(steps.len());
        }
        if last_line.elapsed() >= Duration::from_secs(15) {
            let running = suite
                .cases
                .iter()
                .skip_while(|c| c.name != last_step)
                .nth(1)
                .map_or("(finishing)", |c| c.name.as_str());
            progress.start(
                Phase::Case,
                kernel,
                &format!(
                    "{} {running} still running (heartbeat: no step finished for {:.0}s)",
                    suite.name,
                    last_line.elapsed().as_secs_f64()
                ),
            );
            last_line = Instant::now();
        }
        let mut all_exited = true;
        let mut death = None;
        for (index, guest) in guests.iter_mut().enumerate() {
            let exited = guest.child.try_wait()?.is_some();
            all_exited &= exited;
            // Each guest's console is read once, when its qemu is first seen gone.
            if exited && !console_read[index] {
                console_read[index] = true;
                death = death.or_else(|| guest_death_of(guest));
            }
        }
        // A guest whose kernel died ends the run now: the other guest would only wait out
        // every remaining case against a peer that is gone.
        if let Some(death) = death {
            run.guest_died = Some(death.clone());
            for guest in guests.iter_mut() {
                guest.child.kill_group();
            }
            bail!("{death}");
        }
        Ok(all_exited)
    })?;
    if !finished {
        for guest in guests.iter_mut() {
            guest.child.kill_group();
        }
        bail!(
            "suite {} did not finish within {}s; guests killed",
            suite.name,
            deadline.as_secs()
        );
    }
    Ok(())
}

/// How a guest that has exited died, when its console shows a kernel panic.
fn guest_death_of(guest: &Guest) -> Option<String> {
    /// The panic and the Oops before it are at the console's end; a guest under a chatty suite
    /// may have logged megabytes before them.
    const CONSOLE_TAIL_BYTES: u64 = 256 << 10;
    let text = crate::process::read_tail(&guest.console, CONSOLE_TAIL_BYTES).ok()?;
    crate::results::guest_death(&text)
        .map(|how| format!("the {} guest's kernel died: {how}", guest.role.as_str()))
}

/// Judge every case and the host checks from what the guests left in `out/`.
fn judge(suite: &Suite, run_dir: &Path, known: &[KnownProblem], run: &mut KernelRun) -> Result<()> {
    let out = run_dir.join("share/out");
    split_suite_capture(&out)?;
    let read = |name: &str| fs::read_to_string(out.join(name)).unwrap_or_default();
    let steps: Vec<_> = Role::BOTH
        .iter()
        .flat_map(|r| parse_step_lines(&read(&format!("steps.{}", r.as_str()))))
        .collect();
    let mut results = Vec::new();
    for case in &suite.cases {
        for role in Role::BOTH {
            results.extend(parse_result_lines(&read(&format!(
                "{}.{}.log",
                case.name,
                role.as_str()
            ))));
        }
    }
    run.cases = suite
        .cases
        .iter()
        .map(|case| evaluate_case(case, &steps, &results))
        .collect();
    let mut artifacts: Vec<(String, PathBuf)> = Vec::new();
    if suite.host_checks.dmesg {
        let mut problems = Vec::new();
        let mut logs = 0;
        for role in Role::BOTH {
            for path in [
                out.join(format!("{}.dmesg", role.as_str())),
                run_dir.join(format!("{}.console", role.as_str())),
            ] {
                if let Ok(text) = fs::read_to_string(&path) {
                    if path.extension().is_some_and(|e| e == "dmesg") {
                        logs += 1;
                    }
                    let source = path
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned();
                    problems.extend(scan_kernel_log(&text, &source));
                    artifacts.push((source, path));
                }
            }
        }
        let mut slices = Vec::new();
        for case in &suite.cases {
            for role in Role::BOTH {
                let slice = out.join(format!("{}.{}.dmesg", case.name, role.as_str()));
                if let Ok(text) = crate::snapshots::read_bounded(&slice) {
                    slices.push((case.name.clone(), text));
                }
            }
        }
        crate::results::attribute_to_cases(&mut problems, &slices);
        run.cases.push(dmesg_outcome(&problems, logs, known));
    }
    if let Some(check) = &suite.host_checks.pcap {
        if check.applies_to(suite.cases.iter().map(|case| case.name.as_str())) {
            run.cases.push(pcap_outcome(check, &out.join(&check.file)));
        }
    }
    for case in &suite.cases {
        for artifact in &case.artifacts {
            artifacts.push((artifact.clone(), out.join(artifact)));
        }
    }
    for (name, path) in artifacts {
        if let Ok(meta) = fs::metadata(&path) {
            run.artifacts.push(Artifact {
                name,
                path: path.display().to_string(),
                bytes: meta.len(),
                sha256: sha256_file(&path)?,
            });
        }
    }
    Ok(())
}

/// The client's whole-suite capture (`cli.suite.pcap`) cut into `<case>.pcap` by the case windows
/// it recorded (`capture.windows`); a case that already has its own pcap keeps it.
fn split_suite_capture(out: &Path) -> Result<()> {
    const MAX_CAPTURE: u64 = 512 << 20;
    let (pcap, windows) = (out.join("cli.suite.pcap"), out.join("capture.windows"));
    let (Ok(meta), Ok(windows)) = (fs::metadata(&pcap), fs::read_to_string(&windows)) else {
        return Ok(());
    };
    ensure!(
        meta.len() <= MAX_CAPTURE,
        "{} is larger than {MAX_CAPTURE} bytes",
        pcap.display()
    );
    let bytes = fs::read(&pcap)?;
    let cut = crate::capture::split_pcap(&bytes, &crate::capture::parse_windows(&windows))
        .with_context(|| format!("splitting {}", pcap.display()))?;
    for (case, file) in cut {
        let target = out.join(format!("{case}.pcap"));
        if !target.exists() && !case.contains('/') {
            fs::write(&target, file)?;
        }
    }
    Ok(())
}

/// Count frames matching the display filter with tshark.
fn pcap_outcome(check: &PcapCheck, pcap: &Path) -> CaseOutcome {
    let started = Instant::now();
    let mut outcome = CaseOutcome {
        name: "pcap".to_owned(),
        verdict: Verdict::Pass,
        duration_ms: 0,
        reasons: Vec::new(),
        results: Vec::new(),
    };
    let mut tshark = Command::new("tshark");
    tshark
        .arg("-r")
        .arg(pcap)
        .args(["-Y", &check.display_filter]);
    // Its own process group, a timeout and bounded output: the capture comes from a guest.
    let counted = crate::process::output_with_timeout("tshark", tshark, Duration::from_secs(120));
    match counted {
        Ok(output) if output.status.success() => {
            let frames = output
                .stdout
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .count() as u64;
            outcome.results.push(crate::results::ResultLine {
                case: "pcap".into(),
                role: "host".into(),
                verdict: if frames >= check.min_frames {
                    "pass"
                } else {
                    "fail"
                }
                .into(),
                fields: [
                    ("filter".to_string(), check.display_filter.clone()),
                    ("frames".to_string(), frames.to_string()),
                ]
                .into(),
            });
            if frames < check.min_frames {
                outcome.verdict = Verdict::Fail;
                outcome.reasons.push(format!(
                    "{}: {frames} frames match {:?}, need {}",
                    check.file, check.display_filter, check.min_frames
                ));
            }
        }
        Ok(output) => {
            outcome.verdict = Verdict::Fail;
            outcome.reasons.push(format!(
                "tshark -r {} failed ({})",
                pcap.display(),
                output.status
            ));
        }
        Err(err) => {
            outcome.verdict = Verdict::Fail;
            outcome.reasons.push(format!("running tshark: {err}"));
        }
    }
    outcome.duration_ms = started.elapsed().as_millis() as u64;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_run_on_the_same_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_output(dir.path()).unwrap();
        let err = lock_output(dir.path()).unwrap_err();
        assert!(err.to_string().contains("another interop run"), "{err}");
        drop(first);
        lock_output(dir.path()).unwrap();
    }

    #[test]
    fn stale_wire_dirs_of_dead_runs_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        // pid_max on Linux is at most 2^22, so this pid cannot exist.
        let dead = temp
            .path()
            .join(wire_dir_name(99_999_999, "linux-6.1", "smoke"));
        let alive = temp
            .path()
            .join(wire_dir_name(std::process::id(), "linux-6.1", "smoke"));
        let unrelated = temp.path().join("rig-wire-notapid");
        for dir in [&dead, &alive, &unrelated] {
            fs::create_dir_all(dir).unwrap();
        }
        remove_stale_wire_dirs(temp.path());
        assert!(!dead.exists());
        assert!(alive.exists());
        assert!(unrelated.exists());
    }

    #[test]
    fn suites_of_one_kernel_get_separate_wires() {
        assert_ne!(
            wire_dir_name(7, "linux-6.1", "drc"),
            wire_dir_name(7, "linux-6.1", "selftest")
        );
    }

    #[test]
    fn release_comes_from_the_pid1_console_line() {
        let console = "[    1.2] random\nrig-init: PID1 uptime=3.61 kernel=6.1.0-50-amd64\nrig-init: net up\n";
        assert_eq!(
            release_from_console(console).as_deref(),
            Some("6.1.0-50-amd64")
        );
        assert_eq!(release_from_console("nothing here"), None);
    }

    #[test]
    fn share_holds_driver_plan_and_suite_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let share = dir.path().join("share");
        let suite = Suite::load(&vm_images_dir().join("suites/smoke.toml")).unwrap();
        let extra = dir.path().join("rig-binary");
        fs::write(&extra, b"\x7fELF").unwrap();
        let settings = RunSettings {
            accel: AccelChoice::Tcg,
            memory_mib: 256,
            vcpus: 2,
            extra_files: vec![(extra, "bin/rig".into())],
            out_root: dir.path().to_owned(),
            cold_boot: false,
            iwarp_accept_fence: crate::wire::IWARP_ACCEPT_FENCE,
        };
        let known = [crate::known::KnownProblem {
            finding: "f".into(),
            kind: kernel_log::Kind::Warn,
            signature: " some_function+".into(),
        }];
        prepare_share(&share, &suite, &settings, &known).unwrap();
        assert_eq!(
            fs::read_to_string(share.join("etc/kernel-watch-known.txt")).unwrap(),
            crate::known::kernel_watch_known_file(&known)
        );
        assert!(share.join("driver.sh").is_file());
        assert!(share.join("smoke/nfs-client.sh").is_file());
        assert!(share.join("out/sync").is_dir());
        assert_eq!(fs::read(share.join("bin/rig")).unwrap(), b"\x7fELF");
        assert_eq!(
            fs::read_to_string(share.join("plan")).unwrap(),
            suite.plan()
        );
    }

    #[test]
    fn judging_an_empty_run_fails_every_case() {
        let dir = tempfile::tempdir().unwrap();
        let suite = Suite::load(&vm_images_dir().join("suites/smoke.toml")).unwrap();
        let mut run = KernelRun {
            kernel: "k".into(),
            release: "r".into(),
            version: String::new(),
            origin: String::new(),
            provenance: Default::default(),
            accel: "tcg".into(),
            suite: "smoke".into(),
            wall_ms: 0,
            boot_ms: None,
            cases: vec![],
            artifacts: vec![],
            error: None,
            attempt: 1,
            guest_died: None,
            transport: Default::default(),
            retried_after: None,
            gate: None,
        };
        judge(&suite, dir.path(), &[], &mut run).unwrap();
        assert_eq!(run.cases.len(), suite.cases.len() + 2);
        assert!(run.cases.iter().all(|c| c.verdict != Verdict::Pass));
    }

    fn test_image() -> KernelImage {
        KernelImage {
            name: "linux-6.12".into(),
            release: "6.12.117+deb13-amd64".into(),
            vmlinuz: "/cache/kernels/k/vmlinuz".into(),
            initrd: "/cache/kernels/k/initrd.img".into(),
            key: "0eba1aa1b956211a".into(),
            cmdline: vec!["nfsd.drc_mutation=none".into()],
            suites: Vec::new(),
            transport: Default::default(),
            version: "6.12.117-1".into(),
            origin: "source linux-source-6.12 + drc-mutants".into(),
            provenance: Default::default(),
        }
    }

    fn test_settings() -> RunSettings {
        RunSettings {
            accel: AccelChoice::Tcg,
            memory_mib: 256,
            vcpus: 1,
            extra_files: Vec::new(),
            out_root: "/out".into(),
            cold_boot: false,
            iwarp_accept_fence: crate::wire::IWARP_ACCEPT_FENCE,
        }
    }

    fn args_of(command: &Command) -> Vec<String> {
        command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn arg_after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    }

    #[test]
    fn cold_saved_and_restored_guests_differ_only_in_disk_monitor_and_incoming_state() {
        let (image, settings) = (test_image(), test_settings());
        let rootfs = Path::new("/cache/rootfs/bookworm-k/rootfs.ext4");
        let launch = |boot| Launch {
            image: &image,
            rootfs,
            settings: &settings,
            accel: "tcg",
            share: Path::new("/run/share"),
            boot,
        };
        let (monitor, disk, state) = (
            Path::new("/tmp/rig-save-x/srv.mon"),
            Path::new("/cache/saved-guests/p/srv.qcow2"),
            Path::new("/cache/saved-guests/p/srv.state"),
        );
        let command = |boot| {
            args_of(&qemu_command(
                &launch(boot),
                Role::Srv,
                Path::new("/run/srv.console"),
                "dgram,id=n0",
            ))
        };
        let cold = command(Boot::Cold);
        let save = command(Boot::Save { monitor, disk });
        let restore = command(Boot::Restore { state, disk });
        // Every guest knows its peer; only the boot that is saved waits for it.
        let append = arg_after(&cold, "-append").unwrap();
        assert!(append.contains("rig.name=srv rig.ip=10.99.0.1/24 rig.peer=10.99.0.2"));
        assert!(append.ends_with(" nfsd.drc_mutation=none"));
        assert!(!append.contains("rig.snapshot"));
        assert!(arg_after(&save, "-append")
            .unwrap()
            .contains(" rig.snapshot=1"));
        assert_eq!(arg_after(&restore, "-append"), Some(append));
        assert_eq!(
            arg_after(&cold, "-drive"),
            Some("file=/cache/rootfs/bookworm-k/rootfs.ext4,format=raw,if=virtio,snapshot=on")
        );
        assert_eq!(
            arg_after(&save, "-drive"),
            Some("file=/cache/saved-guests/p/srv.qcow2,format=qcow2,if=virtio")
        );
        assert_eq!(
            arg_after(&restore, "-drive"),
            Some("file=/cache/saved-guests/p/srv.qcow2,format=qcow2,if=virtio,snapshot=on")
        );
        assert_eq!(
            arg_after(&save, "-monitor"),
            Some("unix:/tmp/rig-save-x/srv.mon,server=on,wait=off")
        );
        assert_eq!(
            arg_after(&restore, "-incoming"),
            Some("exec:cat '/cache/saved-guests/p/srv.state'")
        );
        for args in [&cold, &restore] {
            assert!(!args.iter().any(|a| a == "-monitor"));
        }
        assert!(!cold.iter().any(|a| a == "-incoming"));
        // Apart from those, the machine is the same: a restore needs the saved one's devices.
        let strip = |args: &[String]| -> Vec<String> {
            let mut kept = Vec::new();
            let mut skip = false;
            for a in args {
                if skip {
                    skip = false;
                    continue;
                }
                if ["-append", "-drive", "-monitor", "-incoming"].contains(&a.as_str()) {
                    skip = true;
                    continue;
                }
                kept.push(a.clone());
            }
            kept
        };
        assert_eq!(strip(&cold), strip(&save));
        assert_eq!(strip(&cold), strip(&restore));
    }

    #[test]
    fn the_saved_pair_key_follows_kernel_qemu_machine_and_command_line() {
        let (image, settings) = (test_image(), test_settings());
        let rootfs = Path::new("/cache/rootfs/bookworm-k/rootfs.ext4");
        let key = |image: &KernelImage, settings: &RunSettings, rootfs: &Path, qemu: &str| {
            crate::saved_guests::pair_key(
                &Launch {
                    image,
                    rootfs,
                    settings,
                    accel: "tcg",
                    share: Path::new("/a"),
                    boot: Boot::Cold,
                },
                qemu,
            )
        };
        let base = key(&image, &settings, rootfs, "QEMU emulator version 7.2.22");
        // Where the share and the cache live is not part of what was saved.
        assert_eq!(
            base,
            key(
                &image,
                &settings,
                Path::new("/elsewhere/rootfs/bookworm-k/rootfs.ext4"),
                "QEMU emulator version 7.2.22"
            )
        );
        let mut other_kernel = test_image();
        other_kernel.key = "36add806b7fff958".into();
        let mut other_cmdline = test_image();
        other_cmdline.cmdline.clear();
        let mut more_memory = test_settings();
        more_memory.memory_mib = 512;
        for changed in [
            key(
                &other_kernel,
                &settings,
                rootfs,
                "QEMU emulator version 7.2.22",
            ),
            key(
                &other_cmdline,
                &settings,
                rootfs,
                "QEMU emulator version 7.2.22",
            ),
            key(&image, &more_memory, rootfs, "QEMU emulator version 7.2.22"),
            key(&image, &settings, rootfs, "QEMU emulator version 8.2.2"),
            key(
                &image,
                &settings,
                Path::new("/cache/rootfs/bookworm-other/rootfs.ext4"),
                "QEMU emulator version 7.2.22",
            ),
        ] {
            assert_ne!(base, changed);
        }
    }
}
