//! Print a capture's trace (development aid): `cargo run -p rpcrdma-trace --example dump FILE [raw|json]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: dump FILE [raw|json]");
    let mode = args.next().unwrap_or_default();
    let bytes = std::fs::read(path).expect("read capture");
    let options = trace::Options {
        check_icrc: true,
        ..Default::default()
    };
    let t = trace::trace_capture(&bytes, &options).expect("capture");
    match mode.as_str() {
        "raw" => print!("{}", trace::render::text(&t, trace::render::Style::Raw)),
        "json" => print!("{}", trace::render::jsonl(&t)),
        _ => print!(
            "{}",
            trace::render::text(&t, trace::render::Style::Normalised)
        ),
    }
}
