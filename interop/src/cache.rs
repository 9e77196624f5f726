//! The image cache: where things live and the content keys that decide when to rebuild them.
//!
//! Every cached artifact lives in a directory named by a key: the SHA-256 of everything that went
//! into it (input file contents, resolved package hashes, a builder version). Changing any input
//! changes the key, so a stale artifact is never reused; unchanged inputs reuse the directory.
//! A directory counts as complete only once its `complete` stamp is written, last.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Bump when the builder's output format changes, to invalidate every cached artifact.
pub const BUILDER_VERSION: &str = "interop-images-1";

/// The workspace root (the directory holding the top-level Cargo.toml with `[workspace]`).
pub fn workspace_root() -> PathBuf {
    // interop/ sits directly under the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Cargo's target directory: `$CARGO_TARGET_DIR` (relative to the workspace root, where the
/// Justfile runs cargo), else `<workspace>/target`. Binaries the runs ship and render with
/// (`target/release/rig`) are where cargo built them, not always under the workspace.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace_root().join(dir),
        _ => workspace_root().join("target"),
    }
}

/// A path as suites and flags write it: absolute as is; `target/...` inside [`target_dir`];
/// anything else relative to the workspace root.
pub fn resolve_workspace_path(path: &Path) -> PathBuf {
    resolve_under(path, &workspace_root(), &target_dir())
}

fn resolve_under(path: &Path, root: &Path, target: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    match path.strip_prefix("target") {
        Ok(rest) => target.join(rest),
        Err(_) => root.join(path),
    }
}

/// The image cache: `$RIG_VM_CACHE`, else `<workspace>/target/vm`.
pub fn cache_root() -> PathBuf {
    std::env::var_os("RIG_VM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target").join("vm"))
}

/// Where run outputs go: `<workspace>/target/interop` (report.json, junit.xml, per-kernel runs).
pub fn output_root() -> PathBuf {
    std::env::var_os("RIG_INTEROP_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target").join("interop"))
}

/// The newest run's directory (`<output root>/last`, a link into `runs/`), or the output root
/// itself when no run has been kept yet.
pub fn last_run_root() -> PathBuf {
    let last = output_root().join("last");
    if last.is_dir() {
        last
    } else {
        output_root()
    }
}

/// Accumulates named inputs into a cache key. Each part is length-prefixed, so ("ab","c") and
/// ("a","bc") give different keys.
#[derive(Debug, Clone)]
pub struct KeyBuilder {
    hasher: Sha256,
}

impl KeyBuilder {
    /// Start a key for artifacts of kind `kind` (always includes [`BUILDER_VERSION`]).
    pub fn new(kind: &str) -> Self {
        let mut key = KeyBuilder {
            hasher: Sha256::new(),
        };
        key.add("builder", BUILDER_VERSION.as_bytes());
        key.add("kind", kind.as_bytes());
        key
    }

    /// Mix in one named input.
    pub fn add(&mut self, name: &str, value: &[u8]) -> &mut Self {
        for part in [name.as_bytes(), value] {
            self.hasher.update((part.len() as u64).to_le_bytes());
            self.hasher.update(part);
        }
        self
    }

    /// Mix in a file's contents, named by its file name (not its absolute path, so the key does
    /// not depend on where the checkout lives).
    pub fn add_file(&mut self, path: &Path) -> Result<&mut Self> {
        let contents = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(self.add(&name, &contents))
    }

    /// The key: the first 16 hex digits of the SHA-256 (64 bits is plenty for a local cache).
    pub fn finish(&self) -> String {
        let digest = self.hasher.clone().finalize();
        hex(&digest)[..16].to_owned()
    }
}

/// Lower-case hex of `bytes` (the cache keys and file hashes are wire's hex).
pub use wire::hex::encode as hex;

/// SHA-256 of a file, streamed (kernel packages are ~100 MB).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// A keyed cache directory `<root>/<kind>/<name>-<key>`.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
}

const STAMP: &str = "complete";

impl Entry {
    pub fn new(root: &Path, kind: &str, name: &str, key: &str) -> Self {
        Entry {
            dir: root.join(kind).join(format!("{name}-{key}")),
        }
    }

