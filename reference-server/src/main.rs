//! Command-line entry point; everything lives in the library.

fn main() -> std::process::ExitCode {
    reference_server::main_entry()
}
