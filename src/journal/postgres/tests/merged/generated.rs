//! The merged statements against the one record rule, on PostgreSQL:
//! generated command sequences run once held in one batch (merged) and once
//! command by command (a batch of one runs the rule alone, `../../record/rule.rs`),
//! and every answer and the resulting rows must agree.

use super::super::Schema;
use super::*;

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// Identities as `run` sets them up: final, pending, no row yet, and one
/// that nobody checkpoints in most sequences.
const IDS: [&str; 10] = ["done", "pend", "a", "b", "c", "x", "y", "new1", "new2", "ghost"];
/// Intent ids, few enough that records share them (`done-i` is already recorded).
const INTENTS: [&str; 5] = ["i0", "i1", "i2", "i3", "done-i"];
/// Result digests: `done` with attempt 1 replays the recorded receipt.
const DIGESTS: [&str; 3] = ["done", "d1", "d2"];

fn final_record(g: &mut Gen, unique: &mut u32) -> FinalRecord {
    let seed = g.pick(&IDS);
    if g.below(5) == 0 {
        return exhausted(seed);
    }
    let mut intents: Vec<String> = Vec::new();
    for _ in 0..g.below(3) {
        // Fresh ids, or one of the shared few (a duplicate once recorded).
        if g.below(2) == 0 {
            intents.push(g.pick(&INTENTS).to_owned());
        } else {
            *unique += 1;
            intents.push(format!("u{unique}"));
        }
    }
    let intents: Vec<&str> = intents.iter().map(String::as_str).collect();
    proposed(seed, 1 + g.below(2) as u32, g.pick(&DIGESTS), &intents)
}

/// One sequence: checkpoints, final records and record lists over the same
/// few identities; `duplicates` lets records share intent ids.
fn sequence(seed: u64, len: usize, duplicates: bool) -> Vec<Cmd> {
    let mut g = Gen(seed);
    let mut unique = 0;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let cmd = match g.below(6) {
            0 | 1 => Cmd::Cp(at(g.pick(&IDS), 1 + g.below(3) as u32)),
            2 | 3 => Cmd::Final(final_record(&mut g, &mut unique)),
            4 => Cmd::Many(
                (0..1 + g.below(2)).map(|_| RecordCommand::Final(final_record(&mut g, &mut unique))).collect(),
            ),
            _ => Cmd::Many(vec![RecordCommand::Failure(failure(g.pick(&IDS), 1 + g.below(3) as u32))]),
        };
        let shares = |r: &FinalRecord| r.intents.iter().any(|i| INTENTS.iter().any(|s| i.intent_id == intent_id(s)));
        let refused = match &cmd {
            Cmd::Final(r) => shares(r),
            Cmd::Many(rs) => rs.iter().any(|r| matches!(r, RecordCommand::Final(f) if shares(f))),
            Cmd::Cp(_) => false,
        };
        if duplicates || !refused {
            out.push(cmd);
        }
    }
    out
}

/// Sets `j` up as `run` does, then runs `batch` one command at a time.
fn run_alone(j: &Journal, batch: &[Cmd]) -> (Vec<String>, Vec<String>) {
    j.checkpoint(checkpoint("done")).wait().unwrap();
    j.record_final(proposed("done", 1, "done", &["done-i"])).wait().unwrap();
    for s in ["pend", "a", "b", "c", "x", "y"] {
        j.checkpoint(checkpoint(s)).wait().unwrap();
    }
    let answers = batch.iter().map(|c| queue(j, c)()).collect();
    (answers, contents(j, &IDS))
}

#[test]
fn generated_batches_answer_merged_exactly_as_the_record_rule_answers_them_one_by_one() {
    let mut seen: Vec<String> = Vec::new();
    for case in 0..8u64 {
        let batch = sequence(0x9e37_79b9_7f4a_7c15 ^ case, 18, case % 2 == 1);
        let alone = Schema::new("rule_alone");
        let reference = run_alone(&alone.open(), &batch);

        let s = Schema::new("rule_merged");
        let j = s.open();
        let sizes = batch_sizes(&j);
        let (answers, held) = run(&j, Some(&s), &batch, &IDS);
        assert_eq!(answers, reference.0, "case {case}");
        assert_eq!(held, reference.1, "case {case}");
        assert!(sizes.lock().unwrap().contains(&(batch.len() as u64)), "case {case} ran in one batch");
        if case % 2 == 0 {
            // No shared intent id: the batch ran merged, never the careful retry.
            assert_eq!(j.writer_stats().busy_retries, 0, "case {case}");
        }
        seen.extend(answers);
    }
    // The sequences reach every outcome of the rule ("final: " is a checkpoint's).
    for outcome in ["Fresh", "Pending", "final: ", "Recorded", "already final", "UnknownDispatch", "DuplicateIntent"] {
        assert!(
            seen.iter().any(|a| a.starts_with(outcome) || a.contains(&format!("({outcome}"))),
            "none answered {outcome}"
        );
    }
}
