/**
 * `HookRuntime`: the post-writeback dispatcher over its journal: an SQLite
 * file, or a PostgreSQL schema shared by several hosts.
 * Intent kinds and hooks are installed at the composition root; the
 * orchestrator calls `dispatch` after each committed writeback.
 */
import { openNativeRuntime, type NativeHookRuntime } from './addon.js'
import type {
  DispatchOutcome,
  DispatchRequest,
  IntentKindDefinition,
  PostWritebackHookInput,
  PostWritebackHookResult,
  Profile,
  RecoverReport,
  RuntimeOptions,
} from '../bindings/index'
import { checkHook, expectOptions, jsonObjectText, optionsJson } from './args.js'
import { RUNTIME_OPTIONS } from './generated/options.js'
import { LoopxHooksError } from './errors.js'
import { Flights, type Answer } from './flights.js'
import { histogram, type Histogram, type HookRuntimeMetrics } from './diagnostics.js'
import { Gate } from './gate.js'
import { journalOf, type HookJournal } from './journal.js'
import { providerScope, type RawProvider } from './provider.js'
import type { HookDefinition } from './hooks.js'
import type { DeepReadonly } from './readonly.js'
import { shippedRuntimeOf, type ShippedHookRuntime, type ShippedEngine } from './shipped/runtime.js'
import { mirrorInto } from './shipped/sidecar_mirror.js'

/**
 * `HookRuntime.open`'s options (declared once, in src/options.rs, as
 * `RuntimeOptions`). `dialect` is the contract the runtime speaks:
 * `'contract-v0'` (the default: the RFC drafts with contract-v0's decisions);
 * see `ShippedHookRuntimeOptions` for the contract LoopX shipped.
 */
export type HookRuntimeOptions = RuntimeOptionsOf<{ dialect?: 'contract-v0'; sidecarMirror?: undefined }>

/** `HookRuntime.open`'s options for the contract LoopX shipped: it returns a `ShippedHookRuntime`. */
export type ShippedHookRuntimeOptions = RuntimeOptionsOf<{ dialect: 'loopx-shipped-v0' }>

/** `RuntimeOptions` narrowed to one dialect; a profile names only the members it changes. */
type RuntimeOptionsOf<D> = Omit<RuntimeOptions, 'profile' | keyof D> & { profile?: Partial<Profile> } & D

/** Per-call options of `HookRuntime.dispatch` and `dispatchMany`. */
export interface DispatchOptions {
  /**
   * When `maxInFlight` dispatches are already in flight: `true` waits its
   * turn, first come first served; `false` rejects at once with
   * `ERR_LOOPX_BACKPRESSURE`.
   * @default true
   */
  wait?: boolean
}

/** The addon's writer counters (src/journal/writer.rs `WriterStats`). */
interface WriterStats {
  commits: number
  commands: number
  durableCommits: number
  busyRetries: number
  wakes: number
  maxBatch: number
  queueDepth: number
  commitMicros: number
  batchSizeBuckets: number[]
  commitMicrosBuckets: number[]
}
// The same bounds as src/journal/writer.rs (BATCH_SIZE_BOUNDS, COMMIT_MICROS_BOUNDS); durations reach the API in ms.
const BATCH_SIZE_BOUNDS = [1, 2, 4, 8, 16, 32, 64, 128]
const COMMIT_BOUNDS_MS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 50]

function reentrant(what: string): void {
  if (providerScope.getStore()) {
    throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', `${what} called from inside a provider`)
  }
}

/**
 * The post-writeback dispatcher over its journal. Open one per process at
 * the composition root, install intent kinds and hooks, then call
 * `dispatch` after each primary writeback commits. The phase is off until
 * the profile enables it: a runtime opened without `profile: { enabled: true }`
 * answers every dispatch with the refusal `phase_disabled` and invokes nothing.
 *
 * @example
 * ```ts
 * const runtime = await HookRuntime.open({ journal: 'hooks.db', profile: { enabled: true } })
 * runtime.register(defineHook({ kinds: [kind], registration, provider })) // defines `kind` too
 * const outcome = await runtime.dispatch(request) // after the writeback committed
 * await runtime.close()
 * ```
 */
