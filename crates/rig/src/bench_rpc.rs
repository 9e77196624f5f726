//! `rig bench-rpc`: NULL rate and latency, READ and WRITE throughput of our RPC-over-RDMA client
//! against a live NFSv3/RDMA server (`rig serve` or kernel nfsd), one call outstanding at a time,
//! for `just bench-interop` (which runs it against both servers over the same link, same run).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use engine::{ConnectionConfig, OutgoingCall, RequesterOutput};
use rdma::RdmaClient;
use serde::{Deserialize, Serialize};
use wire::nfs3::{
    CreateArgs, CreateHow3, Ddp, DdpData, DirOpArgs3, FileHandle, Filename, FsinfoArgs, Nfs3Call,
    Nfs3Proc, Nfs3Reply, NfsRes, Nfsstat3, ReadArgs, Sattr3, StableHow, WriteArgs,
};
use wire::nfs_client::{self, SizeChoice, Transfer, TransferLimits};

/// Largest READ/WRITE size accepted (the bench measures 4 KiB and 64 KiB).
const MAX_SIZE: u32 = 1 << 20;
/// Longest measurement.
const MAX_SECONDS: f64 = 600.0;
/// Latency samples kept; the run stops early once this many calls completed.
const MAX_SAMPLES: usize = 2_000_000;
/// Data up to this size travels inline; larger moves by RDMA (Read chunk for WRITE, Write
/// chunk for READ), as xprtrdma does above its inline threshold.
const INLINE_DATA_LIMIT: u32 = 512;
/// Largest WRITE used to fill the file a READ measurement reads.
const FILL_PIECE: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Null,
    Read,
    Write,
}

#[derive(clap::Args)]
pub struct Args {
    /// The server's RDMA listener, ADDR:PORT.
    #[arg(long)]
    server: SocketAddr,
    /// MOUNT v3 over TCP (rpc.mountd -p PORT, or `rig serve --mount-tcp`) for the root handle;
    /// needed for read/write.
    #[arg(long)]
    mount_tcp: Option<SocketAddr>,
    #[arg(long, default_value = "/export")]
    export: String,
    #[arg(long, value_enum)]
    op: Op,
    /// READ/WRITE size in bytes.
    #[arg(long, default_value_t = 4096)]
    size: u32,
    /// How long to measure.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Longest wait for one reply.
    #[arg(long, default_value_t = 10)]
    timeout_secs: u64,
}

/// The size a measurement uses: the requested one, capped at the server's FSINFO limit
/// ([`TransferLimits::cap`]).
fn choose_size(op: Op, requested: u32, limits: Option<TransferLimits>) -> Result<SizeChoice> {
    let transfer = match op {
        Op::Null => {
            return Ok(SizeChoice {
                used: 0,
                limited_by: None,
            })
        }
        Op::Read => Transfer::Read,
        Op::Write => Transfer::Write,
    };
    let Some(limits) = limits else {
        bail!("read/write need the server's FSINFO limits");
    };
    Ok(limits.cap(transfer, requested)?)
}

/// What one measurement prints (pretty JSON: one key per line, for the guest scripts).
/// What `rig bench-rpc` prints (and `rig guest bench-result` reads back).
#[derive(Debug, Serialize, Deserialize)]
pub struct Measurement {
    server: String,
    op: Op,
    /// The size actually used for every measured call (== size_used).
    size: u32,
    size_requested: u32,
    pub size_used: u32,
    /// Why size_used is below size_requested ("FSINFO wtmax" / "FSINFO rtmax"), or null.
    pub limited_by: Option<String>,
    /// FSINFO rtmax/wtmax of the server (null for NULL, which does not ask).
    pub fsinfo_rtmax: Option<u32>,
    pub fsinfo_wtmax: Option<u32>,
    pub calls: usize,
    errors: usize,
    seconds: f64,
    pub calls_per_sec: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub mib_per_sec: f64,
    pub data_path: String,
}

/// The `q`-quantile of sorted samples (nearest rank).
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

struct Bench {
    client: RdmaClient,
    timeout: Duration,
    next_xid: u32,
}

impl Bench {
    fn fresh_xid(&mut self) -> u32 {
        self.next_xid = self.next_xid.wrapping_add(1);
        self.next_xid
    }

    /// A fresh XID and an inline call of `args`.
    fn call(&mut self, args: &Nfs3Call) -> OutgoingCall {
        let xid = self.fresh_xid();
        OutgoingCall::inline(xid, nfs_client::nfs3_call(xid, args))
    }

