// Issue 12, turn-start item 7: budgets and scopes are enforced by core, not
// self-reported. With an inbox store attached, each provider call gets a
// session: a write outside the registration's scopes is a coded error, a
// realtime-collection capture cannot use it (so never the reaction scope),
// route reads and reaction attempts are counted and bounded by core, core's
// counts stand over an under-reporting receipt, and the session is refused
// once the invocation is over.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import {
  InboxStore,
  LoopxHooksError,
  TurnStartKernel,
  type TurnStartHookRegistration,
  type TurnStartProviderFn,
  type TurnStartReceipt,
  type TurnStartSession,
} from '../lib/index.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-session-'))
const stores: InboxStore[] = []
afterAll(async () => {
  for (const s of stores) await s.close()
  rmSync(dir, { recursive: true, force: true })
})
let n = 0

type Scope = TurnStartHookRegistration['write_scopes'][number]

function registration(scopes: Scope[], attempts = 4, routes = 2): TurnStartHookRegistration {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v0',
    hook_id: 'team_inbox.turn_start_read',
    capability_id: 'team_inbox',
    phase: 'turn_start',
    required_read: { command: 'loopx inbox read' },
    write_scopes: scopes,
    budget: { timeout_ms: 3000, max_attempts_per_dispatch: attempts, max_routes: routes },
    failure_policy: 'isolate',
  }
}

const request = {
  turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: 'turn_1' },
  quota: { max_units: 1 },
}

function receipt(hookId: string, counts: Partial<TurnStartReceipt> = {}): TurnStartReceipt {
  return {
    schema_version: 'loopx_turn_start_hook_receipt_v0',
    hook_id: hookId,
    status: 'empty',
    error_code: null,
    agent_read_required: false,
    observations_new: 0,
    pending: 0,
    direct_questions: 0,
    verified_replies: 0,
    routes_ok: 1,
    routes_failed: 0,
    reactions_added: 0,
    external_writes_performed: 0,
    ...counts,
  }
}

const message = (id: string) => ({ routeId: 'route', providerMessageId: id })
const captureInput = (id: string, source: 'turn_start' | 'collector') => ({
  ...message(id),
  source,
  sender: { kind: 'human' as const, verifiedIdentity: null },
  attention: 'ordinary' as const,
  payload: { text: 'hello' },
})

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
    return undefined
  } catch (error) {
    return error instanceof LoopxHooksError ? error.code : 'not a LoopxHooksError'
  }
}

async function run(reg: TurnStartHookRegistration, provider: TurnStartProviderFn) {
  const inbox = await InboxStore.open(join(dir, `inbox-${++n}.sqlite`))
  stores.push(inbox)
  const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
  kernel.register({ registration: reg, provider })
  return { inbox, outcome: await kernel.dispatchTurnStart(request) }
}

describe('budgets and scopes are enforced by core, not self-reported', () => {
  it('a write outside the registration scopes is a coded error', async () => {
    const codes: (string | undefined)[] = []
    const { inbox } = await run(registration(['owner_private_inbox']), async (input, { session }) => {
      codes.push(await codeOf(session!.capture(captureInput('m1', 'turn_start'))))
      codes.push(await codeOf(session!.claimCursor('route', 'history', 1000)))
      codes.push(await codeOf(session!.beginReaction(message('m1'))))
      codes.push(await codeOf(session!.reactionCandidates('collector', 2)))
      return receipt(input.hook_id)
    })
    expect(codes).toEqual([
      undefined,
      'ERR_LOOPX_SCOPE_NOT_GRANTED',
      'ERR_LOOPX_SCOPE_NOT_GRANTED',
      'ERR_LOOPX_SCOPE_NOT_GRANTED',
    ])
    expect(await inbox.cursor('route', 'history')).toBeNull()
  })

  it('a realtime-collection capture cannot use the reaction scope (no session capture from the collector)', async () => {
    let code: string | undefined
    const all: Scope[] = ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction']
    const { inbox } = await run(registration(all), async (input, { session }) => {
      code = await codeOf(session!.capture(captureInput('c1', 'collector')))
      return receipt(input.hook_id)
    })
    expect(code).toBe('ERR_LOOPX_SCOPE_NOT_GRANTED')
    expect(await inbox.contains(message('c1'))).toBe(false)
  })

  it('core counts and bounds route reads and reaction attempts, and its count of writes stands', async () => {
    const all: Scope[] = ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction']
    const seen: (string | undefined)[] = []
    const { outcome } = await run(registration(all, 3, 2), async (input, { session }) => {
      const s = session as TurnStartSession
      seen.push(await codeOf(s.readRoute('a')), await codeOf(s.readRoute('b')), await codeOf(s.readRoute('c')))
      await s.capture(captureInput('m1', 'turn_start'))
      await s.capture(captureInput('m2', 'turn_start'))
      await s.recordFirstReads('turn_1')
      expect(await s.beginReaction(message('m1'))).toBe('proceed')
      seen.push(await codeOf(s.beginReaction(message('m2'))))
      await s.finishReaction(message('m1'), 'added')
      // The receipt says no writes; core counted one.
      return receipt(input.hook_id, {
        routes_ok: 2,
        pending: 2,
        observations_new: 2,
        status: 'ok',
        agent_read_required: true,
      })
    })
    expect(seen).toEqual([undefined, undefined, 'ERR_LOOPX_BUDGET_EXHAUSTED', 'ERR_LOOPX_BUDGET_EXHAUSTED'])
    const r = outcome.hooks[0]!.receipt
    expect([r.external_writes_performed, r.reactions_added]).toEqual([1, 1])
  })

  it('a session is refused once its invocation is over', async () => {
    let kept: TurnStartSession | undefined
    const { inbox } = await run(registration(['owner_private_inbox']), (input, { session }) => {
      kept = session
      return receipt(input.hook_id)
    })
    expect(await codeOf(kept!.capture(captureInput('late', 'turn_start')))).toBe('ERR_LOOPX_SESSION_CLOSED')
    expect(await inbox.contains(message('late'))).toBe(false)
  })

  it('without an inbox store there is no session, and the input carries no token', async () => {
    const kernel = new TurnStartKernel({ profile: { enabled: true } })
    const calls: [unknown, unknown][] = []
    kernel.register({
      registration: registration(['owner_private_inbox']),
      provider: (input, { session }) => {
        calls.push([Object.keys(input).includes('session'), session])
        return receipt(input.hook_id)
      },
    })
    await kernel.dispatchTurnStart(request)
    expect(calls).toEqual([[false, undefined]])
  })
})
