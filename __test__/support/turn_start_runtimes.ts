// The two turn-start runtimes of the package, behind one interface, so a
// table of rows runs over both (as support/backends.ts does for the
// post-writeback backends): the contract-v0 `TurnStartKernel` and
// `ShippedTurnStart`, LoopX's documents on the same core. A test registers
// a contract-v0 provider (the fake of ../turn_start_fake.ts); on the shipped
// runtime it is wrapped: it gets the v0 input it expects and its receipt is
// translated into a LoopX result, faithfully (a receipt that breaks
// contract-v0's rules breaks LoopX's too). Each dispatch answers a
// normalized view in one vocabulary and the runtime's raw outcome, for the
// fields only one dialect has.
import {
  ShippedTurnStart,
  TurnStartKernel,
  validateShippedTurnStartDispatch,
  validateTurnStartReceipt,
  type InboxStore,
  type ShippedTurnStartOutcome,
  type ShippedTurnStartRegistrationV1,
  type ShippedTurnStartResult,
  type ShippedTurnStartWriteScope,
  type TurnStartContext,
  type TurnStartHookInput,
  type TurnStartHookRegistration,
  type TurnStartLane,
  type TurnStartOutcome,
  type TurnStartReceipt,
  type TurnStartRequest,
  type TurnStartStatus,
} from '../../lib/index.js'

/** A contract-v0 provider, as the fake is. */
export type FakeProviderFn = (input: TurnStartHookInput, context: TurnStartContext) => Promise<TurnStartReceipt>

/** A hook's registration, in neither dialect's words. */
export interface HookOptions {
  /** Whether the registration requests provider_message_reaction (default true). */
  reactions?: boolean
  /** The attempt budget the provider is told (v0: registered and enforced by core; default 8). */
  attempts?: number
  /** The routes the provider is told (default 4). */
  routes?: number
  /** The required read's command (default `loopx inbox read --hook=<capability>`). */
  command?: string
}

/**
 * A hook's status in one vocabulary: `unavailable` for an outage or a
 * timeout, `failed` for any other failure (a contract error, a denied
 * permission, a provider core isolated).
 */
export type Status = 'ok' | 'empty' | 'partial' | 'unavailable' | 'failed'

export interface HookView {
  hookId: string
  status: Status
  /** v0: the receipt's error code; shipped: the result's, or the failure code that isolated the hook. */
  errorCode: string | null
  /** First reads of this dispatch, as core settled them. */
  observations: number
  pending: number
  readRequired: boolean
}

export type RawOutcome =
  { runtime: 'v0'; outcome: TurnStartOutcome } | { runtime: 'shipped'; outcome: ShippedTurnStartOutcome }

export interface View {
  /** v0: the request was valid; shipped: no registration was rejected (LoopX has no request, it judges registrations). */
  admitted: boolean
  /** One per hook that ran, in hook_id order. */
  hooks: HookView[]
  /** The first hook's view. */
  hook: HookView
  /** The commands the Agent reads before work, deduplicated, in the runtime's order. */
  reads: string[]
  lane: TurnStartLane
  raw: RawOutcome
}

/** A runtime given an inbox: hooks registered, one dispatch per Turn. */
export interface Host {
  /** v0 answers whether the identity was installed already; shipped judges that at dispatch (`undefined`). */
  register(
    capability: string,
    provider: FakeProviderFn,
    options?: HookOptions,
  ): { alreadyInstalled: boolean } | undefined
  /** One dispatch; `quota` (v0's request, `max_units`) only where the runtime has a request. */
  dispatch(quota?: number): Promise<View>
}

export interface TurnStartRuntime {
  name: string
  kind: 'v0' | 'shipped'
  open(inbox?: InboxStore): Host
}

export const commandOf = (capability: string, options: HookOptions = {}) =>
  options.command ?? `loopx inbox read --hook=${capability}`

const hookIdOf = (capability: string) => `${capability}.turn_start_read`

function scopesOf(options: HookOptions): TurnStartHookRegistration['write_scopes'] {
  return options.reactions === false
    ? ['owner_private_inbox', 'owner_private_cursor']
    : ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction']
}

const budgetOf = (options: HookOptions) => ({
  timeout_ms: TIMEOUT_MS,
  max_attempts_per_dispatch: options.attempts ?? 8,
  max_routes: options.routes ?? 4,
})

const TIMEOUT_MS = 3000

export function v0Registration(capability: string, options: HookOptions = {}): TurnStartHookRegistration {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v0',
    hook_id: hookIdOf(capability),
    capability_id: capability,
    phase: 'turn_start',
    required_read: { command: commandOf(capability, options) },
    write_scopes: scopesOf(options),
    budget: budgetOf(options),
    failure_policy: 'isolate',
  }
}

/** The same hook as LoopX registers it: no attempt or route budget, a read with kind, reason and ordering. */
export function shippedRegistration(capability: string, options: HookOptions = {}): ShippedTurnStartRegistrationV1 {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v1',
    hook_id: hookIdOf(capability),
    capability_id: capability,
    phase: 'turn_start',
    budget: { max_invocations_per_dispatch: 1, max_result_bytes: 16384 },
    failure_policy: 'isolate',
    requested_read_scope: [],
    requested_write_scope: scopesOf(options) as ShippedTurnStartWriteScope[],
    required_read: {
      kind: `${capability}_drain`,
      command: commandOf(capability, options),
      reason: 'Fresh messages arrived before this turn.',
      ordering: 'before_work',
    },
  }
}

