/**
 * The journal's readers and the outbox, for inspection and for governed
 * executors. An executor opens the journal file on its own (no dispatcher
 * needed), lists pending intents oldest first, admits or rejects each once,
 * and marks admitted ones done. These are records; nothing here performs an
 * effect. On a SQLite file the readers are synchronous reads on this thread
 * (cached statements on a WAL reader connection) behind a promise API; on
 * PostgreSQL each read runs off this thread, so the event loop never waits
 * on a round trip. Decisions go to the writer.
 */
import { openNativeJournal, openNativeJournalReader, type NativeJournal } from './addon.js'
import type {
  DecideOutcome,
  Decision,
  DispatchRow,
  DoneOutcome,
  FailureRow,
  IntegrityVerdict,
  JournalOpenOptions,
  JournalStats,
  JournalTarget,
  Page,
  PruneReport,
  RetentionStats,
  SidecarImportReport,
  StorageStats,
  StoredIntent,
} from '../bindings/index'
import { expectArgs, expectOptions, optionsJson } from './args.js'
import { JOURNAL_OPEN_OPTIONS } from './generated/options.js'
import { claim, consume, type ClaimOptions, type ConsumeOptions } from './consume.js'
import { tracedOutbox } from './diagnostics.js'

export type { ClaimOptions, ConsumeOptions } from './consume.js'

/** What `HookJournal.prune` removes, and how. */
export interface PruneOptions {
  /** Only final dispatches last written more than this many ms ago (0: every final one). */
  olderThanMs: number
  /** Dispatches per write transaction, 1 to 2000 (default 100): how long the writer may wait for one. */
  batchSize?: number
  /** Copy each pruned intent into the journal's `intents_archive` table instead of only deleting it. */
  archive?: boolean
  /** Append each batch's rows to this JSON Lines file, synced, before the batch removes them. */
  exportTo?: string
}

/** A filter and page of `HookJournal.listDispatches`; every member is optional. */
export interface DispatchQuery {
  /** Only dispatches in this state. */
  state?: 'checkpointed' | 'failed' | 'proposed' | 'not_applicable' | 'exhausted'
  /** Only dispatches to this hook. */
  hookId?: string
  /** The `nextCursor` of the previous page. */
  after?: number
  /**
   * Rows per page, clamped to 1..=1000.
   * @default 100
   */
  limit?: number
}

/** A filter and page of `HookJournal.listIntents`; every member is optional. */
export interface IntentQuery {
  /** Only intents proposed by this dispatch. */
  dispatchId?: string
  /** Only intents of this capability. */
  capabilityId?: string
  /** Only intents of this kind. */
  intentKind?: string
  /** Only undecided intents and admitted ones not yet done. */
  pendingOnly?: boolean
  /** The `nextCursor` of the previous page. */
  after?: number
  /**
   * Rows per page, clamped to 1..=1000.
   * @default 100
   */
  limit?: number
}

/** An executor's decision on one intent, the argument of `HookJournal.decide`. */
export interface DecideRequest {
  /** The intent decided (`StoredIntent.intentId`). */
  intentId: string
  /** A token naming the executor, e.g. `periodic_report.scheduler`. */
  executorId: string
  /** Admit the intent (then perform its effect and `markDone`) or reject it. */
  decision: Decision
  /** A token, e.g. `admitted_by_policy` or `duplicate_window`. */
  reasonCode: string
}

/** The journal and its options as the JSON texts the native open functions read. */
function openArgs(at: string, journal: unknown, options: unknown): [string, string | undefined] {
  const json = options === undefined ? undefined : optionsJson(`${at}: options`, options, JOURNAL_OPEN_OPTIONS)
  return [optionsJson(`${at}: journal`, journal), json]
}

/**
 * Wraps an open native journal: how lib/ makes a `HookJournal`. The
 * constructor is private so that `new HookJournal()` does not type-check for
 * a user.
 *
 * @internal
 */
export let journalOf: (journal: NativeJournal, afterPrune?: () => void) => HookJournal

/**
 * The native journal a `HookJournal` wraps, for the addon's functions that
 * write to it (`loopx-hooks/loopx`).
 *
 * @internal
 */
