//! Power loss, not process death: the SQLite journal's files are recorded
//! write by write through a VFS shim while a dispatcher works, and at every
//! sync the files a power cut would leave (what was synced, plus none, all
//! or random subsets of what was not, some with a torn write) are rebuilt in
//! a fresh directory and checked (`power_loss/check.rs`).
//!
//! Its own test binary: the recording VFS becomes the process's default.
//! `LOOPX_POWER_LOSS_SCALE` (receipts, in tens; default 4) and
//! `LOOPX_POWER_LOSS_SUBSETS` (random subsets per cut; default 2) size it.

#[path = "power_loss/check.rs"]
mod check;
#[path = "power_loss/images.rs"]
mod images;
#[path = "power_loss/vfs.rs"]
mod vfs;
#[path = "power_loss/workload.rs"]
mod workload;

use std::path::{Path, PathBuf};

use images::{cut_points, images_at, Image, Rng};
use vfs::Op;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The journal's name in the recorded directory and in each image's.
const JOURNAL: &str = "j.sqlite";

/// Writes the image's files (main file, `-wal`, `-journal`; never `-shm`,
/// which SQLite maps without the VFS) into a fresh `dir`.
fn write_image(dir: &Path, image: &Image) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("a fresh image directory");
    for (name, bytes) in &image.files {
        if let Some(bytes) = bytes {
            std::fs::write(dir.join(name), bytes).expect("the image is written");
        }
    }
    dir.join(JOURNAL)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime")
}

/// Checks every image of the cuts `cuts[w], cuts[w + workers], ...`, each in
/// its own directory under `root`; returns how many it checked and what failed.
fn check_cuts(
    log: &[vfs::Event],
    cuts: &[usize],
    (w, workers): (usize, usize),
    subsets: usize,
    root: &Path,
    expected: &check::Expected,
) -> (usize, Vec<String>) {
    let rt = runtime();
    let (mut checked, mut failures) = (0, Vec::new());
    for &cut in cuts.iter().skip(w).step_by(workers) {
        // Seeded per cut, so an image does not depend on how cuts are shared out.
        let mut rng = Rng::new(0x4C58_484B ^ cut as u64);
        for image in images_at(log, cut, subsets, &mut rng) {
            let dir = root.join(format!("image-{w}"));
            let db = write_image(&dir, &image);
            checked += 1;
            if let Err(e) = rt.block_on(check::image(&db, cut, expected)) {
                let _ = std::fs::rename(&dir, root.join(format!("failed-{w}-{}", failures.len())));
                failures.push(format!("cut at event {} of {} ({}): {e}", image.cut, log.len(), image.label));
            }
        }
    }
    (checked, failures)
}

#[test]
fn no_power_cut_loses_or_changes_a_reported_outcome() {
    let scale = env_or("LOOPX_POWER_LOSS_SCALE", 4).max(1);
    let subsets = env_or("LOOPX_POWER_LOSS_SUBSETS", 2);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
    vfs::install();
    let root = std::env::temp_dir().join(format!("loopx-power-loss-{}", std::process::id()));
    let run_dir = root.join("run");
    std::fs::create_dir_all(&run_dir).expect("a temp dir");

    vfs::record_under(&run_dir);
    let observed = runtime().block_on(workload::run(&run_dir.join(JOURNAL), scale));
    let log = vfs::take_log();

    // The recording saw the workload: writes and syncs of both files, and
    // outcomes of every hook kind.
    for file in [JOURNAL.to_owned(), format!("{JOURNAL}-wal")] {
        for op in ["write", "sync"] {
            let n = log
                .iter()
                .filter(|e| e.file == file && matches!((&e.op, op), (Op::Write { .. }, "write") | (Op::Sync, "sync")))
                .count();
            assert!(n > 0, "no {op} of {file} was recorded");
        }
    }
    let expected = check::Expected::new(observed, workload::requests(scale)).unwrap_or_else(|e| panic!("{e}"));
    let kinds: std::collections::BTreeSet<String> =
        expected.observed.iter().flat_map(|o| o.outcome.hooks.iter().map(|h| format!("{:?}", h.outcome))).collect();
    let all = ["Exhausted", "Failed", "NotApplicable", "Recorded", "Replayed"];
    assert_eq!(kinds, all.map(String::from).into(), "the workload reaches every outcome but a conflict");

    let cuts = cut_points(&log);
    let (checked, failures) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..workers)
            .map(|w| {
                let (log, cuts, root, expected) = (&log, &cuts, &root, &expected);
                scope.spawn(move || check_cuts(log, cuts, (w, workers), subsets, root, expected))
            })
            .collect();
        workers.into_iter().map(|h| h.join().expect("a checker thread ends")).fold(
            (0, Vec::new()),
            |(n, mut all), (checked, failed)| {
                all.extend(failed);
                (n + checked, all)
            },
        )
    });
    let syncs = cuts.len() - 1;
    println!(
        "power loss: {checked} images checked at {} cuts ({syncs} syncs, {} events, {} dispatches observed)",
        cuts.len(),
        log.len(),
        expected.observed.len()
    );
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&root);
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} images failed (kept under {}):\n{}",
        failures.len(),
        root.display(),
        failures.join("\n")
    );
}