const V0_STATUS: Record<TurnStartStatus, Status> = {
  ok: 'ok',
  empty: 'empty',
  partial: 'partial',
  provider_unavailable: 'unavailable',
  timed_out: 'unavailable',
  provider_contract_error: 'failed',
  provider_permission_denied: 'failed',
}

const SHIPPED_STATUS: Record<ShippedTurnStartResult['status'], Status> = {
  observed: 'ok',
  empty: 'empty',
  not_applicable: 'empty',
  partial: 'partial',
  unavailable: 'unavailable',
  failed: 'failed',
}

/**
 * A v0 receipt as a LoopX result, field by field, without repairing it: an
 * `empty` claims no read (LoopX forbids it; core's recount of the inbox
 * stands in), a failure status claims none either, and a receipt that lies
 * (`ok` with observations and no read) stays a lie LoopX's rules reject.
 */
export function shippedResult(
  registration: ShippedTurnStartRegistrationV1,
  r: TurnStartReceipt,
): ShippedTurnStartResult {
  const status =
    r.status === 'ok' ? 'observed' : r.status === 'empty' || r.status === 'partial' ? r.status : V0_STATUS[r.status]
  const failure = status === 'unavailable' || status === 'failed'
  const observations = failure || status === 'empty' ? 0 : r.observations_new
  return {
    schema_version: 'loopx_turn_start_capability_hook_result_v0',
    hook_id: registration.hook_id,
    capability_id: registration.capability_id,
    phase: 'turn_start',
    status: status as ShippedTurnStartResult['status'],
    observation_count: observations,
    agent_read_required: failure || status === 'empty' ? false : r.agent_read_required,
    external_reads_performed: r.routes_ok + r.routes_failed > 0,
    external_writes_performed: r.external_writes_performed > 0,
    local_private_state_mutated: observations > 0,
    private_content_returned: false,
    provider_payload_returned: false,
    error_code: r.error_code,
  }
}

let turns = 0
const turnOf = (n: number) => ({ goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: `turn_${n}` })

export function request(maxUnits = 2): TurnStartRequest {
  return { turn: turnOf(++turns), quota: { max_units: maxUnits } }
}

function v0View(outcome: TurnStartOutcome): View {
  for (const h of outcome.hooks) expectValid(validateTurnStartReceipt(h.receipt), h.hookId)
  const hooks = outcome.hooks.map((h): HookView => ({
    hookId: h.hookId,
    status: V0_STATUS[h.receipt.status],
    errorCode: h.receipt.error_code,
    observations: h.receipt.observations_new,
    pending: h.receipt.pending,
    readRequired: h.receipt.agent_read_required,
  }))
  return {
    admitted: outcome.admitted,
    hooks,
    hook: hooks[0]!,
    reads: [...new Set(outcome.requiredReads.map((r) => r.command))],
    lane: outcome.lane,
    raw: { runtime: 'v0', outcome },
  }
}

function shippedView(outcome: ShippedTurnStartOutcome): View {
  const { document } = outcome
  expectValid(validateShippedTurnStartDispatch(document), 'dispatch')
  const hooks = outcome.hooks.map((h): HookView => {
    const result = document.results.find((r) => r.hook_id === h.hook_id)
    const failure = document.failures.find((f) => f.hook_id === h.hook_id)
    return {
      hookId: h.hook_id,
      status: result ? SHIPPED_STATUS[result.status] : 'failed',
      errorCode: result ? result.error_code : failure!.error_code,
      observations: h.observations_new,
      pending: h.pending,
      readRequired: h.read_required,
    }
  })
  return {
    admitted: !document.failures.some((f) => f.error_code === 'registration_rejected'),
    hooks,
    hook: hooks[0]!,
    reads: [...new Set(outcome.requiredReads.map((r) => r.command))],
    lane: outcome.lane,
    raw: { runtime: 'shipped', outcome },
  }
}

/** A runtime that publishes a document its own validator refuses is broken whatever the row asserts. */
function expectValid(verdict: { ok: boolean; violations?: unknown }, what: string): void {
  if (!verdict.ok) throw new Error(`${what}: published an invalid document: ${JSON.stringify(verdict.violations)}`)
}

export const RUNTIMES: TurnStartRuntime[] = [
  {
    name: 'contract-v0 TurnStartKernel',
    kind: 'v0',
    open(inbox) {
      const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
      return {
        register: (capability, provider, options = {}) =>
          kernel.register({ registration: v0Registration(capability, options), provider }),
        dispatch: async (quota) => v0View(await kernel.dispatchTurnStart(request(quota))),
      }
    },
  },
  {
    name: 'loopx-shipped-v0 ShippedTurnStart',
    kind: 'shipped',
    open(inbox) {
      const turnStart = new ShippedTurnStart({ inbox, callLimitMs: TIMEOUT_MS })
      // The Turn the fake records its first reads against: LoopX's provider is told none.
      let turn = 0
      return {
        register(capability, provider, options = {}) {
          const registration = shippedRegistration(capability, options)
          turnStart.register({
            registration,
            provider: async (admitted, { signal, session }) => {
              const input: TurnStartHookInput = {
                hook_id: admitted.hook_id,
                capability_id: admitted.capability_id,
                turn: turnOf(turn),
                budget: budgetOf(options),
                write_scopes: scopesOf(options),
              }
              return shippedResult(registration, await provider(input, { signal, session }))
            },
          })
          return undefined
        },
        async dispatch(quota) {
          if (quota !== undefined) throw new Error('ShippedTurnStart takes no request: the host owns the quota')
          turn = ++turns
          return shippedView(await turnStart.dispatch())
        },
      }
    },
  },
]
