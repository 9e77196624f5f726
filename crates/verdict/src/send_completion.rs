//! The Send-completion premise, measured: can the server's Send of a reply complete while the
//! client has not received the reply? The client side ([`ClientMeasurement`], written by `rig
//! send-completion`) cuts every frame from the server on the rig's relay, sends one call and
//! says whether its reply arrived while the cut stood; the server side is svcrdma's own
//! tracepoints, copied while the cut still stands ([`server_sends`]). Together
//! ([`judge_premise`]) they say what the 2026 DRC series assumes: "a successful Send
//! completion means the client's HCA acknowledged the reply".
//!
//! The kernel side: `svc_rdma_wc_send` (net/sunrpc/xprtrdma/svc_rdma_sendto.c:300-324 in
//! Debian's 6.12.117) traces `svcrdma_wc_send` only for a successful completion, and
//! `svcrdma_wc_send_err` / `svcrdma_wc_send_flush` otherwise; `svc_rdma_post_send` traces
//! `svcrdma_post_send` (same file, :382) for each Send it posts. Both name the Send by the send
//! context's completion id (`cq.id`, `cid`); a context is reused, so a completion belongs to
//! the latest post of its id before it.

use serde::{Deserialize, Serialize};

/// What the client saw, as `rig send-completion` writes it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientMeasurement {
    /// `roce` or `iwarp`: what the client's RDMA device speaks.
    pub link: String,
    /// The XID of the call whose reply was cut off.
    pub xid: u32,
    /// A first call, before the cut, was answered (the connection worked).
    pub warmup_answered: bool,
    /// How long the cut stood before the server copied its trace, in milliseconds.
    pub cut_ms: u64,
    /// The reply arrived while every frame from the server was being dropped (never, on a
    /// relay that works: then the measurement is void).
    pub answered_while_cut: bool,
    /// Frames from the server the relay dropped during the cut.
    pub frames_lost: u64,
    /// The reply arrived after the cut was mended (TCP or the RC layer sent it again).
    pub answered_after_mend: bool,
    /// The connection was still up at the end.
    pub connection_survived: bool,
    /// Why the measurement stopped early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How a posted Send ended, as far as the trace shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SendOutcome {
    /// `svcrdma_wc_send`: a successful completion.
    Success,
    /// `svcrdma_wc_send_err`, with the status text the event printed.
    Error(String),
    /// `svcrdma_wc_send_flush`: flushed with the QP.
    Flush,
    /// No completion in the trace (yet).
    Pending,
}

impl SendOutcome {
    /// The word RESULT lines and snapshots use.
    pub fn word(&self) -> String {
        match self {
            SendOutcome::Success => "success".into(),
            SendOutcome::Error(status) => format!("error:{status}"),
            SendOutcome::Flush => "flush".into(),
            SendOutcome::Pending => "none".into(),
        }
    }
}

/// One Send svcrdma posted and how it ended in the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostedSend {
    pub cq_id: u32,
    pub cid: i64,
    /// Trace timestamps (seconds, as ftrace prints them) in microseconds.
    pub posted_us: u64,
    pub completed_us: Option<u64>,
    pub outcome: SendOutcome,
}

/// Longest trace this reads: a case's trace holds a few hundred lines.
pub const MAX_TRACE_LINES: usize = 200_000;
/// Most Sends it keeps (the oldest are dropped first: the measurement needs the last).
pub const MAX_SENDS: usize = 4096;

/// The Sends svcrdma posted in an ftrace text, in order, each with the first completion of
/// its context after it. Other events and unreadable lines are skipped; at most
/// [`MAX_TRACE_LINES`] lines are read and [`MAX_SENDS`] Sends kept.
pub fn server_sends(trace: &str) -> Vec<PostedSend> {
    let mut sends: std::collections::VecDeque<PostedSend> = std::collections::VecDeque::new();
    for line in trace.lines().take(MAX_TRACE_LINES) {
        let Some((at, event, fields)) = event_line(line) else {
            continue;
        };
        // 6.1's svcrdma_post_send prints `cq_id=`, its completions and later kernels `cq.id=`
        // (include/trace/events/rpcrdma.h of each).
        let (Some(cq_id), Some(cid)) = (
            field(fields, "cq.id")
                .or_else(|| field(fields, "cq_id"))
                .and_then(|v| v.parse::<u32>().ok()),
            field(fields, "cid").and_then(|v| v.parse::<i64>().ok()),
        ) else {
            continue;
        };
        let outcome = match event {
            "svcrdma_post_send" => {
                if sends.len() == MAX_SENDS {
                    sends.pop_front();
                }
                sends.push_back(PostedSend {
                    cq_id,
                    cid,
                    posted_us: at,
                    completed_us: None,
                    outcome: SendOutcome::Pending,
                });
                continue;
            }
            "svcrdma_wc_send" => SendOutcome::Success,
            "svcrdma_wc_send_flush" => SendOutcome::Flush,
            "svcrdma_wc_send_err" => SendOutcome::Error(
                field(fields, "status")
                    .unwrap_or("unknown")
                    .chars()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .take(32)
                    .collect(),
            ),
            _ => continue,
        };
        // The context's latest post that has no completion yet.
        if let Some(send) = sends
            .iter_mut()
            .rev()
            .find(|s| s.cq_id == cq_id && s.cid == cid)
            .filter(|s| s.outcome == SendOutcome::Pending)
        {
            send.outcome = outcome;
            send.completed_us = Some(at);
        }
    }
    sends.into()
}

