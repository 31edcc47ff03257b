/**
 * `TurnStartKernel`: the turn-start inbox hook phase (RFC "Provider-Neutral
 * Turn-Start Inbox Hook v0"). Hooks are installed at the composition root;
 * the CLI or orchestrator calls `dispatchTurnStart` once per Turn, before
 * status and quota projection, and applies the required reads and the lane
 * decision it returns. Every rule is in the Rust addon; this layer adds types.
 */
import { NativeTurnStartKernel } from '../index.js'
import type {
  TurnStartHookInput,
  TurnStartHookRegistration,
  TurnStartOutcome,
  TurnStartProfile,
  TurnStartReceipt,
  TurnStartRequest,
} from '../bindings/index'
import { LoopxHooksError, native } from './errors.js'
import { nativeInboxOf, type InboxStore } from './inbox.js'
import { providerScope, wrapProvider } from './provider.js'
import { TurnStartSession } from './turn_start_session.js'

/**
 * A turn-start provider: bounded external reads, owner-private inbox and
 * cursor writes, and (when registered) acknowledgement reactions are its own;
 * it answers with its public receipt. It receives a frozen input and, when
 * the kernel has an inbox store, its session: the inbox as core grants it to
 * this invocation (scopes, budget, counted by core).
 */
export type TurnStartProviderFn = (
  input: Readonly<TurnStartHookInput>,
  session?: TurnStartSession,
) => TurnStartReceipt | Promise<TurnStartReceipt>

export interface TurnStartHookDefinition {
  registration: TurnStartHookRegistration
  provider: TurnStartProviderFn
}

export interface TurnStartKernelOptions {
  /** Defaults: phase disabled, every hook allowed. */
  profile?: Partial<TurnStartProfile>
  /**
   * The owner-private inbox the providers use. When a hook fails (throws,
   * times out, answers no valid receipt, or reports a failure status), core
   * counts its durably pending messages itself, so an outage never drops the
   * read obligation; without it, a failed hook's standing is `unknown` and
   * the read is required anyway.
   */
  inbox?: InboxStore
}

export class TurnStartKernel {
  readonly #native: NativeTurnStartKernel

  constructor(options: TurnStartKernelOptions = {}) {
    this.#native = new NativeTurnStartKernel(options.profile ? JSON.stringify(options.profile) : undefined)
    if (options.inbox !== undefined) this.#native.useInbox(nativeInboxOf(options.inbox))
  }

  /**
   * Installs a hook. An invalid registration, or another registration under
   * an installed hook_id, throws `ERR_LOOPX_REGISTRATION_REJECTED` with its
   * violations. The same identity again is accepted once (`alreadyInstalled`)
   * and keeps its first provider: duplicate hook identities run once.
   */
  register(hook: TurnStartHookDefinition): { alreadyInstalled: boolean } {
    const kernel = this.#native
    const provider = (input: Readonly<TurnStartHookInput>) => {
      const { session, ...rest } = input
      const own = Object.freeze(rest) as Readonly<TurnStartHookInput>
      return hook.provider(own, session !== undefined ? new TurnStartSession(kernel, session) : undefined)
    }
    const verdict = this.#native.register(hook.registration, wrapProvider(provider))
    if (!verdict.ok) {
      throw new LoopxHooksError('ERR_LOOPX_REGISTRATION_REJECTED', 'registration_rejected', verdict.violations)
    }
    return { alreadyInstalled: verdict.alreadyInstalled }
  }

  /** The installed hook_ids, in dispatch (byte) order. */
  get hookIds(): string[] {
    return this.#native.hookIds
  }

  /**
   * One turn-start dispatch. An invalid request resolves `admitted: false`
   * with its violations and invokes nothing. A provider cannot dispatch from
   * inside itself.
   */
  async dispatchTurnStart(request: TurnStartRequest): Promise<TurnStartOutcome> {
    if (providerScope.getStore()) {
      throw new LoopxHooksError('ERR_LOOPX_REENTRANT_DISPATCH', 'dispatchTurnStart called from inside a provider')
    }
    let text: string
    try {
      text = JSON.stringify(request) ?? ''
    } catch {
      text = '' // a cycle or a BigInt: refused as not_json_value
    }
    return JSON.parse(await native(this.#native.dispatchTurnStart(text)))
  }
}
