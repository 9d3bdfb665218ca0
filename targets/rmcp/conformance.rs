//! Every conformance case against this server over stdio, one test per case:
//! `cargo test --test conformance` (docs/cargo-test.md in the harness's repository).
//! Cases that `conformance-baseline.txt` lists are known failures, ignored until
//! `cargo test --test conformance -- --ignored` finds one that passes again.

fn main() -> std::process::ExitCode {
    conformance::libtest::Server::command([env!("CARGO_BIN_EXE_rmcp-fixture")])
        .baseline("conformance-baseline.txt")
        .run()
}
