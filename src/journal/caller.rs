//! Whether a read on this thread is made for a caller that waits for it:
//! a thread that blocks but drives no async runtime (tokio's blocking pool)
//! reading for a caller that awaits it. A backend whose reads wait on a
//! network gives such a read the caller's-thread semantics: one statement
//! bound and no backoff, so an outage answers at once and the caller
//! retries with timers.

use std::cell::Cell;

thread_local! {
    static CALLER_WAITS: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with reads on this thread as a waiting caller's. Only for a
/// thread that is not driving async tasks.
pub(crate) fn reads_here<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            CALLER_WAITS.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(CALLER_WAITS.with(|c| c.replace(true)));
    f()
}

/// Whether this thread reads for a waiting caller (inside [`reads_here`]).
pub(crate) fn waits() -> bool {
    CALLER_WAITS.with(Cell::get)
}
