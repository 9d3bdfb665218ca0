//! What a server target speaks: the version probes of [`crate::versions`], each on a fresh
//! start of the target (over HTTP, a fresh connection, and a fresh server where the harness
//! starts it), run at once. The command line and [`crate::libtest`] ask the same way. Over
//! stdio with a pool of shared processes, the probes start theirs on the pool's runtime and
//! hand each clean session to it ([`crate::share::stdio::Pool::adopt`]).

use crate::engine::server::Connect;
use crate::engine::Options;
use crate::error::StartError;
use crate::share;
use crate::transport::http::Http;
use crate::transport::process::display_argv;
use crate::transport::stdio::Stdio;
use crate::versions::{self, Choice, Spoken};

/// Asks the target which protocol versions it speaks, each probe on a fresh start of it (over
/// HTTP, a fresh connection, and a fresh server where the harness starts it).
pub fn spoken_by(
    connect: &Connect,
    choice: &Choice,
    options: &Options,
) -> Result<Spoken, StartError> {
    spoken_handing(connect, choice, options, None)
}

/// As [`spoken_by`]; over stdio with `pool`, a probe's process whose session is clean goes
/// to the pool instead of being ended, to serve the cases at its version.
pub fn spoken_handing(
    connect: &Connect,
    choice: &Choice,
    options: &Options,
    pool: Option<&share::Pool>,
) -> Result<Spoken, StartError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;
    let pool = match pool {
        Some(share::Pool::Stdio(pool)) => Some(pool),
        _ => None,
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let mut probes = tokio::task::JoinSet::new();
        let versions = versions::to_probe(choice);
        for (order, version) in versions.into_iter().enumerate() {
            let wait = options.startup_timeout;
            match (connect, pool) {
                (Connect::Stdio(launch), Some(pool)) => {
                    let io = pool.spawn().map_err(|source| spawn_error(launch, source))?;
                    probes.spawn_local(async move {
                        let (probe, handed) = versions::probe_handing(io, version, wait).await;
                        (order, probe, handed)
                    });
                }
                (Connect::Stdio(launch), None) => {
                    let io = Stdio::spawn(launch, options.reply_timeout)
                        .map_err(|source| spawn_error(launch, source))?;
                    probes.spawn_local(async move {
                        (order, versions::probe(io, version, wait).await, None)
                    });
                }
                (Connect::Http(target), _) => {
                    let io = Http::start(target, options.reply_timeout, wait).await?;
                    probes.spawn_local(async move {
                        (order, versions::probe(io, version, wait).await, None)
                    });
                }
            }
        }
        let mut found = vec![];
        while let Some(done) = probes.join_next().await {
            let (order, probe, handed) = done.map_err(StartError::Probe)?;
            if let (Some(pool), Some(handed)) = (pool, handed) {
                pool.adopt(handed);
            }
            found.push((order, probe));
        }
        found.sort_by_key(|(order, _)| *order);
        Ok(versions::gather(
            found.into_iter().map(|(_, f)| f).collect(),
        ))
    })
}

/// Why a stdio target could not be started for a probe.
fn spawn_error(launch: &crate::transport::process::Launch, source: std::io::Error) -> StartError {
    StartError::Spawn {
        target: display_argv(&launch.argv),
        source,
    }
}
