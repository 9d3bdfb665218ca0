//! The `conformance` command: parses arguments and hands over to [`cli`].

mod args;
mod cli;
mod console;
mod finish;
mod live;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = args::Args::parse();
    cli::main(args)
}
