//! `rig`: the rpcrdma-rig command line. Each subcommand lives in its own module.

use clap::{Parser, Subcommand};

mod bench_rpc;
mod decode;
mod fuzz_wire;
mod guest;
mod hold_export;
mod input;
mod judge;
mod mount_tcp;
mod output;
mod rdma_target;
mod scenarios;
mod send_completion;
mod serve;
mod svcrdma_rules;
#[cfg(test)]
mod test_cli;
mod trace_cmd;
mod trace_relay;

/// Interop test suite and fuzzing rig for RPC-over-RDMA version 1 (RFC 8166).
#[derive(Parser)]
#[command(name = "rig", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode one RPC-over-RDMA message (transport header + RPC + NFS) from a file or stdin.
    Decode(decode::Args),
    /// RoCE captures as RPC-over-RDMA traces: show, diff, extract.
    Trace(trace_cmd::Args),
    /// Run the retransmission scenarios against the DRC policies and print verdicts.
    Scenarios(scenarios::Args),
    /// Send malformed RPC-over-RDMA calls to a target (differentially with --against).
    #[command(name = "fuzz-wire")]
    FuzzWire(fuzz_wire::Args),
    /// Serve NFSv3 + MOUNT v3 over RDMA with a DRC policy until SIGTERM; --stats JSON on exit.
    Serve(serve::Args),
    /// NULL rate/latency or READ/WRITE throughput against a live NFSv3/RDMA server.
    #[command(name = "bench-rpc")]
    BenchRpc(bench_rpc::Args),
    /// Send each svcrdma rule's negative case and positive control, compare with a kernel profile.
    #[command(name = "svcrdma-rules")]
    SvcrdmaRules(svcrdma_rules::Args),
    /// Server guest: enable rpcrdma/sunrpc/nfsd trace events and answer `fuzz-wire
    /// --trace-relay` with each case's events (between trace marks).
    #[command(name = "trace-relay")]
    TraceRelay(trace_relay::Args),
    /// Re-judge a scenario verdict with executions counted on the server (ftrace or serve stats).
    Judge(judge::Args),
    /// Server guest: hold kernel nfsd's executions for a case by freezing the export (the
    /// protocol of `rig serve --control`; `rig scenarios --execution-hold`).
    #[command(name = "hold-export")]
    HoldExport(hold_export::Args),
    /// Guest scripts: a case's RESULT line written from rig's own JSON outputs, read by type.
    Guest(guest::Args),
    /// Client guest: cut the server off on the rig's relay after one answered call, send
    /// another, let the server copy its svcrdma trace, mend (the Send-completion premise).
    #[command(name = "send-completion")]
    SendCompletion(send_completion::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Decode(args) => decode::run(args),
        Command::Trace(args) => trace_cmd::run(args),
        Command::Scenarios(args) => scenarios::run(args),
        Command::FuzzWire(args) => fuzz_wire::run(args),
        Command::Serve(args) => serve::run(args),
        Command::BenchRpc(args) => bench_rpc::run(args),
        Command::Judge(args) => judge::run(args),
        Command::TraceRelay(args) => trace_relay::run(args),
        Command::SvcrdmaRules(args) => svcrdma_rules::run(args),
        Command::HoldExport(args) => hold_export::run(args),
        Command::Guest(args) => guest::run(args),
        Command::SendCompletion(args) => send_completion::run(args),
    };
    // Output still buffered fails here, as a clear error, not silently at exit.
    let result = result.and_then(|code| output::flush().map(|()| code));
    match result {
        Ok(code) => std::process::ExitCode::from(code),
        // The reader of our output went away (`| head`): quiet, 141 like a SIGPIPE death.
        Err(e) if output::is_stdout_closed(&e) => {
            std::process::ExitCode::from(output::EXIT_STDOUT_CLOSED)
        }
        Err(e) => {
            eprintln!("rig: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}
