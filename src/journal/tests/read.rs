//! Readers: paging, filters, unfinished, stats, integrity, index use, size.

use rusqlite::Connection;

use super::super::sqlite::schema::{DISPATCH_UNFINISHED, INTENT_OPEN};
use super::*;

both!(
    intents_page_oldest_first,
    dispatches_page_with_filters,
    unfinished_stats_and_integrity,
    the_standings_of_many_identities_read_as_one_by_one_in_the_order_asked,
    a_standing_read_sees_the_last_commit_and_never_waits_for_a_busy_writer
);

/// 25 dispatches, each recorded with one intent except every fifth, which
/// stays checkpointed, and every seventh, which failed once.
fn populated(b: &Backend) -> Journal {
    let j = b.open();
    for n in 0..25 {
        let seed = format!("p{n:02}");
        j.checkpoint(checkpoint(&seed)).wait().unwrap();
        if n % 7 == 3 {
            j.record_failure(failure(&seed, 1)).wait().unwrap();
        } else if n % 5 != 0 {
            j.record_final(proposed(&seed, 1, &seed, &[&seed])).wait().unwrap();
        }
    }
    j
}

fn intents_page_oldest_first(b: &Backend) {
    let j = populated(b);
    let mut seen = Vec::new();
    let mut filter = IntentFilter { limit: 7, ..Default::default() };
    loop {
        let page = j.list_intents(&filter).unwrap();
        assert!(page.items.len() <= 7);
        seen.extend(page.items.iter().map(|i| (i.seq, i.intent_id.clone())));
        match page.next_cursor {
            Some(c) => filter.after_seq = c,
            None => break,
        }
    }
    let expected: Vec<_> =
        (0..25).filter(|n| n % 7 != 3 && n % 5 != 0).map(|n| intent_id(&format!("p{n:02}"))).collect();
    assert_eq!(seen.iter().map(|s| s.1.clone()).collect::<Vec<_>>(), expected);
    assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "seq strictly increasing");

    let by_kind = IntentFilter {
        capability_id: Some("periodic_report".into()),
        intent_kind: Some("periodic_report.trigger_evaluation".into()),
        pending_only: true,
        limit: 1000,
        ..Default::default()
    };
    assert_eq!(j.list_intents(&by_kind).unwrap().items.len(), expected.len());
    let other = IntentFilter { capability_id: Some("other_capability".into()), ..by_kind };
    assert!(j.list_intents(&other).unwrap().items.is_empty());
    let one = IntentFilter { dispatch_id: Some(dispatch_id("p01")), ..Default::default() };
    assert_eq!(j.list_intents(&one).unwrap().items[0].intent_id, intent_id("p01"));
}