/// `<task>-<pid> [cpu] flags <secs.micros>: <event>: <fields>` → (µs, event, fields).
fn event_line(line: &str) -> Option<(u64, &str, &str)> {
    for event in [
        "svcrdma_post_send",
        "svcrdma_wc_send",
        "svcrdma_wc_send_err",
        "svcrdma_wc_send_flush",
    ] {
        let marker = format!(": {event}: ");
        if let Some(at) = line.find(&marker) {
            let head = &line[..at];
            let stamp = head.rsplit(' ').next()?;
            let (secs, fraction) = stamp.split_once('.')?;
            // ftrace prints microseconds (6 digits); fewer digits are a coarser fraction.
            let digits = fraction.get(..fraction.len().min(6))?;
            let micros = digits.parse::<u64>().ok()? * 10u64.pow(6 - digits.len() as u32);
            let at_us = secs
                .parse::<u64>()
                .ok()?
                .checked_mul(1_000_000)?
                .checked_add(micros)?;
            return Some((at_us, event, &line[at + marker.len()..]));
        }
    }
    None
}

/// The value of `name=value` among space-separated fields.
fn field<'a>(fields: &'a str, name: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .find_map(|word| word.strip_prefix(name)?.strip_prefix('='))
}

/// The premise, judged from both sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PremiseResult {
    pub link: String,
    /// Sends the server posted while the trace ran (the warm-up's reply and the cut-off one).
    pub sends_posted: usize,
    /// How the cut-off reply's Send ended while the cut stood.
    pub completion_while_cut: SendOutcome,
    /// Microseconds from its post to its completion, when it completed.
    pub completion_after_us: Option<u64>,
    /// The premise held: the reply's Send did not complete successfully while the client had
    /// nothing of it.
    pub premise_holds: bool,
}

/// Why a measurement cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VoidMeasurement {
    /// The client stopped early.
    ClientError(String),
    /// The first call was not answered: the connection never worked.
    NoWarmup,
    /// The reply got through the cut: the relay did not cut.
    AnsweredWhileCut,
    /// The server's trace shows no Send for the cut-off call (it never answered, or the
    /// tracepoints are missing on this kernel).
    NoSendTraced { sends_posted: usize },
}

impl std::fmt::Display for VoidMeasurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VoidMeasurement::ClientError(e) => write!(f, "the client stopped: {e}"),
            VoidMeasurement::NoWarmup => write!(f, "the first call was never answered"),
            VoidMeasurement::AnsweredWhileCut => {
                write!(f, "the reply arrived while the relay cut the server off")
            }
            VoidMeasurement::NoSendTraced { sends_posted } => write!(
                f,
                "the server's trace holds {sends_posted} svcrdma_post_send event(s), not the warm-up's and the cut-off reply's"
            ),
        }
    }
}

