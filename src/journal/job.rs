//! A queued command as the writer sees it: type-erased, so the writer knows
//! no command types, run alone or merged with others of its kind
//! (`merge.rs`), and answered once its batch's fate is known.

use std::any::{Any, TypeId};

use super::merge::{Merge, MergeKey, Mergeable};
use super::{JournalError, Result};

/// The operation a command runs inside the batch transaction, on the
/// backend's connection `C`. `now` is the batch's timestamp in Unix milliseconds.
pub(crate) type Op<C, A, T> = fn(&mut C, &A, i64) -> Result<T>;

/// Receives a command's answer on the writer thread, after its batch committed.
pub type Answer<T> = Box<dyn FnOnce(Result<T>) + Send>;

/// A queued command, type-erased so the writer knows no command types.
pub(super) trait Job<C>: Send {
    fn durable(&self) -> bool;
    /// Its caller waits for the answer before going on (every durable command
    /// does): a batch holding it does not linger for more commands.
    fn awaited(&self) -> bool;
    /// Runs the command, keeping its outcome; reports whether it failed.
    fn run(&mut self, conn: &mut C, now: i64) -> Step;
    /// Answers the caller once the batch's fate is known.
    fn answer(self: Box<Self>, batch: &Result<()>);
    /// Its kind and identities, when it can run merged with others of its kind.
    fn mergeable(&self) -> Mergeable<'_>;
    fn as_any(&mut self) -> &mut dyn Any;
    /// Runs this command and `rest` (of its merge kind) as one, keeping each
    /// outcome; reports which failed on their own, or aborts the batch.
    fn run_merged(&mut self, rest: &mut [&mut Box<dyn Job<C>>], conn: &mut C, now: i64) -> Result<Vec<bool>>;
}

pub(super) enum Step {
    Ok,
    /// The command failed on its own: roll back its savepoint, keep the batch.
    Failed,
    /// The batch cannot go on (busy, connection lost): roll it all back, maybe retry.
    Abort(JournalError),
}

pub(super) struct Task<C, A, T> {
    pub(super) args: A,
    pub(super) op: Op<C, A, T>,
    pub(super) merge: Option<Merge<C, A, T>>,
    pub(super) durable: bool,
    pub(super) awaited: bool,
    pub(super) out: Option<Result<T>>,
    pub(super) reply: Answer<T>,
}

/// A command's own failure is kept as its outcome; busy or unavailable aborts the batch.
fn step<T>(out: &Result<T>) -> Step {
    match out {
        Ok(_) => Step::Ok,
        Err(e @ (JournalError::Busy | JournalError::Unavailable)) => Step::Abort(e.clone()),
        Err(_) => Step::Failed,
    }
}

const INTERNAL: JournalError = JournalError::Internal { what: "internal error in a journal command" };

impl<C: 'static, A: Send + 'static, T: Send + 'static> Job<C> for Task<C, A, T> {
    fn durable(&self) -> bool {
        self.durable
    }

    fn awaited(&self) -> bool {
        self.durable || self.awaited
    }

    fn run(&mut self, conn: &mut C, now: i64) -> Step {
        // A panicking command (a bug) fails alone instead of killing the writer.
        let op = || (self.op)(conn, &self.args, now);
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(op)).unwrap_or(Err(INTERNAL));
        let step = step(&out);
        self.out = Some(out);
        step
    }

    fn mergeable(&self) -> Mergeable<'_> {
        let merge = self.merge?;
        let key: MergeKey = (TypeId::of::<Self>(), merge.many as usize);
        Some((key, (merge.ids)(&self.args)?))
    }

    fn as_any(&mut self) -> &mut dyn Any {
        self
    }

    fn run_merged(&mut self, rest: &mut [&mut Box<dyn Job<C>>], conn: &mut C, now: i64) -> Result<Vec<bool>> {
        let many = self.merge.ok_or(INTERNAL)?.many;
        let mut tasks: Vec<&mut Self> = vec![self];
        for job in rest.iter_mut() {
            // Same merge key, so the same type: the planner grouped them by it.
            tasks.push(job.as_any().downcast_mut::<Self>().ok_or(INTERNAL)?);
        }
        let args: Vec<&A> = tasks.iter().map(|t| &t.args).collect();
        // A panicking command (a bug) fails its group instead of killing the writer.
        let outs =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| many(conn, &args, now))).unwrap_or(Err(INTERNAL));
        let outs = match outs {
            Ok(outs) if outs.len() == tasks.len() => outs,
            Ok(_) => tasks.iter().map(|_| Err(INTERNAL)).collect(),
            Err(e @ (JournalError::Busy | JournalError::Unavailable)) => return Err(e),
            Err(e) => tasks.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut failed = Vec::with_capacity(tasks.len());
        for (task, out) in tasks.into_iter().zip(outs) {
            match step(&out) {
                Step::Abort(e) => return Err(e),
                s => failed.push(matches!(s, Step::Failed)),
            }
            task.out = Some(out);
        }
        Ok(failed)
    }

    fn answer(self: Box<Self>, batch: &Result<()>) {
        let answer = match (batch, self.out) {
            (_, Some(Err(own))) => Err(own),
            (Ok(()), Some(ok)) => ok,
            (Err(e), _) => Err(e.clone()),
            (Ok(()), None) => Err(JournalError::Closed),
        };
        (self.reply)(answer);
    }
}