    /// True when a previous build finished writing this entry.
    pub fn is_complete(&self) -> bool {
        self.dir.join(STAMP).is_file()
    }

    /// Remove a half-built entry and create it empty.
    pub fn reset(&self) -> Result<()> {
        if self.dir.exists() {
            fs::remove_dir_all(&self.dir)
                .with_context(|| format!("removing {}", self.dir.display()))?;
        }
        fs::create_dir_all(&self.dir).with_context(|| format!("creating {}", self.dir.display()))
    }

    /// Mark the entry complete (write this last).
    pub fn mark_complete(&self, summary: &str) -> Result<()> {
        fs::write(self.dir.join(STAMP), summary).context("writing cache stamp")
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }
}

/// Disk usage in bytes of a file or a directory tree (allocated blocks, so sparse images count
/// what they really use; symlinks not followed).
pub fn disk_size(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.blocks() * 512;
    }
    fs::read_dir(path)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| disk_size(&entry.path()))
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_paths_resolve_into_cargos_target_directory() {
        let (root, target) = (Path::new("/ws"), Path::new("/elsewhere/t"));
        let resolve = |p: &str| resolve_under(Path::new(p), root, target);
        assert_eq!(
            resolve("target/release/rig"),
            Path::new("/elsewhere/t/release/rig")
        );
        // Only the whole first component counts.
        assert_eq!(resolve("targets/x"), Path::new("/ws/targets/x"));
        assert_eq!(resolve("fixtures/a"), Path::new("/ws/fixtures/a"));
        assert_eq!(resolve("/abs/rig"), Path::new("/abs/rig"));
    }

    #[test]
    fn key_changes_with_any_input() {
        let base = KeyBuilder::new("rootfs")
            .add("packages", b"kmod\nrpcbind\n")
            .finish();
        let changed = KeyBuilder::new("rootfs")
            .add("packages", b"kmod\nrpcbind\ntcpdump\n")
            .finish();
        let other_kind = KeyBuilder::new("kernel")
            .add("packages", b"kmod\nrpcbind\n")
            .finish();
        assert_eq!(base.len(), 16);
        assert_ne!(base, changed);
        assert_ne!(base, other_kind);
        assert_eq!(
            base,
            KeyBuilder::new("rootfs")
                .add("packages", b"kmod\nrpcbind\n")
                .finish()
        );
    }

    #[test]
    fn key_parts_are_length_prefixed() {
        let split_one = KeyBuilder::new("k").add("ab", b"c").finish();
        let split_two = KeyBuilder::new("k").add("a", b"bc").finish();
        assert_ne!(split_one, split_two);
    }

    #[test]
    fn file_key_ignores_location_but_not_content() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        fs::write(one.path().join("rig-init"), "#!/bin/sh\n").unwrap();
        fs::write(two.path().join("rig-init"), "#!/bin/sh\n").unwrap();
        let key = |dir: &Path| {
            KeyBuilder::new("x")
                .add_file(&dir.join("rig-init"))
                .unwrap()
                .finish()
        };
        assert_eq!(key(one.path()), key(two.path()));
        fs::write(two.path().join("rig-init"), "#!/bin/sh\necho changed\n").unwrap();
        assert_ne!(key(one.path()), key(two.path()));
    }

    #[test]
    fn sha256_of_known_content() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("abc");
        fs::write(&file, "abc").unwrap();
        assert_eq!(
            sha256_file(&file).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn entry_is_complete_only_after_stamp() {
        let root = tempfile::tempdir().unwrap();
        let entry = Entry::new(root.path(), "rootfs", "bookworm", "0123");
        assert!(!entry.is_complete());
        entry.reset().unwrap();
        fs::write(entry.path("rootfs.ext4"), b"x").unwrap();
        assert!(!entry.is_complete());
        entry.mark_complete("ok").unwrap();
        assert!(entry.is_complete());
        entry.reset().unwrap();
        assert!(!entry.is_complete());
        assert!(!entry.path("rootfs.ext4").exists());
    }
}
