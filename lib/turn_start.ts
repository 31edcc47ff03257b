/**
 * `TurnStartKernel`: the turn-start inbox hook phase (RFC "Provider-Neutral
 * Turn-Start Inbox Hook v0"). Hooks are installed at the composition root;
 * the CLI or orchestrator calls `dispatchTurnStart` once per Turn, before
 * status and quota projection, and applies the required reads and the lane
 * decision it returns. Every rule is in the Rust addon; this layer adds types.
 */
import { NativeTurnStartKernel } from './addon.js'
import type {
  TurnStartHookInput,
  TurnStartHookRegistration,
  TurnStartOutcome,
  TurnStartProfile,
  TurnStartReceipt,
  TurnStartRequest,
} from '../bindings/index'
import { checkHook, expectOptions } from './args.js'
import { LoopxHooksError } from './errors.js'
import type { DeepReadonly } from './readonly.js'
import { nativeInboxOf, type InboxStore } from './inbox.js'
import { CallContext, FAILED, callProvider, providerScope, type RawProvider } from './provider.js'
import { sessionOf, type TurnStartSession } from './turn_start_session.js'
import { tracedCall, turnStartChannel, turnStartMessage, type TurnStartMessage } from './turn_start_trace.js'

/**
 * A turn-start provider: bounded external reads, owner-private inbox and
 * cursor writes, and (when registered) acknowledgement reactions are its own;
 * it answers with its public receipt. It receives a frozen input and, when
 * the kernel has an inbox store, its session: the inbox as core grants it to
 * this invocation (scopes, budget, counted by core).
 */
export interface TurnStartContext {
  /** Aborts at the hook's `timeout_ms`, counted from this call. */
  readonly signal: AbortSignal
  /** The inbox as core grants it to this call, when the kernel has an inbox store. */
  readonly session: TurnStartSession | undefined
}

/**
 * A turn-start hook's provider: called once per dispatch with its frozen
 * input and context, it answers (or resolves to) its public receipt.
 */
export type TurnStartProviderFn = (
  input: Readonly<TurnStartHookInput>,
  context: TurnStartContext,
) => DeepReadonly<TurnStartReceipt> | Promise<DeepReadonly<TurnStartReceipt>>

/** A turn-start hook as `TurnStartKernel.register` takes it. */
export interface TurnStartHookDefinition {
  /** The hook's registration, validated at `register` (readonly arrays are fine: `as const` works). */
  registration: DeepReadonly<TurnStartHookRegistration>
  /** The function the kernel calls once per dispatch. */
  provider: TurnStartProviderFn
}

/** How a `TurnStartKernel` is made. */
export interface TurnStartKernelOptions {
  /**
   * The phase's profile: `enabled` and the optional `allowlist` of hook_ids.
   * @default { enabled: false } (phase disabled, every hook allowed)
   */
  profile?: Partial<TurnStartProfile>
  /**
   * The owner-private inbox the providers use. When a hook fails (throws,
   * times out, answers no valid receipt, or reports a failure status), core
   * counts its durably pending messages itself, so an outage never drops the
   * read obligation; without it, a failed hook's standing is `unknown` and
   * the read is required anyway. With it, the lane is decided per message
   * from the inbox's own standing (fresh in this dispatch, carried from an
   * earlier turn, or unread), not from counts summed across hooks.
   */
  inbox?: InboxStore
}

/**
 * The turn-start inbox hook phase: install hooks at the composition root,
 * then call `dispatchTurnStart` once per Turn, before status and quota
 * projection, and apply the required reads and the lane decision it
 * returns. The phase is off until the profile enables it.
 *
 * @example
 * ```ts
 * const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
 * kernel.register({ registration, provider })
 * const outcome = await kernel.dispatchTurnStart(request)
 * ```
 */
export class TurnStartKernel {
  readonly #native: NativeTurnStartKernel
  readonly #providers = new Map<string, RawProvider>()
  readonly #active = new Set<CallContext>()

  /**
   * @param options - the profile and the optional inbox (see `TurnStartKernelOptions`).
   * @throws `ERR_LOOPX_INVALID_ARGUMENT` for options, or a profile, that are
   *   not what the signature says (an `inbox` that is not an `InboxStore` included).
   */
  constructor(options?: TurnStartKernelOptions) {
    options = expectOptions('TurnStartKernel', 'options', options, { profile: 'object?', inbox: 'object?' })
    const profile = options.profile
    this.#native = new NativeTurnStartKernel(profile ? JSON.stringify(profile) : undefined)
    if (options.inbox !== undefined) this.#native.useInbox(nativeInboxOf(options.inbox))
  }

