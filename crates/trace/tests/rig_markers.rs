//! The rig's relay marks each fault it injects as the pcapng comment of the frame concerned, and
//! writes a frame it dropped on its "dropped by the rig" interface: `rig trace show` renders each
//! mark as a `RIG …` line at every level, and a dropped frame is never treated as delivered.

use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use trace::capture::{LinkType, DROPPED_BY_RIG_INTERFACE};
use trace::render::{self, Style};
use trace::Level;

fn fixture_frames() -> Vec<(Duration, Vec<u8>)> {
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/pcap/nfs3-linux-7.2.pcap"),
    )
    .unwrap();
    trace::capture::read_capture(&bytes)
        .unwrap()
        .frames
        .into_iter()
        .map(|f| (f.time, f.data.into_owned()))
        .collect()
}

/// One frame of the relay's capture: on which interface, with which comment.
struct Written<'a> {
    time: Duration,
    data: &'a [u8],
    dropped: bool,
    comment: Option<&'static str>,
}

fn write_pcapng(frames: &[Written<'_>]) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    for name in ["relayed", DROPPED_BY_RIG_INTERFACE] {
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![InterfaceDescriptionOption::IfName(Cow::Borrowed(name))],
        })
        .unwrap();
    }
    for f in frames {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: u32::from(f.dropped),
            timestamp: f.time,
            original_len: f.data.len() as u32,
            data: Cow::Borrowed(f.data),
            options: f
                .comment
                .map(|c| EnhancedPacketOption::Comment(Cow::Borrowed(c)))
                .into_iter()
                .collect(),
        })
        .unwrap();
    }
    w.into_inner()
}

fn show(capture: &[u8], level: Level) -> String {
    let trace = trace::trace_capture(capture, &trace::Options::default()).unwrap();
    render::render(&trace, Style::Normalised, level).lines
}

/// Index of the first Send from the server carrying RPC-over-RDMA (the first reply).
fn first_server_send(frames: &[(Duration, Vec<u8>)]) -> usize {
    let server_port_frames = frames.iter().position(|(_, d)| {
        trace::link::roce_packet(LinkType::Ethernet, d)
            .and_then(|p| trace::ib::decode(p.transport).ok())
            .is_some_and(|p| p.opcode == trace::ib::Opcode::SendOnly && p.payload.len() > 28)
    });
    server_port_frames.expect("the fixture has a Send")
}

#[test]
fn each_mark_is_a_rig_line_and_a_dropped_frame_is_not_delivered() {
    let frames = fixture_frames();
    let plain: Vec<Written<'_>> = frames
        .iter()
        .map(|(time, data)| Written {
            time: *time,
            data,
            dropped: false,
            comment: None,
        })
        .collect();
    let baseline = show(&write_pcapng(&plain), Level::Exchange);

    // The relay dropped a copy of one Send once (the original went through later, held).
    let at = first_server_send(&frames);
    let mut marked: Vec<Written<'_>> = Vec::new();
    for (i, w) in plain.iter().enumerate() {
        if i == at {
            marked.push(Written {
                dropped: true,
                comment: Some("dropped by the rig (rule lose-once): SEND Only"),
                ..*w
            });
            marked.push(Written {
                comment: Some("held 300 ms by the rig (rule lose-once): SEND Only"),
                ..*w
            });
        } else {
            marked.push(Written { ..*w });
        }
    }
    let capture = write_pcapng(&marked);
    for level in [Level::Exchange, Level::Transport] {
        let text = show(&capture, level);
        let rig: Vec<&str> = text.lines().filter(|l| l.contains(" RIG ")).collect();
        assert_eq!(rig.len(), 2, "{level:?}:\n{text}");
        assert!(rig[0].ends_with("RIG dropped by the rig (rule lose-once): SEND Only"));
        // Normalised: the hold's duration varies from run to run.
        assert!(rig[1].ends_with("RIG held <t> by the rig (rule lose-once): SEND Only"));
        if level == Level::Exchange {
            // Without its marks the exchange is the one the plain capture shows: the dropped
            // copy was not taken for a delivery (no duplicate, no second message).
            let unmarked: Vec<&str> = text.lines().filter(|l| !l.contains(" RIG ")).collect();
            assert_eq!(unmarked.join("\n"), baseline.trim_end_matches('\n'));
        }
    }
    let trace = trace::trace_capture(&capture, &trace::Options::default()).unwrap();
    assert_eq!(trace::TransportCounts::of(&trace).duplicates, 0);
}
