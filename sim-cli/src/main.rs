//! `leasesim`: run scenarios of Kubernetes Lease leader election in a deterministic simulator.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "leasesim", version, about = "Deterministic simulator of Kubernetes Lease leader election")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a built-in three-node demo and print what happened.
    Demo,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo => demo(),
    }
}

fn demo() -> ExitCode {
    use sim_core::elector::Algorithm;
    use sim_core::model::{FaultKind, Target, TimedFault, WorldSpec};
    use sim_core::time::secs;
    let mut spec = WorldSpec::basic(1, 3, Algorithm::ClientGo, secs(120));
    spec.faults.push(TimedFault { at: secs(30), target: Target::Holder, kind: FaultKind::Crash });
    let result = match sim_core::world::World::new(spec) {
        Ok(world) => world.run(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", serde_json::to_string_pretty(&result.metrics).expect("metrics serialise"));
    ExitCode::SUCCESS
}
