//! `interop` binary: `images` builds the VM images; `run` builds them and runs suites.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use clap::{Parser, Subcommand};

use interop::cache::output_root;
use interop::images::{vm_images_dir, Builder, CustomKernel, CustomKind, Images};
use interop::kbuild::series_patches;
use interop::matrix::is_cmdline_word;
use interop::process::{install_signal_handler, kill_all_groups};
use interop::progress::{Phase, Progress};
use interop::report::Report;
use interop::runner::{probe_kvm, run_kernel, AccelChoice, RunSettings};
use interop::runs::{create_run_dir, link_last, prune_runs, select_cases};
use interop::suite::Suite;

/// What `just interop` runs without `--suite`: the kernel's own NFS/RDMA, our client against our
/// server under each DRC policy, our client against nfsd, and the kernel client against our server.
const DEFAULT_SUITES: &[&str] = &["smoke", "selftest", "drc", "kclient"];

#[derive(Parser)]
#[command(about = "rpcrdma-rig VM harness: Debian kernels in qemu, soft-RoCE, NFS/RDMA suites")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct KernelArgs {
    /// Kernels from vm-images/kernels.toml (repeatable; default: all, or none with --kernel-image).
    #[arg(long = "kernel")]
    kernels: Vec<String>,
    /// A custom kernel image (bzImage/vmlinuz) to test instead of / besides the matrix.
    #[arg(long, requires = "modules_dir", conflicts_with = "kernel_src")]
    kernel_image: Option<PathBuf>,
    /// The custom kernel's lib/modules/<release> directory (with modules.dep).
    #[arg(long, requires = "kernel_image")]
    modules_dir: Option<PathBuf>,
    /// A kernel tree (e.g. your git checkout) to build with the rig's config and test; the
    /// build is cached by HEAD + diff, patches, fragments and compiler.
    #[arg(long)]
    kernel_src: Option<PathBuf>,
    /// Patch series for --kernel-src, applied in order to a copy of the tree: a directory of
    /// *.patch (or a name under fixtures/kernel-patches), one .patch file, or a mailbox as
    /// `b4 am` writes it (its cover letter skipped, the series named in the reports by subject,
    /// Message-ID and patchset hash) (repeatable).
    #[arg(long = "kernel-patches", requires = "kernel_src")]
    kernel_patches: Vec<String>,
    /// Optional config fragments for --kernel-src beyond `rig` (kasan, debug, or a path).
    #[arg(long = "kernel-fragment", requires = "kernel_src")]
    kernel_fragments: Vec<String>,
    /// Extra kernel command-line word for every kernel of the run (repeatable), after the
    /// matrix entry's own: `--kernel-cmdline nfsd.drc_mutation=none` reverts a mutant.
    #[arg(long = "kernel-cmdline")]
    kernel_cmdline: Vec<String>,
    /// Name of the custom kernel in reports.
    #[arg(long, default_value = "custom")]
    kernel_name: String,
    /// Soft-RDMA providers to run over (repeatable: rxe, siw): only the matrix entries whose
    /// `transport` is one of them (default: kernels.toml's `default_transports`). A custom kernel runs over
    /// the first one given, else rxe.
    #[arg(long = "transport", value_enum)]
    transports: Vec<interop::matrix::Transport>,
}

