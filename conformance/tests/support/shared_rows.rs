//! The rows of a broken-server table played as a run plays them by default: every row of one
//! mode at once, on targets they share ([`share::Pool`]). Each row must give the verdict it
//! gives alone (a row that does not pass when sharing is rerun alone, as a run does), and a
//! case that may share did share. One trial body for the stdio and the HTTP tables.

use conformance::case::Case;
use conformance::engine::server::Connect;
use conformance::engine::Options;
use conformance::harness::expect::Expect;
use conformance::share;
use libtest_mimic::{Failed, Trial};

/// One row of a mode: its case, what the run must show, and the options it runs with.
pub type Row = (Case, Expect, Options);

/// One trial `shared/{mode}` per mode of `table` (mode, case, what the run must show),
/// playing the mode's rows at once on targets they share: `connect` reaches a server of a
/// mode, `options` gives what a row runs with.
pub fn trials(
    cases: &[Case],
    table: Vec<(&'static str, &str, Expect)>,
    connect: fn(&str) -> Result<Connect, Failed>,
    options: fn(&Case, &Expect) -> Options,
) -> Vec<Trial> {
    let rows = table.into_iter().map(|(mode, name, want)| {
        let case = super::self_served::case(cases, name);
        let options = options(&case, &want);
        (mode, (case, want, options))
    });
    by_mode(rows.collect::<Vec<_>>())
        .into_iter()
        .map(|(mode, rows)| {
            let name = format!("shared/{mode}");
            Trial::test(name.clone(), move || {
                let alone = rows.iter().any(|(_, want, _)| want.watches_memory());
                super::self_served::own_process_if(alone, &name, || {
                    check_shared(mode, &connect(mode)?, &rows)
                })
            })
        })
        .collect()
}

/// The rows of each mode, in the table's order, each mode once.
pub fn by_mode<T>(
    rows: impl IntoIterator<Item = (&'static str, T)>,
) -> Vec<(&'static str, Vec<T>)> {
    let mut modes: Vec<(&'static str, Vec<T>)> = vec![];
    for (mode, row) in rows {
        match modes.iter_mut().find(|(m, _)| *m == mode) {
            Some((_, rows)) => rows.push(row),
            None => modes.push((mode, vec![row])),
        }
    }
    modes
}

/// Plays every row of `mode` against `connect`'s targets, shared: rows that write to the
/// target with the same patience share one pool (the patience is the pool's, as in a run).
pub fn check_shared(mode: &str, connect: &Connect, rows: &[Row]) -> Result<(), Failed> {
    let mut failed: Vec<String> = vec![];
    let mut patiences: Vec<_> = rows.iter().map(|r| r.2.reply_timeout).collect();
    patiences.sort();
    patiences.dedup();
    for patience in patiences {
        let group: Vec<&Row> = rows
            .iter()
            .filter(|r| r.2.reply_timeout == patience)
            .collect();
        let pool = share::Pool::for_target(connect, &group[0].2)
            .ok_or("the target is one whose cases share it")?;
        // Eight at a time, as a run's workers (four per CPU, at least 8): each worker takes
        // the next row as soon as its last one ends, as a run's do. Twice, so that over
        // stdio the second round goes on in the sessions the first opened (a mode has fewer
        // rows than the processes a pool keeps). A session is kept only after a pass, so a
        // mode none of whose rows pass has no second round to play.
        let rounds = if group.iter().any(|r| r.1.may_pass()) {
            2
        } else {
            1
        };
        for _round in 0..rounds {
            let results = play_on_workers(mode, &group, &pool, connect, WORKERS);
            failed.extend(results.into_iter().filter_map(Result::err));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n").into())
    }
}

/// How many rows play at once: as many as a run's workers against a target that is not
/// cheap to start (`runner::default_jobs` on two CPUs).
const WORKERS: usize = 8;

/// Plays `rows` on the pool's shared targets, `workers` at a time: each worker thread takes
/// the next row not yet taken until none is left. One result per row that was played.
fn play_on_workers(
    mode: &str,
    rows: &[&Row],
    pool: &share::Pool,
    connect: &Connect,
    workers: usize,
) -> Vec<Result<(), String>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers.min(rows.len()))
            .map(|_| {
                scope.spawn(|| {
                    let mut results = vec![];
                    loop {
                        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(row) = rows.get(at) else {
                            return results;
                        };
                        let played =
                            std::panic::AssertUnwindSafe(|| play_row(mode, row, pool, connect));
                        results
                            .push(std::panic::catch_unwind(played).unwrap_or_else(|_| {
                                Err(format!("{}: the row panicked", row.0.id))
                            }));
                    }
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| {
                t.join()
                    .unwrap_or_else(|_| vec![Err("a row panicked".into())])
            })
            .collect()
    })
}

/// Plays one row on the pool's shared targets and judges its report.
fn play_row(mode: &str, row: &Row, pool: &share::Pool, connect: &Connect) -> Result<(), String> {
    let (case, want, options) = row;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let report = runtime
        .block_on(share::run(case, connect, Some(pool), options))
        .map_err(|e| e.to_string())?;
    if share::may_share(case) && report.placement == conformance::case_report::Placement::Alone {
        return Err(format!("{} may share, and ran alone", case.id));
    }
    let want = want.clone().on_shared_target();
    super::self_served::judge(case, mode, &want, &report, &[], false)
        .map_err(|e| format!("{e} ({:?})", report.placement))
}
