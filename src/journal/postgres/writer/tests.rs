//! How long a failing batch retries, whatever its first error was. No server
//! is needed: `retry_after` only reads the clock and the batch's state.

use std::str::FromStr;
use std::time::{Duration, Instant};

use super::super::conn::{Bounds, Link};
use super::*;

const RETRY_FOR: Duration = Duration::from_millis(300);

fn conn() -> PgWriteConn {
    let config = tokio_postgres::Config::from_str("host=127.0.0.1 port=1 user=nobody").unwrap();
    let bounds = Bounds { connect: Duration::from_secs(1), statement: Duration::from_secs(1) };
    PgWriteConn::new(Link::new(config, None, "s", false, bounds), "s", true, RETRY_FOR, None)
}

/// Asks `retry_after` as the writer's loop does, with the batch's first try
/// begun `ago`; answers how many retries it granted before giving up.
fn retries_granted(c: &mut PgWriteConn, first: JournalError, ago: Duration) -> Option<u32> {
    c.try_began = Instant::now() - ago;
    let mut e = first;
    for tries in 0..64 {
        match c.retry_after(&e, tries) {
            None => return Some(tries),
            Some(_) => {
                // The careful retry is taken; the server is gone by then.
                c.wants_care = false;
                e = JournalError::Unavailable;
            }
        }
    }
    None
}

#[test]
fn a_batch_whose_statement_was_refused_first_still_gives_up_in_time() {
    // A server shutting down ends the statement in flight with an error
    // (57P01, a refused statement: the careful retry) before refusing the
    // connection: the span still counts from the first try.
    let mut c = conn();
    c.wants_care = true;
    let granted = retries_granted(&mut c, JournalError::Busy, RETRY_FOR * 2);
    assert_eq!(granted, Some(1), "only the careful retry, then the span is over");
}

#[test]
fn a_new_failing_batch_gets_its_own_span() {
    let mut c = conn();
    // An earlier batch failed long ago and then the server came back.
    assert_eq!(retries_granted(&mut c, JournalError::Unavailable, RETRY_FOR * 10), Some(0));
    c.gave_up.set(false);
    c.wants_care = true;
    let granted = retries_granted(&mut c, JournalError::Busy, Duration::ZERO);
    assert!(matches!(granted, Some(n) if n > 1), "a fresh batch retries, not judged by an old span: {granted:?}");
}

#[test]
fn an_unreachable_server_is_retried_for_the_span_then_given_up() {
    let mut c = conn();
    assert_eq!(retries_granted(&mut c, JournalError::Unavailable, RETRY_FOR + Duration::from_millis(1)), Some(0));
    let mut c = conn();
    let granted = retries_granted(&mut c, JournalError::Unavailable, Duration::ZERO);
    assert!(matches!(granted, Some(n) if n > 1), "within the span it retries, then gives up: {granted:?}");
}
