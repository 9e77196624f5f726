//! Tests' view of a subcommand's command line: its `Args` behind a program name, parsed as
//! `rig <subcommand> ...` would parse them (one wrapper for every subcommand module's tests).

/// `Cli::<Args>::parse_from(["rig", ...]).args` is what the subcommand's `run` receives.
#[derive(clap::Parser)]
pub struct Cli<A: clap::Args> {
    #[command(flatten)]
    pub args: A,
}
