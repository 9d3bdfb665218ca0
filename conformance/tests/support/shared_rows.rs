//! The rows of a broken-server table played as a run plays them by default: every row of one
//! mode at once, on targets they share ([`share::Pool`]). Each row must give the verdict it
//! gives alone (a row that does not pass when sharing is rerun alone, as a run does), and a
//! case that may share did share. One trial body for the stdio and the HTTP tables.

use conformance::case::Case;
use conformance::case_report::CaseResult;
use conformance::engine::server::Connect;
use conformance::engine::Options;
use conformance::harness::expect::Expect;
use conformance::runner::{execute_each, Plan};
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
        // Eight at a time on the runner's workers, each taking the next row as soon as its
        // last one ends, as a run's do (four per CPU, at least 8). Twice, so that over stdio
        // the second round goes on in the sessions the first opened (a mode has fewer rows
        // than the processes a pool keeps). A session is kept only after a pass, so a mode
        // none of whose rows pass has no second round to play.
        let rounds = if group.iter().any(|r| r.1.may_pass()) {
            2
        } else {
            1
        };
        let plan = Plan {
            jobs: WORKERS,
            repeat: 1,
        };
        for _round in 0..rounds {
            let results = execute_each(&group, plan, &|_, _, _| {}, &|runtime, row| {
                runtime.block_on(share::run(&row.0, connect, Some(&pool), &row.2))
            });
            for (row, runs) in group.iter().zip(results) {
                failed.extend(
                    runs.into_iter()
                        .filter_map(|r| judge_row(mode, row, r).err()),
                );
            }
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

/// Judges the report of one row played on the pool's shared targets.
fn judge_row(mode: &str, row: &Row, result: CaseResult) -> Result<(), String> {
    let (case, want, _) = row;
    let report = result.map_err(|e| e.to_string())?;
    if share::may_share(case) && report.placement == conformance::case_report::Placement::Alone {
        return Err(format!("{} may share, and ran alone", case.id));
    }
    let want = want.clone().on_shared_target();
    super::self_served::judge(case, mode, &want, &report, &[], false)
        .map_err(|e| format!("{e} ({:?})", report.placement))
}