export class HookRuntime implements AsyncDisposable {
  readonly #native: NativeHookRuntime
  readonly #flights: Flights
  readonly #gate: Gate
  /** This runtime's journal: its readers and the outbox (see `HookJournal`). */
  readonly journal: HookJournal

  private constructor(runtime: NativeHookRuntime) {
    this.#native = runtime
    this.#flights = new Flights(runtime, this)
    this.#gate = new Gate(runtime.maxInFlight)
    // A replay kept from before a prune would not carry its `prunedAt`.
    this.journal = journalOf(runtime.journal(), () => this.#flights.replays.clear())
  }

  /**
   * Opens (creating on first use, migrating an older one) the journal and a
   * dispatcher over it. With `dialect: 'loopx-shipped-v0'` it answers a
   * `ShippedHookRuntime` that speaks the contract LoopX shipped.
   *
   * @param options - where the journal is (`journal`: a SQLite file path, a
   *   `postgres://` URL, `{ path }` or `{ postgres: {...} }`), the
   *   `profile`, `synchronous`, `busyTimeoutMs`, `attemptLedger`, `inlineCommit`, `dialect`.
   * @returns the runtime, once its journal is open.
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for options that are not what the
   *   signature says (including an unknown option name, and `inlineCommit`
   *   with a PostgreSQL journal);
   *   `ERR_LOOPX_UNKNOWN_DIALECT`; `ERR_LOOPX_NOT_A_JOURNAL`,
   *   `ERR_LOOPX_JOURNAL_TOO_NEW`, `ERR_LOOPX_JOURNAL_IO`,
   *   `ERR_LOOPX_JOURNAL_UNAVAILABLE` (PostgreSQL unreachable within its
   *   bounds) and the other journal codes.
   */
  static async open(options: ShippedHookRuntimeOptions): Promise<ShippedHookRuntime>
  static async open(options: HookRuntimeOptions): Promise<HookRuntime>
  static async open(
    options: HookRuntimeOptions | ShippedHookRuntimeOptions,
  ): Promise<HookRuntime | ShippedHookRuntime> {
    const runtime = await openNativeRuntime(
      optionsJson('HookRuntime.open: options', options, RUNTIME_OPTIONS),
      'HookRuntime.open: options',
    )
    const hooks = new HookRuntime(runtime)
    if (options.sidecarMirror !== undefined) mirrorInto(hooks, options.sidecarMirror)
    return options.dialect === 'loopx-shipped-v0' ? shippedRuntimeOf(hooks as unknown as ShippedEngine) : hooks
  }

  /**
   * Defines an intent kind that hooks of this runtime may propose. A hook
   * made by `defineHook` carries its kinds and `register` defines them; this
   * is for hooks registered without it. The same definition again is a no-op.
   *
   * @param definition - an `IntentKindDefinition`, or a typed kind from `defineIntentKind`.
   * @throws `ERR_LOOPX_INTENT_KIND_REJECTED` with the violations; nothing is defined.
   */
  defineIntentKind(definition: IntentKindDefinition | { readonly intent_kind: string }): void {
    const verdict = this.#native.defineIntentKind(definition)
    this.#flights.replays.clear()
    if (!verdict.ok) {
      throw new LoopxHooksError('ERR_LOOPX_INTENT_KIND_REJECTED', 'intent kind definition rejected', verdict.violations)
    }
  }

  /**
   * Installs a hook (see `defineHook`): defines the intent kinds it carries,
   * then its registration, checked against the intent kinds defined so far,
   * and its provider.
   *
   * @param hook - `{ registration, provider }`, and `kinds` (`defineHook` fills it in).
   * @throws `ERR_LOOPX_INTENT_KIND_REJECTED` for a carried kind that is
   *   invalid or defined differently already; `ERR_LOOPX_REGISTRATION_REJECTED` (failure code
   *   `registration_rejected`) with its violations for a malformed or
   *   over-budget registration: nothing is installed or invoked;
   *   `ERR_LOOPX_INVALID_ARGUMENT` when the provider is not a function.
   */
  register<
    Input = PostWritebackHookInput,
    // Readonly: a provider may answer a result declared `as const`.
    Result extends DeepReadonly<PostWritebackHookResult> = PostWritebackHookResult,
  >(hook: HookDefinition<Input, Result>): void {
    checkHook(hook)
    for (const kind of hook.kinds ?? []) this.defineIntentKind(kind)
    const verdict = this.#native.register(hook.registration)
    this.#flights.replays.clear()
    if (!verdict.ok) {
      throw new LoopxHooksError('ERR_LOOPX_REGISTRATION_REJECTED', 'registration_rejected', verdict.violations)
    }
    this.#flights.providers.set(hook.registration.hook_id, hook.provider as RawProvider)
  }

  /** Takes `n` places in flight, waiting FIFO or refusing. */
  async #enter(n: number, options: DispatchOptions): Promise<void> {
    if (this.#gate.tryAcquire(n)) return
    if (options.wait === false) {
      throw new LoopxHooksError('ERR_LOOPX_BACKPRESSURE', `${this.#gate.limit} dispatches are in flight`)
    }
    await this.#gate.acquire(n)
  }

  /**
   * Runs requests in chunks of at most `maxInFlight`, each chunk prepared in
   * one call; a chunk may name the one hook each of its requests runs.
   */
  async #chunks(
    chunks: () => Generator<{ texts: string[]; hookIds?: string[] }>,
    options: DispatchOptions,
  ): Promise<DispatchOutcome[]> {
    const out: DispatchOutcome[] = []
    for (const { texts, hookIds } of chunks()) {
      await this.#enter(texts.length, options)
      try {
        out.push(...(await this.#flights.many(texts, hookIds)))
      } finally {
        this.#gate.release(texts.length)
      }
    }
    return out
  }

  /**
   * Dispatches a committed writeback to every admitted hook, in hook_id
   * order, each isolated from the others. Resolves once its records are
   * durable. Each provider is called on this thread with
   * `(input, { signal })`; its `timeout_ms` counts from that call. Past
   * `maxInFlight` dispatches in flight it waits its turn (see `options.wait`).
   * A replay of a settled identity answers from the journal without calling
   * the provider (`profile.replay`). A hook's failure is an outcome, never
   * a rejection.
   *
   * @param request - the `DispatchRequest` of a writeback that committed.
   * @param options - `wait` (default `true`).
   * @returns the `DispatchOutcome`: a refusal, or each hook's outcome.
   * @throws (rejects) `ERR_LOOPX_INVALID_ARGUMENT` for a request that is not
   *   JSON; `ERR_LOOPX_REENTRANT_DISPATCH` from inside a provider;
   *   `ERR_LOOPX_BACKPRESSURE` with `wait: false`; `ERR_LOOPX_JOURNAL_CLOSED` once closed;
   *   `ERR_LOOPX_JOURNAL_UNAVAILABLE` and the other journal codes when the
   *   journal could not record (dispatch again: identities make it safe).
   */
  dispatch(request: DeepReadonly<DispatchRequest>, options?: DispatchOptions): Promise<DispatchOutcome> {
    // Not async: a dispatch that needs no commit (a replay) settles before
    // it returns, with no promise of its own in between.
    let answer: Answer
    let text: string
    try {
      text = jsonObjectText(request, 'dispatch: request')
      if (options !== undefined) options = expectOptions('dispatch', 'options', options, { wait: 'boolean?' })
      reentrant('dispatch')
      if (!this.#gate.tryAcquire(1)) return this.#dispatchLater(text, options ?? {})
    } catch (error) {
      return Promise.reject(error)
    }
    try {
      answer = this.#flights.one(text)
    } catch (error) {
      this.#gate.release(1)
      return Promise.reject(error)
    }
    if (!(answer instanceof Promise)) {
      this.#gate.release(1)
      return Promise.resolve(answer)
    }
    return answer.then(
      (outcome) => {
        this.#gate.release(1)
        return outcome
      },
      (error: unknown) => {
        this.#gate.release(1)
        throw error
      },
    )
  }

  /** `dispatch` once a place in flight is free (or refused at once with `wait: false`). */
  async #dispatchLater(text: string, options: DispatchOptions): Promise<DispatchOutcome> {
    await this.#enter(1, options)
    try {
      return await this.#flights.one(text)
    } finally {
      this.#gate.release(1)
    }
  }

  /**
   * Dispatches many committed writebacks (catch-up), prepared in one call
   * per chunk of `maxInFlight`: the same outcomes, in order, as one
   * `dispatch` each. A request that is not a `DispatchRequest` rejects the
   * chunk it is in before anything of that chunk runs.
   */
  async dispatchMany(
    requests: readonly DeepReadonly<DispatchRequest>[],
    options?: DispatchOptions,
  ): Promise<DispatchOutcome[]> {
    if (!Array.isArray(requests)) {
      throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'dispatchMany: requests must be an array')
    }
    options = expectOptions('dispatchMany', 'options', options, { wait: 'boolean?' })
    const texts = requests.map((r, i) => jsonObjectText(r, `dispatchMany: requests[${i}]`))
    reentrant('dispatchMany')
    const size = this.#gate.limit
    return this.#chunks(function* () {
      for (let at = 0; at < texts.length; at += size) yield { texts: texts.slice(at, at + size) }
    }, options)
  }

  /**
   * Re-dispatches every checkpointed identity that has no final receipt,
   * oldest first, each running only its owed hook; call it at start-up.
   *
   * @returns each re-dispatched hook's outcome, and how many owed identities
   *   were skipped (another dialect's, or a hook not installed here).
   */
  async recover(): Promise<RecoverReport> {
    reentrant('recover')
    // Read off this thread; taken a page at a time, so no step holds it for long.
    const recovery = await this.#native.recovery()
    const size = this.#gate.limit
    const outcomes = await this.#chunks(function* () {
      for (;;) {
        const page = recovery.take(size)
        if (page.requests.length === 0) return
        yield { texts: page.requests, hookIds: page.hookIds }
      }
    }, {})
    return {
      outcomes: outcomes.flatMap((o) => o.hooks),
      skipped: recovery.skipped,
      ledgersSkipped: recovery.ledgersSkipped,
    }
  }

  /**
   * Counts since the runtime opened, for hosts without OpenTelemetry:
   * dispatches by outcome, hook outcomes and failure codes, provider calls
   * and their latency, the journal writer's commits (batch sizes, latency),
   * its queue depth and busy retries, and what prunes removed with the
   * journal's size as last read. A snapshot; the same figures the
   * `loopx-hooks/otel` bridge exports.
   */
  metrics(): HookRuntimeMetrics {
    const w = JSON.parse(this.#native.writerStats()) as WriterStats
    const t = this.#flights.tally
    const copy = (h: Histogram): Histogram => ({ ...h, bounds: [...h.bounds], counts: [...h.counts] })
    const filled = (bounds: number[], counts: number[], sum: number): Histogram => ({
      ...histogram(bounds),
      counts: [...counts],
      count: counts.reduce((a, b) => a + b, 0),
      sum,
    })
    return {
      dispatches: { resolved: t.resolved, admitted: t.admitted, refused: t.refused, errors: { ...t.errors } },
      hookOutcomes: { ...t.hookOutcomes },
      failureCodes: { ...t.failureCodes },
      providerReplies: { ...t.providerReplies },
      providerLatencyMs: copy(t.providerLatencyMs),
      commits: {
        count: w.commits,
        durable: w.durableCommits,
        commands: w.commands,
        maxBatch: w.maxBatch,
        batchSize: filled(BATCH_SIZE_BOUNDS, w.batchSizeBuckets, w.commands),
        latencyMs: filled(COMMIT_BOUNDS_MS, w.commitMicrosBuckets, w.commitMicros / 1000),
      },
      writer: { queueDepth: w.queueDepth, busyRetries: w.busyRetries, wakes: w.wakes },
      journal: this.journal.retention(),
    }
  }

  /**
   * Refuses new dispatches, aborts the signals of providers in flight, waits
   * for dispatches in flight to record (each is bounded by its timeouts),
   * then closes the journal. Idempotent. On PostgreSQL it settles within the
   * write bound even with the server frozen.
   */
  async close(): Promise<void> {
    reentrant('close')
    this.#flights.closing = true
    this.#flights.abortAll()
    await this.#native.close()
    await this.#flights.drain()
  }

  /** `await using runtime = …` closes it at the end of the block: the same as `close()` (in-flight dispatches record first). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}
