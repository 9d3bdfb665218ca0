//! `conformance record`: the command line around [`conformance::record`]: which transport the
//! options ask for, and how the recorder ends (over stdio, as the server did).

use crate::args::RecordArgs;
use conformance::record::redact::Redaction;
use conformance::record::{http, stdio};
use std::process::ExitCode;

pub(super) fn record(args: RecordArgs) -> ExitCode {
    let redaction = match Redaction::parse(&args.redact) {
        Ok(redaction) => redaction,
        Err(e) => return usage(&e),
    };
    match (args.listen, args.to, args.argv.is_empty()) {
        (Some(_), _, false) => usage(
            "record takes either a server's command after `--` (stdio) or --listen and --to (Streamable HTTP), not both",
        ),
        (Some(_), _, true) if args.case.is_some() => usage(
            "--case drafts cases from stdio recordings only for now: record the server over stdio (`conformance record -o DIR --case FILE -- <server argv>`)",
        ),
        (Some(listen), Some(to), true) => {
            let code = http::record(http::Options {
                listen,
                to,
                dir: args.output,
                redaction,
            });
            ExitCode::from(u8::try_from(code).unwrap_or(2))
        }
        (_, _, true) => usage(
            "record needs the server's command after `--` (`conformance record -o DIR -- <server argv>`), or --listen ADDR --to URL for Streamable HTTP",
        ),
        (None, _, false) => {
            if redaction.names_headers() {
                return usage("--redact header:NAME is for Streamable HTTP; over stdio there are no headers (give a JSON pointer)");
            }
            stdio::record(stdio::Options {
                argv: args.argv,
                dir: args.output,
                redaction,
                quiet: args.quiet,
                case: args.case,
            })
            .exit()
        }
    }
}

fn usage(e: &str) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}
