/**
 * `TurnSettlement`: a small but real reference orchestrator seam (RFC
 * section 5, slice 2). One call settles one primary writeback of a Turn:
 *
 *   primary steps, in order, in the Turn journal:
 *     1. validate           the request, by the package's own validators
 *     2. durable_writeback  settlement + committed, checkpointed receipt (one transaction)
 *     3. quota_spend        eligibility from the primary receipt alone
 *   then, outside that list, once the receipt is committed:
 *     hook dispatch         HookRuntime.dispatch, when a runtime is given and
 *                           its profile enables the phase (default: disabled)
 *     dispatch marker       after the dispatch promise resolved
 *
 * A failed validation or writeback dispatches nothing. Nothing a hook does
 * changes the receipt, the steps or the spend. `recover()` finishes what a
 * crash interrupted: pending quota spends, then a dispatch (with the same
 * identities, rebuilt from the Turn journal) for every committed receipt
 * without a marker, then `HookRuntime.recover()` for sidecar checkpoints.
 *
 * The seam never names a capability: it dispatches to whatever the
 * composition root installed in the HookRuntime.
 */
import { LoopxHooksError, type HookRuntime } from '../index.js'
import type {
  DispatchOutcome,
  IntegrityVerdict,
  RecoverReport,
  SettlementIdentity,
  Violation,
  WritebackReceipt,
} from '../../bindings/index'
import { expectArgs, expectOptions } from '../args.js'
import { quotaSpendEligible } from './quota.js'
import {
  dispatchRequestOf,
  TurnJournal,
  type CommittedRecord,
  type DispatchMarker,
  type PrimaryStepName,
  type QuotaSpend,
  type TurnJournalContents,
} from './turn_journal.js'
import { validateWriteback, type WritebackRequest } from './validate.js'

/**
 * Where a simulated crash can interrupt `settle` (for tests and demos):
 * after validation (nothing written), after the writeback (receipt committed,
 * no spend, no dispatch), after the quota spend (no dispatch), after the
 * dispatch resolved (no marker yet).
 */
export type CrashPoint = 'after_validate' | 'after_writeback' | 'after_quota_spend' | 'after_dispatch'

/** A crash `settle` simulates once, at one point (for tests and demos). */
export interface SimulatedCrash {
  /** Where `settle` is interrupted. */
  at: CrashPoint
  /**
   * `throw`: `settle` rejects with `ERR_LOOPX_SIMULATED_CRASH` and this
   * instance refuses further calls (close it, open a new one, `recover()`);
   * `exit`: `process.exit(exitCode)`; `kill`: SIGKILL to this process.
   */
  mode: 'throw' | 'exit' | 'kill'
  /**
   * The exit code of `exit`.
   * @default 70
   */
  exitCode?: number
}

/** How `TurnSettlement.open` opens the Turn journal and what it dispatches to. */
export interface TurnSettlementOptions {
  /** The Turn journal file, created on first use; never the hook journal's file. */
  turnJournalPath: string
  /** The composition root's runtime. Without one, or with its phase disabled, nothing is dispatched. */
  hooks?: HookRuntime | null
  /** The clock for committed_at and journal timestamps. */
  now?: () => Date
  /**
   * How long to wait for another process's write lock (ms).
   * @default 5000
   */
  busyTimeoutMs?: number
  /** Test and demo hook: interrupt `settle` at one point. */
  crash?: SimulatedCrash
}

/** How a primary step ended. */
export type StepStatus =
  'passed' | 'rejected' | 'committed' | 'replayed' | 'spent' | 'already_spent' | 'not_eligible' | 'not_run'

/** One primary step's result. */
export interface PrimaryStep {
  /** The step. */
  step: PrimaryStepName
  /** How it ended. */
  status: StepStatus
  /** Why a step was rejected (`effect_conflict`), else null. */
  code: string | null
}

/** The primary steps' result of one `settle`. */
export interface PrimaryResult {
  /** Whether the writeback is committed (now or by an earlier identical call). */
  ok: boolean
  /** The three primary steps, in order. */
  steps: PrimaryStep[]
  /** The settlement committed, or null when nothing was. */
  settlement: SettlementIdentity | null
  /** The committed primary receipt, or null when nothing was committed. */
  receipt: WritebackReceipt | null
  /** The effect's quota spend, or null when there is none. */
  quotaSpend: QuotaSpend | null
  /** `quotaSpendEligible(receipt, settlement)`; false when nothing was committed. */
  eligible: boolean
  /** Validation violations, paths into the request; never a value. */
  violations: Violation[]
}

/** What `TurnSettlement.settle` resolves to. */
export interface SettleResult {
  /** The primary steps' result. */
  primary: PrimaryResult
  /** The hook dispatch's outcome; null when nothing was dispatched (primary failed, no runtime, or it threw). */
  dispatch: DispatchOutcome | null
  /** The stable code when the dispatch call itself threw; the receipt stays unmarked so `recover()` retries. */
  dispatchError: string | null
}

