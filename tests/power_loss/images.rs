//! The files a power cut would leave, built from the recorded log.
//!
//! The model (that of ALICE and LazyFS): at a cut, a write or truncate of a
//! file is durable when a sync of that same file followed it. Creating and
//! deleting a file change its directory, which SQLite does not always sync:
//! they are durable when any later sync followed them, and reach the disk in
//! order, as on a journaling file system that commits metadata in order. Of
//! the writes that are not durable, any subset may have reached the disk, and
//! a write may be torn at a 512-byte boundary; of the directory changes, any
//! prefix. Whatever reached the disk is applied in log order; a write to a
//! file whose creation did not reach it is lost with the file.

use std::collections::BTreeMap;

use super::vfs::{Event, Op};

/// A small deterministic generator (splitmix64), so a failing image can be rebuilt.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The file set left by one cut: each file's bytes, or `None` when absent,
/// by name.
pub type Files = BTreeMap<String, Option<Vec<u8>>>;

/// One image and how it was made (printed when a check fails).
pub struct Image {
    /// Events `0..cut` happened before the power went.
    pub cut: usize,
    pub label: String,
    pub files: Files,
}

/// Where to cut: before each sync (so the writes it would have made durable
/// are still in flight) and after the last event.
pub fn cut_points(log: &[Event]) -> Vec<usize> {
    let mut cuts: Vec<usize> =
        log.iter().enumerate().filter(|(_, e)| matches!(e.op, Op::Sync)).map(|(i, _)| i).collect();
    cuts.push(log.len());
    cuts
}

/// Which events of `log[..cut]` are durable at the cut.
fn durable(log: &[Event], cut: usize) -> Vec<bool> {
    let mut synced_after: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut any_sync_after = false;
    let mut out = vec![false; cut];
    for i in (0..cut).rev() {
        let e = &log[i];
        out[i] = match e.op {
            Op::Sync => {
                synced_after.insert(&e.file);
                any_sync_after = true;
                true
            }
            Op::Write { .. } | Op::Truncate(_) => synced_after.contains(e.file.as_str()),
            Op::Create | Op::Delete => any_sync_after,
        };
    }
    out
}

/// Applies `log[i]` for every `i < cut` with `keep[i]`; `torn` cuts one write
/// (by index) to that many bytes.
fn apply(log: &[Event], cut: usize, keep: &[bool], torn: Option<(usize, usize)>) -> Files {
    let mut files: Files = log[..cut].iter().map(|e| (e.file.clone(), None)).collect();
    for (i, e) in log[..cut].iter().enumerate() {
        if !keep[i] {
            continue;
        }
        let slot = files.entry(e.file.clone()).or_default();
        match (&e.op, slot) {
            (Op::Create, slot) => *slot = Some(Vec::new()),
            (Op::Delete, slot) => *slot = None,
            (Op::Sync, _) | (_, None) => {}
            (Op::Write { offset, data }, Some(bytes)) => {
                let len = match torn {
                    Some((t, len)) if t == i => len,
                    _ => data.len(),
                };
                let start = usize::try_from(*offset).expect("offset fits");
                if bytes.len() < start + len {
                    bytes.resize(start + len, 0);
                }
                bytes[start..start + len].copy_from_slice(&data[..len]);
            }
            (Op::Truncate(size), Some(bytes)) => bytes.resize(usize::try_from(*size).expect("size fits"), 0),
        }
    }
    files
}

/// The images of one cut: nothing in flight reached the disk, all of it did,
/// `subsets` random subsets did, and torn variants of "all" and of each
/// subset. Images with the same files are returned once.
pub fn images_at(log: &[Event], cut: usize, subsets: usize, rng: &mut Rng) -> Vec<Image> {
    let base = durable(log, cut);
    let pending: Vec<usize> = (0..cut).filter(|&i| !base[i]).collect();
    let mut choices: Vec<(String, Vec<bool>)> = vec![("none in flight".into(), base.clone())];
    if !pending.is_empty() {
        choices.push(("all in flight".into(), vec![true; cut]));
        let directory: Vec<usize> =
            pending.iter().copied().filter(|&i| matches!(log[i].op, Op::Create | Op::Delete)).collect();
        for n in 0..subsets {
            let mut keep = base.clone();
            for &i in &pending {
                keep[i] = rng.next() & 1 == 1;
            }
            // Directory changes reach the disk in order: keep a prefix of them.
            let reached = rng.below(directory.len() + 1);
            for (k, &i) in directory.iter().enumerate() {
                keep[i] = k < reached;
            }
            choices.push((format!("random subset {n} of {} in flight", pending.len()), keep));
        }
    }
    let mut images = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (label, keep) in choices {
        let mut variants = vec![(label.clone(), None)];
        // A torn write among those kept that were in flight.
        let tearable: Vec<usize> = pending
            .iter()
            .copied()
            .filter(|&i| keep[i] && matches!(&log[i].op, Op::Write { data, .. } if data.len() > 512))
            .collect();
        if !tearable.is_empty() && label != "none in flight" {
            let i = tearable[rng.below(tearable.len())];
            let Op::Write { data, .. } = &log[i].op else { unreachable!() };
            let len = 512 * (1 + rng.below((data.len() - 1) / 512));
            variants.push((format!("{label}, event {i} torn to {len} bytes"), Some((i, len))));
        }
        for (label, torn) in variants {
            let files = apply(log, cut, &keep, torn);
            let mut h = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&files, &mut h);
            if seen.insert(std::hash::Hasher::finish(&h)) {
                images.push(Image { cut, label, files });
            }
        }
    }
    images
}

