//! Fuzz target: a whole capture (pcap/pcapng bytes) through link, IB, reassembly and upper layers,
//! then its renderings; nothing panics, whatever the frames say, and the renderings hold what
//! `rig trace` relies on:
//! * the streaming path (`stream_capture` feeding `EventWriter`s, which `rig trace show` uses on
//!   large captures and which keeps no events) writes the same bytes as rendering the whole trace
//!   (`render` and its summary, `jsonl`), in both text styles;
//! * every event is at most one line (guest-controlled text is escaped, so a name or an error
//!   cannot start a line of its own), and the JSON has exactly one line per message.
#![no_main]
use std::ops::ControlFlow;

use libfuzzer_sys::fuzz_target;
use trace::render::{jsonl, render, EventWriter, Style};
use trace::{stream_capture, trace_capture, Level, Options};

fuzz_target!(|data: &[u8]| {
    for check_icrc in [false, true] {
        let options = Options {
            check_icrc,
            ..Options::default()
        };
        let Ok(trace) = trace_capture(data, &options) else {
            continue;
        };
        let whole = |style| {
            let rendered = render(&trace, style, Level::Transport);
            // One line per event, plus the capture error line when the file ended malformed.
            let most = trace.events.len() + usize::from(trace.capture_error.is_some());
            let count = rendered.lines.lines().count();
            assert!(count <= most, "{count} lines for {most} events");
            format!("{}{}", rendered.lines, rendered.summary())
        };
        let json = jsonl(&trace);
        assert_eq!(json.lines().count(), trace.messages().count());

        let (mut normalised, mut raw, mut jsonl_out) = (Vec::new(), Vec::new(), Vec::new());
        {
            let mut writers = [
                EventWriter::text(Style::Normalised, Level::Transport, &mut normalised),
                EventWriter::text(Style::Raw, Level::Transport, &mut raw),
                EventWriter::jsonl(&mut jsonl_out),
            ];
            let rest = stream_capture(data, &options, &mut |event| {
                for writer in &mut writers {
                    writer.event(&event).expect("a Vec takes every write");
                }
                ControlFlow::Continue(())
            })
            .expect("the capture traced once streams too");
            for writer in writers {
                writer.finish(&rest).expect("a Vec takes every write");
            }
        }
        assert_eq!(
            String::from_utf8_lossy(&normalised),
            whole(Style::Normalised)
        );
        assert_eq!(String::from_utf8_lossy(&raw), whole(Style::Raw));
        assert_eq!(String::from_utf8_lossy(&jsonl_out), json);
    }
});
