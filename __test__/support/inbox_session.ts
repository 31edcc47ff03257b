// A turn-start session for a test to work the inbox through: first reads,
// cursors and reactions exist only on a session, which core hands to a
// provider during a dispatch. `inSession` registers a one-off hook with the
// write scopes asked for on a kernel that has the inbox, dispatches once and
// runs the callback as that hook's provider, with its session.
import {
  TurnStartKernel,
  type InboxStore,
  type TurnStartHookInput,
  type TurnStartOutcome,
  type TurnStartSession,
  type TurnStartWriteScope,
} from '../../lib/index.js'
import { turnStartReceipt, turnStartRegistration, turnStartRequest } from './turn_start.js'

const ALL_SCOPES: TurnStartWriteScope[] = ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction']

export interface InSessionOptions {
  /** The registration's write scopes; every scope by default. */
  scopes?: TurnStartWriteScope[]
  /** The dispatch's aggregate attempt budget (1..=16); 16 by default. */
  attempts?: number
  /** The dispatch's turn_instance_id, the natural `readRef` of first reads. */
  turn?: string
}

let hooks = 0

/**
 * Runs `use` as the provider of one dispatch of a fresh kernel over `inbox`,
 * with its session, and resolves to what `use` resolved to (a throw in `use`
 * rejects). The hook answers an `empty` receipt; core's own counts are in
 * `outcome` for a test that looks.
 */
export async function inSession<T>(
  inbox: InboxStore,
  use: (session: TurnStartSession, input: Readonly<TurnStartHookInput>) => Promise<T>,
  options: InSessionOptions = {},
): Promise<T> {
  return (await inSessionOutcome(inbox, use, options)).value
}

/** `inSession`, with the dispatch's outcome as well. */
export async function inSessionOutcome<T>(
  inbox: InboxStore,
  use: (session: TurnStartSession, input: Readonly<TurnStartHookInput>) => Promise<T>,
  options: InSessionOptions = {},
): Promise<{ value: T; outcome: TurnStartOutcome }> {
  const registration = turnStartRegistration(`session_${++hooks}`, 30_000)
  registration.write_scopes = options.scopes ?? ALL_SCOPES
  registration.budget.max_attempts_per_dispatch = options.attempts ?? 16
  const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
  let result: { value: T } | { error: unknown } | undefined
  kernel.register({
    registration,
    provider: async (input, context) => {
      try {
        result = { value: await use(context.session!, input) }
      } catch (error) {
        result = { error }
      }
      return turnStartReceipt(input)
    },
  })
  const outcome = await kernel.dispatchTurnStart(turnStartRequest(options.turn ?? `turn_session_${hooks}`))
  if (result === undefined) throw new Error('the session hook did not run')
  if ('error' in result) throw result.error
  return { value: result.value, outcome }
}