export let nativeOf: (journal: HookJournal) => NativeJournal

/**
 * A journal's readers and its outbox, for inspection and for governed
 * executors: `runtime.journal`, or `HookJournal.open` in a process without
 * a dispatcher. On SQLite the readers answer on the JS thread; on
 * PostgreSQL off it.
 *
 * @example
 * ```ts
 * const journal = await HookJournal.open('hooks.db')
 * for (const intent of await journal.claim({ executorId: 'scheduler', leaseMs: 30_000 })) {
 *   await journal.decide({ intentId: intent.intentId, executorId: 'scheduler', decision: 'admit', reasonCode: 'ok' })
 * }
 * await journal.close()
 * ```
 */
export class HookJournal implements AsyncDisposable {
  readonly #journal: NativeJournal
  /** PostgreSQL: each read is a round trip, made off the JS thread. */
  readonly #remote: boolean
  /** A runtime's journal tells its runtime, whose kept replays predate the prune. */
  readonly #afterPrune: (() => void) | undefined

  static {
    journalOf = (journal, afterPrune) => new HookJournal(journal, afterPrune)
    nativeOf = (journal) => journal.#journal
  }

  /** Use `HookJournal.open` or `runtime.journal`. */
  private constructor(journal: NativeJournal, afterPrune?: () => void) {
    this.#journal = journal
    this.#remote = journal.readsAreRemote
    this.#afterPrune = afterPrune
  }

  /**
   * Opens (creating on first use, migrating an older one) the journal.
   *
   * @param journal - a SQLite file path, a `postgres://` URL, `{ path }` or
   *   `{ postgres: { connectionString, schema?, caFile?, statementTimeoutMs?, writeRetryMs? } }`.
   * @param options - `busyTimeoutMs` (default 5000).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT`, `ERR_LOOPX_NOT_A_JOURNAL`,
   *   `ERR_LOOPX_JOURNAL_TOO_NEW`, `ERR_LOOPX_JOURNAL_UNAVAILABLE` and the other journal codes.
   */
  static async open(journal: JournalTarget, options?: JournalOpenOptions): Promise<HookJournal> {
    return journalOf(await openNativeJournal('HookJournal.open', ...openArgs('HookJournal.open', journal, options)))
  }

  /**
   * Opens an existing journal for reading only (SQLite: SQLITE_OPEN_READONLY;
   * PostgreSQL: read-only transactions): it creates, migrates, switches and
   * checkpoints nothing, and works on a file the process may only read. `decide` and `markDone` then throw
   * `ERR_LOOPX_JOURNAL_READONLY`.
   */
  static async openReadOnly(journal: JournalTarget, options?: JournalOpenOptions): Promise<HookJournal> {
    const at = 'HookJournal.openReadOnly'
    return journalOf(await openNativeJournalReader(at, ...openArgs(at, journal, options)))
  }

  /** A reader's JSON answer, read where the journal's reads belong (see the header). */
  async #read<T>(local: () => string, offThread: () => Promise<string>): Promise<T> {
    return JSON.parse(this.#remote ? await offThread() : local()) as T
  }

