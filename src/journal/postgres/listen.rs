//! Waking consumers on every host: a thread LISTENs on the schema's channel
//! and bumps the journal's commit generation on each notification the
//! writers of any host send with their commits (`writer.rs`). After a lost
//! connection it reconnects with backoff and bumps once, since notifications
//! sent meanwhile are gone; consumers also poll, so none is ever stranded.
//! A server that goes silent sends no error either: after [`PING_AFTER`]
//! without a notification the thread asks for an answer (within the
//! statement bound), and reconnects when none comes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::commit::CommitSignal;
use super::super::Result;
use super::conn::{backoff, Bounds, Link};

/// How often the thread looks at its stop flag while idle.
const TICK: Duration = Duration::from_millis(100);
/// How long the connection may stay silent before the thread checks that
/// the server still answers.
const PING_AFTER: Duration = Duration::from_secs(5);

pub(super) struct Listener {
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Listener {
    pub(super) fn spawn(
        config: &Config,
        tls: &Option<MakeRustlsConnect>,
        schema: &str,
        bounds: Bounds,
        signal: CommitSignal,
    ) -> Result<Listener> {
        let stop = Arc::new(AtomicBool::new(false));
        let link = Link::new(config.clone(), tls.clone(), schema, true, bounds);
        let listen = format!("LISTEN \"{schema}\"");
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("loopx-journal-listen".into())
            .spawn(move || run(link, &listen, &signal, &flag))?;
        Ok(Listener { stop, thread: Mutex::new(Some(thread)) })
    }

    pub(super) fn close(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = t.join();
        }
    }
}

fn run(mut link: Link, listen: &str, signal: &CommitSignal, stop: &AtomicBool) {
    let mut tries = 0u32;
    while !stop.load(Ordering::SeqCst) {
        if let Err(e) = link.batch(listen) {
            link.forget();
            let wait = backoff(&e, tries.min(8)).unwrap_or(Duration::from_secs(1));
            tries = tries.saturating_add(1);
            sleep_unless_stopped(wait, stop);
            continue;
        }
        if tries > 0 {
            signal.send_modify(|g| *g = g.wrapping_add(1));
        }
        tries = 0;
        let mut quiet_since = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            // A reconnect would not be listening: go round the outer loop.
            if link.is_lost() {
                link.forget();
                tries = 1;
                break;
            }
            let heard = match link.heard(TICK) {
                Ok(false) if quiet_since.elapsed() >= PING_AFTER => {
                    quiet_since = Instant::now();
                    link.batch("SELECT 1").map(|()| false)
                }
                Ok(true) => {
                    quiet_since = Instant::now();
                    Ok(true)
                }
                other => other,
            };
            match heard {
                Ok(true) => signal.send_modify(|g| *g = g.wrapping_add(1)),
                Ok(false) => {}
                Err(_) => {
                    link.forget();
                    tries = 1;
                    break;
                }
            }
        }
    }
}

fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let mut left = total;
    while !left.is_zero() && !stop.load(Ordering::SeqCst) {
        let step = left.min(TICK);
        std::thread::sleep(step);
        left -= step;
    }
}
