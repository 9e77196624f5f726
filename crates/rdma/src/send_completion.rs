//! The client side of the Send-completion measurement (`rig send-completion`): one NULL call
//! answered, then every frame from the server cut on the rig's relay, a second NULL call sent,
//! its reply looked for while the cut stands, the server told (a file on the shared directory)
//! to copy its svcrdma trace, and only then the cut mended. Whatever the server's trace shows
//! as completed at that copy completed while the client had nothing of the reply: the
//! premise of the 2026 DRC series, checked per transport (`verdict::send_completion`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use engine::{ConnectionConfig, OutgoingCall, RequesterOutput};
use verdict::send_completion::ClientMeasurement;
use wire::nfs3::Nfs3Call;
use wire::nfs_client;

use crate::relay_control::{RdmaLink, RelayControl};
use crate::requester::RdmaClient;
use crate::scenarios::run_until_replies;

/// Where and how long.
#[derive(Debug, Clone)]
pub struct Options {
    pub server: std::net::SocketAddr,
    /// The relay's case name (its per-case capture is named after it).
    pub case: String,
    /// Longest wait for the warm-up's reply and for the reply after the cut is mended.
    pub timeout: Duration,
    /// How long the cut stands before the server is asked to copy its trace.
    pub cut_for: Duration,
    /// Written (empty) when the server should copy its trace: the cut stands.
    pub signal_cut: PathBuf,
    /// Waited for (at most `timeout`) before the cut is mended: the server has its copy.
    pub await_copied: PathBuf,
}

/// NULL calls of the measurement: a fixed XID base, so the trace and capture name them.
const WARMUP_XID: u32 = 0x5e4d_0001;
const CUT_OFF_XID: u32 = 0x5e4d_0002;

/// Run the measurement. Errors after the connection is up are recorded in the result (the
/// server side still judges what it can), never a panic.
pub fn measure(options: &Options) -> ClientMeasurement {
    let link = RdmaLink::of_this_host();
    let mut result = ClientMeasurement {
        link: match link {
            RdmaLink::RoceV2 => "roce",
            RdmaLink::Iwarp => "iwarp",
        }
        .to_string(),
        xid: CUT_OFF_XID,
        warmup_answered: false,
        cut_ms: 0,
        answered_while_cut: false,
        frames_lost: 0,
        answered_after_mend: false,
        connection_survived: false,
        error: None,
    };
    if let Err(e) = run(options, &mut result) {
        result.error = Some(e);
    }
    result
}

fn null_call(xid: u32) -> OutgoingCall {
    OutgoingCall::inline(xid, nfs_client::nfs3_call(xid, &Nfs3Call::Null))
}

fn answered(client: &mut RdmaClient, xid: u32, within: Duration) -> bool {
    run_until_replies(client, within, xid, 0, 1);
    client
        .take_outputs()
        .iter()
        .any(|o| matches!(o, RequesterOutput::Reply(r) if r.xid == xid))
}

fn run(options: &Options, result: &mut ClientMeasurement) -> Result<(), String> {
    let mut client =
        RdmaClient::connect(options.server, ConnectionConfig::default(), options.timeout)
            .map_err(|e| format!("connect: {e}"))?;
    let mut relay = RelayControl::open(options.server.ip(), &options.case)
        .map_err(|e| format!("relay: {e}"))?;
    client
        .call(null_call(WARMUP_XID), true)
        .map_err(|e| format!("warm-up call: {e}"))?;
    result.warmup_answered = answered(&mut client, WARMUP_XID, options.timeout);
    if !result.warmup_answered {
        return Err("the warm-up NULL was not answered".into());
    }
    relay
        .cut_from_server()
        .map_err(|e| format!("relay cut: {e}"))?;
    let cut_at = Instant::now();
    let sent = client.call(null_call(CUT_OFF_XID), true);
    let outcome = sent
        .map_err(|e| format!("cut-off call: {e}"))
        .map(|_| {
            result.answered_while_cut = answered(&mut client, CUT_OFF_XID, options.cut_for);
        })
        .and_then(|()| {
            // The server copies its trace now, while nothing of its reaches us.
            std::fs::write(&options.signal_cut, b"")
                .map_err(|e| format!("{}: {e}", options.signal_cut.display()))?;
            let deadline = Instant::now() + options.timeout;
            while !options.await_copied.exists() {
                if Instant::now() >= deadline {
                    return Err(format!(
                        "the server did not copy its trace within {} s",
                        options.timeout.as_secs()
                    ));
                }
                // Our completions keep flowing meanwhile (a reply would be recorded).
                if answered(&mut client, CUT_OFF_XID, Duration::from_millis(100)) {
                    result.answered_while_cut = true;
                }
            }
            Ok(())
        });
    result.cut_ms = u64::try_from(cut_at.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Mend whatever happened above: the wire must not stay cut for the next case.
    let mended = relay.mend();
    outcome?;
    result.frames_lost = mended.map_err(|e| format!("relay mend: {e}"))?;
    if !result.answered_while_cut {
        result.answered_after_mend = answered(&mut client, CUT_OFF_XID, options.timeout);
    }
    result.connection_survived = client.is_connected();
    let _ = client.disconnect();
    Ok(())
}
