/**
 * `loopx-hooks journal decide|done --db PATH`: the only journal commands that
 * open the journal for writing (through `HookJournal.open`, the executor's
 * own path, after the same checks as the readers: an existing, non-empty
 * regular file; a journal is never created here). Tokens are checked by the
 * journal (grammar and credential check) and a refused value is never
 * printed back. `--intent` takes a whole id or a unique prefix (ids.ts).
 */
import type { DecideOutcome, DoneOutcome } from '../../bindings/index'
import type { HookJournal } from '../journal.js'
import { UsageError } from './errors.js'
import { resolveId } from './ids.js'
import type { Io } from './io.js'

export interface OutboxOptions {
  json: boolean
  intent?: string
  executor?: string
  decision?: string
  reason?: string
}

function required(value: string | undefined, flag: string, command: string): string {
  if (value === undefined) throw new UsageError(`journal ${command} needs --${flag}`)
  return value
}

/** Exit 0 when recorded (or already recorded the same way), 1 for a conflict or an unknown intent. */
export async function decide(journal: HookJournal, o: OutboxOptions, io: Io): Promise<number> {
  const intentId = await resolveId(journal, 'intent', '--intent', required(o.intent, 'intent ID', 'decide'))
  const executorId = required(o.executor, 'executor ID', 'decide')
  const decision = required(o.decision, 'decision admit|reject', 'decide')
  const reasonCode = required(o.reason, 'reason CODE', 'decide')
  if (decision !== 'admit' && decision !== 'reject') throw new UsageError(`--decision is admit or reject`)
  const outcome: DecideOutcome = await journal.decide({ intentId, executorId, decision, reasonCode })
  if (o.json) io.stdout.write(`${JSON.stringify(outcome)}\n`)
  else if (outcome.outcome === 'decided') io.stdout.write(`decided: ${decision} by ${executorId} (${reasonCode})\n`)
  else if (outcome.outcome === 'same_decision') io.stdout.write(`already decided the same way: nothing written\n`)
  else if (outcome.outcome === 'conflict') {
    const e = outcome.existing
    io.stdout.write(
      `conflict: already ${e.decision === 'admit' ? 'admitted' : 'rejected'} by ${e.executorId} (${e.reasonCode}); the record stands\n`,
    )
  } else io.stdout.write(`unknown intent\n`)
  return outcome.outcome === 'decided' || outcome.outcome === 'same_decision' ? 0 : 1
}

/** Exit 0 when done (now or already), 1 when not admitted or unknown. */
export async function done(journal: HookJournal, o: OutboxOptions, io: Io): Promise<number> {
  const intentId = await resolveId(journal, 'intent', '--intent', required(o.intent, 'intent ID', 'done'))
  const executorId = required(o.executor, 'executor ID', 'done')
  const outcome: DoneOutcome = await journal.markDone(intentId, executorId)
  // The library's value itself: a JSON string.
  if (o.json) io.stdout.write(`${JSON.stringify(outcome)}\n`)
  else io.stdout.write(`${outcome.replace(/_/g, ' ')}\n`)
  return outcome === 'done' || outcome === 'already_done' ? 0 : 1
}