fn dispatches_page_with_filters(b: &Backend) {
    let j = populated(b);
    let mut all = Vec::new();
    let mut f = DispatchFilter { limit: 10, ..Default::default() };
    loop {
        let page = j.list_dispatches(&f).unwrap();
        all.extend(page.items.into_iter().map(|d| d.dispatch_id));
        match page.next_cursor {
            Some(c) => f.after_cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(all, (0..25).map(|n| dispatch_id(&format!("p{n:02}"))).collect::<Vec<_>>());

    let failed = DispatchFilter { state: Some(DispatchState::Failed), ..Default::default() };
    let failed: Vec<_> = j.list_dispatches(&failed).unwrap().items.into_iter().map(|d| d.dispatch_id).collect();
    assert_eq!(failed, ["p03", "p10", "p17", "p24"].map(dispatch_id));
    let other_hook = DispatchFilter { hook_id: Some("other.hook".into()), ..Default::default() };
    assert!(j.list_dispatches(&other_hook).unwrap().items.is_empty());
    let bad = DispatchFilter { hook_id: Some("not a token".into()), ..Default::default() };
    assert_eq!(j.list_dispatches(&bad).unwrap_err(), JournalError::InvalidArgument { what: "hookId" });
}

fn unfinished_stats_and_integrity(b: &Backend) {
    let j = populated(b);
    let unfinished: Vec<_> = j.unfinished().unwrap().into_iter().map(|d| (d.dispatch_id, d.state)).collect();
    let expected: Vec<_> = (0..25)
        .filter(|n| n % 7 == 3 || n % 5 == 0)
        .map(|n| {
            let state = if n % 7 == 3 { DispatchState::Failed } else { DispatchState::Checkpointed };
            (dispatch_id(&format!("p{n:02}")), state)
        })
        .collect();
    assert_eq!(unfinished, expected);
    let s = j.stats().unwrap();
    assert_eq!((s.checkpointed, s.failed, s.proposed, s.not_applicable, s.exhausted), (4, 4, 17, 0, 0));
    assert_eq!((s.intents, s.intents_open), (17, 17));
    assert!(j.integrity_check().unwrap());
    let row = serde_json::to_value(j.get_dispatch(&dispatch_id("p01")).unwrap().unwrap()).unwrap();
    assert_eq!(row["state"], "proposed");
    assert!(
        row.get("registrationDigest").is_some() && row.get("registration_digest").is_none(),
        "rows serialize camelCase"
    );
    assert_eq!(j.get_dispatch(&dispatch_id("missing")).unwrap(), None);
}

/// Many identities' standings in one read answer as one read each would, in
/// the order asked, repeats and unknown identities included.
fn the_standings_of_many_identities_read_as_one_by_one_in_the_order_asked(b: &Backend) {
    let j = populated(b);
    let ids = [dispatch_id("p01"), dispatch_id("missing"), dispatch_id("p05"), dispatch_id("p03"), dispatch_id("p01")];
    let rows = j.get_dispatches(&ids).unwrap();
    let one_by_one: Vec<_> = ids.iter().map(|id| j.get_dispatch(id).unwrap()).collect();
    assert_eq!(rows, one_by_one);
    let states: Vec<_> = rows.iter().map(|r| r.as_ref().map(|r| r.state)).collect();
    assert_eq!(
        states,
        [
            Some(DispatchState::Proposed),
            None,
            Some(DispatchState::Checkpointed),
            Some(DispatchState::Failed),
            Some(DispatchState::Proposed)
        ]
    );
    assert_eq!(j.get_dispatches(&[]).unwrap(), vec![]);
}

/// A read right after a commit sees it (on SQLite it may run on the idle
/// writer's own connection); a read while the writer is held in a batch is
/// answered by a reader meanwhile, not after the batch.
fn a_standing_read_sees_the_last_commit_and_never_waits_for_a_busy_writer(b: &Backend) {
    let j = b.open();
    j.checkpoint(checkpoint("s0")).wait().unwrap();
    j.record_final(proposed("s0", 1, "s0", &["s0"])).wait().unwrap();
    let state = |seed: &str| j.get_dispatch(&dispatch_id(seed)).unwrap().map(|r| r.state);
    assert_eq!(state("s0"), Some(DispatchState::Proposed));
    let lock = b.write_lock();
    let held = j.checkpoint(checkpoint("s1"));
    // Past a checkpoint's linger: the writer now holds its connection, waiting for the lock.
    std::thread::sleep(std::time::Duration::from_millis(30));
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let state = &state;
        s.spawn(move || tx.send((state("s0"), state("s1"))).unwrap());
        // A read that waited for the writer would wait for this lock, which is released only after.
        let read = rx.recv_timeout(std::time::Duration::from_secs(30));
        drop(lock);
        assert_eq!(read.expect("the read waited for the busy writer"), (Some(DispatchState::Proposed), None));
    });
    assert_eq!(held.wait().unwrap(), CheckpointState::Fresh);
    assert_eq!(state("s1"), Some(DispatchState::Checkpointed));
}

