//! Fuzz target: a whole capture (pcap/pcapng bytes) through link, IB, reassembly and upper layers,
//! then both renderings; nothing panics, whatever the frames say.
#![no_main]
use libfuzzer_sys::fuzz_target;
use trace::render::{jsonl, text, Style};
use trace::{trace_capture, Options};

fuzz_target!(|data: &[u8]| {
    for check_icrc in [false, true] {
        let options = Options {
            check_icrc,
            ..Options::default()
        };
        if let Ok(trace) = trace_capture(data, &options) {
            let _ = text(&trace, Style::Normalised);
            let _ = text(&trace, Style::Raw);
            let _ = jsonl(&trace);
        }
    }
});
