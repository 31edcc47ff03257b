/**
 * A fake scheduler acting as the governed executor for trigger-evaluation
 * intents (RFC slice 3). One pass:
 *
 *   1. lists pending intents of its kind from the hook journal's outbox;
 *   2. admits each undecided one (or rejects it with a reason code) as a
 *      record under its own executor id: admission grants no authority;
 *   3. dedupes on intent_id in its own store, runs the trigger reducer and
 *      records the decision (promote or hold) there;
 *   4. marks the intent done in the outbox.
 *
 * It stops there. A promoted window would next go to the governed
 * compose-run -> renderer -> authorized sink path, which is not part of
 * this package: the scheduler holds no sink, connector, credential or write
 * scope, opens no socket, and writes only its store and the outbox.
 */
import { expectOptions } from '../../args.js'
import type { HookJournal } from '../../index.js'
import type { StoredIntent } from '../../../bindings/index'
import { CAPABILITY_ID, OPERATION, POLICY_VERSION } from './kind.js'
import { checkPolicy, DEFAULT_COMPLETION_THRESHOLD, isoWeek, type TriggerPolicy } from './reducer.js'
import { TriggerStore, type StoredDecision } from './store.js'

/** How `PeriodicReportScheduler.open` opens the scheduler. */
export interface SchedulerOptions {
  /** The hook journal (`runtime.journal`, or `HookJournal.open(path)` in another process). */
  journal: HookJournal
  /** The capability's own store file; never a journal's file. */
  storePath: string
  /**
   * weekly_v0: distinct segment completions that promote a window (1..=1000).
   * @default 3
   */
  completionThreshold?: number
  /** The clock deciding the window (the ISO week of the evaluation). */
  now?: () => Date
  /**
   * The capability whose intents this scheduler executes.
   * @default 'periodic_report'
   */
  capabilityId?: string
  /**
   * Outbox page size, 1..=1000.
   * @default 100
   */
  pageSize?: number
}

/** Reason codes of the scheduler's outbox decisions. */
export type AdmissionReason =
  | 'admitted'
  | 'duplicate_intent'
  | 'unsupported_operation'
  | 'unsupported_policy_version'
  | 'write_scope_not_granted'
  | 'unknown_source'
  | 'unsupported_payload'

/** What one `runOnce` pass did. */
export interface SchedulerPass {
  /** Pending intents seen. */
  listed: number
  /** Intents this pass admitted. */
  admitted: string[]
  /** Intents this pass rejected, with the reason. */
  rejected: { intentId: string; reasonCode: AdmissionReason }[]
  /** Decisions the reducer made in this pass. */
  evaluated: StoredDecision[]
  /** Admitted intents already evaluated (a pass interrupted before `markDone`): no new decision. */
  duplicates: string[]
  /** Intents another executor decided; left alone. */
  skipped: string[]
}

const TRANSITION_OF: Record<string, 'segment_completed' | 'replan_recorded'> = {
  todo_completed: 'segment_completed',
  replan_recorded: 'replan_recorded',
}

/** The payload's segment_ref (core validated it against the kind's schema). */
function segmentOf(item: StoredIntent): string | null {
  const payload = item.intent.payload as { segment_ref?: unknown } | null
  return payload && typeof payload.segment_ref === 'string' ? payload.segment_ref : null
}

const SCHEDULER_OPTIONS = {
  journal: 'object',
  storePath: 'string',
  completionThreshold: 'number?',
  now: 'function?',
  capabilityId: 'string?',
  pageSize: 'number?',
} as const

/**
 * The capability's governed executor of trigger-evaluation intents: each
 * pass admits or rejects every pending intent of its kind once, runs the
 * reducer for the admitted ones in its own store, and marks them done. It
 * holds no sink, credential or write scope.
 *
 * @example
 * ```ts
 * const scheduler = PeriodicReportScheduler.open({ journal: runtime.journal, storePath: 'trigger.db' })
 * const pass = await scheduler.runOnce()
 * scheduler.close()
 * ```
 */
export class PeriodicReportScheduler {
  /** The hook journal it reads and decides in. */
  readonly journal: HookJournal
  /** Its own trigger store. */
  readonly store: TriggerStore
  /** The capability whose intents it executes. */
  readonly capabilityId: string
  /** Its executor id, `<capabilityId>.scheduler`. */
  readonly executorId: string
  /** The intent kind it executes, `<capabilityId>.trigger_evaluation`. */
  readonly intentKind: string
  /** The reducer's policy. */
  readonly policy: TriggerPolicy
  readonly #now: () => Date
  readonly #pageSize: number

