//! Every insta snapshot of the workspace lives under the package that asserts it
//! (`<package>/tests/snapshots/` or `<package>/src/snapshots/`), where `cargo insta review` and
//! `just snapshots` find it; `fixtures/snapshots/interop` holds the interop baselines, which are
//! not insta's.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn snap_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | ".git" | "corpus" | "artifacts") {
                snap_files(&path, out);
            }
        } else if name.ends_with(".snap") {
            out.push(path);
        }
    }
}

#[test]
fn every_insta_snapshot_sits_under_its_package() {
    let root = repo_root();
    let mut files = Vec::new();
    snap_files(&root, &mut files);
    let interop = root.join("fixtures/snapshots/interop");
    let mut insta = 0;
    for file in &files {
        // Interop baselines and the run snapshots cut from them are interop-post's, not insta's
        // (insta's files open with a `---` metadata block naming their source).
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if file.starts_with(&interop) || !(text.starts_with("---\n") && text.contains("\nsource: "))
        {
            continue;
        }
        let dir = file.parent().unwrap();
        assert!(
            dir.ends_with("tests/snapshots") || dir.ends_with("src/snapshots"),
            "{} is not in a tests/snapshots or src/snapshots folder",
            file.display()
        );
        let package = dir.parent().unwrap().parent().unwrap();
        assert!(
            package.join("Cargo.toml").is_file(),
            "{} is outside a package root, where cargo insta review does not look",
            file.display()
        );
        insta += 1;
    }
    // One sim matrix snapshot per scenario the simulator runs (all but deferred, which needs
    // kernel nfsd's export cache) and policy here, and those of wire, trace and rig.
    let sim = root.join("crates/client/tests/snapshots");
    let sim_count = files.iter().filter(|f| f.starts_with(&sim)).count();
    let simulated = client::run_matrix(None, None, client::DEFAULT_SEED).unwrap();
    assert_eq!(sim_count, simulated.len());
    assert_eq!(simulated.len(), (client::scenario_names().len() - 1) * 3);
    assert!(insta > sim_count, "only {insta} insta snapshots found");
}
