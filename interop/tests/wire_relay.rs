//! The relay between the guests (interop::wire) over real unix datagram sockets, with two test
//! sockets in the guests' places: frames cross in order and are captured; a case's rules arrive
//! in-band on the control port and are answered; a frame a rule drops never reaches the other
//! side, and the capture shows it as a `RIG` line in `rig trace show`'s rendering.

use std::net::Ipv4Addr;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::Duration;

use interop::wire::WireRelay;
use relay::control::{decode_reply, request_frame, ControlReply, ControlRequest, UdpEndpoints};
use relay::rules::{Action, Rule, RuleSet, Selector};
use relay::{Direction, FrameKind, OpcodeClass, RpcMsg};

fn fixture_frames() -> Vec<Vec<u8>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/pcap/nfs3-linux-7.2.pcap");
    let bytes = std::fs::read(path).unwrap();
    trace::capture::read_capture(&bytes)
        .unwrap()
        .frames
        .into_iter()
        .map(|f| f.data.into_owned())
        .collect()
}

/// The first frame of the fixture that, sent by `direction`, is an RPC message of kind `msg`.
fn rpc_frame(frames: &[Vec<u8>], direction: Direction, msg: RpcMsg) -> Vec<u8> {
    frames
        .iter()
        .find(|f| match relay::classify(direction, f).kind {
            FrameKind::Roce(roce) => {
                roce.opcode == OpcodeClass::SendOnly && roce.rpc.is_some_and(|r| r.msg == msg)
            }
            _ => false,
        })
        .expect("the fixture has one")
        .clone()
}

struct Pair {
    _dir: tempfile::TempDir,
    client: UnixDatagram,
    server: UnixDatagram,
    relay: Option<WireRelay>,
    capture: std::path::PathBuf,
}

