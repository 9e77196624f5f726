//! ARCHITECTURE.md's rule → function table names one function per protocol rule and the source
//! file it lives in; this test reads the table and checks that every named function is defined
//! there, so renaming or moving one without updating the table fails here.

use std::path::{Path, PathBuf};

const HEADER: &str = "| rule | function | source | called by |";

/// The workspace root (this crate is `crates/wire`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The table's rows, each split into its four cells.
fn rows(architecture: &str) -> Vec<Vec<String>> {
    let mut lines = architecture
        .lines()
        .skip_while(|line| line.trim() != HEADER)
        .skip(2); // the header and its `|---|` line
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        let line = line.trim();
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().to_string())
            .collect();
        assert_eq!(cells.len(), 4, "a row of four cells: {line}");
        rows.push(cells);
    }
    rows
}

/// The text of `cell` outside parentheses (notes there name callers and modes, not the function).
fn outside_parentheses(cell: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The `backticked` names of `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Whether `source` (the text of `file`) defines `name`: an `impl …` line verbatim, else the
/// last path segment as a `fn`, type, trait, constant or static, or the module that is `file`.
fn defines(file: &Path, source: &str, name: &str) -> bool {
    if name.starts_with("impl ") {
        return source.contains(name);
    }
    let ident = name.rsplit("::").next().unwrap_or(name);
    if file.file_stem().and_then(|s| s.to_str()) == Some(ident) {
        return true;
    }
    ["fn", "struct", "enum", "trait", "const", "static", "type"]
        .iter()
        .any(|kind| {
            let item = format!("{kind} {ident}");
            source.match_indices(&item).any(|(at, _)| {
                let after = source[at + item.len()..].chars().next();
                !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        })
}

#[test]
fn every_function_in_the_rule_table_is_defined_in_its_source_file() {
    let architecture = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let rows = rows(&architecture);
    assert!(rows.len() >= 20, "the rule table has {} rows", rows.len());
    for row in &rows {
        let (rule, functions, sources) = (&row[0], &row[1], &row[2]);
        let files: Vec<(PathBuf, String)> = backticked(sources)
            .into_iter()
            .map(|path| {
                let file = root().join(&path);
                let text = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{rule}: source {path}: {e}"));
                (file, text)
            })
            .collect();
        assert!(!files.is_empty(), "{rule}: no source file");
        let names = backticked(&outside_parentheses(functions));
        assert!(!names.is_empty(), "{rule}: no function named");
        for name in names {
            assert!(
                files.iter().any(|(file, text)| defines(file, text, &name)),
                "{rule}: `{name}` is not defined in {sources}"
            );
        }
    }
}

#[test]
fn the_checker_finds_definitions_and_misses_renames() {
    let file = Path::new("crates/wire/src/ddp.rs");
    let source = "pub fn check_aligned(position: u32) {}\nimpl From<&X> for Rule {}";
    assert!(defines(file, source, "wire::ddp::check_aligned"));
    assert!(!defines(file, source, "wire::ddp::check_align"));
    assert!(!defines(file, source, "wire::ddp::check_aligned_now"));
    assert!(defines(file, source, "impl From<&X> for Rule"));
    assert!(defines(file, "", "wire::ddp"));
    assert_eq!(
        backticked(&outside_parentheses("`a::b` (`c`), `d`")),
        ["a::b", "d"]
    );
}
