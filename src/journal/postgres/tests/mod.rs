//! What only the PostgreSQL backend has, against a real server
//! (`LOOPX_TEST_PG_URL`; see `../tests/backend.rs`): foreign schemas, the
//! outbox view, NOTIFY between hosts, connection strings, TLS and killed
//! connections. The journal's behaviour itself is tested on both backends
//! in `../tests`. Each test works in a schema of its own, dropped at the end.

use std::sync::atomic::Ordering;
use std::time::Duration;

// `merged.rs` reaches the harness through here.
pub(super) use super::super::tests::{url, Schema};

use super::super::tests::{checkpoint, dispatch_id, intent_doc, intent_id, open_target, proposed};
use super::super::*;
use super::PgTarget;

mod lock;
mod merged;
mod outage;

fn record_proposed(j: &Journal, seed: &str, intents: &[&str]) -> RecordOutcome {
    assert_eq!(j.checkpoint(checkpoint(seed)).wait(), Ok(CheckpointState::Fresh));
    j.record_final(proposed(seed, 1, seed, intents)).wait().unwrap()
}

#[test]
fn a_foreign_schema_is_refused_and_gets_no_journal_table() {
    let f = Schema::new("foreign");
    f.sql(&format!("CREATE SCHEMA {}", f.target.schema));
    f.sql(&format!("CREATE TABLE {}.orders (id int)", f.target.schema));
    let before = f.dump();
    assert_eq!(f.open_with(JournalOptions::default()).unwrap_err(), JournalError::NotAJournal);
    assert_eq!(f.open_read_only().unwrap_err(), JournalError::NotAJournal);
    let tables = f.sql("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()");
    assert_eq!(tables[0].get::<_, i64>(0), 1, "no journal table was added beside a foreign one");
    assert_eq!(f.dump(), before, "nothing changed");
}

/// The `outbox_events` view is PostgreSQL's own surface (for CDC relays).
#[test]
fn the_outbox_view_holds_whole_intents() {
    let s = Schema::new("view");
    let j = s.open();
    assert_eq!(record_proposed(&j, "a", &["a1", "a2"]), RecordOutcome::Recorded);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_hosts_commit_wakes_a_waiting_consumer_and_reads_work_inside_a_runtime() {
    let s = Schema::new("notify");
    let waiter = s.open();
    // Another spelling of the same server: a separate commit signal in this
    // process, so only NOTIFY can carry the wake.
    let other_url = url().replace("127.0.0.1", "localhost");
    assert_ne!(other_url, url(), "the test server's URL names 127.0.0.1");
    let other = PgTarget {
        connection_string: other_url,
        schema: s.target.schema.clone(),
        ca_file: None,
        limits: Default::default(),
    };
    let writer = open_target(&other, JournalOptions::default()).unwrap();
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
        limits: Default::default(),
    };
    let err = open_target(&target, JournalOptions::default()).unwrap_err();
    assert_eq!(err, JournalError::Unavailable);
    let shown = format!("{err} {err:?} {target:?}");
    for private in ["secret_user", "hunter2secret", "private_db", "127.0.0.1"] {
        assert!(!shown.contains(private), "{shown}");
    }
    let bad = PgTarget {
        connection_string: "postgres://u:pw@h:notaport/db".into(),
        schema: "s".into(),
        ca_file: None,
        limits: Default::default(),
    };
    let err = open_target(&bad, JournalOptions::default()).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "connectionString" });
    for schema in ["", "Upper", "pg_catalog", "a;drop", "a\"b", &"x".repeat(49)] {
        let t = PgTarget { connection_string: url(), schema: schema.into(), ca_file: None, limits: Default::default() };
        let err = open_target(&t, JournalOptions::default()).unwrap_err();
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
            // A bounded number of kills, spaced by the killer's own round trips:
            // kills without end are an outage, which the writer's retries
            // outlast only for so long.
            let (mut killed, mut rounds) = (0, 0);
            while rounds < 10 && !stop.load(Ordering::SeqCst) {
                let rows = s.sql(&format!(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name = 'loopx-hooks:{}'",
                    s.target.schema
                ));
                let now = rows[0].get::<_, i64>(0);
                killed += now;
                rounds += usize::from(now > 0);
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
        // Every writer is joined and the killer stopped before a writer's
        // failure is raised, so a failure cannot leave the killer running.
        let ended: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
        stop.store(true, Ordering::SeqCst);
        let killed = killer.join().unwrap();
        ended.into_iter().for_each(|e| e.unwrap_or_else(|p| std::panic::resume_unwind(p)));
        killed
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
    s.target = PgTarget {
        connection_string: secure.clone(),
        schema: s.target.schema.clone(),
        ca_file: Some(ca.into()),
        limits: Default::default(),
    };
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
    let unverified = PgTarget {
        connection_string: secure,
        schema: s.target.schema.clone(),
        ca_file: None,
        limits: Default::default(),
    };
    assert_eq!(open_target(&unverified, JournalOptions::default()).unwrap_err(), JournalError::Unavailable);
    // A CA file that holds no certificate is the caller's error.
    let bogus = PgTarget { ca_file: Some("/dev/null".into()), ..unverified };
    let err = open_target(&bogus, JournalOptions::default()).unwrap_err();
    assert_eq!(err, JournalError::InvalidArgument { what: "caFile" });
}
