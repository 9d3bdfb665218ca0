//! Command-line entry point; the program lives in `reference_client::cookbook`. With
//! `CONFORMANCE_ACTIONS` set it is instead the model adapter of `conformance client`,
//! unless it was started as the server (the hidden `--serve`): an adapter whose server
//! is this same program passes its environment on, and a server that turned adapter
//! would start another, without end.

mod adapter;

fn main() -> std::process::ExitCode {
    let serving = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == reference_client::cookbook::SERVE_FLAG);
    if std::env::var_os(adapter::ACTIONS_ENV).is_some() && !serving {
        return adapter::main();
    }
    reference_client::cookbook::main_entry()
}
