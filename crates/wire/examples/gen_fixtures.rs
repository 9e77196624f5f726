//! Writes `fixtures/{ok,err}/<kind>.bin` from `wire::raw::fixture_corpus()`.
//!
//! Run `cargo run -p rpcrdma-wire --example gen_fixtures` after changing the corpus; the test
//! `fixtures_ok_err::committed_fixtures_match_the_generator` fails until the files are regenerated.
//! Files in those directories that the corpus no longer names are removed.

use std::fs;
use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let corpus = wire::raw::fixture_corpus();
    for dir in ["ok", "err"] {
        let dir_path = root.join(dir);
        fs::create_dir_all(&dir_path)?;
        for entry in fs::read_dir(&dir_path)? {
            let path = entry?.path();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let known = corpus.iter().any(|f| f.dir() == dir && f.name == stem);
            if path.extension().is_some_and(|e| e == "bin") && !known {
                fs::remove_file(&path)?;
                println!("removed {}", path.display());
            }
        }
    }
    for fixture in &corpus {
        let path = root
            .join(fixture.dir())
            .join(format!("{}.bin", fixture.name));
        fs::write(&path, &fixture.bytes)?;
        println!("{:>4} bytes  {}", fixture.bytes.len(), path.display());
    }
    Ok(())
}