  /**
   * Installs a hook. An invalid registration, or another registration under
   * an installed hook_id, throws `ERR_LOOPX_REGISTRATION_REJECTED` with its
   * violations. The same identity again is accepted once (`alreadyInstalled`)
   * and keeps its first provider: duplicate hook identities run once.
   *
   * @param hook - `{ registration, provider }`.
   * @returns whether the same identity was installed already.
   * @throws `ERR_LOOPX_REGISTRATION_REJECTED` with the violations;
   *   `ERR_LOOPX_INVALID_ARGUMENT` when the provider is not a function.
   */
  register(hook: TurnStartHookDefinition): { alreadyInstalled: boolean } {
    checkHook(hook)
    const kernel = this.#native
    // The input's session token becomes the session object; the provider
    // sees neither the token nor anything else the kernel did not grant it.
    const provider = (input: Readonly<TurnStartHookInput>, call: CallContext) => {
      const { session, ...rest } = input
      const own = Object.freeze(rest) as Readonly<TurnStartHookInput>
      const context: TurnStartContext = {
        get signal() {
          return call.signal
        },
        session: session !== undefined ? sessionOf(kernel.session(session)) : undefined,
      }
      return hook.provider(own, context)
    }
    const verdict = this.#native.register(hook.registration)
    if (!verdict.ok) {
      throw new LoopxHooksError('ERR_LOOPX_REGISTRATION_REJECTED', 'registration_rejected', verdict.violations)
    }
    // The same identity again keeps its first provider.
    if (!verdict.alreadyInstalled) this.#providers.set(hook.registration.hook_id, provider as RawProvider)
    return { alreadyInstalled: verdict.alreadyInstalled }
  }

  /** The installed hook_ids, in dispatch (byte) order. */
  get hookIds(): string[] {
    return this.#native.hookIds
  }

  /**
   * One turn-start dispatch. An invalid request resolves `admitted: false`
   * with its violations and invokes nothing. Each provider is called on this
   * thread with `(input, { signal })`; its `timeout_ms` counts from that call
   * and the signal aborts at it. A provider cannot dispatch from inside itself.
   * Traced on `loopx-hooks:turn-start` and `loopx-hooks:turn-start-hook`.
   *
   * @param request - the Turn's turn-start request.
   * @returns the outcome: the required reads, the lane decision and each hook's outcome.
   * @throws `ERR_LOOPX_REENTRANT_DISPATCH` when called from inside a provider.
   */
  async dispatchTurnStart(request: DeepReadonly<TurnStartRequest>): Promise<TurnStartOutcome> {
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'dispatchTurnStart called from inside a provider')
    }
    let text: string
    try {
      text = JSON.stringify(request) ?? ''
    } catch {
      text = '' // a cycle or a BigInt: refused as not_json_value
    }
    if (!turnStartChannel.hasSubscribers) return this.#dispatch(text, undefined)
    const trace = turnStartMessage(this, text)
    return turnStartChannel.tracePromise(() => this.#dispatch(text, trace), trace)
  }

  async #dispatch(text: string, trace: TurnStartMessage | undefined): Promise<TurnStartOutcome> {
    const plan = this.#native.prepareTurnStart(text)
    if (plan.done != null) return JSON.parse(plan.done) as TurnStartOutcome
    // Each provider is called here, in order, its timeout counted from its call.
    const replies: string[] = []
    for (const [index, call] of plan.calls.entries()) {
      const provider = this.#providers.get(call.hookId)
      const limit = { ms: call.timeoutMs, wall: false }
      const context = new CallContext(this.#active, false)
      const reply = tracedCall(this, trace, call.hookId, (probe) => {
        if (provider)
          return callProvider(provider, JSON.parse(call.inputJson), limit, call.maxReplyLength, context, probe)
        probe?.settled(FAILED, 0, undefined)
        return FAILED
      })
      replies.push(typeof reply === 'string' ? reply : await reply)
      // The call is over (answered, thrown or timed out): its session is too,
      // while the calls after it run.
      this.#native.endTurnStartCall(plan, index)
    }
    return JSON.parse(this.#native.completeTurnStart(plan, replies)) as TurnStartOutcome
  }
}
