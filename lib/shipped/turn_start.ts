/**
 * `ShippedTurnStart`: the turn-start hooks of the `loopx-shipped-v0` dialect,
 * as LoopX's `dispatch_turn_start_hooks` runs them. The RFC kernel
 * (`TurnStartKernel`) does not fit this contract: it validates a Turn request,
 * grants inbox sessions, recounts pending material and decides a lane, while
 * the shipped contract has none of these, only provider-reported results and
 * the required reads they trigger. Every rule is in the Rust addon; this
 * layer adds types and calls the providers.
 */
import * as addon from '../addon.js'
import type { ValidationResult } from '../../index.js'
import type {
  ShippedTurnStartDispatch,
  ShippedTurnStartRegistration,
  ShippedTurnStartResult,
} from '../../bindings/index'
import { LoopxHooksError } from '../errors.js'
import { CallContext, callProvider, providerScope, type RawProvider } from '../provider.js'

/**
 * A shipped turn-start provider (LoopX's producer): it does its own bounded
 * reads and owner-private writes and answers with its public result. It
 * receives its admitted registration, frozen, and a signal that aborts when
 * the core's call limit passes (a provider past it has failed).
 */
export type ShippedTurnStartProviderFn = (
  registration: Readonly<ShippedTurnStartRegistration>,
  context: { readonly signal: AbortSignal },
) => ShippedTurnStartResult | Promise<ShippedTurnStartResult>

/** A shipped turn-start hook as `ShippedTurnStart.register` takes it. */
export interface ShippedTurnStartHook {
  /** A v0 or v1 registration. An invalid one is isolated at dispatch (`registration_rejected`). */
  registration: ShippedTurnStartRegistration
  /** The producer called once per dispatch while its registration is valid and first of its id. */
  provider: ShippedTurnStartProviderFn
}

/** A document JSON can hold, as text; `null` in its place when it cannot be (a cycle, a BigInt). */
function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return 'null'
  }
}

/**
 * The turn-start hooks of the `loopx-shipped-v0` dialect, as LoopX's
 * `dispatch_turn_start_hooks` runs them: register hooks, then `dispatch`
 * once per Turn.
 *
 * @example
 * ```ts
 * const turnStart = new ShippedTurnStart()
 * turnStart.register({ registration, provider })
 * const dispatch = await turnStart.dispatch()
 * ```
 */
export class ShippedTurnStart {
  readonly #hooks: ShippedTurnStartHook[] = []
  readonly #active = new Set<CallContext>()

  /**
   * Adds a hook. Only its form is checked here (an object with a
   * registration and a provider function): the registration is judged at
   * each dispatch, where an invalid or repeated one is isolated, as LoopX does.
   *
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` when `hook` is not an object with a provider function.
   */
  register(hook: ShippedTurnStartHook): void {
    if (hook === null || typeof hook !== 'object' || typeof hook.provider !== 'function') {
      throw new LoopxHooksError(
        'ERR_LOOPX_INVALID_ARGUMENT',
        'register: hook must be an object with a provider function',
      )
    }
    this.#hooks.push({ registration: hook.registration, provider: hook.provider })
  }

  /**
   * One dispatch: hooks in hook_id order, each valid and first-of-its-id
   * registration's provider called once on this thread, every failure
   * isolated with its code, and the required reads of the results that
   * require them, deduplicated by command (the first in hook_id order wins).
   * A provider cannot dispatch from inside itself.
   *
   * @returns the `loopx_turn_start_capability_hook_dispatch_v1` document.
   * @throws `ERR_LOOPX_REENTRANT_DISPATCH` when called from inside a provider.
   */
  async dispatch(): Promise<ShippedTurnStartDispatch> {
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'dispatch called from inside a provider')
    }
    const hooks = [...this.#hooks]
    const text = `[${hooks.map((h) => jsonText(h.registration)).join(',')}]`
    const plan = addon.NativeShippedTurnStartPlan.prepare(text)
    const replies: string[] = []
    for (const call of plan.calls) {
      const provider = hooks[call.index]!.provider as RawProvider
      const context = new CallContext(this.#active, false)
      const limit = { ms: call.limitMs, wall: false }
      const reply = callProvider(provider, call.registrationJson, limit, call.maxReplyLength, context)
      replies.push(typeof reply === 'string' ? reply : await reply)
    }
    return JSON.parse(plan.complete(replies)) as ShippedTurnStartDispatch
  }
}

/** A shipped turn-start registration (v0 or v1): the verdict, never a throw on a bad document. */
export const validateShippedTurnStartRegistration = (doc: unknown): ValidationResult<ShippedTurnStartRegistration> =>
  addon.validateShippedTurnStartRegistration(doc)

/** `{ registration, result }`: the result against its hook's registration. */
export const validateShippedTurnStartInvocation = (doc: unknown): ValidationResult<ShippedTurnStartResult> =>
  addon.validateShippedTurnStartInvocation(doc)

/** A `loopx_turn_start_capability_hook_dispatch_v1` document. */
export const validateShippedTurnStartDispatch = (doc: unknown): ValidationResult<ShippedTurnStartDispatch> =>
  addon.validateShippedTurnStartDispatch(doc)
