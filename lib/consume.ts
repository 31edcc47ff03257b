/**
 * Outbox consumers that share the work. `consume` claims open intents with a
 * lease and yields them one by one; the consumer decides each (and marks an
 * admitted one done) while its lease lives. An intent whose consumer died is
 * claimed again once its lease expires, so nothing is left behind, and the
 * journal lets each intent be decided once.
 *
 * Waking: a commit of a record or a decision by any journal of the same file
 * in this process wakes the loop at once; other processes' commits are seen
 * by polling every `pollMs`.
 */
import type { NativeJournal } from '../index.js'
import type { StoredIntent } from '../bindings/index'
import { expectOptions } from './args.js'
import { LoopxHooksError } from './errors.js'

/** What `HookJournal.consume` claims, for whom, and until when. */
export interface ConsumeOptions {
  /** A token naming this consumer, e.g. `periodic_report.scheduler.1`; it owns the leases. */
  executorId: string
  /** How long a claim lasts (ms, 1..=3_600_000): decide and mark done within it. */
  leaseMs: number
  /**
   * Intents per claim (1..=1000).
   * @default 16
   */
  batch?: number
  /** Only intents of this capability (as `IntentQuery.capabilityId`). */
  capabilityId?: string
  /** Only intents of this kind (as `IntentQuery.intentKind`). */
  intentKind?: string
  /** Ends the iteration (promptly, also while waiting). */
  signal?: AbortSignal
  /**
   * How often to look for other processes' intents while idle (ms).
   * @default 200
   */
  pollMs?: number
}

/** What `HookJournal.claim` claims, and for whom. */
export interface ClaimOptions {
  /** A token naming this executor; it owns the leases. */
  executorId: string
  /** How long a claim lasts (ms, 1..=3_600_000): decide and mark done within it. */
  leaseMs: number
  /**
   * Intents per claim (1..=1000).
   * @default 16
   */
  batch?: number
  /** Only intents of this capability (as `IntentQuery.capabilityId`). */
  capabilityId?: string
  /** Only intents of this kind (as `IntentQuery.intentKind`). */
  intentKind?: string
}

const CLAIM_MEMBERS = {
  executorId: 'string',
  leaseMs: 'number',
  batch: 'number?',
  capabilityId: 'string?',
  intentKind: 'string?',
} as const

/** Claims up to `batch` open intents for `leaseMs`; see `HookJournal.claim`. */
export async function claim(journal: NativeJournal, options: ClaimOptions): Promise<StoredIntent[]> {
  const o = expectOptions('claim', 'options', options, CLAIM_MEMBERS, 'object')
  const request = {
    executorId: o.executorId,
    leaseMs: o.leaseMs,
    batch: o.batch ?? 16,
    ...(o.capabilityId !== undefined ? { capabilityId: o.capabilityId } : {}),
    ...(o.intentKind !== undefined ? { intentKind: o.intentKind } : {}),
  }
  return JSON.parse(await journal.claim(JSON.stringify(request)))
}

/**
 * A claim, or nothing when the journal stayed busy past the core's own
 * waiting (`ERR_LOOPX_JOURNAL_BUSY` on either backend: a SQLite lock held
 * past the busy timeout, PostgreSQL lock contention): the loop's next poll
 * tries again, as it does when nothing was open.
 */
async function claimOrNothing(
  take: (o: ClaimOptions) => Promise<StoredIntent[]>,
  o: ClaimOptions,
): Promise<StoredIntent[]> {
  try {
    return await take(o)
  } catch (error) {
    if (error instanceof LoopxHooksError && error.code === 'ERR_LOOPX_JOURNAL_BUSY') return []
    throw error
  }
}

/**
 * Resolves when `signal` aborts (never when there is none), ending the
 * journal's pending waits then, so no native timer outlives the loop.
 */
function aborted(
  journal: NativeJournal,
  signal: AbortSignal | undefined,
): { promise: Promise<void>; dispose: () => void } {
  if (!signal) return { promise: new Promise(() => {}), dispose: () => {} }
  let onAbort = () => {}
  const promise = new Promise<void>((resolve) => {
    onAbort = () => {
      journal.releaseWaits()
      resolve()
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) }
}

/** `take` makes each claim (the journal's own, so claims reach the outbox channel). */
export async function* consume(
  journal: NativeJournal,
  o: ConsumeOptions,
  take: (o: ClaimOptions) => Promise<StoredIntent[]> = (c) => claim(journal, c),
): AsyncGenerator<StoredIntent, void, undefined> {
  const pollMs = o.pollMs ?? 200
  if (!Number.isInteger(pollMs) || pollMs < 1 || pollMs > 60_000) {
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'pollMs is an integer of 1..=60000')
  }
  // The rest are the claim's options, checked by it (a misspelt one is refused there).
  const { pollMs: _pollMs, signal: _signal, ...claimOptions } = o
  const stop = aborted(journal, o.signal)
  try {
    while (!o.signal?.aborted) {
      // Read before claiming, so a commit between the claim and the wait is not missed.
      const generation = journal.commitGeneration()
      const claimed = await claimOrNothing(take, claimOptions)
      for (const intent of claimed) {
        if (o.signal?.aborted) return
        yield intent
      }
      if (claimed.length > 0) continue
      await Promise.race([journal.waitForCommit(generation, pollMs), stop.promise])
    }
  } finally {
    stop.dispose()
  }
}
