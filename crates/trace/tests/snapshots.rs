//! insta snapshots of the normalised traces of the fixture captures at the default (exchange)
//! level, with the summary lines (transport counts, capture status): a kernel change that alters
//! what goes on the wire shows up as a reviewable snapshot diff.

use std::path::Path;

fn normalised(name: &str) -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../fixtures/pcap/{name}.pcap"));
    let bytes = std::fs::read(path).unwrap();
    let options = trace::Options {
        check_icrc: true,
        ..Default::default()
    };
    let t = trace::trace_capture(&bytes, &options).unwrap();
    let rendered =
        trace::render::render(&t, trace::render::Style::Normalised, trace::Level::Exchange);
    // No RC-level events in these captures: every event is a line at both levels.
    assert_eq!(
        rendered.lines,
        trace::render::text(&t, trace::render::Style::Normalised)
    );
    rendered.to_text()
}

#[test]
fn nfs3_linux_6_1() {
    insta::assert_snapshot!("nfs3-linux-6.1", normalised("nfs3-linux-6.1"));
}

#[test]
fn nfs3_linux_7_2() {
    insta::assert_snapshot!("nfs3-linux-7.2", normalised("nfs3-linux-7.2"));
}

#[test]
fn nfs41_linux_6_1() {
    insta::assert_snapshot!("nfs41-linux-6.1", normalised("nfs41-linux-6.1"));
}

#[test]
fn nfs41_linux_6_12() {
    insta::assert_snapshot!("nfs41-linux-6.12", normalised("nfs41-linux-6.12"));
}

#[test]
fn nfs41_linux_7_x() {
    insta::assert_snapshot!("nfs41-linux-7.x", normalised("nfs41-linux-7.x"));
}