/// The model on a log small enough to know every image of: what a sync made
/// durable is always there, what was in flight may or may not be, and a file
/// whose creation was not made durable is gone with its writes.
#[test]
fn images_keep_what_was_synced_and_vary_the_rest() {
    let ev = |file: &str, op| Event { file: file.into(), op };
    let write = |offset, byte, len| Op::Write { offset, data: vec![byte; len] };
    let log = vec![
        ev("db", Op::Create),
        ev("db", write(0, 1, 1024)),
        ev("db", Op::Sync),
        ev("db-wal", Op::Create),
        ev("db-wal", write(0, 2, 1024)),
        ev("db", write(1024, 3, 600)),
        ev("db-wal", Op::Sync),
        ev("db-wal", Op::Delete),
        ev("db", write(0, 4, 1024)),
    ];
    assert_eq!(cut_points(&log), vec![2, 6, 9]);
    let mut rng = Rng::new(7);
    let at = |cut, rng: &mut Rng| images_at(&log, cut, 8, rng);
    let db = |i: &Image| i.files.get("db").cloned().flatten();
    let wal = |i: &Image| i.files.get("db-wal").cloned().flatten();
    // Runs of equal bytes, so a failure prints short.
    let runs =
        |b: Option<Vec<u8>>| b.map(|b| b.chunk_by(|x, y| x == y).map(|run| (run[0], run.len())).collect::<Vec<_>>());

    // Before the first sync nothing is durable, not even the main file.
    let first = at(2, &mut rng);
    assert!(first.iter().any(|i| db(i).is_none()));
    assert!(first.iter().any(|i| db(i) == Some(vec![1; 1024])));

    // The main file's first write was synced; the WAL's creation was not.
    let second = at(6, &mut rng);
    assert!(second.iter().all(|i| db(i).is_some_and(|d| d[..1024] == [1; 1024])));
    let none = second.iter().find(|i| i.label == "none in flight").expect("the image with nothing in flight");
    assert_eq!((runs(db(none)), runs(wal(none))), (Some(vec![(1, 1024)]), None));
    let all = second.iter().find(|i| i.label == "all in flight").expect("the image with everything in flight");
    assert_eq!((runs(db(all)), runs(wal(all))), (Some(vec![(1, 1024), (3, 600)]), Some(vec![(2, 1024)])));

    // The WAL was synced: it is whole or (deleted since) gone, never partial.
    let third = at(9, &mut rng);
    assert!(third.iter().all(|i| wal(i).is_none() || wal(i) == Some(vec![2; 1024])));
    assert!(third.iter().any(|i| wal(i).is_none()) && third.iter().any(|i| wal(i).is_some()));
    // A sync of the WAL makes nothing of the main file durable.
    let none = third.iter().find(|i| i.label == "none in flight").expect("the image with nothing in flight");
    assert_eq!((runs(db(none)), runs(wal(none))), (Some(vec![(1, 1024)]), Some(vec![(2, 1024)])));
    let all = third.iter().find(|i| i.label == "all in flight").expect("the image with everything in flight");
    assert_eq!((runs(db(all)), runs(wal(all))), (Some(vec![(4, 1024), (3, 600)]), None));
    // Otherwise the synced write, or over it the later one whole or torn at
    // 512 bytes; past it the unsynced write whole, torn or not at all.
    for i in &third {
        let d = db(i).expect("the main file was synced");
        let fours = d[..1024].iter().take_while(|&&b| b == 4).count();
        assert!(fours % 512 == 0 && d[fours..1024].iter().all(|&b| b == 1), "{}", i.label);
        assert!([1024, 1536, 1624].contains(&d.len()), "{}", i.label);
    }
    assert!(third.iter().any(|i| i.label.contains("torn")));
}
