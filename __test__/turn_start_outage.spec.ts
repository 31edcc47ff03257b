// Issue 12, turn-start item 6: an outage does not drop the read obligation.
// The RFC's point is that durably pending material preempts work, so when a
// provider throws, times out or reports an outage, the kernel fails closed:
// with the inbox store attached it counts the durably pending messages
// itself; without one it reports the standing as unknown and still requires
// the read before work.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import {
  InboxStore,
  TurnStartKernel,
  validateTurnStartReceipt,
  type TurnStartHookRegistration,
  type TurnStartProviderFn,
} from '../lib/index.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-outage-'))
const stores: InboxStore[] = []
afterAll(async () => {
  for (const s of stores) await s.close()
  rmSync(dir, { recursive: true, force: true })
})
let n = 0

const registration: TurnStartHookRegistration = {
  schema_version: 'loopx_turn_start_capability_hook_registration_v0',
  hook_id: 'team_inbox.turn_start_read',
  capability_id: 'team_inbox',
  phase: 'turn_start',
  required_read: { command: 'loopx inbox read' },
  write_scopes: ['owner_private_inbox', 'owner_private_cursor'],
  budget: { timeout_ms: 200, max_attempts_per_dispatch: 2, max_routes: 2 },
  failure_policy: 'isolate',
}
const request = {
  turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: 'turn_1' },
  quota: { max_units: 1 },
}

async function inboxWith(pending: number): Promise<InboxStore> {
  const inbox = await InboxStore.open(join(dir, `inbox-${++n}.sqlite`))
  stores.push(inbox)
  for (let i = 0; i < pending; i++) {
    await inbox.collector().capture({
      routeId: 'route',
      providerMessageId: `m${i}`,
      source: 'collector',
      sender: { kind: 'human', verifiedIdentity: null },
      attention: 'ordinary',
      payload: { text: 'steer' },
    })
  }
  return inbox
}

const outages: [string, TurnStartProviderFn][] = [
  [
    'throws',
    () => {
      throw new Error('provider down')
    },
  ],
  ['times out', () => new Promise(() => {})],
  [
    'reports provider_unavailable',
    (input) => ({
      schema_version: 'loopx_turn_start_hook_receipt_v0',
      hook_id: input.hook_id,
      status: 'provider_unavailable',
      error_code: 'provider_unavailable',
      agent_read_required: false,
      observations_new: 0,
      pending: 0,
      direct_questions: 0,
      verified_replies: 0,
      routes_ok: 0,
      routes_failed: 1,
      reactions_added: 0,
      external_writes_performed: 0,
    }),
  ],
]

describe('an outage does not drop the read obligation', () => {
  it.each(outages)(
    'provider %s: the pending count comes from the inbox store, and pending material preempts work',
    async (_, provider) => {
      const inbox = await inboxWith(3)
      const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
      kernel.register({ registration, provider })
      const outcome = await kernel.dispatchTurnStart(request)
      const [hook] = outcome.hooks
      expect(hook!.pendingStanding).toBe('inbox_store')
      expect([hook!.receipt.pending, hook!.receipt.agent_read_required]).toEqual([3, true])
      expect(validateTurnStartReceipt(hook!.receipt).ok).toBe(true)
      expect(outcome.requiredReads).toEqual([
        { channel: 'agent', command: 'loopx inbox read', ordering: 'before_work' },
        { channel: 'cli', command: 'loopx inbox read', ordering: 'before_work' },
      ])
      expect(outcome.lane).toEqual({ decision: 'preempt_material_review', reason: 'material_still_pending' })
    },
  )

  it.each(outages)(
    'provider %s with no inbox store: the standing is unknown and the read is still required',
    async (_, provider) => {
      const kernel = new TurnStartKernel({ profile: { enabled: true } })
      kernel.register({ registration, provider })
      const outcome = await kernel.dispatchTurnStart(request)
      expect(outcome.hooks[0]!.pendingStanding).toBe('unknown')
      expect(outcome.requiredReads.map((r) => [r.channel, r.ordering])).toEqual([
        ['agent', 'before_work'],
        ['cli', 'before_work'],
      ])
      expect(outcome.lane).toEqual({ decision: 'notify_keep_selected', reason: 'standing_unknown' })
    },
  )

  it('an outage with nothing pending in the inbox store requires nothing', async () => {
    const inbox = await inboxWith(0)
    const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
    kernel.register({ registration, provider: outages[0]![1] })
    const outcome = await kernel.dispatchTurnStart(request)
    expect(outcome.hooks[0]!.pendingStanding).toBe('inbox_store')
    expect(outcome.requiredReads).toEqual([])
    expect(outcome.lane).toEqual({ decision: 'keep_selected', reason: 'nothing_to_read' })
  })
})
