/**
 * `ShippedHookRuntime`: the dispatcher speaking the contract LoopX shipped
 * (`loopx-shipped-v0`), opened with `HookRuntime.open({ dialect:
 * 'loopx-shipped-v0', ... })`. Registrations, sources, hook inputs, results,
 * intents, sidecar receipts and dispatch results are the shipped documents,
 * validated in Rust with the shipped rules and identities; the journal, the
 * writer, the isolation and the budgets are the same engine as contract-v0's.
 */
import type {
  RecoverReport,
  ShippedDispatchResult,
  ShippedHookInput,
  ShippedHookResult,
  ShippedRegistration,
  ShippedSource,
} from '../../bindings/index'
import { expectOptions, jsonObjectText } from '../args.js'
import { LoopxHooksError } from '../errors.js'
import type { DeepReadonly } from '../readonly.js'
import type { CallContext } from '../provider.js'
import type { HookJournal } from '../journal.js'
import type { HookRuntimeMetrics } from '../diagnostics.js'
import { mirrorOf, type SidecarMirror, type SidecarMirrorMetrics } from './sidecar_mirror.js'

/** A shipped hook: its registration and the producer that answers its input. */
export interface ShippedHookDefinition {
  /** The hook's `loopx-shipped-v0` registration, judged at `register` (readonly arrays are fine: `as const` works). */
  readonly registration: DeepReadonly<ShippedRegistration>
  /**
   * Called on the JS thread with the hook's input (the source's projection
   * filtered to `requested_read_scope`); its result is validated against
   * the registration. A throw or rejection is `producer_failed`, never kept.
   */
  readonly provider: (
    input: ShippedHookInput,
    context: CallContext,
  ) => DeepReadonly<ShippedHookResult> | PromiseLike<DeepReadonly<ShippedHookResult>>
}

/** Per-call options of `dispatch` (as `HookRuntime`'s). */
export interface ShippedDispatchOptions {
  /** `false` rejects with `ERR_LOOPX_BACKPRESSURE` instead of waiting its turn. Default true. */
  wait?: boolean
}

/** The engine a `ShippedHookRuntime` drives: a `HookRuntime` opened in this dialect. */
export interface ShippedEngine {
  register(hook: ShippedHookDefinition): void
  dispatch(source: object, options?: ShippedDispatchOptions): Promise<EngineOutcome>
  dispatchMany(sources: readonly object[], options?: ShippedDispatchOptions): Promise<EngineOutcome[]>
  recover(): Promise<RecoverReport>
  metrics(): HookRuntimeMetrics
  close(): Promise<void>
  readonly journal: HookJournal
}

/** What the engine resolves a dispatch to: its hooks' identities beside the shipped result. */
interface EngineOutcome {
  shipped?: ShippedDispatchResult
  hooks: readonly { dispatchId: string }[]
}

function shippedOf(outcome: { shipped?: ShippedDispatchResult }): ShippedDispatchResult {
  // The addon sets it on every outcome of a runtime opened in this dialect.
  return outcome.shipped as ShippedDispatchResult
}

/**
 * Wraps the engine in the shipped dialect: how `HookRuntime.open` makes a
 * `ShippedHookRuntime`. The constructor is private so that
 * `new ShippedHookRuntime()` does not type-check for a user.
 *
 * @internal
 */
export let shippedRuntimeOf: (engine: ShippedEngine) => ShippedHookRuntime

/**
 * The post-writeback dispatcher speaking the contract LoopX shipped
 * (`loopx-shipped-v0`): sources in, shipped results and sidecar receipts
 * out, over the same journal and guarantees as `HookRuntime`.
 *
 * @example
 * ```ts
 * const runtime = await HookRuntime.open({ journal: 'hooks.db', dialect: 'loopx-shipped-v0', profile: { enabled: true } })
 * runtime.register({ registration, provider })
 * const result = await runtime.dispatch(source)
 * await runtime.close()
 * ```
 */
export class ShippedHookRuntime implements AsyncDisposable {
  readonly #engine: ShippedEngine
  readonly #mirror: SidecarMirror | undefined
  /** The journal: rows of this dialect carry their sidecar receipt as `receipt`. */
  readonly journal: HookJournal

  static {
    shippedRuntimeOf = (engine) => new ShippedHookRuntime(engine)
  }

  /** Built by `HookRuntime.open({ dialect: 'loopx-shipped-v0' })`. */
  private constructor(engine: ShippedEngine) {
    this.#engine = engine
    this.journal = engine.journal
    this.#mirror = mirrorOf(engine)
  }

  #settled(source: object, outcome: EngineOutcome): ShippedDispatchResult | Promise<ShippedDispatchResult> {
    if (!this.#mirror) return shippedOf(outcome)
    return this.#mirror.after(this, this.journal, source, outcome.hooks).then(() => shippedOf(outcome))
  }

  /**
   * Installs a hook. A registration the shipped contract rejects, or a
   * second one of a `hook_id` (the shipped `duplicate_hook_id`), throws
   * `ERR_LOOPX_REGISTRATION_REJECTED` with its violations.
   */
  register(hook: ShippedHookDefinition): void {
    this.#engine.register(hook)
  }

  /**
   * Dispatches a committed writeback's source to every registered hook of its
   * `event_kind`, in `hook_id` order, and resolves once the receipts are
   * durable. A replay of a terminal receipt never calls the producer.
   */
  dispatch(source: DeepReadonly<ShippedSource>, options?: ShippedDispatchOptions): Promise<ShippedDispatchResult> {
    // Not async: a replay the engine settled at once costs one tick here.
    try {
      jsonObjectText(source, 'dispatch: source')
      options = expectOptions('dispatch', 'options', options, { wait: 'boolean?' })
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#engine.dispatch(source, options).then((outcome) => this.#settled(source, outcome))
  }

  /** Many sources (catch-up), each as one `dispatch`, in order. */
  async dispatchMany(
    sources: readonly DeepReadonly<ShippedSource>[],
    options?: ShippedDispatchOptions,
  ): Promise<ShippedDispatchResult[]> {
    if (!Array.isArray(sources)) {
      throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'dispatchMany: sources must be an array')
    }
    sources.forEach((s, i) => jsonObjectText(s, `dispatchMany: sources[${i}]`))
    options = expectOptions('dispatchMany', 'options', options, { wait: 'boolean?' })
    const outcomes = await this.#engine.dispatchMany(sources, options)
    const results: ShippedDispatchResult[] = []
    for (const [i, outcome] of outcomes.entries()) results.push(await this.#settled(sources[i]!, outcome))
    return results
  }

  /** Re-dispatches every identity left owed (checkpointed, or failed with attempts left). */
  async recover(): Promise<RecoverReport> {
    return this.#engine.recover()
  }

  /** The engine's figures, and with `sidecarMirror` the mirror's counts. */
  metrics(): HookRuntimeMetrics & { sidecarMirror?: SidecarMirrorMetrics } {
    const m = this.#engine.metrics()
    return this.#mirror ? { ...m, sidecarMirror: structuredClone(this.#mirror.metrics) } : m
  }

  /**
   * Refuses new dispatches, aborts the signals of providers in flight, waits
   * for dispatches in flight to record, then closes the journal, as
   * `HookRuntime.close` does. Idempotent.
   */
  async close(): Promise<void> {
    await this.#engine.close()
  }

  /** `await using runtime = …` closes it at the end of the block: the same as `close()` (in-flight dispatches record first). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}
