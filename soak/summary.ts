// What one soak run on one backend reports, and its one-line form.
import type { ViolationKind } from './books'

export interface SoakSummary {
  backend: string
  seed: number
  rounds: number
  kills: number
  /** Rounds whose kills left an attempt begun and unrecorded: a checkpointed row, or an attempt only in its ledger. */
  midRunRounds: number
  started: number
  resolved: number
  replayed: number
  recovered: number
  foldedFromLedger: number
  /** Started dispatches of which the kill left no row. */
  unrecordedAtKill: number
  /** Recovered checkpointed rows with no failed attempt: their provider never ran in the killed process. */
  uncounted: number
  /** Server sessions of killed processes waited for (PostgreSQL). */
  sessionsCut: number
  dispatches: number
  intents: number
  counts: Record<ViolationKind, number>
  /** The first violations found (the soak stops after the round that found any). */
  violations: string[]
  ms: number
}

export function summaryLine(s: SoakSummary): string {
  const c = s.counts
  return (
    `soak ${s.backend}: ${s.kills} kills in ${s.rounds} rounds (${s.midRunRounds} left an attempt begun and unrecorded), ` +
    `${s.started} dispatches started, ${s.resolved} resolved (${s.replayed} replays), ` +
    `${s.recovered} recovered (${s.foldedFromLedger} folded from the attempt ledger, ${s.uncounted} never invoked before the kill), ` +
    `${s.unrecordedAtKill} started without a row at the kill, ${s.sessionsCut} server sessions cut; ` +
    `journal ${s.dispatches} dispatches, ${s.intents} intents; ` +
    `lost ${c.lost}, duplicated ${c.duplicated}, changed ${c.changed}, integrity ${c.integrity}, ` +
    `unrecovered ${c.unrecovered}, unexpected ${c.unexpected}; ${(s.ms / 1000).toFixed(1)} s, seed ${s.seed}`
  )
}
