//! Architecture Invariant (ARCHITECTURE.md, `crates/verbs`): the FFI crate is the only one with
//! `unsafe`. The workspace forbids `unsafe_code` (`[workspace.lints.rust]`); every member but
//! verbs opts in (or forbids it in its crate root), and no Rust source outside crates/verbs —
//! tests, benches, examples and fuzz targets included — uses the keyword.

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Workspace members: every directory under crates/ with a Cargo.toml, and interop/.
fn members(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    out.push(root.join("interop"));
    out.sort();
    out
}

/// Whether a manifest opts in to the workspace lints (`[lints]` then `workspace = true`).
fn opts_in(manifest: &str) -> bool {
    let mut in_lints = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_lints = line == "[lints]";
        } else if in_lints && line.replace(' ', "") == "workspace=true" {
            return true;
        }
    }
    false
}

#[test]
fn the_workspace_forbids_unsafe_code_and_every_member_but_verbs_opts_in() {
    let root = workspace_root();
    let workspace = read(&root.join("Cargo.toml"));
    let lints = workspace
        .split("[workspace.lints.rust]")
        .nth(1)
        .expect("[workspace.lints.rust] in the workspace Cargo.toml");
    assert!(
        lints
            .lines()
            .take_while(|l| !l.trim_start().starts_with('['))
            .any(|l| l.replace(' ', "") == "unsafe_code=\"forbid\""),
        "unsafe_code = \"forbid\" in [workspace.lints.rust]"
    );
    let mut checked = 0;
    for member in members(&root) {
        let name = member.file_name().unwrap().to_string_lossy().into_owned();
        let manifest = read(&member.join("Cargo.toml"));
        if name == "verbs" {
            assert!(
                !opts_in(&manifest),
                "verbs is the FFI crate: it needs unsafe"
            );
            continue;
        }
        // A member that has not opted in yet must forbid unsafe in its crate root; its other
        // targets are covered by the source scan below.
        let root_forbids = ["src/lib.rs", "src/main.rs"].iter().any(|f| {
            let path = member.join(f);
            path.is_file() && read(&path).contains("#![forbid(unsafe_code)]")
        });
        assert!(
            opts_in(&manifest) || root_forbids,
            "{name}: add `[lints] workspace = true` to its Cargo.toml"
        );
        checked += 1;
    }
    assert!(checked >= 10, "found the members ({checked})");
}

/// The identifiers of Rust source, comments, strings and char literals left out.
fn identifiers(source: &str) -> Vec<&str> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            i += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        } else if rest.starts_with(b"/*") {
            // Block comments nest.
            let mut depth = 0usize;
            while i < bytes.len() {
                if bytes[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if bytes[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br") {
            let start = i + usize::from(rest[0] == b'b') + 1;
            let hashes = bytes[start..].iter().take_while(|&&b| b == b'#').count();
            if bytes.get(start + hashes) != Some(&b'"') {
                // An identifier starting with r or br.
                let end = start + bytes[start..].iter().take_while(|b| is_ident(**b)).count();
                out.push(&source[i..end.max(i + 1)]);
                i = end.max(i + 1);
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = start + hashes + 1;
            i = body
                + bytes[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(bytes.len() - body, |p| p + close.len());
        } else if rest[0] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), or a lifetime ('a).
            let literal_end = match rest.get(1) {
                Some(b'\\') => rest[2..].iter().position(|&b| b == b'\'').map(|p| p + 3),
                Some(_) => {
                    let width = source[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (rest.get(1 + width) == Some(&b'\'')).then_some(2 + width)
                }
                None => None,
            };
            i += literal_end.unwrap_or(1);
        } else if is_ident(rest[0]) {
            let len = rest.iter().take_while(|b| is_ident(**b)).count();
            out.push(&source[i..i + len]);
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            // Build output and fuzzing corpora are not source.
            if !matches!(
                name.to_str(),
                Some("target" | "corpus" | "artifacts" | "seeds")
            ) {
                rust_sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_scan_sees_through_comments_strings_and_lifetimes() {
    let source = r###"
        // unsafe in a comment
        /* unsafe /* nested */ unsafe */
        fn f<'a>(x: &'a str) -> char { let _ = "unsafe \" unsafe"; let _ = r#"unsafe"#; 'u' }
        unsafe fn g() {}
    "###;
    let ids = identifiers(source);
    assert_eq!(
        ids.iter().filter(|&&id| id == "unsafe").count(),
        1,
        "{ids:?}"
    );
    assert!(ids.contains(&"fn") && ids.contains(&"g"));
    assert!(!identifiers("let c = '\\''; let d = 'é';").contains(&"unsafe"));
}

#[test]
fn no_source_outside_verbs_uses_unsafe() {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["crates", "interop", "fuzz"] {
        rust_sources(&root.join(dir), &mut files);
    }
    let verbs = root.join("crates/verbs");
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&verbs))
        .filter(|f| identifiers(&read(f)).contains(&"unsafe"))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        files.len() > 100,
        "scanned the tree ({} files)",
        files.len()
    );
    assert!(
        offenders.is_empty(),
        "`unsafe` outside crates/verbs: {offenders:?}"
    );
}