    /// Send one call and wait for its reply (or fail after the timeout).
    fn round_trip(&mut self, call: OutgoingCall) -> Result<(Vec<u8>, Option<Vec<u8>>)> {
        let xid = call.xid;
        self.client
            .call(call, true)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let answered = self
            .client
            .run_until(self.timeout, |c| {
                c.outputs().iter().any(|o| match o {
                    RequesterOutput::Reply(r) => r.xid == xid,
                    RequesterOutput::TransportError { xid: x, .. } => *x == xid,
                    RequesterOutput::Disconnected { .. } => true,
                    _ => false,
                })
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        ensure!(
            answered,
            "no reply to xid {xid:#x} within {:?}",
            self.timeout
        );
        for output in self.client.take_outputs() {
            match output {
                RequesterOutput::Reply(r) if r.xid == xid => {
                    return Ok((r.message, r.write_chunk_data));
                }
                RequesterOutput::TransportError { xid: x, error, .. } if x == xid => {
                    bail!("RDMA_ERROR for xid {xid:#x}: {error:?}")
                }
                RequesterOutput::Disconnected { .. } => bail!("connection lost"),
                _ => {}
            }
        }
        bail!("reply to xid {xid:#x} vanished")
    }
}

/// The NFS reply of `proc_`, or why it is not a successful one.
fn nfs_reply(proc_: Nfs3Proc, message: &[u8], moved: bool) -> Result<Nfs3Reply> {
    Ok(nfs_client::nfs3_reply(
        message,
        proc_,
        Ddp::moved_if(moved),
    )?)
}

fn call_for(bench: &mut Bench, op: Op, file: &FileHandle, size: u32) -> OutgoingCall {
    build_call(bench.fresh_xid(), op, file, size)
}

/// The call of one measured operation: data above [`INLINE_DATA_LIMIT`] moves by RDMA.
fn build_call(xid: u32, op: Op, file: &FileHandle, size: u32) -> OutgoingCall {
    build_call_at(xid, op, file, size, 0)
}

/// [`build_call`] at a file offset.
fn build_call_at(xid: u32, op: Op, file: &FileHandle, size: u32, offset: u64) -> OutgoingCall {
    let moved = size > INLINE_DATA_LIMIT;
    match op {
        Op::Null => OutgoingCall::inline(xid, nfs_client::nfs3_call(xid, &Nfs3Call::Null)),
        Op::Read => {
            let message = nfs_client::nfs3_call(
                xid,
                &Nfs3Call::Read(ReadArgs {
                    file: file.clone(),
                    offset,
                    count: size,
                }),
            );
            OutgoingCall {
                write_chunk_capacity: moved.then_some(size),
                ..OutgoingCall::inline(xid, message)
            }
        }
        Op::Write => {
            let payload = nfs_client::pattern(size);
            let data = if moved {
                DdpData::Moved { length: size }
            } else {
                DdpData::Inline(payload.clone())
            };
            let message = nfs_client::nfs3_call(
                xid,
                &Nfs3Call::Write(WriteArgs {
                    file: file.clone(),
                    offset,
                    count: size,
                    stable: StableHow::Unstable,
                    data,
                }),
            );
            if moved {
                OutgoingCall::moving_argument(xid, message, payload)
            } else {
                OutgoingCall::inline(xid, message)
            }
        }
    }
}

/// FSINFO on the root handle: the server's READ/WRITE size limits.
fn fetch_limits(bench: &mut Bench, root: &FileHandle) -> Result<TransferLimits> {
    let call = bench.call(&Nfs3Call::Fsinfo(FsinfoArgs {
        fsroot: root.clone(),
    }));
    let (reply, _) = bench.round_trip(call)?;
    Ok(TransferLimits::from_reply(&reply)?)
}

/// Create (or truncate) the bench file and fill it with `size` bytes so READs return data,
/// in WRITEs of at most [`FILL_PIECE`] and never above the server's `wtmax`.
fn prepare_file(bench: &mut Bench, root: &FileHandle, size: u32, wtmax: u32) -> Result<FileHandle> {
    let name = format!("bench-{}", std::process::id());
    let call = bench.call(&Nfs3Call::Create(CreateArgs {
        where_: DirOpArgs3 {
            dir: root.clone(),
            name: Filename(name.into_bytes()),
        },
        how: CreateHow3::Unchecked(Sattr3::default()),
    }));
    let (reply, _) = bench.round_trip(call)?;
    let file = match nfs_reply(Nfs3Proc::Create, &reply, false)? {
        Nfs3Reply::Create(NfsRes::Ok(ok)) => ok.obj,
        other => bail!("CREATE failed: {}", other.status().name()),
    };
    let file = file.context("CREATE returned no file handle")?;
    // Filled in pieces of at most FILL_PIECE bytes, so a READ measurement does not depend on
    // the server accepting one large Read-chunk WRITE (nfsd answered ERR_CHUNK to 64 KiB).
    let fill_piece = FILL_PIECE.min(wtmax).max(1);
    let mut offset = 0u32;
    while offset < size {
        let piece = (size - offset).min(fill_piece);
        let fill = build_call_at(
            bench.fresh_xid(),
            Op::Write,
            &file,
            piece,
            u64::from(offset),
        );
        let (reply, _) = bench.round_trip(fill)?;
        let status = nfs_reply(Nfs3Proc::Write, &reply, false)?.status();
        ensure!(
            status == Nfsstat3::Ok,
            "WRITE to fill failed at offset {offset}: {}",
            status.name()
        );
        offset += piece;
    }
    Ok(file)
}

pub fn run(args: Args) -> Result<u8> {
    ensure!(
        args.op == Op::Null || (1..=MAX_SIZE).contains(&args.size),
        "--size must be 1..={MAX_SIZE}"
    );
    ensure!(
        args.seconds > 0.0 && args.seconds <= MAX_SECONDS,
        "--seconds must be in (0, {MAX_SECONDS}]"
    );
    let timeout = Duration::from_secs(args.timeout_secs.clamp(1, 300));
    let root = match (args.op, args.mount_tcp) {
        (Op::Null, _) => FileHandle::default(),
        (_, Some(mountd)) => crate::mount_tcp::mount(mountd, args.export.as_bytes(), timeout)
            .map_err(|e| anyhow::anyhow!("MOUNT over TCP {mountd}: {e}"))?,
        (_, None) => bail!("read/write need --mount-tcp for the root handle"),
    };
    let client = RdmaClient::connect(args.server, ConnectionConfig::default(), timeout)
        .map_err(|e| anyhow::anyhow!("connecting to {}: {e}", args.server))?;
    let mut bench = Bench {
        client,
        timeout,
        next_xid: std::process::id().wrapping_mul(0x10000) ^ 0x6b00_0000,
    };
    // A new connection starts with a grant of one (RFC 8166 §3.3.3): learn the real grant first.
    let call = bench.call(&Nfs3Call::Null);
    bench.round_trip(call)?;
    let limits = match args.op {
        Op::Null => None,
        Op::Read | Op::Write => Some(fetch_limits(&mut bench, &root)?),
    };
    let requested = if args.op == Op::Null { 0 } else { args.size };
    let choice = choose_size(args.op, requested, limits)?;
    if let Some(reason) = choice.limited_by {
        eprintln!(
            "bench-rpc: size {requested} capped to {} by {reason}",
            choice.used
        );
    }
    let size = choice.used;
    let file = match limits {
        None => FileHandle::default(),
        Some(l) => prepare_file(&mut bench, &root, size, l.wtmax)?,
    };
    let proc_ = match args.op {
        Op::Null => Nfs3Proc::Null,
        Op::Read => Nfs3Proc::Read,
        Op::Write => Nfs3Proc::Write,
    };
    let mut samples = Vec::new();
    let mut errors = 0;
    let started = Instant::now();
    let budget = Duration::from_secs_f64(args.seconds);
    while started.elapsed() < budget && samples.len() < MAX_SAMPLES {
        let call = call_for(&mut bench, args.op, &file, size);
        let sent = Instant::now();
        let (reply, moved) = bench.round_trip(call)?;
        samples.push(sent.elapsed());
        let ok = nfs_reply(proc_, &reply, moved.as_ref().is_some_and(|d| !d.is_empty()))
            .map(|r| r.status() == Nfsstat3::Ok)
            .unwrap_or(false);
        if !ok {
            errors += 1;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    samples.sort_unstable();
    let calls = samples.len();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let measurement = Measurement {
        server: args.server.to_string(),
        op: args.op,
        size,
        size_requested: requested,
        size_used: size,
        limited_by: choice.limited_by.map(str::to_string),
        fsinfo_rtmax: limits.map(|l| l.rtmax),
        fsinfo_wtmax: limits.map(|l| l.wtmax),
        calls,
        errors,
        seconds,
        calls_per_sec: calls as f64 / seconds,
        latency_p50_us: us(quantile(&samples, 0.5)),
        latency_p99_us: us(quantile(&samples, 0.99)),
        mib_per_sec: (calls as f64 * f64::from(size)) / seconds / f64::from(1u32 << 20),
        data_path: if size > INLINE_DATA_LIMIT {
            "rdma"
        } else {
            "inline"
        }
        .to_string(),
    };
    crate::outln!("{}", serde_json::to_string_pretty(&measurement)?)?;
    Ok(if errors == 0 && calls > 0 { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::rpc::RpcMessage;
    use wire::Reader;

    #[test]
    fn quantiles_use_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(quantile(&samples, 0.5), Duration::from_micros(50));
        assert_eq!(quantile(&samples, 0.99), Duration::from_micros(99));
        assert_eq!(quantile(&samples[..1], 0.99), Duration::from_micros(1));
        assert_eq!(quantile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn null_calls_carry_no_chunks_and_decode_as_nfs_null() {
        let call = build_call(7, Op::Null, &FileHandle::default(), 0);
        assert!(call.read_chunk.is_none() && call.write_chunk_capacity.is_none());
        let (rpc, used) = RpcMessage::decode_prefix(&call.message).unwrap();
        assert!(matches!(rpc, RpcMessage::Call(_)));
        assert_eq!(used, call.message.len(), "NULL has no arguments");
    }

    #[test]
    fn large_writes_move_their_data_in_a_read_chunk_at_the_end_of_the_reduced_stream() {
        let call = build_call(9, Op::Write, &FileHandle::default(), 65536);
        let (position, data) = call.read_chunk.clone().unwrap();
        assert_eq!(position as usize, call.message.len());
        assert_eq!(data.len(), 65536);
        let (_, used) = RpcMessage::decode_prefix(&call.message).unwrap();
        let args = Nfs3Call::decode_reduced(
            Nfs3Proc::Write,
            &mut Reader::new(&call.message[used..]),
            Ddp::Moved,
        )
        .unwrap();
        assert!(matches!(args, Nfs3Call::Write(w) if w.count == 65536));
        let small = build_call(10, Op::Write, &FileHandle::default(), 100);
        assert!(small.read_chunk.is_none());
    }

    #[test]
    fn fill_writes_carry_their_offset() {
        let call = build_call_at(13, Op::Write, &FileHandle::default(), 4096, 8192);
        let (_, used) = RpcMessage::decode_prefix(&call.message).unwrap();
        let args = Nfs3Call::decode_reduced(
            Nfs3Proc::Write,
            &mut Reader::new(&call.message[used..]),
            Ddp::Moved,
        )
        .unwrap();
        assert!(matches!(args, Nfs3Call::Write(w) if w.offset == 8192 && w.count == 4096));
    }

    #[test]
    fn large_reads_offer_a_write_chunk_of_the_read_size() {
        assert_eq!(
            build_call(11, Op::Read, &FileHandle::default(), 4096).write_chunk_capacity,
            Some(4096)
        );
        assert_eq!(
            build_call(12, Op::Read, &FileHandle::default(), 100).write_chunk_capacity,
            None
        );
    }

    #[test]
    fn sizes_above_the_fsinfo_maximum_are_capped_and_say_why() {
        let nfsd_256m = Some(TransferLimits {
            rtmax: 32768,
            wtmax: 16384,
        });
        assert_eq!(
            choose_size(Op::Write, 65536, nfsd_256m).unwrap(),
            SizeChoice {
                used: 16384,
                limited_by: Some("FSINFO wtmax")
            }
        );
        assert_eq!(
            choose_size(Op::Read, 65536, nfsd_256m).unwrap(),
            SizeChoice {
                used: 32768,
                limited_by: Some("FSINFO rtmax")
            }
        );
        assert_eq!(
            choose_size(Op::Write, 4096, nfsd_256m).unwrap(),
            SizeChoice {
                used: 4096,
                limited_by: None
            }
        );
        // Exactly at the limit is allowed.
        assert_eq!(
            choose_size(Op::Write, 16384, nfsd_256m).unwrap().used,
            16384
        );
        assert_eq!(
            choose_size(Op::Null, 0, None).unwrap(),
            SizeChoice {
                used: 0,
                limited_by: None
            }
        );
    }

    #[test]
    fn read_write_without_usable_fsinfo_limits_are_refused() {
        assert!(choose_size(Op::Write, 4096, None).is_err());
        let zero = Some(TransferLimits { rtmax: 0, wtmax: 0 });
        let err = choose_size(Op::Write, 4096, zero).unwrap_err();
        assert!(err.to_string().contains("wtmax"), "{err}");
        assert!(choose_size(Op::Read, 4096, zero).is_err());
    }

    #[test]
    fn out_of_range_arguments_are_refused_before_connecting() {
        let args = |size: u32, seconds: f64| Args {
            server: "127.0.0.1:20049".parse().unwrap(),
            mount_tcp: None,
            export: "/export".into(),
            op: Op::Read,
            size,
            seconds,
            timeout_secs: 1,
        };
        assert!(run(args(0, 1.0)).is_err());
        assert!(run(args(MAX_SIZE + 1, 1.0)).is_err());
        assert!(run(args(4096, 0.0)).is_err());
        assert!(run(args(4096, MAX_SECONDS + 1.0)).is_err());
        // In range but no way to get a root handle: refused, still before any RDMA.
        let err = run(args(4096, 1.0)).unwrap_err();
        assert!(err.to_string().contains("--mount-tcp"), "{err}");
    }
}
