//! The run page (`interop-post html`, `interop::html`) over a real run: run 20261201T154246Z-299e90
//! (3 kernels and 2 DRC mutants, every suite), cut to `tests/data/html-run/` (report.json without
//! the RESULT fields, snapshots.json, the file list of two kernels' run directories and one
//! changed snapshot). Every verdict cell and case row must be on the page, with its links, and
//! hostile guest text must come out escaped. Headless Chromium (Debian `chromium`, installed by
//! `just test-deps`) loads the page, the cells are counted in the DOM it built, and the harness's
//! screenshot of the first screen is taken.

use std::path::{Path, PathBuf};
use std::process::Command;

use interop::html::{render, render_run_dir, Snapshots};
use interop::report::Report;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/html-run")
}

fn baselines() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/snapshots/interop")
}

/// The run directory laid out again in a temp dir: the two JSON files, empty files for the
/// listed paths, and the changed snapshot's real text.
fn run_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["report.json", "snapshots.json"] {
        std::fs::copy(data().join(name), dir.path().join(name)).unwrap();
    }
    let list = std::fs::read_to_string(data().join("files.txt")).unwrap();
    for rel in list.lines().filter(|l| !l.is_empty()) {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
    }
    std::fs::copy(
        data().join("changed.snap"),
        dir.path()
            .join("runs/linux-6.1/selftest/snapshots/classic.after-reply-before-ack.snap"),
    )
    .unwrap();
    dir
}

fn report() -> Report {
    serde_json::from_str(&std::fs::read_to_string(data().join("report.json")).unwrap()).unwrap()
}

/// Every `<td class="cell ...">` of the page as (kernel, suite, case, verdict).
fn cells(page: &str) -> Vec<(String, String, String, String)> {
    let attr = |tag: &str, key: &str| -> String {
        let start = tag.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
        tag[start..].split('"').next().unwrap().to_owned()
    };
    page.split("<td class=\"cell ")
        .skip(1)
        .map(|rest| {
            let tag = rest.split('>').next().unwrap();
            (
                attr(tag, "data-kernel"),
                attr(tag, "data-suite"),
                attr(tag, "data-case"),
                attr(tag, "data-verdict"),
            )
        })
        .collect()
}

fn expected_cells(report: &Report) -> Vec<(String, String, String, String)> {
    report
        .runs
        .iter()
        .flat_map(|run| {
            run.cases.iter().map(move |c| {
                (
                    run.kernel.clone(),
                    run.suite.clone(),
                    c.name.clone(),
                    c.verdict.as_str().to_owned(),
                )
            })
        })
        .collect()
}

#[test]
fn every_cell_and_row_of_a_real_run_is_on_the_page() {
    let dir = run_dir();
    let page = render_run_dir(dir.path(), Some(&baselines())).unwrap();
    let report = report();
    assert_eq!(report.runs.len(), 14, "5 kernels' suites of the real run");
    let mut expected = expected_cells(&report);
    assert_eq!(expected.len(), 272);
    let mut found = cells(&page);
    expected.sort();
    found.sort();
    assert_eq!(
        found, expected,
        "the matrix has one cell per kernel × suite × case"
    );
    // One detail row per case, each with its verdict and duration.
    for run in &report.runs {
        for case in &run.cases {
            let row_start = format!(
                "class=\"case\" data-kernel=\"{}\" data-suite=\"{}\" data-case=\"{}\">",
                run.kernel, run.suite, case.name
            );
            let row = page
                .split(&row_start)
                .nth(1)
                .unwrap_or_else(|| panic!("no row for {} {} {}", run.kernel, run.suite, case.name));
            let row = row.split("</tr>").next().unwrap();
            assert!(
                row.contains(&format!(">{}</td>", case.verdict.as_str())),
                "{row}"
            );
            assert!(row.contains(&format!("{:.1} s", case.duration_ms as f64 / 1000.0)));
        }
    }
    // Summary, then the kernel × suite overview before anything long, then failures (none
    // here), and the caught mutants and known failures folded away.
    assert!(
        page.contains("272 cases: 17 caught, 18 known, 237 pass."),
        "summary"
    );
    let before_overview = page.split("<table id=\"overview\">").next().unwrap();
    assert!(
        !before_overview.contains("<h2>") && !before_overview.contains("<li"),
        "the overview is the page's first table, before any list"
    );
    let overview = page
        .split("<table id=\"overview\">")
        .nth(1)
        .unwrap()
        .split("</table>")
        .next()
        .unwrap();
    let sums = overview.matches("<td class=\"sum ").count();
    assert_eq!(sums, 14, "one summed cell per kernel × suite run");
    assert!(
        overview.contains("data-kernel=\"linux-6.12-acked-evict\" data-suite=\"drc\""),
        "{overview}"
    );
    assert!(
        overview.contains("v-caught"),
        "a mutant's cell shows its catches"
    );
    let findings = page.split("<ul id=\"findings\">").nth(1).unwrap();
    let findings = findings.split("</ul>").next().unwrap();
    assert!(
        findings.contains("none: every case passed or was expected"),
        "{findings}"
    );
    let expected = page.split("<ul id=\"expected-list\">").nth(1).unwrap();
    let expected = expected.split("</ul>").next().unwrap();
    assert_eq!(expected.matches("<li class=\"v-caught\">").count(), 17);
    assert_eq!(expected.matches("<li class=\"v-known\">").count(), 18);
    // A case's raw counters are folded under its first reason.
    assert!(expected.contains("<details><summary>"), "{expected}");
    assert!(page.contains("Interop snapshots: changed 42, compared 196"));
}