/** What `TurnSettlement.recover` finished. */
export interface TurnRecoverReport {
  /** Quota-spend steps finished for receipts a crash left unspent. */
  quotaSpends: QuotaSpend[]
  /** Committed receipts without a marker, dispatched again with their original identities. */
  redispatched: { receiptId: string; dispatch: DispatchOutcome | null; dispatchError: string | null }[]
  /** `HookRuntime.recover()` for checkpointed sidecar identities; null without a runtime. */
  hooks: RecoverReport | null
}

export { type WritebackRequest, type WritebackKind } from './validate.js'

function step(name: PrimaryStepName, status: StepStatus, code: string | null = null): PrimaryStep {
  return { step: name, status, code }
}

/** `hooks` may also be null (no runtime); it is checked on its own. */
const SETTLEMENT_OPTIONS = {
  turnJournalPath: 'string',
  now: 'function?',
  busyTimeoutMs: 'number?',
  crash: 'object?',
} as const

/**
 * The reference orchestrator seam: settles one primary writeback of a Turn
 * in its own SQLite Turn journal (validate, durable writeback, quota spend),
 * then dispatches the committed receipt to the composition root's
 * `HookRuntime`, outside the primary steps. Needs better-sqlite3.
 *
 * @example
 * ```ts
 * const settlement = await TurnSettlement.open({ turnJournalPath: 'turn.db', hooks: runtime })
 * const result = await settlement.settle({
 *   kind: 'todo_completed', goalId: 'goal_1', agentId: 'agent_1', todoId: 'todo_1',
 *   turnInstanceId: 'turn_1', effectId: 'effect_1', stateRevision: 'rev_1',
 * })
 * await settlement.close()
 * ```
 */
export class TurnSettlement implements AsyncDisposable {
  readonly #journal: TurnJournal
  readonly #hooks: HookRuntime | null
  readonly #now: () => Date
  readonly #crash: SimulatedCrash | undefined
  #crashed = false

  private constructor(journal: TurnJournal, options: TurnSettlementOptions) {
    this.#journal = journal
    this.#hooks = options.hooks ?? null
    this.#now = options.now ?? (() => new Date())
    this.#crash = options.crash
  }

  /**
   * Opens (creating on first use) the Turn journal.
   *
   * @param options - the Turn journal's path, the runtime, the clock (see `TurnSettlementOptions`).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for options that are not what the
   *   signature says; `ERR_LOOPX_NOT_A_TURN_JOURNAL` when the file is another
   *   database, such as a hook journal; `ERR_LOOPX_PEER_MISSING` without better-sqlite3, or with one
   *   built for another Node.js (the message says which).
   */
  static async open(options: TurnSettlementOptions): Promise<TurnSettlement> {
    expectOptions('TurnSettlement.open', 'options', options, SETTLEMENT_OPTIONS, 'object', ['hooks'])
    if (options.hooks !== undefined && options.hooks !== null && typeof options.hooks !== 'object')
      expectArgs('TurnSettlement.open', { hooks: [options.hooks, 'object?'] })
    return new TurnSettlement(
      TurnJournal.open(options.turnJournalPath, { busyTimeoutMs: options.busyTimeoutMs }),
      options,
    )
  }

  /**
   * Settles one primary writeback, then dispatches the committed receipt:
   * a failed validation or writeback dispatches nothing, and nothing a hook
   * does changes the receipt, the steps or the spend.
   *
   * @param request - the writeback.
   * @returns the primary result and the dispatch's outcome.
   * @throws `ERR_LOOPX_TURN_JOURNAL_CLOSED` after `close`;
   *   `ERR_LOOPX_SIMULATED_CRASH` at a configured `crash` point `throw`, and after it.
   */
  async settle(request: WritebackRequest): Promise<SettleResult> {
    this.#usable()
    const committedAt = this.#timestamp()
    const verdict = validateWriteback(request, committedAt)
    if (!verdict.ok) {
      return {
        primary: {
          ok: false,
          steps: [step('validate', 'rejected'), step('durable_writeback', 'not_run'), step('quota_spend', 'not_run')],
          settlement: null,
          receipt: null,
          quotaSpend: null,
          eligible: false,
          violations: verdict.violations,
        },
        dispatch: null,
        dispatchError: null,
      }
    }
    this.#maybeCrash('after_validate')
    const written = this.#journal.writeback(verdict.value, committedAt)
    if (written.status === 'rejected') {
      return {
        primary: {
          ok: false,
          steps: [
            step('validate', 'passed'),
            step('durable_writeback', 'rejected', written.code),
            step('quota_spend', 'not_run'),
          ],
          settlement: null,
          receipt: null,
          quotaSpend: null,
          eligible: false,
          violations: [],
        },
        dispatch: null,
        dispatchError: null,
      }
    }
    const record = written.record
    this.#maybeCrash('after_writeback')
    const spent = this.#journal.spend(record.receipt.receipt_id, this.#timestamp())
    this.#maybeCrash('after_quota_spend')
    const primary: PrimaryResult = {
      ok: true,
      steps: [step('validate', 'passed'), step('durable_writeback', written.status), step('quota_spend', spent.status)],
      settlement: record.settlement,
      receipt: record.receipt,
      quotaSpend: spent.spend,
      eligible: quotaSpendEligible(record.receipt, record.settlement),
      violations: [],
    }
    const { dispatch, dispatchError } = await this.#dispatch(record, { markWithoutRuntime: true })
    return { primary, dispatch, dispatchError }
  }

