//! A server that stops answering, through a TCP proxy on 127.0.0.1 that
//! passes, holds or cuts the bytes between the journal and the test server
//! (`LOOPX_TEST_PG_URL`): every wait ends within its bound, with
//! [`JournalError::Unavailable`], and the journal works again once the
//! bytes flow. No mock: the server is real, only the path to it misbehaves.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::journal::tests::{checkpoint, dispatch_id, url, Schema};
use crate::journal::*;

const PASS: u8 = 0;
const HOLD: u8 = 1;

/// Forwards every connection to the test server while passing; while
/// holding, reads nothing and sends nothing (a frozen server's kernel still
/// takes the bytes, so the client sees silence, not an error).
struct Proxy {
    port: u16,
    mode: Arc<AtomicU8>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start() -> Proxy {
        let config = tokio_postgres::Config::from_str(&url()).unwrap();
        let upstream = format!("127.0.0.1:{}", config.get_ports().first().copied().unwrap_or(5432));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(AtomicU8::new(PASS));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (m, s) = (Arc::clone(&mode), Arc::clone(&streams));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else { continue };
                for t in [&client, &server] {
                    s.lock().unwrap().push(t.try_clone().unwrap());
                }
                pump(client.try_clone().unwrap(), server.try_clone().unwrap(), Arc::clone(&m));
                pump(server, client, Arc::clone(&m));
            }
        });
        Proxy { port, mode, streams }
    }

    fn hold(&self) {
        self.mode.store(HOLD, Ordering::SeqCst);
    }

    fn pass(&self) {
        self.mode.store(PASS, Ordering::SeqCst);
    }

    /// Closes every connection made so far (a server restart, as the client sees it).
    fn cut(&self) {
        for s in self.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn target(&self, schema: &str, limits: PgLimits) -> PgTarget {
        let config = tokio_postgres::Config::from_str(&url()).unwrap();
        let user = config.get_user().unwrap_or("postgres");
        let db = config.get_dbname().unwrap_or("postgres");
        let connection_string = format!("postgres://{user}@127.0.0.1:{}/{db}?connect_timeout=1", self.port);
        PgTarget { connection_string, schema: schema.into(), ca_file: None, limits }
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, mode: Arc<AtomicU8>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            while mode.load(Ordering::SeqCst) == HOLD {
                std::thread::sleep(Duration::from_millis(10));
            }
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    // Bytes read just before a hold are held too.
                    while mode.load(Ordering::SeqCst) == HOLD {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// Runs `f` on a thread of its own and answers what it answered and how
/// long it took; a test whose call never returns fails instead of hanging.
fn timed<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> (T, Duration) {
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => (v, started.elapsed()),
        Err(_) => panic!("still waiting after {limit:?}"),
    }
}

const LIMITS: PgLimits = PgLimits { statement_timeout_ms: 500, write_retry_ms: 1_000 };

#[test]
fn a_listener_that_accepts_and_says_nothing_fails_the_open_within_connect_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts and keeps every connection open, answering nothing.
    std::thread::spawn(move || {
        let held: Vec<TcpStream> = listener.incoming().flatten().collect();
        drop(held);
    });
    let target = PgTarget {
        connection_string: format!("postgres://u:pw@127.0.0.1:{port}/db?connect_timeout=1"),
        schema: "loopx_hooks".into(),
        ca_file: None,
        limits: LIMITS,
    };
    let (out, took) =
        timed(Duration::from_secs(20), move || Journal::open(&target, JournalOptions::default(), OpenMode::ReadWrite));
    assert_eq!(out.unwrap_err(), JournalError::Unavailable);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_frozen_server_bounds_every_read_write_and_close_and_a_thawed_one_answers_again() {
    let proxy = Proxy::start();
    let s = Schema::new("frozen");
    let target = proxy.target(&s.target.schema, LIMITS);
    let j = Arc::new(Journal::open(&target, JournalOptions::default(), OpenMode::ReadWrite).unwrap());
    assert_eq!(j.checkpoint(checkpoint("a")).wait(), Ok(CheckpointState::Fresh));
    assert!(j.get_dispatch(&dispatch_id("a")).unwrap().is_some());

    proxy.hold();
    let read = |j: &Arc<Journal>| {
        let j = Arc::clone(j);
        timed(Duration::from_secs(20), move || j.get_dispatch(&dispatch_id("a")).map(|r| r.is_some()))
    };
    // A read outside any runtime (the JS thread's kind) waits one statement bound...
    let (out, took) = read(&j);
    assert_eq!(out, Err(JournalError::Unavailable));
    assert!(took < Duration::from_secs(3), "{took:?}");
    // ...and the next ones fail at once while the server stays silent.
    let (out, took) = read(&j);
    assert_eq!(out, Err(JournalError::Unavailable));
    assert!(took < Duration::from_millis(400), "{took:?}");
    // A write retries for its span, then answers.
    let w = Arc::clone(&j);
    let (out, took) = timed(Duration::from_secs(30), move || w.checkpoint(checkpoint("b")).wait());
    assert_eq!(out, Err(JournalError::Unavailable));
    assert!(took < Duration::from_secs(6), "{took:?}");

    proxy.pass();
    proxy.cut();
    let back = Instant::now();
    loop {
        let (out, _) = read(&j);
        if out == Ok(true) {
            break;
        }
        assert!(back.elapsed() < Duration::from_secs(10), "no answer after the server came back: {out:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(j.checkpoint(checkpoint("b")).wait(), Ok(CheckpointState::Fresh));

    // Closing with the server frozen and a write queued returns within a bound too.
    proxy.hold();
    let queued = j.checkpoint(checkpoint("c"));
    let c = Arc::clone(&j);
    let ((), took) = timed(Duration::from_secs(30), move || c.close());
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert_eq!(queued.wait(), Err(JournalError::Unavailable));
    proxy.pass();
}
