//! Architecture Invariants of ARCHITECTURE.md that are crate boundaries, checked on the crate
//! graph (`cargo metadata`) and the sources: the simulator moves bytes and cannot reach the
//! codec; the server reaches the transport only through the engine; crates/rdma runs the one
//! NFSv3 scenario catalogue of crates/client and holds none of its own; the verdict crate
//! (judging, counting, ftrace parsing) reaches no FFI.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace as `cargo metadata --no-deps` describes it: each package's manifest path and
/// its dependencies with their kind (`null` normal, `"dev"`, `"build"`).
fn metadata() -> &'static serde_json::Value {
    static METADATA: OnceLock<serde_json::Value> = OnceLock::new();
    METADATA.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let output = std::process::Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            output.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("cargo metadata JSON")
    })
}

/// The package names a crate (its directory under crates/) links: its normal dependencies, not
/// dev- or build-dependencies.
fn dependencies(krate: &str) -> Vec<String> {
    let manifest = crates_dir().join(krate).join("Cargo.toml");
    let manifest = manifest.canonicalize().unwrap_or(manifest);
    let package = metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path()))
        .unwrap_or_else(|| panic!("no workspace package at {}", manifest.display()));
    package["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect()
}

fn sources(krate: &str) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&crates_dir().join(krate).join("src"), &mut out);
    assert!(!out.is_empty(), "no sources for {krate}");
    out
}

#[test]
fn the_simulator_cannot_reach_the_codec() {
    // "the simulator never inspects RPC-over-RDMA headers; it moves bytes"
    let deps = dependencies("sim");
    assert_eq!(deps, ["rpcrdma-engine"], "sim's dependencies");
    for (path, text) in sources("sim") {
        assert!(
            !text.contains("wire::"),
            "{} reaches the codec through a re-export",
            path.display()
        );
    }
}

#[test]
fn the_server_reaches_the_transport_only_through_the_engine() {
    let deps = dependencies("server");
    for driver in ["rpcrdma-verbs", "rpcrdma-rdma", "rpcrdma-sim"] {
        assert!(
            !deps.iter().any(|d| d == driver),
            "server depends on {driver}"
        );
    }
    assert!(deps.iter().any(|d| d == "rpcrdma-engine"));
}

#[test]
fn rdma_holds_no_nfsv3_scenario_catalogue_of_its_own() {
    // The NFSv4.1 session scenarios (v41.rs) are RDMA-only: the simulator hosts no NFSv4.1 server.
    assert!(dependencies("rdma").iter().any(|d| d == "rpcrdma-client"));
    for (path, text) in sources("rdma") {
        if path.to_string_lossy().contains("v41") {
            continue;
        }
        for definition in ["fn catalogue(", "struct Scenario", "type ScenarioBody"] {
            assert!(
                !text.contains(definition),
                "{} defines `{definition}`: scenarios live in client::scenarios",
                path.display()
            );
        }
    }
}

#[test]
fn the_transport_trait_schedules_no_upper_layer_work() {
    // engine::endpoint::Endpoint is what a driver moves bytes for; nfsd's work is UpperLayer's,
    // implemented by the server (and the fuzzer's server wrapper), never by the engine.
    let (_, source) = sources("engine")
        .into_iter()
        .find(|(path, _)| path.ends_with("endpoint.rs"))
        .expect("engine/src/endpoint.rs");
    let endpoint = source
        .split("pub trait Endpoint {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("trait Endpoint");
    assert!(endpoint.contains("fn handle_event"));
    assert!(!endpoint.contains("upper_layer"), "{endpoint}");
    for (path, text) in sources("engine") {
        assert!(
            !text.contains("UpperLayer for"),
            "{} implements UpperLayer on an engine type",
            path.display()
        );
    }
}

/// Every workspace crate `krate` depends on, directly or through another workspace crate
/// (`[dependencies]` only: what a build of `krate` links).
fn workspace_closure(krate: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut todo = vec![krate.to_string()];
    while let Some(next) = todo.pop() {
        for dep in dependencies(&next) {
            if let Some(dir) = dep.strip_prefix("rpcrdma-") {
                if !seen.iter().any(|s| s == dir) {
                    seen.push(dir.to_string());
                    todo.push(dir.to_string());
                }
            }
        }
    }
    seen.sort();
    seen
}

#[test]
fn the_verdict_crate_links_no_ffi() {
    // Judging and counting are pure logic over what a driver collected: `rig judge`, interop
    // and their tests must build without rdma-core. Its whole workspace closure is the codec.
    assert_eq!(workspace_closure("verdict"), ["wire"]);
    for (path, text) in sources("verdict") {
        for io in [
            "std::fs",
            "std::net",
            "std::process",
            "Instant",
            "SystemTime",
        ] {
            assert!(!text.contains(io), "{} uses {io}", path.display());
        }
    }
    // And it is where they live: the verbs driver does not hold them again.
    assert!(workspace_closure("rdma").iter().any(|d| d == "verdict"));
    for (path, _) in sources("rdma") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name != "judge.rs" && name != "counted.rs",
            "{} is the verdict crate's",
            path.display()
        );
    }
}

