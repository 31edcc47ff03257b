//! The PostgreSQL backend against a real server: `LOOPX_TEST_PG_URL` names
//! it (`npm test` starts a throwaway one; see README). Each test works in a
//! schema of its own, dropped at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::super::tests::{checkpoint, dispatch_id, failure, hex, intent_doc, intent_id, proposed};
use super::super::*;
use super::{PgTarget, PG_SCHEMA_VERSION};

pub(super) fn url() -> String {
    std::env::var("LOOPX_TEST_PG_URL").expect(
        "LOOPX_TEST_PG_URL must name a PostgreSQL server for these tests: run them through `npm test`, \
         which starts a throwaway one (scripts/pg-server.mjs), or export the URL of a server you run",
    )
}

/// A fresh schema name, dropped (with everything in it) when this drops.
pub(super) struct Schema {
    pub(super) target: PgTarget,
}

impl Schema {
    pub(super) fn new(tag: &str) -> Schema {
        static N: AtomicU64 = AtomicU64::new(0);
        let schema = format!("t_{tag}_{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        Schema { target: PgTarget { connection_string: url(), schema, ca_file: None } }
    }

    pub(super) fn open(&self) -> Journal {
        Journal::open(&self.target, JournalOptions::default(), OpenMode::ReadWrite).expect("open postgres journal")
    }

    /// Runs `sql` on a connection of its own (on a plain thread: the sync
    /// client must not run on an async runtime's thread).
    pub(super) fn sql(&self, sql: &str) -> Vec<::postgres::Row> {
        let setup = format!("SET search_path TO \"{}\"", self.target.schema);
        std::thread::scope(|t| {
            t.spawn(|| {
                let mut client = ::postgres::Client::connect(&url(), ::postgres::NoTls).unwrap();
                client.batch_execute(&setup).unwrap();
                client.query(sql, &[]).unwrap()
            })
            .join()
            .unwrap()
        })
    }

    fn dump(&self) -> String {
        // Every row of every table, as text: what a secrecy scan or a
        // before/after comparison needs.
        let mut out = String::new();
        for table in ["meta", "dispatches", "requests", "failures", "intents"] {
            for r in self.sql(&format!("SELECT t::text FROM \"{}\".{table} t ORDER BY 1", self.target.schema)) {
                out += &r.get::<_, String>(0);
                out.push('\n');
            }
        }
        out
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let drop = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.target.schema);
        let _ = std::thread::spawn(move || {
            if let Ok(mut c) = ::postgres::Client::connect(&url(), ::postgres::NoTls) {
                let _ = c.batch_execute(&drop);
            }
        })
        .join();
    }
}

fn record_proposed(j: &Journal, seed: &str, intents: &[&str]) -> RecordOutcome {
    assert_eq!(j.checkpoint(checkpoint(seed)).wait(), Ok(CheckpointState::Fresh));
    j.record_final(proposed(seed, 1, seed, intents)).wait().unwrap()
}

#[test]
fn creates_the_schema_stamps_its_version_and_reopens() {
    let s = Schema::new("open");
    let j = s.open();
    assert_eq!(record_proposed(&j, "a", &["a1"]), RecordOutcome::Recorded);
    j.close();
    let meta = s.sql("SELECT application_id, version FROM meta");
    assert_eq!((meta[0].get::<_, i32>(0), meta[0].get::<_, i32>(1)), (APPLICATION_ID, PG_SCHEMA_VERSION));
    let j = s.open();
    assert_eq!(j.stats().unwrap().proposed, 1);
    assert!(j.integrity().unwrap().ok);
}