  /**
   * Finishes what a crash interrupted, oldest first: pending quota spends,
   * then the dispatch of every committed receipt without a marker (same
   * receipt, effect and event, hence the same dispatch and intent ids),
   * then the runtime's own recovery of checkpointed sidecar identities.
   * Without a runtime, unmarked receipts stay unmarked for a later recover.
   */
  async recover(): Promise<TurnRecoverReport> {
    this.#usable()
    const quotaSpends: QuotaSpend[] = []
    for (const receiptId of this.#journal.unspent()) {
      const spent = this.#journal.spend(receiptId, this.#timestamp())
      if (spent.status === 'spent') quotaSpends.push(spent.spend)
    }
    const redispatched: TurnRecoverReport['redispatched'] = []
    if (this.#hooks) {
      for (const record of this.#journal.undispatched()) {
        const { dispatch, dispatchError } = await this.#dispatch(record, { markWithoutRuntime: false })
        redispatched.push({ receiptId: record.receipt.receipt_id, dispatch, dispatchError })
      }
    }
    const hooks = this.#hooks ? await this.#hooks.recover() : null
    return { quotaSpends, redispatched, hooks }
  }

  /** The committed record of an effect, or null. */
  committed(effectId: string): CommittedRecord | null {
    expectArgs('committed', { effectId: [effectId, 'string'] })
    this.#usable()
    return this.#journal.record(effectId)
  }

  /** The dispatch marker of a receipt, or null while its dispatch has not completed. */
  dispatchMarker(receiptId: string): DispatchMarker | null {
    expectArgs('dispatchMarker', { receiptId: [receiptId, 'string'] })
    this.#usable()
    return this.#journal.marker(receiptId)
  }

  /** Every row of the Turn journal. */
  contents(): TurnJournalContents {
    this.#usable()
    return this.#journal.contents()
  }

  /**
   * SQLite's `PRAGMA integrity_check` of the Turn journal as a verdict, as
   * `HookJournal.integrity()` gives the hook journal's: `{ ok, messages }`.
   */
  integrity(): IntegrityVerdict {
    this.#usable()
    return this.#journal.integrity()
  }

  /** Closes the Turn journal (not the HookRuntime, which the composition root owns). */
  async close(): Promise<void> {
    this.#journal.close()
  }

  /** `await using settlement = …` closes it at the end of the block: the same as `close()` (the HookRuntime stays open). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  async #dispatch(
    record: CommittedRecord,
    options: { markWithoutRuntime: boolean },
  ): Promise<{ dispatch: DispatchOutcome | null; dispatchError: string | null }> {
    if (!this.#hooks) {
      if (options.markWithoutRuntime) {
        this.#journal.markDispatched({
          receiptId: record.receipt.receipt_id,
          admitted: false,
          refusal: 'hooks_not_configured',
          outcomes: [],
          completedAt: this.#now().getTime(),
        })
      }
      return { dispatch: null, dispatchError: null }
    }
    let dispatch: DispatchOutcome
    try {
      // Admission (committed, checkpointed, same effect, phase enabled) is the core's.
      dispatch = await this.#hooks.dispatch(dispatchRequestOf(record))
    } catch (error) {
      // The primary is committed whatever happens here; only a stable code is kept.
      const code = (error as { code?: unknown } | null)?.code
      return {
        dispatch: null,
        dispatchError: typeof code === 'string' && /^[A-Za-z0-9_]{1,64}$/.test(code) ? code : 'dispatch_failed',
      }
    }
    this.#maybeCrash('after_dispatch')
    if (this.#journal.open) {
      this.#journal.markDispatched({
        receiptId: record.receipt.receipt_id,
        admitted: dispatch.admitted,
        refusal: dispatch.refusal,
        outcomes: dispatch.hooks.map((h) => ({
          hookId: h.hookId,
          dispatchId: h.dispatchId,
          outcome: h.outcome,
          failureCode: h.failureCode,
        })),
        completedAt: this.#now().getTime(),
      })
    }
    return { dispatch, dispatchError: null }
  }

  #timestamp(): string {
    return this.#now().toISOString()
  }

  #usable(): void {
    if (this.#crashed)
      throw new LoopxHooksError(
        'ERR_LOOPX_SIMULATED_CRASH',
        'this settlement crashed (simulated); open a new one and recover()',
      )
    if (!this.#journal.open) throw new LoopxHooksError('ERR_LOOPX_TURN_JOURNAL_CLOSED', 'the Turn journal is closed')
  }

  #maybeCrash(at: CrashPoint): void {
    const crash = this.#crash
    if (!crash || crash.at !== at) return
    if (crash.mode === 'exit') process.exit(crash.exitCode ?? 70)
    if (crash.mode === 'kill') process.kill(process.pid, 'SIGKILL')
    this.#crashed = true
    throw new LoopxHooksError('ERR_LOOPX_SIMULATED_CRASH', `simulated crash ${at}`)
  }
}