impl Pair {
    fn new() -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let client_path = dir.path().join("cli.sock");
        let server_path = dir.path().join("srv.sock");
        let client = UnixDatagram::bind(&client_path).unwrap();
        let server = UnixDatagram::bind(&server_path).unwrap();
        for s in [&client, &server] {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        }
        let capture = dir.path().join("wire.pcapng");
        let relay = WireRelay::start(
            dir.path(),
            (&server_path, &client_path),
            &capture,
            interop::wire::IWARP_ACCEPT_FENCE,
        )
        .unwrap();
        Pair {
            _dir: dir,
            client,
            server,
            relay: Some(relay),
            capture,
        }
    }

    fn relay(&self) -> &WireRelay {
        self.relay.as_ref().unwrap()
    }

    fn send_from_client(&self, frame: &[u8]) {
        self.client
            .send_to(frame, &self.relay().client_remote)
            .unwrap();
    }

    fn send_from_server(&self, frame: &[u8]) {
        self.server
            .send_to(frame, &self.relay().server_remote)
            .unwrap();
    }

    /// Ask the relay something over the control port, as a case in the client guest does.
    fn control(&self, request: &ControlRequest) -> ControlReply {
        let endpoints = UdpEndpoints {
            src_mac: [2, 0, 0, 0, 0, 2],
            dst_mac: [2, 0, 0, 0, 0, 1],
            src_ip: Ipv4Addr::new(10, 0, 0, 2),
            dst_ip: Ipv4Addr::new(10, 0, 0, 1),
            src_port: 40000,
            dst_port: relay::control::CONTROL_PORT,
        };
        self.send_from_client(&request_frame(&endpoints, 7, request).unwrap());
        let mut buf = vec![0u8; 65536];
        let len = self.client.recv(&mut buf).unwrap();
        let (to, reply) = decode_reply(&[&buf[..len]]).unwrap();
        assert_eq!(to, endpoints.swapped(), "the reply goes back to the asker");
        reply
    }

    fn stop(self) -> (interop::wire::WireReport, Vec<u8>) {
        let (report, capture, _) = self.stop_with_cases();
        (report, capture)
    }

    /// Stop, and read the run's capture and each case's (by file name, sorted) before the
    /// directory goes.
    #[allow(clippy::type_complexity)]
    fn stop_with_cases(mut self) -> (interop::wire::WireReport, Vec<u8>, Vec<(String, Vec<u8>)>) {
        let report = self.relay.take().unwrap().stop().unwrap();
        let cases_dir = self.capture.with_file_name(interop::wire::CASES_DIR);
        let mut cases: Vec<(String, Vec<u8>)> = std::fs::read_dir(&cases_dir)
            .map(|dir| {
                dir.map(|e| {
                    let e = e.unwrap();
                    (
                        e.file_name().into_string().unwrap(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect()
            })
            .unwrap_or_default();
        cases.sort();
        (report, std::fs::read(&self.capture).unwrap(), cases)
    }
}

fn receive(socket: &UnixDatagram) -> Vec<u8> {
    let mut buf = vec![0u8; 65536];
    let len = socket.recv(&mut buf).unwrap();
    buf.truncate(len);
    buf
}

#[test]
fn frames_cross_in_order_both_ways_and_are_captured_in_forwarding_order() {
    let frames = fixture_frames();
    let pair = Pair::new();
    for frame in &frames[..20] {
        pair.send_from_client(frame);
    }
    for frame in &frames[20..30] {
        pair.send_from_server(frame);
    }
    for frame in &frames[..20] {
        assert_eq!(&receive(&pair.server), frame);
    }
    for frame in &frames[20..30] {
        assert_eq!(&receive(&pair.client), frame);
    }
    let (report, capture) = pair.stop();
    assert_eq!(
        (report.from_client, report.from_server, report.forwarded),
        (20, 10, 30)
    );
    assert_eq!((report.dropped, report.undeliverable), (0, 0));
    let captured = trace::capture::read_capture(&capture).unwrap().frames;
    assert_eq!(captured.len(), 30);
    assert!(captured
        .iter()
        .all(|f| !f.dropped_by_rig && f.comment.is_none()));
    let mut expected: Vec<&Vec<u8>> = frames[..30].iter().collect();
    expected.sort();
    let mut got: Vec<Vec<u8>> = captured.into_iter().map(|f| f.data.into_owned()).collect();
    got.sort();
    assert_eq!(got.iter().collect::<Vec<_>>(), expected);
}

#[test]
fn a_rule_set_over_the_control_port_drops_the_reply_once_and_the_capture_marks_it() {
    let frames = fixture_frames();
    let reply = rpc_frame(&frames, Direction::FromServer, RpcMsg::Reply);
    let pair = Pair::new();
    let rules = RuleSet::new(
        "reply-lost-live".into(),
        vec![Rule {
            name: "lose-reply".into(),
            select: Selector::All(vec![
                Selector::Direction(Direction::FromServer),
                Selector::Opcode(OpcodeClass::SendOnly),
            ]),
            action: Action::Drop { times: 1 },
            max_hits: None,
        }],
    )
    .unwrap();
    assert_eq!(
        pair.control(&ControlRequest::SetRules(rules)),
        ControlReply::Ok {
            case: "reply-lost-live".into(),
            rules: 1
        }
    );
    // Dropped once, then (the RC layer's retransmission) delivered.
    pair.send_from_server(&reply);
    pair.send_from_server(&reply);
    assert_eq!(receive(&pair.client), reply);
    pair.client
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert!(
        pair.client.recv(&mut buf).is_err(),
        "the dropped copy arrived"
    );
    assert_eq!(
        pair.control(&ControlRequest::Clear),
        ControlReply::Ok {
            case: String::new(),
            rules: 0
        }
    );
    let (report, capture) = pair.stop();
    assert_eq!((report.dropped, report.forwarded), (1, 1));
    assert_eq!(report.control, 2);

    let captured = trace::capture::read_capture(&capture).unwrap().frames;
    assert_eq!(captured.len(), 2);
    assert!(captured[0].dropped_by_rig);
    assert!(captured[0]
        .comment
        .as_deref()
        .is_some_and(|c| c.starts_with("dropped by the rig (rule lose-reply)")));
    assert!(!captured[1].dropped_by_rig);
    let trace = trace::trace_capture(&capture, &trace::Options::default()).unwrap();
    let text = trace::render::render(
        &trace,
        trace::render::Style::Normalised,
        trace::Level::Exchange,
    )
    .lines;
    assert!(
        text.lines()
            .any(|l| l.contains("RIG dropped by the rig (rule lose-reply)")),
        "{text}"
    );
}

#[test]
fn each_case_that_begins_gets_its_own_capture_until_the_next_begins() {
    let frames = fixture_frames();
    let pair = Pair::new();
    // Before any case: the run's capture only.
    pair.send_from_client(&frames[0]);
    assert_eq!(receive(&pair.server), frames[0]);
    for (case, range) in [("nfsd.ack-lost", 1..4), ("../nfsd/odd", 4..6)] {
        assert_eq!(
            pair.control(&ControlRequest::Begin { case: case.into() }),
            ControlReply::Ok {
                case: case.into(),
                rules: 0
            }
        );
        for frame in &frames[range.clone()] {
            pair.send_from_client(frame);
            assert_eq!(&receive(&pair.server), frame);
        }
    }
    // A case needs a name.
    assert!(matches!(
        pair.control(&ControlRequest::Begin {
            case: String::new()
        }),
        ControlReply::Error { .. }
    ));
    let (report, capture, cases) = pair.stop_with_cases();
    assert_eq!(report.forwarded, 6);
    assert_eq!(
        trace::capture::read_capture(&capture).unwrap().frames.len(),
        6
    );
    let names: Vec<&str> = cases.iter().map(|(name, _)| name.as_str()).collect();
    // A name from the wire never leaves the directory.
    assert_eq!(names, ["_nfsd_odd.pcapng", "nfsd.ack-lost.pcapng"]);
    let frames_of = |bytes: &[u8]| -> Vec<Vec<u8>> {
        trace::capture::read_capture(bytes)
            .unwrap()
            .frames
            .into_iter()
            .map(|f| f.data.into_owned())
            .collect()
    };
    assert_eq!(frames_of(&cases[1].1), frames[1..4].to_vec());
    assert_eq!(frames_of(&cases[0].1), frames[4..6].to_vec());
}