/// The partial indexes are what the hot queries use.
// SQLite only: reads SQLite's query plans.
#[test]
fn hot_queries_use_the_partial_indexes() {
    let b = Backend::sqlite("plan");
    populated(&b).close();
    let c = Connection::open(b.path()).unwrap();
    let plan = |sql: &str| -> String {
        let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
    };
    let p = plan(&format!("SELECT * FROM dispatches WHERE {DISPATCH_UNFINISHED} ORDER BY seq"));
    assert!(p.contains("dispatches_unfinished"), "{p}");
    let p = plan(&format!(
        "SELECT * FROM intents WHERE seq > 0 AND capability_id = 'a' AND intent_kind = 'a.b' AND {INTENT_OPEN} \
         ORDER BY seq LIMIT 10"
    ));
    assert!(p.contains("intents_open") && !p.contains("TEMP B-TREE"), "{p}");
    let p = plan("SELECT * FROM intents WHERE seq > 0 AND dispatch_id = 'x' ORDER BY seq");
    assert!(p.contains("intents_dispatch"), "{p}");
}

/// Journal bytes per dispatch: checkpoint + record of a one-intent dispatch,
/// submitted as a host with many dispatches in flight would. A size bound,
/// not a timing: the file stays within a small multiple of the documents it
/// keeps (`--nocapture` prints the per-table breakdown; the benchmark
/// measures it at scale beside the plain TypeScript journal).
// SQLite only: measures the file.
#[test]
fn bytes_per_dispatch() {
    const N: usize = 2_000;
    let dir = TempDir::new("size");
    let path = dir.file("j.sqlite");
    let j = open(&path);
    let start = std::time::Instant::now();
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let cps: Vec<_> = chunk.iter().map(|n| j.checkpoint(checkpoint(&format!("s{n}")))).collect();
        cps.into_iter().for_each(|r| assert_eq!(r.wait().unwrap(), CheckpointState::Fresh));
        let recs: Vec<_> = chunk
            .iter()
            .map(|n| {
                let seed = format!("s{n}");
                j.record_final(proposed(&seed, 1, &seed, &[&seed]))
            })
            .collect();
        recs.into_iter().for_each(|r| assert_eq!(r.wait().unwrap(), RecordOutcome::Recorded));
    }
    let elapsed = start.elapsed();
    let stats = j.writer_stats();
    j.close();
    let bytes = std::fs::metadata(&path).unwrap().len();
    let c = Connection::open(&path).unwrap();
    let per_object = c.prepare(
        "SELECT name, count(*), sum(pgsize), sum(unused), sum(payload) FROM dbstat GROUP BY name ORDER BY 3 DESC",
    );
    if let Ok(mut stmt) = per_object {
        let rows = stmt.query_map([], |r| {
            Ok(format!(
                "  {:<24} pages {:>6}  bytes/dispatch {:>5}  unused {:>4}  payload {:>5}",
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)? / N as i64,
                r.get::<_, i64>(3)? / N as i64,
                r.get::<_, i64>(4)? / N as i64
            ))
        });
        rows.unwrap().for_each(|l| eprintln!("{}", l.unwrap()));
    }
    // The documents a dispatch writes (request) and the journal serves back
    // (receipt and intent), though it stores neither of the latter whole.
    let docs = checkpoint("s1").request_json.len()
        + proposed_receipt("s1", 1, "s1", &["s1"]).len()
        + intent_doc("s1", &dispatch_id("s1")).len();
    eprintln!(
        "{N} dispatches: {bytes} bytes = {} bytes/dispatch (JSON documents alone: {docs} bytes); {:?}; {stats:?}",
        bytes / N as u64,
        elapsed
    );
    // The request is dropped once final and nothing derivable is stored, so
    // what stays (the row's columns, the intent's own fields, their keys) is
    // well under the documents the journal serves back.
    assert!(
        bytes / (N as u64) < 3 * docs as u64 / 5,
        "{} bytes per dispatch for {docs} bytes of documents",
        bytes / N as u64
    );
}
