//! The `conformance` command: parses arguments and hands over to [`cli`].

mod cli;
mod finish;
mod interrupt;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    cli::main(args)
}
