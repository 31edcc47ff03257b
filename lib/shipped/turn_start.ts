/**
 * `ShippedTurnStart`: the turn-start hooks of the `loopx-shipped-v0` dialect,
 * as LoopX's `dispatch_turn_start_hooks` runs them, on the same core as
 * `TurnStartKernel`: given core's inbox, each provider call gets its
 * session, and core settles every hook against what it saw (its sessions'
 * counts, the inbox's pending material after the calls), fails closed where
 * a hook failed and decides the lane. LoopX's documents go in and come out;
 * what they have no room for rides on the object around the dispatch
 * document. Every rule is in the Rust addon; this layer adds types and
 * calls the providers.
 */
import * as addon from '../addon.js'
import type { ValidationResult } from '../../index.js'
import type {
  ShippedTurnStartDispatch,
  ShippedTurnStartOutcome,
  ShippedTurnStartRegistration,
  ShippedTurnStartResult,
} from '../../bindings/index'
import { expectOptions } from '../args.js'
import { LoopxHooksError } from '../errors.js'
import type { DeepReadonly } from '../readonly.js'
import { nativeInboxOf, type InboxStore } from '../inbox.js'
import { CallContext, callProvider, providerScope, type RawProvider } from '../provider.js'
import { sessionOf, type TurnStartSession } from '../turn_start_session.js'

/** What a shipped turn-start provider receives besides its registration. */
export interface ShippedTurnStartContext {
  /** Aborts when the call limit passes (a provider past it has failed). */
  readonly signal: AbortSignal
  /**
   * Core's inbox as it grants it to this call (the registration's write
   * scopes, contract-v0's attempt and route ceilings, closed when the call
   * ends), when the runtime has an inbox. First reads made through it are
   * counted by core, whatever the result reports.
   */
  readonly session: TurnStartSession | undefined
}

/**
 * A shipped turn-start provider (LoopX's producer): it does its own bounded
 * reads and owner-private writes and answers with its public result. It
 * receives its admitted registration, frozen, and its context.
 */
export type ShippedTurnStartProviderFn = (
  registration: Readonly<ShippedTurnStartRegistration>,
  context: ShippedTurnStartContext,
) => DeepReadonly<ShippedTurnStartResult> | Promise<DeepReadonly<ShippedTurnStartResult>>

/** A shipped turn-start hook as `ShippedTurnStart.register` takes it. */
export interface ShippedTurnStartHook {
  /** A v0 or v1 registration (readonly arrays are fine). An invalid one is isolated at dispatch (`registration_rejected`). */
  registration: DeepReadonly<ShippedTurnStartRegistration>
  /** The producer called once per dispatch while its registration is valid and first of its id. */
  provider: ShippedTurnStartProviderFn
}

/** How a `ShippedTurnStart` is made. */
export interface ShippedTurnStartOptions {
  /**
   * Core's owner-private inbox, as `TurnStartKernel({ inbox })` takes it:
   * each call gets a session of it, and a hook that fails, times out or
   * reports less than the inbox holds still leaves the Agent its read.
   * Without it, a failed hook's standing is `unknown` and its read is
   * required anyway.
   */
  inbox?: InboxStore
  /**
   * Milliseconds from a call after which its provider has failed
   * (`producer_failed`): an integer 1..=30000.
   * @default 30000
   */
  callLimitMs?: number
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
 * `dispatch_turn_start_hooks` runs them, on core's kernel: register hooks,
 * then `dispatch` once per Turn and apply `requiredReads` and `lane`.
 *
 * @example
 * ```ts
 * const turnStart = new ShippedTurnStart({ inbox })
 * turnStart.register({ registration, provider })
 * const { document, requiredReads, lane } = await turnStart.dispatch()
 * ```
 */
export class ShippedTurnStart {
  readonly #native: addon.NativeShippedTurnStart
  readonly #hooks: ShippedTurnStartHook[] = []
  readonly #active = new Set<CallContext>()

  /**
   * @param options - core's inbox and the call limit (see `ShippedTurnStartOptions`).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for options that are not what the
   *   signature says (an `inbox` that is not an `InboxStore`, a `callLimitMs`
   *   that is not an integer 1..=30000, a member it does not know).
   */
  constructor(options?: ShippedTurnStartOptions) {
    options = expectOptions('ShippedTurnStart', 'options', options, { inbox: 'object?', callLimitMs: 'number?' })
    this.#native = new addon.NativeShippedTurnStart(options.callLimitMs)
    if (options.inbox !== undefined) this.#native.useInbox(nativeInboxOf(options.inbox))
  }

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
   * registration's provider called once on this thread with its session,
   * every failure isolated with its code, then core's settling: the
   * document (LoopX's dispatch v1, valid under LoopX's rules, with core's
   * counts where it counted more), every read the Agent makes before work
   * (the document's and core's fail-closed ones), each hook's standing and
   * the lane. A provider cannot dispatch from inside itself.
   *
   * @returns `{ document, requiredReads, hooks, lane }`.
   * @throws `ERR_LOOPX_REENTRANT_DISPATCH` when called from inside a provider.
   */
  async dispatch(): Promise<ShippedTurnStartOutcome> {
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'dispatch called from inside a provider')
    }
    const hooks = [...this.#hooks]
    const native = this.#native
    const run = native.prepare(`[${hooks.map((h) => jsonText(h.registration)).join(',')}]`)
    const replies: string[] = []
    for (const [index, call] of run.calls.entries()) {
      const provider = hooks[call.index]!.provider
      const session = call.session != null ? sessionOf(native.session(call.session)) : undefined
      const raw = ((registration: Readonly<ShippedTurnStartRegistration>, context: CallContext) =>
        provider(registration, {
          get signal() {
            return context.signal
          },
          session,
        })) as RawProvider
      const context = new CallContext(this.#active, false)
      const limit = { ms: call.limitMs, wall: false }
      const reply = callProvider(raw, JSON.parse(call.registrationJson), limit, call.maxReplyLength, context)
      replies.push(typeof reply === 'string' ? reply : await reply)
      // The call is over (answered, thrown or past its limit): its session is too.
      native.endCall(run, index)
    }
    return JSON.parse(native.complete(run, replies)) as ShippedTurnStartOutcome
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