  private constructor(options: SchedulerOptions, store: TriggerStore) {
    this.journal = options.journal
    this.store = store
    this.capabilityId = options.capabilityId ?? CAPABILITY_ID
    this.executorId = `${this.capabilityId}.scheduler`
    this.intentKind = `${this.capabilityId}.trigger_evaluation`
    this.policy = {
      policyVersion: POLICY_VERSION,
      completionThreshold: options.completionThreshold ?? DEFAULT_COMPLETION_THRESHOLD,
    }
    this.#now = options.now ?? (() => new Date())
    this.#pageSize = options.pageSize ?? 100
  }

  /**
   * Opens the scheduler and its trigger store.
   *
   * @param options - see `SchedulerOptions`.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for options that are not what the
   *   signature says (a threshold outside 1..=1000 included), and what
   *   `TriggerStore.open` throws.
   */
  static open(options: SchedulerOptions): PeriodicReportScheduler {
    expectOptions('PeriodicReportScheduler.open', 'options', options, SCHEDULER_OPTIONS, 'object')
    const policy = {
      policyVersion: POLICY_VERSION,
      completionThreshold: options.completionThreshold ?? DEFAULT_COMPLETION_THRESHOLD,
    } as const
    checkPolicy(policy)
    return new PeriodicReportScheduler(options, TriggerStore.open(options.storePath))
  }

  /** One pass over the outbox (see the module comment). A second pass over the same intents decides nothing new. */
  async runOnce(): Promise<SchedulerPass> {
    const pass: SchedulerPass = { listed: 0, admitted: [], rejected: [], evaluated: [], duplicates: [], skipped: [] }
    let after: number | undefined
    for (;;) {
      const page = await this.journal.listIntents({
        pendingOnly: true,
        capabilityId: this.capabilityId,
        intentKind: this.intentKind,
        after,
        limit: this.#pageSize,
      })
      for (const item of page.items) await this.#handle(item, pass)
      if (page.nextCursor === null) break
      after = page.nextCursor
    }
    return pass
  }

  /**
   * Every decision the reducer recorded, oldest first.
   *
   * @throws `ERR_LOOPX_TRIGGER_STORE_CLOSED` after `close`.
   */
  decisions(): StoredDecision[] {
    return this.store.decisions()
  }

  /** Closes its trigger store (not the journal). */
  close(): void {
    this.store.close()
  }

  async #handle(item: StoredIntent, pass: SchedulerPass): Promise<void> {
    pass.listed += 1
    if (item.decision !== null && item.executorId !== this.executorId) {
      pass.skipped.push(item.intentId)
      return
    }
    const transition = await this.#transition(item)
    if (item.decision === null) {
      const reason = this.#admission(item, transition)
      const outcome = await this.journal.decide({
        intentId: item.intentId,
        executorId: this.executorId,
        decision: reason === 'admitted' ? 'admit' : 'reject',
        reasonCode: reason,
      })
      if (outcome.outcome === 'conflict' || outcome.outcome === 'unknown_intent') {
        pass.skipped.push(item.intentId)
        return
      }
      if (reason !== 'admitted') {
        pass.rejected.push({ intentId: item.intentId, reasonCode: reason })
        return
      }
      pass.admitted.push(item.intentId)
    } else if (item.decision !== 'admit') {
      return
    }
    if (!transition || segmentOf(item) === null) return // cannot happen for an intent this executor admitted
    const evaluated = this.store.evaluate(
      {
        intentId: item.intentId,
        transition,
        segmentRef: segmentOf(item) ?? '',
        window: isoWeek(this.#now()),
      },
      this.policy,
      this.#now().getTime(),
    )
    if (evaluated.duplicate) pass.duplicates.push(item.intentId)
    else pass.evaluated.push(evaluated.decision)
    await this.journal.markDone(item.intentId, this.executorId)
  }

  /** The transition of the committed event behind an intent, from its sidecar dispatch record. */
  async #transition(item: StoredIntent): Promise<'segment_completed' | 'replan_recorded' | null> {
    const row = await this.journal.getDispatch(item.dispatchId)
    return (row && TRANSITION_OF[row.eventKind]) ?? null
  }

  #admission(item: StoredIntent, transition: string | null): AdmissionReason {
    // A loopx-shipped-v0 intent names no operation this executor knows.
    if (!('operation' in item.intent) || item.intent.operation !== OPERATION) return 'unsupported_operation'
    if (item.intent.policy_version !== POLICY_VERSION) return 'unsupported_policy_version'
    // This executor holds no write scope, so it cannot take an intent that asks for one.
    if (item.intent.requested_write_scope.length > 0) return 'write_scope_not_granted'
    if (!transition) return 'unknown_source'
    if (segmentOf(item) === null) return 'unsupported_payload'
    // Already evaluated (e.g. fed through another journal): never twice.
    if (this.store.decision(item.intentId)) return 'duplicate_intent'
    return 'admitted'
  }
}