#[test]
fn a_newer_schema_and_a_foreign_schema_are_refused_unchanged() {
    let s = Schema::new("newer");
    let j = s.open();
    record_proposed(&j, "a", &["a1"]);
    j.close();
    s.sql("UPDATE meta SET version = 99");
    let before = s.dump();
    let err = Journal::open(&s.target, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err();
    assert_eq!(err, JournalError::TooNew { found: 99, supported: PG_SCHEMA_VERSION });
    assert_eq!(Journal::open(&s.target, JournalOptions::default(), OpenMode::ReadOnly).unwrap_err(), err);
    assert_eq!(s.dump(), before, "nothing changed");

    let f = Schema::new("foreign");
    f.sql(&format!("CREATE SCHEMA {}", f.target.schema));
    f.sql(&format!("CREATE TABLE {}.orders (id int)", f.target.schema));
    assert_eq!(
        Journal::open(&f.target, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err(),
        JournalError::NotAJournal
    );
    let tables = f.sql("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()");
    assert_eq!(tables[0].get::<_, i64>(0), 1, "no journal table was added beside a foreign one");
    // A read-only open never creates a schema.
    let missing = Schema::new("missing");
    let err = Journal::open(&missing.target, JournalOptions::default(), OpenMode::ReadOnly).unwrap_err();
    assert_eq!(err, JournalError::NotAJournal);
    let found = missing.sql(&format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{}'", missing.target.schema));
    assert_eq!(found[0].get::<_, i64>(0), 0);
}

#[test]
fn records_read_back_as_on_sqlite_and_the_outbox_view_holds_whole_intents() {
    let s = Schema::new("rows");
    let j = s.open();
    assert_eq!(record_proposed(&j, "a", &["a1", "a2"]), RecordOutcome::Recorded);
    let row = j.get_dispatch(&dispatch_id("a")).unwrap().unwrap();
    assert_eq!(row.state, DispatchState::Proposed);
    assert_eq!(row.intent_ids, vec![intent_id("a1"), intent_id("a2")]);
    assert_eq!(row.request_json, None, "the request goes with the final record");
    // A replayed final record changes nothing and answers the row on record.
    let again = j.record_final(proposed("a", 1, "other", &["a3"])).wait().unwrap();
    assert!(matches!(again, RecordOutcome::AlreadyFinal { row } if row.result_digest == Some(hex("a"))));
    // Failed attempts, then exhausted.
    j.checkpoint(checkpoint("b")).wait().unwrap();
    assert_eq!(j.record_failure(failure("b", 1)).wait(), Ok(FailureOutcome::Recorded { attempts_used: 1 }));
    assert_eq!(j.record_failure(failure("b", 1)).wait(), Ok(FailureOutcome::Recorded { attempts_used: 1 }));
    assert_eq!(j.unfinished().unwrap().len(), 1);
    assert_eq!(j.list_failures(&dispatch_id("b")).unwrap().len(), 1);
    let exhausted = FinalRecord {
        dispatch_id: dispatch_id("b"),
        attempt: 2,
        status: FinalStatus::Exhausted,
        result_digest: None,
        intents: vec![],
        failure: Some(("dispatch_budget_exhausted".into(), None)),
    };
    assert_eq!(j.record_final(exhausted).wait(), Ok(RecordOutcome::Recorded));
    let failures = j.list_failures(&dispatch_id("b")).unwrap();
    assert_eq!(
        failures.iter().map(|f| (f.attempt, f.code.as_str())).collect::<Vec<_>>(),
        [(1, "producer_failed"), (2, "dispatch_budget_exhausted")]
    );
    assert!(j.unfinished().unwrap().is_empty());

    let page = j.list_intents(&IntentFilter { limit: 1, ..IntentFilter::default() }).unwrap();
    assert_eq!(page.items.len(), 1);
    let next = j.list_intents(&IntentFilter { after_seq: page.next_cursor.unwrap(), ..IntentFilter::default() });
    assert_eq!(next.unwrap().items[0].intent_id, intent_id("a2"));

    let view = s.sql("SELECT id, aggregatetype, aggregateid, type, payload::text FROM outbox_events ORDER BY id");
    assert_eq!(view.len(), 2);
    for r in &view {
        let id: String = r.get(0);
        let seed = if id == intent_id("a1") { "a1" } else { "a2" };
        let payload: serde_json::Value = serde_json::from_str(&r.get::<_, String>(4)).unwrap();
        let expected: serde_json::Value = serde_json::from_str(&intent_doc(seed, &dispatch_id("a"))).unwrap();
        assert_eq!(payload, expected, "the view's payload is the whole intent document");
        assert_eq!(r.get::<_, String>(1), "periodic_report");
        assert_eq!(r.get::<_, String>(2), dispatch_id("a"));
        assert_eq!(r.get::<_, String>(3), "periodic_report.trigger_evaluation");
    }
    assert!(j.integrity().unwrap().ok);
}

#[test]
fn the_standings_of_many_identities_are_read_in_one_query_in_the_order_asked() {
    let s = Schema::new("many");
    let j = s.open();
    record_proposed(&j, "a", &["a1"]);
    j.checkpoint(checkpoint("b")).wait().unwrap();
    let ids = [dispatch_id("b"), dispatch_id("missing"), dispatch_id("a"), dispatch_id("b")];
    let rows = j.get_dispatches(&ids).unwrap();
    let one_by_one: Vec<_> = ids.iter().map(|id| j.get_dispatch(id).unwrap()).collect();
    assert_eq!(rows, one_by_one);
    let states: Vec<_> = rows.iter().map(|r| r.as_ref().map(|r| r.state)).collect();
    assert_eq!(
        states,
        [Some(DispatchState::Checkpointed), None, Some(DispatchState::Proposed), Some(DispatchState::Checkpointed)]
    );
}

#[test]
fn a_duplicate_intent_fails_its_record_alone() {
    let s = Schema::new("dup");
    let j = s.open();
    record_proposed(&j, "a", &["x"]);
    j.checkpoint(checkpoint("b")).wait().unwrap();
    j.checkpoint(checkpoint("c")).wait().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let records =
        vec![RecordCommand::Final(proposed("b", 1, "b", &["x"])), RecordCommand::Final(proposed("c", 1, "c", &["c1"]))];
    j.record_many(
        records,
        Box::new(move |r| {
            let _ = tx.send(r);
        }),
    )
    .unwrap();
    let answers = rx.recv().unwrap().unwrap();
    // The fast batch hit the refused insert and was run again with savepoints.
    assert_eq!(j.writer_stats().busy_retries, 1);
    assert_eq!(answers[0], Err(JournalError::DuplicateIntent));
    assert_eq!(answers[1], Ok(RecordAnswer::Final(RecordOutcome::Recorded)));
    assert_eq!(j.get_dispatch(&dispatch_id("b")).unwrap().unwrap().state, DispatchState::Checkpointed);
    // The same alone, as one command.
    assert_eq!(j.record_final(proposed("b", 1, "b", &["x"])).wait(), Err(JournalError::DuplicateIntent));
    assert!(j.integrity().unwrap().ok);
}

#[test]
fn two_hosts_racing_one_identity_commit_exactly_one_final_receipt() {
    let s = Schema::new("race");
    let hosts: Vec<Journal> = (0..4).map(|_| s.open()).collect();
    for round in 0..20 {
        let seed = format!("r{round}");
        for h in &hosts {
            drop(h.checkpoint(checkpoint(&seed)));
        }
        let replies: Vec<_> = hosts
            .iter()
            .enumerate()
            .map(|(n, h)| h.record_final(proposed(&seed, 1, &format!("{seed}-{n}"), &[&format!("{seed}-{n}")])))
            .collect();
        let outcomes: Vec<_> = replies.into_iter().map(|r| r.wait().unwrap()).collect();
        let recorded = outcomes.iter().filter(|o| **o == RecordOutcome::Recorded).count();
        assert_eq!(recorded, 1, "round {round}: {outcomes:?}");
    }
    let stats = hosts[0].stats().unwrap();
    assert_eq!((stats.proposed, stats.intents), (20, 20));
}

#[test]
fn executors_on_two_hosts_claim_disjoint_intents_and_decide_under_their_lease() {
    let s = Schema::new("lease");
    let a = s.open();
    let b = Journal::open(&s.target, JournalOptions::default(), OpenMode::ReadWrite).unwrap();
    let seeds: Vec<String> = (0..10).map(|n| format!("i{n}")).collect();
    let refs: Vec<&str> = seeds.iter().map(String::as_str).collect();
    record_proposed(&a, "d", &refs);
    let claim = |j: &Journal, who: &str| {
        j.claim(ClaimRequest {
            executor_id: who.into(),
            lease_ms: 60_000,
            batch: 6,
            capability_id: None,
            intent_kind: None,
        })
        .wait()
        .unwrap()
    };
    let (ra, rb) = std::thread::scope(|t| {
        let ra = t.spawn(|| claim(&a, "exec.a"));
        let rb = t.spawn(|| claim(&b, "exec.b"));
        (ra.join().unwrap(), rb.join().unwrap())
    });
    let mut all: Vec<String> = ra.iter().chain(rb.iter()).map(|i| i.intent_id.clone()).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 10, "every intent claimed once");
    assert!(ra.windows(2).all(|w| w[0].seq < w[1].seq), "oldest first");
    let mine = &ra[0].intent_id;
    assert_eq!(b.decide(mine, "exec.b", Decision::Admit, "ok").wait(), Err(JournalError::LeaseNotHeld));
    assert_eq!(a.decide(mine, "exec.a", Decision::Admit, "ok").wait(), Ok(DecideOutcome::Decided));
    assert_eq!(a.decide(mine, "exec.a", Decision::Admit, "ok").wait(), Ok(DecideOutcome::SameDecision));
    assert_eq!(a.mark_done(mine, "exec.a").wait(), Ok(DoneOutcome::Done));
    assert_eq!(a.mark_done(mine, "exec.a").wait(), Ok(DoneOutcome::AlreadyDone));
    assert_eq!(a.stats().unwrap().intents_open, 9);
    assert!(claim(&a, "exec.c").is_empty(), "everything else is leased");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_hosts_commit_wakes_a_waiting_consumer_and_reads_work_inside_a_runtime() {
    let s = Schema::new("notify");
    let waiter = s.open();
    // Another spelling of the same server: a separate commit signal in this
    // process, so only NOTIFY can carry the wake.
    let other_url = url().replace("127.0.0.1", "localhost");
    assert_ne!(other_url, url(), "the test server's URL names 127.0.0.1");
    let other = PgTarget { connection_string: other_url, schema: s.target.schema.clone(), ca_file: None };
    let writer = Journal::open(&other, JournalOptions::default(), OpenMode::ReadWrite).unwrap();
    // Reads from an async runtime's worker must not block on a nested runtime.
    assert_eq!(waiter.get_dispatch(&dispatch_id("n")).unwrap(), None);
    tokio::time::sleep(Duration::from_millis(200)).await; // the listener is listening
    let seen = waiter.commit_generation();
    let wait = waiter.wait_for_commit(seen, Duration::from_secs(10));
    let write = async {
        writer.checkpoint(checkpoint("n")).await.unwrap();
        writer.record_final(proposed("n", 1, "n", &["n1"])).await.unwrap()
    };
    let (woke, recorded) = tokio::join!(wait, write);
    assert_eq!(recorded, RecordOutcome::Recorded);
    assert!(woke, "the NOTIFY sent with the other host's commit woke the waiter");
}

#[test]
fn an_unreachable_server_is_a_coded_error_that_names_nothing_private() {
    let target = PgTarget {
        connection_string: "postgres://secret_user:hunter2secret@127.0.0.1:1/private_db?connect_timeout=2".into(),
        schema: "loopx_hooks".into(),
        ca_file: None,
    };
    let err = Journal::open(&target, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err();
    assert_eq!(err, JournalError::Unavailable);
    let shown = format!("{err} {err:?} {target:?}");
    for private in ["secret_user", "hunter2secret", "private_db", "127.0.0.1"] {
        assert!(!shown.contains(private), "{shown}");
    }
    let bad = PgTarget { connection_string: "postgres://u:pw@h:notaport/db".into(), schema: "s".into(), ca_file: None };
    let err = Journal::open(&bad, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "connectionString" });
    for schema in ["", "Upper", "pg_catalog", "a;drop", "a\"b", &"x".repeat(49)] {
        let t = PgTarget { connection_string: url(), schema: schema.into(), ca_file: None };
        let err = Journal::open(&t, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err();
        assert_eq!(err, JournalError::InvalidArgument { what: "schema" }, "{schema:?}");
    }
}

#[test]
fn connections_killed_mid_batch_are_retried_and_every_record_lands_exactly_once() {
    let s = Schema::new("kill");
    let j = s.open();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let killed = std::thread::scope(|t| {
        let killer = t.spawn(|| {
            let mut killed = 0;
            while !stop.load(Ordering::SeqCst) {
                let rows = s.sql(&format!(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = 'loopx-hooks:{}'",
                    s.target.schema
                ));
                killed += rows[0].get::<_, i64>(0);
                std::thread::sleep(Duration::from_millis(15));
            }
            killed
        });
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let j = &j;
                t.spawn(move || {
                    for n in 0..40 {
                        let seed = format!("k{w}_{n}");
                        drop(j.checkpoint(checkpoint(&seed)));
                        let outcome = j.record_final(proposed(&seed, 1, &seed, &[&seed])).wait();
                        assert_eq!(outcome, Ok(RecordOutcome::Recorded), "{seed}");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::SeqCst);
        killer.join().unwrap()
    });
    assert!(killed > 0, "the test killed no connection");
    let stats = j.stats().unwrap();
    assert_eq!((stats.proposed, stats.intents, stats.checkpointed), (160, 160, 0));
    assert!(j.integrity().unwrap().ok);
    assert!(j.writer_stats().busy_retries > 0, "the writer retried");
}

#[test]
fn sslmode_require_verifies_the_server_by_the_given_ca_over_rustls() {
    let ca = std::env::var("LOOPX_TEST_PG_CA").expect(
        "LOOPX_TEST_PG_CA must name the PEM CA of the test server's certificate (scripts/pg-server.mjs makes one)",
    );
    let secure = format!("{}{}sslmode=require", url(), if url().contains('?') { "&" } else { "?" });
    let mut s = Schema::new("tls");
    s.target =
        PgTarget { connection_string: secure.clone(), schema: s.target.schema.clone(), ca_file: Some(ca.into()) };
    let j = s.open();
    assert_eq!(record_proposed(&j, "t", &["t1"]), RecordOutcome::Recorded);
    let encrypted = s.sql(&format!(
        "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'loopx-hooks:{}' AND s.ssl",
        s.target.schema
    ));
    assert!(encrypted[0].get::<_, i64>(0) >= 2, "the writer's and the listener's connections use TLS");
    j.close();
    // Without the CA, the server's certificate does not verify against the public roots: refused.
    let unverified = PgTarget { connection_string: secure, schema: s.target.schema.clone(), ca_file: None };
    assert_eq!(
        Journal::open(&unverified, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err(),
        JournalError::Unavailable
    );
    // A CA file that holds no certificate is the caller's error.
    let bogus = PgTarget { ca_file: Some("/dev/null".into()), ..unverified };
    let err = Journal::open(&bogus, JournalOptions::default(), OpenMode::ReadWrite).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "caFile" });
}