#[test]
fn rows_link_the_case_files_snapshot_diff_and_transport_counts() {
    let dir = run_dir();
    let page = render_run_dir(dir.path(), Some(&baselines())).unwrap();
    let row = |kernel: &str, suite: &str, case: &str| -> String {
        let start = format!(
            "class=\"case\" data-kernel=\"{kernel}\" data-suite=\"{suite}\" data-case=\"{case}\">"
        );
        page.split(&start)
            .nth(1)
            .unwrap()
            .split("</tr>")
            .next()
            .unwrap()
            .to_owned()
    };
    let drc = row("linux-6.12-acked-evict", "drc", "nfsd.after-ack");
    for file in [
        "nfsd.after-ack.cli.log",
        "nfsd.after-ack.pcap",
        "nfsd.after-ack.ftrace.txt",
        "nfsd.after-ack.verdict.json",
    ] {
        let href = format!("href=\"runs/linux-6.12-acked-evict/drc/share/out/{file}\"");
        assert!(drc.contains(&href), "{file} not linked: {drc}");
    }
    // Not the files of nfsd.after-ack-late, whose name extends this case's.
    assert!(!drc.contains("after-ack-late"), "{drc}");
    assert!(drc.contains("href=\"runs/linux-6.12-acked-evict/drc/snapshots/nfsd.after-ack.pcap.trace.txt\">decoded trace<"));
    assert!(drc.contains("href=\"runs/linux-6.12-acked-evict/drc/share/out/srv.dmesg\">srv.dmesg<"));
    assert!(drc.contains("href=\"runs/linux-6.12-acked-evict/drc/srv.console\">srv.console<"));
    assert!(drc.contains(">caught</td>"));
    assert!(
        drc.contains("duplicates=0 naks=0"),
        "transport counts: {drc}"
    );
    // Every link of the page names a file that exists in the run directory.
    let mut links = 0;
    for href in page.split("href=\"").skip(1) {
        let target = href.split('"').next().unwrap();
        if target.starts_with('#') {
            continue;
        }
        links += 1;
        assert!(dir.path().join(target).is_file(), "dangling link {target}");
    }
    assert!(links > 500, "{links} links");
    // The changed snapshot carries its diff against the committed baseline.
    let changed = row("linux-6.1", "selftest", "classic.after-reply-before-ack");
    assert!(changed.contains("<details class=\"diff\">"), "{changed}");
    assert!(changed.contains("--- baseline/linux-6.1/selftest/classic.after-reply-before-ack.snap"));
}

#[test]
fn guest_text_is_escaped_and_bounded() {
    let dir = run_dir();
    let mut report = report();
    let case = &mut report.runs[0].cases[1];
    case.verdict = interop::results::Verdict::Fail;
    case.reasons = vec![
        "<script>alert(1)</script><img src=x onerror=alert(2)>\u{1b}[31m\u{7}".into(),
        "y".repeat(100_000),
    ];
    report.runs[1].error = Some("qemu said </pre><script>".into());
    let page = render(&report, &Snapshots::default(), dir.path(), None, "t<i>");
    assert!(!page.contains("<script>") && !page.contains("<img"));
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;")
    );
    assert!(!page.contains('\u{1b}') && !page.contains('\u{7}'));
    assert!(page.contains("qemu said &lt;/pre&gt;&lt;script&gt;"));
    assert!(page.contains("<title>rpcrdma-rig interop t&lt;i&gt;</title>"));
    assert!(page.contains("more bytes cut]"));
    assert!(page.len() < 1_000_000, "{} bytes", page.len());
    assert!(page.contains("<span class=\"bad\">FAIL</span>"));
}

/// Headless Chromium builds the DOM of the page; the cells counted there must be every cell.
/// Without Chromium it fails rather than passing on the text checks alone: `just test`
/// installs it (scripts/test-deps.sh, Debian package chromium).
#[test]
fn chromium_renders_every_cell() {
    let problem = match Command::new("chromium").arg("--version").output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("`chromium --version` {}", o.status)),
        Err(e) => Some(format!("chromium not found ({e})")),
    };
    if let Some(problem) = problem {
        panic!("{problem}: `just test-deps` installs chromium (scripts/test-deps.sh)");
    }
    let dir = run_dir();
    let page = render_run_dir(dir.path(), Some(&baselines())).unwrap();
    let file = dir.path().join("index.html");
    std::fs::write(&file, &page).unwrap();
    let dom = chromium(&["--dump-dom"], &file);
    let report = report();
    let mut expected = expected_cells(&report);
    let mut found = cells(&dom);
    expected.sort();
    found.sort();
    assert_eq!(found, expected, "cells in the DOM Chromium built");
    assert_eq!(dom.matches("<tr id=\"case-").count(), 272);
    // The harness's screenshot of the page's first screen: a PNG of the window's size.
    let png = dir.path().join("index.png");
    assert!(interop::html::screenshot(&file, &png).unwrap());
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let dimension = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(
        (dimension(16), dimension(20)),
        interop::html::SCREENSHOT_SIZE,
        "IHDR width and height"
    );
    assert!(
        !png.with_extension("chromium-profile").exists(),
        "profile removed"
    );
}

fn chromium(args: &[&str], file: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            // Tests run as root on a machine without a session: no sandbox, no network
            // fetches of its own, and a fresh profile per run (below).
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
