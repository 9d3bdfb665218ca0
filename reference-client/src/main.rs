//! Command-line entry point; the program lives in `reference_client::cookbook`.

fn main() -> std::process::ExitCode {
    reference_client::cookbook::main_entry()
}