/// The `src/` directory of every workspace crate and of the harness.
fn source_roots() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = std::fs::read_dir(crates_dir())
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    roots.push(crates_dir().join("../interop/src"));
    roots
}

/// The top-level modules of a crate's `src/` (a file `x.rs` or a directory `x/`; `lib.rs`,
/// `main.rs` and `bin/` are the root, not modules) with the text of their non-test code.
fn modules(src: &Path) -> Vec<(String, String)> {
    fn collect(dir: &Path, text: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                collect(&path, text);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&non_test_code(&std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if ["lib", "main", "bin"].contains(&name.as_str()) {
            continue;
        }
        let mut text = String::new();
        if path.is_dir() {
            collect(&path, &mut text);
        } else if path.extension().is_some_and(|e| e == "rs") {
            text = non_test_code(&std::fs::read_to_string(&path).unwrap());
        } else {
            continue;
        }
        out.push((name, text));
    }
    out.sort();
    out
}

/// The code of a file before its `#[cfg(test)]` module, without comment lines.
fn non_test_code(text: &str) -> String {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A cycle among the modules of `src`, if there is one: `a → b → … → a`.
fn module_cycle(src: &Path) -> Option<Vec<String>> {
    let modules = modules(src);
    let names: Vec<&str> = modules.iter().map(|(n, _)| n.as_str()).collect();
    let edges: Vec<Vec<usize>> = modules
        .iter()
        .enumerate()
        .map(|(i, (_, text))| {
            (0..names.len())
                .filter(|&j| j != i)
                .filter(|&j| {
                    // `crate::ab` must not count as a use of `crate::a`.
                    text.match_indices(&format!("crate::{}", names[j]))
                        .any(|(at, m)| {
                            !text[at + m.len()..]
                                .chars()
                                .next()
                                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        })
                })
                .collect()
        })
        .collect();
    // Depth-first search with colours: grey on the stack, black done.
    fn visit(v: usize, edges: &[Vec<usize>], colour: &mut [u8], stack: &mut Vec<usize>) -> bool {
        colour[v] = 1;
        stack.push(v);
        for &w in &edges[v] {
            if colour[w] == 1 {
                stack.push(w);
                return true;
            }
            if colour[w] == 0 && visit(w, edges, colour, stack) {
                return true;
            }
        }
        stack.pop();
        colour[v] = 2;
        false
    }
    let mut colour = vec![0u8; names.len()];
    for start in 0..names.len() {
        let mut stack = Vec::new();
        if colour[start] == 0 && visit(start, &edges, &mut colour, &mut stack) {
            let last = *stack.last().unwrap();
            let first = stack.iter().position(|&v| v == last).unwrap();
            return Some(
                stack[first..]
                    .iter()
                    .map(|&v| names[v].to_string())
                    .collect(),
            );
        }
    }
    None
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    // A newcomer reads a crate's modules in dependency order; a cycle (a → b → a) means neither
    // can be understood alone. Every workspace crate and the harness.
    let roots = source_roots();
    assert!(roots.len() > 10, "{roots:?}");
    for src in roots {
        assert_eq!(module_cycle(&src), None, "{}", src.display());
    }
    // The check finds a cycle when there is one.
    let dir = std::env::temp_dir().join(format!("cycle-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::B;\n").unwrap();
    std::fs::write(dir.join("b.rs"), "use crate::ab::X;\nuse crate::a::A;\n").unwrap();
    std::fs::write(dir.join("ab.rs"), "// crate::a in a comment\n").unwrap();
    let cycle = module_cycle(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(cycle, Some(vec!["a".into(), "b".into(), "a".into()]));
}

/// Longest `impl` block allowed outside tests (the bindgen file aside): a block longer than a
/// few screens holds more than one responsibility.
const MAX_IMPL_LINES: usize = 300;

/// `(file, first line, length)` of every top-level `impl` block in `text` before its tests.
fn long_impls(path: &Path, text: &str) -> Vec<(String, usize, usize)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !(line.starts_with("impl") && line.trim_end().ends_with('{')) {
            continue;
        }
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == "}") {
            let len = end + 2;
            if len > MAX_IMPL_LINES {
                out.push((path.display().to_string(), i + 1, len));
            }
        }
    }
    out
}

#[test]
fn no_impl_block_outside_tests_is_over_300_lines() {
    fn walk(dir: &Path, out: &mut Vec<(String, usize, usize)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                && !path.ends_with("verbs/src/sys.rs")
            {
                out.extend(long_impls(&path, &std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut long = Vec::new();
    for root in source_roots() {
        walk(&root, &mut long);
    }
    assert!(
        long.is_empty(),
        "impl blocks over {MAX_IMPL_LINES} lines: {long:?}"
    );
    // The check sees a long block.
    let body = "    fn f() {}\n".repeat(MAX_IMPL_LINES);
    let text = format!("impl X {{\n{body}}}\n");
    assert_eq!(long_impls(Path::new("x.rs"), &text).len(), 1);
}