/// Judge the premise from the client's measurement and the server's trace copied during the
/// cut: the cut-off reply is the last Send the server posted.
pub fn judge_premise(
    client: &ClientMeasurement,
    trace_during_cut: &str,
) -> Result<PremiseResult, VoidMeasurement> {
    if let Some(e) = &client.error {
        return Err(VoidMeasurement::ClientError(e.clone()));
    }
    if !client.warmup_answered {
        return Err(VoidMeasurement::NoWarmup);
    }
    if client.answered_while_cut {
        return Err(VoidMeasurement::AnsweredWhileCut);
    }
    let sends = server_sends(trace_during_cut);
    // The warm-up's reply, then the cut-off one.
    let Some(cut_off) = sends.last().filter(|_| sends.len() >= 2) else {
        return Err(VoidMeasurement::NoSendTraced {
            sends_posted: sends.len(),
        });
    };
    Ok(PremiseResult {
        link: client.link.clone(),
        sends_posted: sends.len(),
        completion_while_cut: cut_off.outcome.clone(),
        completion_after_us: cut_off
            .completed_us
            .map(|done| done.saturating_sub(cut_off.posted_us)),
        premise_holds: cut_off.outcome != SendOutcome::Success,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(link: &str) -> ClientMeasurement {
        ClientMeasurement {
            link: link.into(),
            xid: 0x1234,
            warmup_answered: true,
            cut_ms: 2000,
            answered_while_cut: false,
            frames_lost: 3,
            answered_after_mend: true,
            connection_survived: true,
            error: None,
        }
    }

    const SIW_TRACE: &str = "\
# tracer: nop
            nfsd-312     [000] .....   101.000100: svcrdma_post_send: cq.id=3 cid=7 num_sge=1 inv_rkey=0x00000000
     kworker/0:1-19      [000] .....   101.000300: svcrdma_wc_send: cq.id=3 cid=7
            nfsd-312     [000] .....   102.500000: sunrpc_svc_process: whatever
            nfsd-312     [000] .....   102.600000: svcrdma_post_send: cq.id=3 cid=7 num_sge=1 inv_rkey=0x00000000
     kworker/0:1-19      [000] .....   102.600450: svcrdma_wc_send: cq.id=3 cid=7
";

    #[test]
    fn a_send_that_completed_while_the_client_was_cut_off_breaks_the_premise() {
        let result = judge_premise(&client("iwarp"), SIW_TRACE).unwrap();
        assert_eq!(result.sends_posted, 2);
        assert_eq!(result.completion_while_cut, SendOutcome::Success);
        assert_eq!(result.completion_after_us, Some(450));
        assert!(!result.premise_holds);
    }

    #[test]
    fn linux_6_1_names_the_posted_sends_cq_cq_id() {
        // As 6.1.192 printed it: post_send with `cq_id=`, the completion with `cq.id=`.
        let trace = SIW_TRACE.replace("svcrdma_post_send: cq.id=", "svcrdma_post_send: cq_id=");
        let result = judge_premise(&client("iwarp"), &trace).unwrap();
        assert_eq!(result.sends_posted, 2);
        assert_eq!(result.completion_while_cut, SendOutcome::Success);
    }

    #[test]
    fn a_send_still_pending_or_failed_under_the_cut_keeps_it() {
        let pending = SIW_TRACE.lines().take(5).collect::<Vec<_>>().join("\n");
        let result = judge_premise(&client("roce"), &pending).unwrap();
        assert_eq!(result.completion_while_cut, SendOutcome::Pending);
        assert!(result.premise_holds);
        let failed = format!(
            "{pending}\n kworker/0:1-19 [000] ..... 106.0: svcrdma_wc_send_err: cq.id=3 cid=7 status=RETRY_EXC_ERR (12/0x0)\n"
        );
        let result = judge_premise(&client("roce"), &failed).unwrap();
        assert_eq!(
            result.completion_while_cut,
            SendOutcome::Error("RETRY_EXC_ERR".into())
        );
        assert_eq!(result.completion_while_cut.word(), "error:RETRY_EXC_ERR");
        assert!(result.premise_holds);
    }

    #[test]
    fn a_completion_belongs_to_the_latest_post_of_its_context() {
        let sends = server_sends(SIW_TRACE);
        assert_eq!(sends.len(), 2);
        assert_eq!(sends[0].completed_us, Some(101_000_300));
        assert_eq!(sends[1].completed_us, Some(102_600_450));
        // Another context's completion completes nothing of these.
        let other = SIW_TRACE.replace(
            "102.600450: svcrdma_wc_send: cq.id=3 cid=7",
            "102.600450: svcrdma_wc_send: cq.id=3 cid=8",
        );
        assert_eq!(server_sends(&other)[1].outcome, SendOutcome::Pending);
    }

    #[test]
    fn a_void_measurement_says_why() {
        let mut through = client("roce");
        through.answered_while_cut = true;
        assert_eq!(
            judge_premise(&through, SIW_TRACE),
            Err(VoidMeasurement::AnsweredWhileCut)
        );
        let one = SIW_TRACE.lines().take(3).collect::<Vec<_>>().join("\n");
        let err = judge_premise(&client("roce"), &one).unwrap_err();
        assert_eq!(err, VoidMeasurement::NoSendTraced { sends_posted: 1 });
        assert!(err.to_string().contains("1 svcrdma_post_send"));
        let mut cold = client("roce");
        cold.warmup_answered = false;
        assert_eq!(
            judge_premise(&cold, SIW_TRACE),
            Err(VoidMeasurement::NoWarmup)
        );
    }

    #[test]
    fn hostile_trace_lines_are_skipped() {
        for line in [
            ": svcrdma_post_send: ",
            "x 99999999999999999999.000001: svcrdma_post_send: cq.id=1 cid=1",
            "x 1.: svcrdma_wc_send: cq.id=1 cid=1",
            "x 1.x: svcrdma_wc_send: cq.id=1 cid=1",
            "x 1.000001: svcrdma_wc_send_err: cq.id=1 cid=1",
            "x 1.000001: svcrdma_post_send: cq.id=-1 cid=x",
        ] {
            let sends = server_sends(line);
            assert!(sends.len() <= 1, "{line}");
        }
        let many = "x 1.000001: svcrdma_post_send: cq.id=1 cid=1\n".repeat(MAX_SENDS + 10);
        assert_eq!(server_sends(&many).len(), MAX_SENDS);
    }
}
