//! What a server target speaks: the version probes of [`crate::versions`], each on a fresh
//! start of the target (over HTTP, a fresh connection, and a fresh server where the harness
//! starts it), run at once. The command line and [`crate::libtest`] ask the same way.

use crate::engine::server::Connect;
use crate::engine::Options;
use crate::error::StartError;
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let mut probes = tokio::task::JoinSet::new();
        let versions = versions::to_probe(choice);
        for (order, version) in versions.into_iter().enumerate() {
            let wait = options.startup_timeout;
            match connect {
                Connect::Stdio(launch) => {
                    let io = Stdio::spawn(launch, options.reply_timeout).map_err(|source| {
                        StartError::Spawn {
                            target: display_argv(&launch.argv),
                            source,
                        }
                    })?;
                    probes.spawn_local(
                        async move { (order, versions::probe(io, version, wait).await) },
                    );
                }
                Connect::Http(target) => {
                    let io = Http::start(target, options.reply_timeout, wait).await?;
                    probes.spawn_local(
                        async move { (order, versions::probe(io, version, wait).await) },
                    );
                }
            }
        }
        let mut found = vec![];
        while let Some(done) = probes.join_next().await {
            found.push(done.map_err(StartError::Probe)?);
        }
        found.sort_by_key(|(order, _)| *order);
        Ok(versions::gather(
            found.into_iter().map(|(_, f)| f).collect(),
        ))
    })
}
