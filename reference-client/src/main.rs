//! Command-line entry point; the program lives in `reference_client::cookbook`. With
//! `CONFORMANCE_ACTIONS` set it is instead the model adapter of `conformance client`.

mod adapter;

fn main() -> std::process::ExitCode {
    if std::env::var_os(adapter::ACTIONS_ENV).is_some() {
        return adapter::main();
    }
    reference_client::cookbook::main_entry()
}
