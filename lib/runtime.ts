/**
 * `HookRuntime`: the post-writeback dispatcher over an SQLite journal file.
 * Intent kinds and hooks are installed at the composition root; the
 * orchestrator calls `dispatch` after each committed writeback.
 */
import { openNativeRuntime, type NativeHookRuntime } from '../index.js'
import type { DispatchOutcome, DispatchRequest, IntentKindDefinition, Profile, RecoverReport } from '../bindings/index'
import { checkHook, checkJsonObject, checkRuntimeOptions } from './args.js'
import { LoopxHooksError, native } from './errors.js'
import { HookJournal } from './journal.js'
import { providerScope, wrapProvider } from './provider.js'
import type { HookDefinition } from './hooks.js'

export interface HookRuntimeOptions {
  /** The journal file, created on first use. */
  journalPath: string
  /** Defaults: phase disabled, all hooks, `return` replays, 16 hooks and 60 s per dispatch. */
  profile?: Partial<Profile>
  /** `'full'` (default) fsyncs each group commit of final records; `'normal'` survives a process crash, not a power cut. */
  synchronous?: 'full' | 'normal'
  /** How long to wait for another process's write lock. Default 5000. */
  busyTimeoutMs?: number
}

export class HookRuntime implements AsyncDisposable {
  readonly #native: NativeHookRuntime
  readonly journal: HookJournal

  private constructor(runtime: NativeHookRuntime) {
    this.#native = runtime
    this.journal = new HookJournal(runtime.journal())
  }

  static async open(options: HookRuntimeOptions): Promise<HookRuntime> {
    checkRuntimeOptions(options)
    const runtime = await native(
      openNativeRuntime({
        journalPath: options.journalPath,
        profileJson: options.profile ? JSON.stringify(options.profile) : undefined,
        synchronousFull: options.synchronous ? options.synchronous === 'full' : undefined,
        busyTimeoutMs: options.busyTimeoutMs,
      }),
    )
    return new HookRuntime(runtime)
  }

  /** Defines an intent kind; throws `ERR_LOOPX_INTENT_KIND_REJECTED` with the violations. */
  defineIntentKind(definition: IntentKindDefinition | { readonly intent_kind: string }): void {
    const verdict = this.#native.defineIntentKind(definition)
    if (!verdict.ok) {
      throw new LoopxHooksError('ERR_LOOPX_INTENT_KIND_REJECTED', 'intent kind definition rejected', verdict.violations)
    }
  }

  /**
   * Installs a hook (see `defineHook`). A malformed or over-budget
   * registration throws `ERR_LOOPX_REGISTRATION_REJECTED` (failure code
   * registration_rejected) with its violations; nothing is installed or invoked.
   */
  register(hook: HookDefinition): void {
    checkHook(hook)
    const verdict = this.#native.register(hook.registration, wrapProvider(hook.provider))
    if (!verdict.ok) {
      throw new LoopxHooksError('ERR_LOOPX_REGISTRATION_REJECTED', 'registration_rejected', verdict.violations)
    }
  }

  /**
   * Dispatches a committed writeback to every admitted hook. Resolves once
   * its records are durable. A provider cannot dispatch from inside itself.
   */
  async dispatch(request: DispatchRequest): Promise<DispatchOutcome> {
    checkJsonObject(request, 'dispatch: request')
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'dispatch called from inside a provider')
    }
    return JSON.parse(await native(this.#native.dispatch(JSON.stringify(request))))
  }

  /** Re-dispatches every checkpointed identity that has no final receipt. */
  async recover(): Promise<RecoverReport> {
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'recover called from inside a provider')
    }
    return JSON.parse(await native(this.#native.recover()))
  }

  /**
   * Refuses new dispatches, waits for those in flight to record (each is
   * bounded by its timeouts), then closes the journal.
   */
  async close(): Promise<void> {
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'close called from inside a provider')
    }
    await native(this.#native.close())
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}