#[derive(Subcommand)]
enum Command {
    /// Build (or reuse) the images only.
    Images {
        #[command(flatten)]
        kernels: KernelArgs,
    },
    /// Replay every kernel finding (fixtures/findings/findings.toml) alone on a fresh boot of the
    /// current kernel of each line, look its fix up in that kernel's Debian changelog, and write
    /// target/interop/findings-replay/status.md (and .json).
    Findings {
        /// Kernels to replay on (default: the current kernel of each line over the finding's
        /// transport: linux-6.1, linux-6.12, linux-7.x for rxe, their -siw lanes for siw).
        #[arg(long = "kernel")]
        kernels: Vec<String>,
        /// Only these findings, by name (default: all).
        #[arg(long = "finding")]
        findings: Vec<String>,
    },
    /// `just fuzz-wire`: the wire-fuzz suite on each kernel in turn, reports under
    /// target/interop/wire-fuzz/<kernel>/, kernel-watch hits under target/interop/findings/.
    FuzzWire(interop::fuzz_wire::FuzzWireArgs),
    /// Build images and run suites on each kernel.
    Run {
        #[command(flatten)]
        kernels: KernelArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// `just interop bisect`: git bisect a tree between a good and a bad revision on one case
    /// (each step a cached build and N runs; a harness failure skips the commit), then revert
    /// the first bad commit on top of --bad and run the case again.
    Bisect(BisectArgs),
}

#[derive(clap::Args)]
struct BisectArgs {
    /// The git tree to bisect. It is never touched: the bisection runs in a worktree of it
    /// (under target/vm/bisect/).
    #[arg(long)]
    kernel_src: PathBuf,
    /// A revision where the case passes.
    #[arg(long)]
    good: String,
    /// A revision where it fails.
    #[arg(long)]
    bad: String,
    /// The suite of the case.
    #[arg(long)]
    suite: String,
    /// The case (a name or glob, as `--case` of `run`).
    #[arg(long)]
    case: String,
    /// Runs of the case per commit: a commit is bad when one fails, good when all pass.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Optional config fragments beyond `rig` (as `run --kernel-fragment`).
    #[arg(long = "kernel-fragment")]
    kernel_fragments: Vec<String>,
    /// Extra kernel command-line words (as `run --kernel-cmdline`).
    #[arg(long = "kernel-cmdline")]
    kernel_cmdline: Vec<String>,
    /// The soft-RDMA provider of every step (as `run --transport`; default rxe).
    #[arg(long, value_enum)]
    transport: Option<interop::matrix::Transport>,
}

/// `run`'s options from words, for the runs a bisection makes.
#[derive(Parser)]
struct RunOnly {
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Suites from vm-images/suites/<name>.toml (repeatable or comma-separated; default: smoke,selftest,drc,kclient).
    #[arg(long = "suite", value_delimiter = ',')]
    suites: Vec<String>,
    /// Only these cases (repeatable, glob: `after-ack`, `nfsd.after-*`); a pattern matches the
    /// case name or the scenario after its first dot. Setup and server cases always run.
    #[arg(long = "case")]
    cases: Vec<String>,
    /// Run each chosen suite N times (fresh guests each time) and report pass ratios.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Also write the run as KCIDB v5 JSON to FILE: a checkout and a build per kernel (source,
    /// commit, patchset hash and Message-ID of a series, config, compiler), one test per case
    /// (`rpcrdma.<suite>.<case>`; harness failures MISS, expected failures marked in `misc`).
    #[arg(long, value_name = "FILE")]
    kcidb: Option<PathBuf>,
    /// Print the matrix, the suites and their cases, and run nothing.
    #[arg(long)]
    list: bool,
    /// Run directories kept under target/interop/runs/ (older ones are pruned).
    #[arg(long, default_value_t = 20)]
    keep_runs: usize,
    #[arg(long, value_enum, default_value = "auto")]
    accel: AccelChoice,
    /// Kernels run at the same time (each runs two guests). Measured on 2 cores under TCG:
    /// three kernels side by side finish 1.6-2.2x sooner than one after another.
    #[arg(long, default_value_t = 3)]
    jobs: usize,
    /// Memory per guest.
    #[arg(long, default_value_t = 256)]
    memory_mib: u32,
    /// Boot every guest from its first instruction instead of restoring the kernel's saved
    /// server and client (saved once per kernel into the image cache; TCG only).
    #[arg(long)]
    cold_boot: bool,
    /// How long the wire holds the client's first bytes on a new soft-iWARP connection after
    /// the server's MPA Reply, in ms (default 50; 0 turns the fence off and lets the siw race of
    /// docs/findings.md, "siw: the first message after an accept can be left unread", happen)
    #[arg(long, value_name = "MS")]
    iwarp_accept_fence_ms: Option<u64>,
    /// vCPUs per guest (1 boots faster under TCG and keeps 6 guests on 2 cores responsive).
    #[arg(long, default_value_t = 1)]
    vcpus: u32,
    /// Extra file for the share, HOST_PATH:SHARE_PATH (repeatable).
    #[arg(long = "share-file")]
    share_files: Vec<String>,
    /// Run only the I-th of N deterministic shares of the kernel × suite pairs (a CI runner's
    /// part of the matrix; `interop-post merge` puts the shards' run directories together).
    #[arg(long, value_name = "I/N")]
    shard: Option<interop::shard::Shard>,
}

fn custom(args: &KernelArgs) -> Result<Option<CustomKernel>> {
    let kind = if let Some(tree) = &args.kernel_src {
        let mut patches = Vec::new();
        let mut series = Vec::new();
        for given in &args.kernel_patches {
            let path = std::path::Path::new(given);
            if path.is_file() && interop::mbox::is_mbox(path) {
                let (read, files) =
                    interop::mbox::load(path, &interop::cache::cache_root().join("mbox"))?;
                series.push(read.name());
                patches.extend(files);
            } else {
                patches.extend(series_patches(given)?);
            }
        }
        CustomKind::Source {
            tree: tree.clone(),
            patches,
            series,
            fragments: args.kernel_fragments.clone(),
        }
    } else if let (Some(image), Some(modules_dir)) = (&args.kernel_image, &args.modules_dir) {
        CustomKind::Prebuilt {
            image: image.clone(),
            modules_dir: modules_dir.clone(),
        }
    } else {
        return Ok(None);
    };
    Ok(Some(CustomKernel {
        name: args.kernel_name.clone(),
        kind,
        transport: args.transports.first().copied().unwrap_or_default(),
    }))
}

fn build(progress: &Progress, args: &KernelArgs) -> Result<Images> {
    for word in &args.kernel_cmdline {
        ensure!(
            is_cmdline_word(word),
            "--kernel-cmdline {word:?}: only key=value words of letters, digits and ._=,:-"
        );
    }
    let mut builder = Builder::new(progress)?;
    let mut images = builder.build(&args.kernels, custom(args)?.as_ref())?;
    for image in &mut images.kernels {
        image.cmdline.extend(args.kernel_cmdline.iter().cloned());
    }
    Ok(images)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(err) = install_signal_handler() {
        eprintln!("interop: {err:#}");
        return ExitCode::FAILURE;
    }
    let outcome = match cli.command {
        Command::Images { kernels } => {
            let progress = Progress::default();
            build(&progress, &kernels).map(|images| {
                eprintln!(
                    "images ready in {:.1}s: rootfs {}, kernels {}",
                    progress.elapsed().as_secs_f64(),
                    images.rootfs.display(),
                    images
                        .kernels
                        .iter()
                        .map(|k| format!("{} ({})", k.name, k.release))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                true
            })
        }
        Command::Findings { kernels, findings } => replay_findings(&kernels, &findings),
        Command::FuzzWire(args) => interop::fuzz_wire::run(&args),
        Command::Run { kernels, run: args } if args.list => list(&kernels, &args),
        Command::Run { kernels, run: args } => run(&kernels, &args),
        Command::Bisect(args) => bisect(&args),
    };
    // Belt and braces: no process group outlives the command.
    kill_all_groups();
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("interop: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn replay_findings(kernels: &[String], names: &[String]) -> Result<bool> {
    use interop::findings;
    let root = interop::cache::workspace_root();
    let all = findings::load_findings()?;
    let matrix = interop::matrix::Matrix::load(&root.join("vm-images/kernels.toml"))?;
    for name in names {
        ensure!(
            all.iter().any(|f| &f.name == name),
            "unknown finding {name:?}; findings.toml has {}",
            all.iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let chosen: Vec<_> = all
        .into_iter()
        .filter(|f| names.is_empty() || names.contains(&f.name))
        .collect();
    let out = findings::output_root();
    std::fs::create_dir_all(&out)?;
    let mut outcomes = Vec::new();
    for finding in &chosen {
        // By default the current kernel of each line, over the finding's own transport.
        let lanes = if kernels.is_empty() {
            findings::line_lanes(&matrix, finding.transport)
        } else {
            kernels.to_vec()
        };
        for kernel in &lanes {
            eprintln!(
                "== finding {} on {kernel}: replaying {}",
                finding.name, finding.reproducer
            );
            let outcome = findings::replay(finding, kernel, &out)?;
            eprintln!("   {kernel} {}: {}", outcome.version, outcome.summary());
            outcomes.push(outcome);
        }
    }
    let fixes = findings::fix_statuses(&chosen, &outcomes)?;
    let markdown = findings::render_markdown(&chosen, &outcomes, &fixes);
    std::fs::write(out.join("status.md"), &markdown)?;
    std::fs::write(
        out.join("status.json"),
        serde_json::to_string_pretty(&serde_json::json!({
            "outcomes": outcomes,
            "fixes": fixes,
        }))?,
    )?;
    println!("{markdown}");
    for report in findings::write_reports(&chosen, &outcomes, &fixes, &out)? {
        eprintln!("findings: {} written", report.display());
    }
    eprintln!("findings: {} written", out.join("status.md").display());
    Ok(outcomes.iter().all(|o| o.harness_failure.is_none()))
}

fn load_suites(args: &RunArgs) -> Result<Vec<Suite>> {
    let suite_names = if args.suites.is_empty() {
        DEFAULT_SUITES.iter().map(|s| (*s).to_owned()).collect()
    } else {
        args.suites.clone()
    };
    let suites: Vec<Suite> = suite_names
        .iter()
        .map(|name| Suite::load(&vm_images_dir().join("suites").join(format!("{name}.toml"))))
        .collect::<Result<_>>()?;
    let chosen: Vec<Suite> = suites
        .iter()
        .filter_map(|suite| select_cases(suite, &args.cases))
        .collect();
    ensure!(
        !chosen.is_empty(),
        "--case {} matches no case of the suites {}",
        args.cases.join(" --case "),
        suite_names.join(", ")
    );
    Ok(chosen)
}

/// `--list`: the matrix, suites and cases, without building or running anything.
fn list(kernels: &KernelArgs, args: &RunArgs) -> Result<bool> {
    let matrix = interop::matrix::Matrix::load(&vm_images_dir().join("kernels.toml"))?;
    println!("kernels (vm-images/kernels.toml):");
    for spec in matrix.select(&kernels.kernels)? {
        let origin = match spec.origin()? {
            interop::matrix::KernelOrigin::Binary { meta_package, .. } => {
                format!("debian {}/{meta_package}", spec.suite)
            }
            interop::matrix::KernelOrigin::Source { package, version } => {
                let mut origin = format!("source {package}={version}");
                if !spec.patches.is_empty() {
                    origin.push_str(&format!(" + {}", spec.patches.join(" + ")));
                }
                origin
            }
        };
        println!(
            "  {:<24} {origin}{}{}",
            spec.name,
            if spec.cmdline.is_empty() {
                String::new()
            } else {
                format!("  cmdline: {}", spec.cmdline.join(" "))
            },
            if spec.suites.is_empty() {
                String::new()
            } else {
                format!("  suites: {}", spec.suites.join(","))
            }
        );
    }
    for suite in load_suites(args)? {
        println!(
            "suite {} ({} cases): {}",
            suite.name,
            suite.cases.len(),
            suite.description
        );
        for case in &suite.cases {
            println!(
                "  {}{}",
                case.name,
                if case.always { "  (always)" } else { "" }
            );
        }
    }
    let expectations = interop::expect::load(&vm_images_dir().join("expectations.toml"))?;
    if !expectations.is_empty() {
        println!("expectations (vm-images/expectations.toml):");
        for e in expectations {
            println!(
                "  {:?} {} {} {}: {}",
                e.kind, e.kernel, e.suite, e.case, e.reason
            );
        }
    }
    Ok(true)
}

/// The wall time each (kernel, suite) took when it last ran among others, which orders the next
/// run's queue (longest first): `suite-durations.json` in the image cache, so a clean clone on a
/// machine that keeps the cache (CI's) orders its queue as well as the clone that ran before.
/// Only runs that kept every worker busy update it: a suite run alone is faster than among
/// others, and ranked by that time it starts too late (the 6.12 drc suite, timed alone at 94 s,
/// started last in a full run and took 137 s there).
const SCHEDULE_FILE: &str = "suite-durations.json";

/// Wall times per (kernel, suite) from the schedule file (empty when there is none).
fn scheduled_durations(
    file: &std::path::Path,
) -> std::collections::BTreeMap<(String, String), u64> {
    let Ok(text) = interop::snapshots::read_bounded(file) else {
        return Default::default();
    };
    let Ok(entries) = serde_json::from_str::<std::collections::BTreeMap<String, u64>>(&text) else {
        return Default::default();
    };
    entries
        .into_iter()
        .filter_map(|(key, wall)| {
            let (kernel, suite) = key.split_once('/')?;
            Some(((kernel.to_owned(), suite.to_owned()), wall))
        })
        .collect()
}

/// Record this run's wall times in the schedule file when it kept every worker busy (at least
/// two suites per worker), keeping the entries of the suites it did not run.
fn record_durations(
    file: &std::path::Path,
    runs: &[interop::report::KernelRun],
    jobs: usize,
) -> Result<()> {
    if runs.len() < jobs.saturating_mul(2) {
        return Ok(());
    }
    let mut durations = scheduled_durations(file);
    for run in runs {
        durations.insert((run.kernel.clone(), run.suite.clone()), run.wall_ms);
    }
    let entries: std::collections::BTreeMap<String, u64> = durations
        .into_iter()
        .map(|((kernel, suite), wall)| (format!("{kernel}/{suite}"), wall))
        .collect();
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(&entries)? + "\n")
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("replacing {}", file.display()))
}

/// What every (re)run of a queue needs: workers, images, settings and the progress printer.
struct QueueContext<'a> {
    jobs: usize,
    images: &'a Images,
    settings: &'a RunSettings,
    progress: &'a Progress,
}

/// Run every (kernel, suite) of `work` on the context's `jobs` workers, each taking the next
/// item as soon as it is free (a short suite no longer waits for the longest of its batch);
/// results come back in `work` order.
fn run_queue(
    work: &[(usize, &Suite)],
    previous: &std::collections::BTreeMap<(String, String), u64>,
    context: &QueueContext<'_>,
) -> Result<Vec<interop::report::KernelRun>> {
    let QueueContext {
        jobs,
        images,
        settings,
        progress,
    } = *context;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    // Longest first, so the last ones to finish are short: the wall time of the same kernel ×
    // suite when it last ran among others (SCHEDULE_FILE), else a tenth of the suite's summed
    // case timeouts.
    let mut order: Vec<usize> = (0..work.len()).collect();
    order.sort_by_key(|&i| {
        let (k, suite) = work[i];
        let guess = suite.cases.iter().map(|c| c.timeout_secs).sum::<u64>() * 100;
        std::cmp::Reverse(
            previous
                .get(&(images.kernels[k].name.clone(), suite.name.clone()))
                .copied()
                .unwrap_or(guess),
        )
    });
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<interop::report::KernelRun>>> = Mutex::new(vec![None; work.len()]);
    let panicked = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs.min(work.len()).max(1))
            .map(|_| {
                scope.spawn(|| {
                    while let Some(&index) = order.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let (k, suite) = &work[index];
                        let run = run_kernel(
                            &images.kernels[*k],
                            &images.rootfs,
                            suite,
                            settings,
                            progress,
                        );
                        if let Ok(mut slots) = slots.lock() {
                            slots[index] = Some(run);
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().any(|w| w.join().is_err())
    });
    ensure!(!panicked, "a kernel run panicked");
    let slots = slots
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a kernel run panicked"))?;
    slots
        .into_iter()
        .map(|run| run.context("a kernel run did not finish"))
        .collect()
}

/// Run `queue` again with its files under `<run>/<subdir>/`; the settings it ran with and the runs.
fn run_retries(
    queue: &[(usize, &Suite)],
    subdir: &str,
    context: &QueueContext<'_>,
) -> Result<(RunSettings, Vec<interop::report::KernelRun>)> {
    let retry_settings = RunSettings {
        out_root: context.settings.out_root.join(subdir),
        ..context.settings.clone()
    };
    context.progress.plan_runs(queue.len());
    let retry_context = QueueContext {
        settings: &retry_settings,
        ..*context
    };
    let retried = run_queue(queue, &Default::default(), &retry_context)?;
    Ok((retry_settings, retried))
}

/// Run once more, whole, every kernel × suite whose guest kernel died of a listed harness fault
/// (`vm-images/harness-faults.toml`: the TCG double fault, seen once in about 25 runs): the retry
/// replaces the first attempt, whose files move to `harness-failed/<kernel>/<suite>`, and says it
/// was retried and why; a guest that dies again leaves the run red. Any other death is the
/// kernel under test failing: not retried, red with its Oops in the report.
fn retry_dead_guests(
    work: &[(usize, &Suite)],
    runs: &mut [interop::report::KernelRun],
    context: &QueueContext<'_>,
) -> Result<()> {
    use interop::retry;
    let (settings, progress) = (context.settings, context.progress);
    let faults = retry::load_harness_faults(&vm_images_dir().join("harness-faults.toml"))?;
    let mut dead: Vec<(usize, retry::HarnessFault)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(death) = run.guest_died.as_deref() else {
            continue;
        };
        match retry::known_harness_fault(death, &faults) {
            Some(fault) => {
                progress.done(
                    Phase::Case,
                    &run.kernel,
                    &format!(
                        "{}: {death}; a listed harness fault ({}), retrying the whole suite once",
                        run.suite, fault.reason
                    ),
                    None,
                );
                dead.push((i, fault.clone()));
            }
            None => progress.done(
                Phase::Case,
                &run.kernel,
                &format!(
                    "{}: {death}; the kernel under test died (not a listed harness fault): red, not retried",
                    run.suite
                ),
                None,
            ),
        }
    }
    if dead.is_empty() {
        return Ok(());
    }
    let queue: Vec<(usize, &Suite)> = dead.iter().map(|(i, _)| work[*i]).collect();
    let (retry_settings, retried) = run_retries(&queue, "retry-guest-died", context)?;
    for ((i, fault), retry_run) in dead.iter().zip(retried) {
        let first = &runs[*i];
        let dir = retry::run_dir(&settings.out_root, &first.kernel, &first.suite);
        let retry_dir = retry::run_dir(&retry_settings.out_root, &first.kernel, &first.suite);
        let kept = settings
            .out_root
            .join("harness-failed")
            .join(&first.kernel)
            .join(&first.suite);
        let paths = retry::RunPaths {
            dir: &dir,
            retry_dir: &retry_dir,
            kept: &kept,
        };
        runs[*i] = retry::adopt_run(first, retry_run, fault, &paths)?;
    }
    Ok(())
}

/// Run once more every case whose capture was incomplete or whose kernel count failed (a
/// harness failure, not a result: [`interop::retry::count_failures`]) and whose first attempt a
/// retry may settle ([`interop::retry::retryable`]: it passed, or only its
/// count failed), and put the retry's files and outcome in place of the first attempt's; the
/// first attempt's files stay in `harness-failed/` beside the case's share and its verdict is
/// listed with the case. A case that failed on a behaviour keeps its failure.
fn retry_harness_failures(
    work: &[(usize, &Suite)],
    runs: &mut [interop::report::KernelRun],
    context: &QueueContext<'_>,
) -> Result<()> {
    use interop::retry;
    let (settings, progress) = (context.settings, context.progress);
    let mut failures = Vec::new();
    let mut retry_work: Vec<(usize, Suite)> = Vec::new();
    for (index, ((k, suite), run)) in work.iter().zip(runs.iter()).enumerate() {
        let dir = retry::run_dir(&settings.out_root, &run.kernel, &run.suite);
        let (found, kept) = retry::retry_candidates(run, retry::harness_failures(run, suite, &dir));
        for (failure, why) in &kept {
            progress.done(
                Phase::Case,
                &run.kernel,
                &format!(
                    "{}/{}: harness failure ({}), not retried: {why}",
                    run.suite, failure.case, failure.reason
                ),
                None,
            );
        }
        if found.is_empty() {
            continue;
        }
        let names: Vec<String> = found.iter().map(|f| f.case.clone()).collect();
        for failure in &found {
            progress.done(
                Phase::Case,
                &run.kernel,
                &format!(
                    "{}/{}: harness failure ({}), retrying once",
                    run.suite, failure.case, failure.reason
                ),
                None,
            );
        }
        let Some(only) = interop::runs::select_cases(suite, &names) else {
            continue;
        };
        retry_work.push((*k, only));
        failures.push((index, found));
    }
    if retry_work.is_empty() {
        return Ok(());
    }
    let queue: Vec<(usize, &Suite)> = retry_work.iter().map(|(k, s)| (*k, s)).collect();
    let (retry_settings, retried) = run_retries(&queue, "retry", context)?;
    for ((index, found), retry_run) in failures.into_iter().zip(retried) {
        let (_, suite) = work[index];
        let run = &mut runs[index];
        let cases: Vec<String> = suite.cases.iter().map(|c| c.name.clone()).collect();
        let dir = retry::run_dir(&settings.out_root, &run.kernel, &run.suite);
        let retry_dir = retry::run_dir(&retry_settings.out_root, &run.kernel, &run.suite);
        for failure in &found {
            if retry_run.error.is_none() {
                retry::adopt_files(
                    &dir.join("share/out"),
                    &retry_dir.join("share/out"),
                    &dir.join("harness-failed"),
                    &failure.case,
                    &cases,
                )?;
            }
            retry::adopt_outcome(run, &retry_run, failure);
        }
    }
    Ok(())
}

fn run(kernels: &KernelArgs, args: &RunArgs) -> Result<bool> {
    Ok(run_report(kernels, args)?.passed())
}

/// `interop bisect`: each step builds the worktree's commit as the custom kernel `bisect` and
/// runs the case; the verdict is read from the run's report.
fn bisect(args: &BisectArgs) -> Result<bool> {
    use interop::bisect::{Step, StepVerdict, Worktree};
    let tree = args
        .kernel_src
        .canonicalize()
        .with_context(|| format!("--kernel-src {}", args.kernel_src.display()))?;
    let good = interop::bisect::resolve(&tree, &args.good)?;
    let bad = interop::bisect::resolve(&tree, &args.bad)?;
    let dir = interop::cache::cache_root()
        .join("bisect")
        .join(format!("{}", std::process::id()));
    std::fs::create_dir_all(dir.parent().unwrap_or(&dir))?;
    let worktree = Worktree::add(&tree, &dir, &bad)?;
    println!(
        "bisect: {} between good {} and bad {} on {} {} (x{}), in {}",
        tree.display(),
        &good[..12],
        &bad[..12],
        args.suite,
        args.case,
        args.repeat,
        worktree.dir.display()
    );
    let repeat = args.repeat.to_string();
    let mut test = |worktree: &std::path::Path, commit: &str| -> Result<StepVerdict> {
        let kernels = KernelArgs {
            kernels: Vec::new(),
            kernel_image: None,
            modules_dir: None,
            kernel_src: Some(worktree.to_path_buf()),
            kernel_patches: Vec::new(),
            kernel_fragments: args.kernel_fragments.clone(),
            kernel_cmdline: args.kernel_cmdline.clone(),
            kernel_name: "bisect".to_owned(),
            transports: args.transport.into_iter().collect(),
        };
        let run = RunOnly::try_parse_from([
            "run",
            "--suite",
            &args.suite,
            "--case",
            &args.case,
            "--repeat",
            &repeat,
        ])?
        .run;
        println!("bisect: testing {}", &commit[..12]);
        Ok(match run_report(&kernels, &run) {
            Ok(report) => interop::bisect::verdict_of(&report, &args.case),
            // A commit that does not build (or boot) cannot be judged: git bisect skip.
            Err(e) => {
                println!("bisect: {} not judged: {e:#}", &commit[..12]);
                StepVerdict::Skip
            }
        })
    };
    let found = interop::bisect::bisect(&worktree.dir, &good, &bad, &mut test, |step: &Step| {
        println!(
            "bisect: {} {:<4} {:>5.0} s  {}",
            &step.commit[..12],
            format!("{:?}", step.verdict).to_lowercase(),
            step.took.as_secs_f64(),
            step.subject
        );
    })?;
    print!("{}", found.summary());
    Ok(found.confirmed())
}

fn run_report(kernels: &KernelArgs, args: &RunArgs) -> Result<Report> {
    let progress = Progress::default();
    let suites = load_suites(args)?;
    let extra_files = args
        .share_files
        .iter()
        .map(|spec| {
            let (from, to) = spec
                .split_once(':')
                .with_context(|| format!("--share-file {spec}: expected HOST_PATH:SHARE_PATH"))?;
            Ok((PathBuf::from(from), to.to_owned()))
        })
        .collect::<Result<Vec<_>>>()?;
    ensure!(args.jobs >= 1, "--jobs must be at least 1");
    ensure!(
        (1..=1000).contains(&args.repeat),
        "--repeat must be 1..=1000"
    );
    let out_root = output_root();
    let _output_lock = interop::runner::lock_output(&out_root)?;
    let runs_root = out_root.join("runs");
    let schedule = interop::cache::cache_root().join(SCHEDULE_FILE);
    let previous = scheduled_durations(&schedule);
    let run_root = create_run_dir(&runs_root)?;
    link_last(&out_root, &run_root)?;
    progress.done(
        Phase::Report,
        "run",
        &format!(
            "results in {} (also {}/last)",
            run_root.display(),
            out_root.display()
        ),
        None,
    );
    // Only the kernels that run one of the chosen suites are built: `--suite smoke` must not
    // build the drc-only mutant kernels from source.
    let mut kernels = kernels.clone();
    let matrix = interop::matrix::Matrix::load(&vm_images_dir().join("kernels.toml"))?;
    if kernels.kernels.is_empty() && custom(&kernels)?.is_none() {
        kernels.kernels = matrix
            .kernels
            .iter()
            .filter(|k| {
                k.selected_for(
                    suites.iter().map(|s| s.name.as_str()),
                    &kernels.transports,
                    &matrix.default_transports,
                )
            })
            .map(|k| k.name.clone())
            .collect();
        ensure!(
            !kernels.kernels.is_empty(),
            "no kernel of vm-images/kernels.toml runs the chosen suites over the chosen transports"
        );
    } else if !kernels.transports.is_empty() && custom(&kernels)?.is_none() {
        // `--kernel X --transport siw`: a named entry runs over its own transport only.
        for name in &kernels.kernels {
            if let Some(spec) = matrix.kernels.iter().find(|k| &k.name == name) {
                ensure!(
                    kernels.transports.contains(&spec.transport),
                    "kernel {name} runs over {}, not {}",
                    spec.transport,
                    kernels
                        .transports
                        .iter()
                        .map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join("/")
                );
            }
        }
    }
    // A shard runs its share of the kernel × suite pairs and builds only the kernels they need.
    let share: Option<Vec<(String, String)>> = match args.shard {
        None => None,
        Some(shard) => {
            ensure!(
                custom(&kernels)?.is_none(),
                "--shard splits the matrix's kernels; a custom kernel runs unsharded"
            );
            let runs = |name: &str, suite: &str| {
                matrix
                    .kernels
                    .iter()
                    .find(|k| k.name == name)
                    .is_none_or(|k| k.runs_suite(suite))
            };
            let plan: Vec<(String, String)> = kernels
                .kernels
                .iter()
                .flat_map(|k| {
                    suites
                        .iter()
                        .filter(|s| runs(k, &s.name))
                        .map(|s| (k.clone(), s.name.clone()))
                        .collect::<Vec<_>>()
                })
                .collect();
            let share = shard.select(&plan);
            ensure!(
                !share.is_empty(),
                "shard {shard} of {} kernel × suite pairs is empty",
                plan.len()
            );
            kernels
                .kernels
                .retain(|k| share.iter().any(|(name, _)| name == k));
            progress.done(
                Phase::Report,
                "shard",
                &format!(
                    "{shard}: {} of {} kernel × suite pairs: {}",
                    share.len(),
                    plan.len(),
                    share
                        .iter()
                        .map(|(k, s)| format!("{k}/{s}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                None,
            );
            Some(share)
        }
    };
    let images = build(&progress, &kernels)?;
    let mut settings = RunSettings {
        accel: args.accel,
        memory_mib: args.memory_mib,
        vcpus: args.vcpus,
        extra_files,
        out_root: run_root.clone(),
        cold_boot: args.cold_boot,
        iwarp_accept_fence: args
            .iwarp_accept_fence_ms
            .map_or(interop::wire::IWARP_ACCEPT_FENCE, Duration::from_millis),
    };
    std::fs::create_dir_all(&settings.out_root)?;
    let work: Vec<(usize, &Suite)> = (0..images.kernels.len())
        .flat_map(|k| suites.iter().map(move |s| (k, s)))
        .filter(|(k, suite)| {
            let image = &images.kernels[*k];
            if let Some(share) = &share {
                if !share.contains(&(image.name.clone(), suite.name.clone())) {
                    return false;
                }
            }
            let runs = image.runs_suite(&suite.name);
            if !runs {
                progress.done(
                    Phase::Case,
                    &image.name,
                    &format!(
                        "suite {} skipped: this kernel runs only {}",
                        suite.name,
                        image.suites.join(", ")
                    ),
                    None,
                );
            }
            runs
        })
        .collect();
    // KVM is probed once per kernel, all kernels side by side, before any suite starts (the
    // verdict is cached on disk): suites of one kernel no longer each pay the 20 s probe.
    if matches!(settings.accel, AccelChoice::Auto) {
        std::thread::scope(|scope| {
            for image in &images.kernels {
                let progress = &progress;
                scope.spawn(move || probe_kvm(image, progress));
            }
        });
    }
    progress.plan_runs(work.len() * args.repeat as usize);
    let mut runs = Vec::new();
    for attempt in 1..=args.repeat {
        if attempt > 1 {
            // Later attempts keep their own case files beside the first's.
            settings.out_root = run_root.join(format!("attempt-{attempt}"));
        }
        let context = QueueContext {
            jobs: args.jobs,
            images: &images,
            settings: &settings,
            progress: &progress,
        };
        let mut attempt_runs = run_queue(&work, &previous, &context)?;
        retry_dead_guests(&work, &mut attempt_runs, &context)?;
        retry_harness_failures(&work, &mut attempt_runs, &context)?;
        runs.extend(attempt_runs.into_iter().map(|mut run| {
            run.attempt = attempt;
            run
        }));
    }
    // A run of some cases only says nothing of its suites' length.
    if args.repeat == 1 && args.cases.is_empty() {
        if let Err(e) = record_durations(&schedule, &runs, args.jobs) {
            eprintln!("interop: the queue order for the next run was not recorded: {e:#}");
        }
    }
    let mut report = Report { runs };
    let expectations = interop::expect::load(&vm_images_dir().join("expectations.toml"))?;
    interop::expect::apply(&mut report, &expectations, &args.cases);
    let json = run_root.join("report.json");
    let junit = run_root.join("junit.xml");
    std::fs::write(&json, report.to_json())?;
    std::fs::write(&junit, report.junit())?;
    if let Some(path) = &args.kcidb {
        let run_id = run_root
            .file_name()
            .map_or_else(|| "run".to_owned(), |n| n.to_string_lossy().into_owned());
        let kcidb = serde_json::to_string_pretty(&interop::kcidb::kcidb(&report, &run_id))?;
        std::fs::write(path, kcidb + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    progress.done(
        Phase::Report,
        "all",
        &format!("{} and {}", json.display(), junit.display()),
        Some(progress.elapsed()),
    );
    progress.finish();
    print!("{}", report.table());
    if args.repeat > 1 {
        print!("{}", report.repeat_summary());
    }
    for pruned in prune_runs(&runs_root, args.keep_runs)? {
        progress.done(Phase::Report, "prune", &pruned.display().to_string(), None);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kernel: &str, suite: &str, wall_ms: u64) -> interop::report::KernelRun {
        serde_json::from_value(serde_json::json!({
            "kernel": kernel, "release": "6.12.118", "accel": "tcg", "suite": suite,
            "wall_ms": wall_ms, "cases": [], "artifacts": [], "attempt": 1
        }))
        .unwrap()
    }

    /// A run that kept its workers busy sets the next run's order; a suite run alone (faster
    /// than among others) does not; a suite the next run did not run keeps its time.
    #[test]
    fn only_runs_that_kept_every_worker_busy_order_the_next_queue() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(SCHEDULE_FILE);
        assert!(scheduled_durations(&file).is_empty());
        let full = [
            run("linux-6.12", "drc", 137_000),
            run("linux-6.12", "smoke", 37_000),
            run("linux-6.1", "drc", 130_000),
            run("linux-6.1", "smoke", 37_000),
        ];
        record_durations(&file, &full, 2).unwrap();
        let key = |k: &str, s: &str| (k.to_owned(), s.to_owned());
        assert_eq!(
            scheduled_durations(&file)[&key("linux-6.12", "drc")],
            137_000
        );
        // Alone: one suite for three workers.
        record_durations(&file, &[run("linux-6.12", "drc", 94_000)], 3).unwrap();
        assert_eq!(
            scheduled_durations(&file)[&key("linux-6.12", "drc")],
            137_000
        );
        // Busy again, on other suites: the drc times stay.
        let smoke: Vec<_> = ["linux-6.1", "linux-6.12", "linux-7.x"]
            .iter()
            .map(|k| run(k, "smoke", 30_000))
            .collect();
        record_durations(&file, &smoke, 1).unwrap();
        let now = scheduled_durations(&file);
        assert_eq!(now[&key("linux-6.12", "smoke")], 30_000);
        assert_eq!(now[&key("linux-6.1", "drc")], 130_000);
        assert_eq!(now.len(), 5);
        // A file that is not ours orders nothing.
        std::fs::write(&file, "not json").unwrap();
        assert!(scheduled_durations(&file).is_empty());
    }
}
