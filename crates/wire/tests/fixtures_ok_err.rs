//! Data-driven fixtures (rust-analyzer `test_data/{ok,err}` style): every `fixtures/ok/*.bin`
//! decodes and re-encodes to the same header bytes, every `fixtures/err/*.bin` is rejected with a
//! rule, and one compact line per file (decode result plus each svcrdma profile's verdict) is
//! snapshotted so a codec or rule-model change shows up as a reviewable diff.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use wire::raw::{fixture_corpus, Expect};
use wire::rpcrdma::{Body, ChunkLists, ErrorBody, Header, Segment};
use wire::svcrdma::{classify, Outcome, Profile};
use wire::Xdr;

fn fixtures_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(kind)
}

/// `(file stem, bytes)` of every `.bin` in a fixture directory, sorted by name.
fn read_fixtures(kind: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(fixtures_dir(kind)).expect("fixture directory exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bin") {
            let stem = path.file_stem().unwrap().to_str().unwrap().to_owned();
            out.push((stem, fs::read(&path).unwrap()));
        }
    }
    out.sort();
    out
}

fn segments(segs: &[Segment]) -> String {
    let parts: Vec<String> = segs
        .iter()
        .map(|s| format!("{:#x}:{}@{:#x}", s.handle, s.length, s.offset))
        .collect();
    parts.join(",")
}

fn lists(c: &ChunkLists) -> String {
    let reads: Vec<String> = c
        .read_chunks()
        .iter()
        .map(|r| format!("pos{}[{}]", r.position, segments(&r.segments)))
        .collect();
    let writes: Vec<String> = c
        .writes
        .iter()
        .map(|w| format!("[{}]", segments(w)))
        .collect();
    let reply = c
        .reply
        .as_ref()
        .map_or("-".to_owned(), |r| format!("[{}]", segments(r)));
    format!(
        "reads={} writes={} reply={reply}",
        if reads.is_empty() {
            "-".to_owned()
        } else {
            reads.join(" ")
        },
        if writes.is_empty() {
            "-".to_owned()
        } else {
            writes.join(" ")
        },
    )
}

fn describe(h: &Header) -> String {
    let body = match &h.body {
        Body::Msg(c) | Body::Nomsg(c) => lists(c),
        Body::Msgp {
            align,
            thresh,
            chunks,
        } => format!("align={align} thresh={thresh} {}", lists(chunks)),
        Body::Done => String::new(),
        Body::Error(ErrorBody::Vers { low, high }) => format!("ERR_VERS {low}..={high}"),
        Body::Error(ErrorBody::Chunk) => "ERR_CHUNK".to_owned(),
    };
    let line = format!(
        "{} xid={:#x} credits={} {body}",
        h.proc().name(),
        h.xid,
        h.credits
    );
    line.trim_end().to_owned()
}

fn verdicts(bytes: &[u8]) -> String {
    let parts: Vec<String> = Profile::ALL
        .iter()
        .map(|p| format!("{p}={}", classify(bytes, *p)))
        .collect();
    parts.join(" ")
}

#[test]
fn ok_fixtures_decode_and_reencode() {
    let fixtures = read_fixtures("ok");
    assert!(fixtures.len() >= 10, "ok/ holds the generated corpus");
    let mut report = String::new();
    for (name, bytes) in &fixtures {
        let (header, used) = Header::decode_prefix(bytes)
            .unwrap_or_else(|e| panic!("ok/{name}.bin must decode: {e}"));
        assert_eq!(used, header.encoded_len(), "{name}");
        assert_eq!(header.to_bytes(), bytes[..used], "{name} re-encodes");
        writeln!(
            report,
            "{name}: {} | hdr={used} inline={} | {}",
            describe(&header),
            bytes.len() - used,
            verdicts(bytes)
        )
        .unwrap();
    }
    insta::assert_snapshot!("ok", report);
}

#[test]
fn err_fixtures_are_rejected_with_a_rule() {
    let fixtures = read_fixtures("err");
    assert!(fixtures.len() >= 10, "err/ holds the generated corpus");
    let mut report = String::new();
    for (name, bytes) in &fixtures {
        let err = match Header::decode_prefix(bytes) {
            Ok((h, _)) => panic!("err/{name}.bin must not decode, got {h:?}"),
            Err(e) => e,
        };
        assert!(err.rule().starts_with("RFC "), "{name}: {err}");
        writeln!(
            report,
            "{name}: {err} -> {} | {}",
            Outcome::from(&err).name(),
            verdicts(bytes)
        )
        .unwrap();
    }
    insta::assert_snapshot!("err", report);
}

#[test]
fn committed_fixtures_match_the_generator() {
    // Regenerate with `cargo run -p rpcrdma-wire --example gen_fixtures`.
    let corpus = fixture_corpus();
    for (kind, expect) in [("ok", Expect::Decodes), ("err", Expect::Rejected)] {
        let expected: Vec<(String, Vec<u8>)> = {
            let mut v: Vec<(String, Vec<u8>)> = corpus
                .iter()
                .filter(|f| f.expect == expect)
                .map(|f| (f.name.to_owned(), f.bytes.clone()))
                .collect();
            v.sort();
            v
        };
        let on_disk = read_fixtures(kind);
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&on_disk), names(&expected), "{kind}/ file set");
        for ((name, disk), (_, generated)) in on_disk.iter().zip(&expected) {
            assert_eq!(
                disk, generated,
                "{kind}/{name}.bin differs from the generator"
            );
        }
    }
}

#[test]
fn corpus_names_are_unique_and_kinds_match_the_decoder() {
    let corpus = fixture_corpus();
    let mut names: Vec<&str> = corpus.iter().map(|f| f.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), corpus.len());
    for f in &corpus {
        assert_eq!(
            Header::decode_prefix(&f.bytes).is_ok(),
            f.expect == Expect::Decodes,
            "{}",
            f.name
        );
    }
}
