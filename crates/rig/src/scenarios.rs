//! `rig scenarios`: run the retransmission scenario × DRC policy matrix and print the verdicts.

use anyhow::{bail, Result};
use clap::ValueEnum;

/// Where the scenarios run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Transport {
    /// The deterministic simulated RC transport (no RDMA needed).
    Sim,
    /// Real RDMA (soft-RoCE in VMs): not implemented yet.
    Rdma,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Transport to run over.
    #[arg(long, value_enum, default_value = "sim")]
    transport: Transport,
    /// Only this DRC policy (classic, acked, acked-mark).
    #[arg(long)]
    policy: Option<String>,
    /// Only this scenario.
    #[arg(long)]
    scenario: Option<String>,
    /// Scheduler seed: same seed, same output byte for byte.
    #[arg(long, default_value_t = client::DEFAULT_SEED)]
    seed: u64,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Also print each run's normalised trace (table format only).
    #[arg(long)]
    traces: bool,
    /// List the scenarios and what each proves, then exit.
    #[arg(long)]
    list: bool,
}

pub fn run(args: Args) -> Result<u8> {
    if args.transport == Transport::Rdma {
        bail!(
            "--transport rdma is not implemented yet (needs the verbs driver); use --transport sim"
        );
    }
    if args.list {
        for scenario in client::scenarios::catalogue() {
            println!(
                "{:<24} {:<7} {}",
                scenario.name, scenario.procedure, scenario.proves
            );
        }
        return Ok(0);
    }
    let runs = client::run_matrix(args.policy.as_deref(), args.scenario.as_deref(), args.seed)?;
    match args.format {
        Format::Json => print!("{}", client::verdicts_json(&runs)),
        Format::Table => {
            print!("{}", client::verdicts_table(&runs));
            if args.traces {
                for run in &runs {
                    println!("\n== {} / {}", run.verdict.scenario, run.verdict.policy);
                    for line in &run.trace {
                        println!("{line}");
                    }
                }
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn refuses_the_rdma_transport_for_now() {
        let cli = Cli::parse_from(["rig", "--transport", "rdma"]);
        let err = run(cli.args).unwrap_err();
        assert!(err.to_string().contains("not implemented"));
    }

    #[test]
    fn refuses_unknown_policies_and_scenarios() {
        let cli = Cli::parse_from(["rig", "--policy", "lru"]);
        assert!(run(cli.args)
            .unwrap_err()
            .to_string()
            .contains("unknown policy"));
        let cli = Cli::parse_from(["rig", "--scenario", "never"]);
        assert!(run(cli.args)
            .unwrap_err()
            .to_string()
            .contains("unknown scenario"));
    }
}