  /**
   * One dispatch's row.
   *
   * @param dispatchId - its `pwh_` id.
   * @returns the row, or `null` when the journal has no such dispatch.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `dispatchId` is not a string;
   *   `ERR_LOOPX_JOURNAL_CLOSED` after `close`, and the other journal codes.
   */
  async getDispatch(dispatchId: string): Promise<DispatchRow | null> {
    expectArgs('getDispatch', { dispatchId: [dispatchId, 'string'] })
    return this.#read(
      () => this.#journal.getDispatch(dispatchId),
      () => this.#journal.getDispatchOffThread(dispatchId),
    )
  }

  /**
   * Dispatches, oldest first, one page at a time.
   *
   * @param query - filters and paging (see `DispatchQuery`).
   * @returns a page: its `items` and the `nextCursor` to pass as `after`
   *   (`null` on the last page).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for a query that is not a
   *   `DispatchQuery`; `ERR_LOOPX_JOURNAL_CLOSED` after `close`, and the other journal codes.
   */
  async listDispatches(query: DispatchQuery = {}): Promise<Page<DispatchRow>> {
    return this.#read(
      () => this.#journal.listDispatches(JSON.stringify(query)),
      () => this.#journal.listDispatchesOffThread(JSON.stringify(query)),
    )
  }

  /**
   * One dispatch's failure records, in attempt order.
   *
   * @param dispatchId - its `pwh_` id.
   * @returns its failures (empty for none or an unknown dispatch).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `dispatchId` is not a string;
   *   `ERR_LOOPX_JOURNAL_CLOSED` after `close`, and the other journal codes.
   */
  async listFailures(dispatchId: string): Promise<FailureRow[]> {
    expectArgs('listFailures', { dispatchId: [dispatchId, 'string'] })
    return this.#read(
      () => this.#journal.listFailures(dispatchId),
      () => this.#journal.listFailuresOffThread(dispatchId),
    )
  }

  /**
   * Proposed intents, oldest first, one page at a time.
   *
   * @param query - filters and paging (see `IntentQuery`).
   * @returns a page: its `items` and the `nextCursor` to pass as `after`.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for a query that is not an
   *   `IntentQuery`; `ERR_LOOPX_JOURNAL_CLOSED` after `close`, and the other journal codes.
   */
  async listIntents(query: IntentQuery = {}): Promise<Page<StoredIntent>> {
    return this.#read(
      () => this.#journal.listIntents(JSON.stringify(query)),
      () => this.#journal.listIntentsOffThread(JSON.stringify(query)),
    )
  }

  /**
   * Claims up to `batch` (default 16) open intents, oldest first, for
   * `leaseMs`: undecided ones, and admitted ones not yet done whose earlier
   * holder's lease expired (mark those done). While the lease lives only
   * this executor may decide them or mark them done; other executors get
   * `ERR_LOOPX_LEASE_NOT_HELD`, and after expiry the holder gets
   * `ERR_LOOPX_LEASE_EXPIRED`.
   */
  async claim(options: ClaimOptions): Promise<StoredIntent[]> {
    return tracedOutbox(
      () => ({ journal: this, action: 'claim', executorId: options.executorId }),
      () => claim(this.#journal, options),
    )
  }

  /**
   * Claims and yields open intents as they arrive, until `signal` aborts:
   * `for await (const intent of journal.consume({ executorId, leaseMs }))`.
   * Woken at once by commits in this process, by polling for others.
   */
  consume(options: ConsumeOptions): AsyncGenerator<StoredIntent, void, undefined> {
    return consume(this.#journal, options, (o) => this.claim(o))
  }

  /**
   * Admits or rejects an intent once: the same decision again is a no-op, another one a conflict.
   *
   * @param decision - the intent, the executor, `admit` or `reject`, and a reason token.
   * @returns `decided`, `same_decision`, `conflict` (with the existing
   *   decision) or `unknown_intent`.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for a decision that is not a
   *   `DecideRequest`; `ERR_LOOPX_LEASE_NOT_HELD` / `ERR_LOOPX_LEASE_EXPIRED` for a
   *   claimed intent another executor holds or whose lease ran out;
   *   `ERR_LOOPX_JOURNAL_READONLY` on a journal opened read-only, and the other journal codes.
   */
  async decide(decision: DecideRequest): Promise<DecideOutcome> {
    const d = expectOptions(
      'decide',
      'decision',
      decision,
      {
        intentId: 'string',
        executorId: 'string',
        decision: 'string',
        reasonCode: 'string',
      },
      'object',
    )
    return tracedOutbox(
      () => ({ journal: this, action: 'decide', executorId: d.executorId, intentId: d.intentId, decision: d.decision }),
      async () =>
        JSON.parse(await this.#journal.decide(d.intentId, d.executorId, d.decision, d.reasonCode)) as DecideOutcome,
    )
  }

  /**
   * Marks an admitted intent done once its effect is performed.
   *
   * @param intentId - the intent.
   * @param executorId - the executor that admitted it (and holds its lease, if claimed).
   * @returns `done`, `already_done`, `not_admitted` or `unknown_intent`.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` when an argument is not a string;
   *   `ERR_LOOPX_LEASE_NOT_HELD` / `ERR_LOOPX_LEASE_EXPIRED` for a claimed
   *   intent another executor holds or whose lease ran out;
   *   `ERR_LOOPX_JOURNAL_READONLY` on a journal opened read-only, and the other journal codes.
   */
  async markDone(intentId: string, executorId: string): Promise<DoneOutcome> {
    expectArgs('markDone', { intentId: [intentId, 'string'], executorId: [executorId, 'string'] })
    return tracedOutbox(
      () => ({ journal: this, action: 'done', executorId, intentId }),
      async () => JSON.parse(await this.#journal.markDone(intentId, executorId)) as DoneOutcome,
    )
  }

  /**
   * Counts of the journal's dispatches by state and of its intents.
   *
   * @throws `ERR_LOOPX_JOURNAL_CLOSED` after `close`, and the other journal codes.
   */
  async stats(): Promise<JournalStats> {
    return this.#read(
      () => this.#journal.stats(),
      () => this.#journal.statsOffThread(),
    )
  }

  /**
   * Prunes final dispatches older than `olderThanMs` to their tombstone, in
   * short batches off the JS thread: their request, failed attempts and
   * closed (done or rejected) intents go, their row stays, so a replay of a
   * pruned identity is still a replay with the same receipt and its
   * `prunedAt` (a `loopx-shipped-v0` row keeps the intent its receipt
   * embeds). Unfinished dispatches and open or leased intents are kept. An
   * SQLite file switched to incremental vacuum (docs/durability.md) then
   * gives the freed pages back to the file system.
   *
   * @param options - the window, and optionally the batch size, `archive`, `exportTo`.
   * @returns what it removed (`PruneReport`).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for options that are not
   *   `PruneOptions` or a batch size out of range; `ERR_LOOPX_JOURNAL_READONLY`
   *   on a journal opened read-only; `ERR_LOOPX_JOURNAL_IO` when `exportTo`
   *   cannot be written (the batch is not removed), and the other journal codes.
   */
  async prune(options: PruneOptions): Promise<PruneReport> {
    const o = expectOptions(
      'prune',
      'options',
      options,
      { olderThanMs: 'number', batchSize: 'number?', archive: 'boolean?', exportTo: 'string?' },
      'object',
    )
    try {
      return JSON.parse(await this.#journal.prune(JSON.stringify(o))) as PruneReport
    } finally {
      this.#afterPrune?.()
    }
  }

  /**
   * The journal's size in bytes (the SQLite file's pages, or the PostgreSQL
   * schema's tables), its free bytes and how many dispatches were pruned.
   */
  async storage(): Promise<StorageStats> {
    return JSON.parse(await this.#journal.storage()) as StorageStats
  }

  /**
   * What this journal's prunes removed since it opened, and its size as the
   * last `prune()` or `storage()` read it (null before). Costs no I/O:
   * `runtime.metrics().journal` is this.
   */
  retention(): RetentionStats {
    return JSON.parse(this.#journal.retention()) as RetentionStats
  }

  /**
   * SQLite's `PRAGMA integrity_check` and `foreign_key_check` as a verdict:
   * a damaged file is `{ ok: false, messages }` with SQLite's messages, not a throw.
   */
  async integrity(): Promise<IntegrityVerdict> {
    return JSON.parse(await this.#journal.integrity())
  }

  /**
   * Imports LoopX's sidecar receipts under `runtimeRoot`
   * (`goals/<goal_id>/post_writeback_hooks/pwh_*.json`) with their ids,
   * statuses and attempt counts. Idempotent; a file it cannot import is
   * listed with a reason code, never fatal. Throws `ERR_LOOPX_INVALID_ARGUMENT`
   * only when the root cannot be listed.
   */
  async importSidecars(runtimeRoot: string): Promise<SidecarImportReport> {
    expectArgs('importSidecars', { runtimeRoot: [runtimeRoot, 'string'] })
    return JSON.parse(await this.#journal.importSidecars(runtimeRoot)) as SidecarImportReport
  }

  /**
   * Closes the journal; later calls reject with `ERR_LOOPX_JOURNAL_CLOSED`.
   */
  async close(): Promise<void> {
    await this.#journal.close()
  }

  /** `await using journal = …` closes it at the end of the block: the same as `close()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}
