//! Merged commands: how the writer runs many queued commands of one kind as
//! one operation (PostgreSQL: one statement over array parameters, one round
//! trip instead of one per command), and which commands of a batch may go
//! together without changing any answer.
//!
//! A batch is cut into segments. Within a segment, commands of one kind form
//! one group, and groups run in the order their kind first appeared. A command
//! joining its kind's group therefore runs before the commands of groups that
//! run later but were queued earlier; that is allowed only when it shares no
//! identity with them, so commands of one identity keep their queue order (a
//! checkpoint always runs before a record of its dispatch queued after it).
//! Otherwise, and at any command that cannot merge, the segment ends. Within
//! a group, commands keep their queue order.

use super::Result;

/// Runs commands, in order, as one: one answer per command, or an error for
/// the whole batch (busy, unavailable, a refused statement).
pub(crate) type ManyOp<C, A, T> = fn(&mut C, &[&A], i64) -> Result<Vec<Result<T>>>;

/// How a command type runs many at once, given to the writer with its
/// single-command operation. Only a backend whose [`super::writer::BatchConn::merges`]
/// says so uses it; a command that fails on its own must then have written nothing.
pub(crate) struct Merge<C, A, T> {
    pub many: ManyOp<C, A, T>,
    /// The identities the command touches, or `None` when this one cannot merge.
    pub ids: for<'a> fn(&'a A) -> Option<Vec<&'a str>>,
}

impl<C, A, T> Clone for Merge<C, A, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C, A, T> Copy for Merge<C, A, T> {}

/// What the planner knows of a queued command: `None` when it cannot merge,
/// else its kind and the identities it touches.
pub(crate) type Mergeable<'a> = Option<(MergeKey, Vec<&'a str>)>;

/// A command kind: the command's type and its merged operation.
pub(crate) type MergeKey = (std::any::TypeId, usize);

struct Group<'a> {
    key: MergeKey,
    jobs: Vec<usize>,
    ids: Vec<&'a str>,
}

/// The batch's commands (by index) in groups, in running order. Every group
/// of one command runs as that command alone.
pub(crate) fn plan(batch: &[Mergeable<'_>]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut segment: Vec<Group<'_>> = Vec::new();
    let flush = |segment: &mut Vec<Group<'_>>, out: &mut Vec<Vec<usize>>| {
        out.extend(segment.drain(..).map(|g| g.jobs));
    };
    for (i, job) in batch.iter().enumerate() {
        let Some((key, ids)) = job else {
            flush(&mut segment, &mut out);
            out.push(vec![i]);
            continue;
        };
        let at = segment.iter().position(|g| g.key == *key);
        // Groups that run after this command's group hold only commands queued before it.
        let overtaken = at.map_or(&segment[..0], |p| &segment[p + 1..]);
        if overtaken.iter().any(|g| g.ids.iter().any(|id| ids.contains(id))) {
            flush(&mut segment, &mut out);
        }
        match segment.iter_mut().find(|g| g.key == *key) {
            Some(g) => {
                g.jobs.push(i);
                g.ids.extend(ids.iter().copied());
            }
            None => segment.push(Group { key: *key, jobs: vec![i], ids: ids.clone() }),
        }
    }
    flush(&mut segment, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use std::any::TypeId;

    use super::*;

    #[derive(Clone, Copy)]
    enum Kind {
        Cp,
        Rec,
    }
    use Kind::{Cp as CP, Rec as REC};

    fn m<'a>(kind: Kind, ids: &[&'a str]) -> Mergeable<'a> {
        let key = match kind {
            Kind::Cp => (TypeId::of::<u8>(), 1),
            Kind::Rec => (TypeId::of::<u16>(), 2),
        };
        Some((key, ids.to_vec()))
    }

    #[test]
    fn interleaved_checkpoints_and_records_form_two_groups() {
        let batch = [m(CP, &["a"]), m(REC, &["a"]), m(CP, &["b"]), m(REC, &["b"]), m(CP, &["c"])];
        assert_eq!(plan(&batch), vec![vec![0, 2, 4], vec![1, 3]]);
    }

    #[test]
    fn a_command_never_overtakes_an_earlier_one_of_its_identity() {
        // The second checkpoint of "a" would run before the record of "a" queued earlier.
        let batch = [m(CP, &["a"]), m(REC, &["a"]), m(CP, &["a"]), m(REC, &["b"])];
        assert_eq!(plan(&batch), vec![vec![0], vec![1], vec![2], vec![3]]);
        let batch = [m(CP, &["a"]), m(REC, &["x", "a"]), m(CP, &["b"]), m(CP, &["a"])];
        assert_eq!(plan(&batch), vec![vec![0, 2], vec![1], vec![3]]);
    }

    #[test]
    fn same_kind_commands_of_one_identity_stay_in_one_group_in_order() {
        let batch = [m(REC, &["a"]), m(REC, &["a"]), m(CP, &["a"])];
        assert_eq!(plan(&batch), vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn a_command_that_cannot_merge_ends_the_segment() {
        let batch = [m(CP, &["a"]), m(REC, &["b"]), None, m(CP, &["c"]), m(CP, &["d"])];
        assert_eq!(plan(&batch), vec![vec![0], vec![1], vec![2], vec![3, 4]]);
    }
}
