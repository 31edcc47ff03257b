// The owner-private inbox store through the JS API: its owner, its collector
// and a turn-start session (first reads, cursors and reactions exist only
// there), alone and under a turn-start provider: capture and dedupe, the self
// filter, first reads once, dispositions before ACK, reactions on read human
// messages only, cursors single-flight, its own file (never the public
// journal), and nothing of it in the public outcome.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import {
  HookJournal,
  InboxStore,
  TurnStartKernel,
  type CaptureInput,
  type MessageRef,
  type TurnStartContext,
  type TurnStartHookInput,
  type TurnStartHookRegistration,
  type TurnStartReceipt,
  type TurnStartSession,
} from '../lib/index.js'
import { inSession } from './support/inbox_session.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-inbox-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0
const path = () => join(dir, `inbox-${++n}.sqlite`)

const SECRET = 'the launch code is 0000'

function message(routeId: string, providerMessageId: string, more: Partial<CaptureInput> = {}): CaptureInput {
  return {
    routeId,
    providerMessageId,
    source: 'turn_start',
    sender: { kind: 'human', verifiedIdentity: `U_${providerMessageId}` },
    attention: 'ordinary',
    payload: { text: `${SECRET} (${providerMessageId})` },
    ...more,
  }
}

/** The same message as realtime collection captures it. */
const collected = (routeId: string, providerMessageId: string, more: Partial<CaptureInput> = {}): CaptureInput =>
  message(routeId, providerMessageId, { source: 'collector', ...more })

const ref = (routeId: string, providerMessageId: string): MessageRef => ({ routeId, providerMessageId })

async function code(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
  } catch (e: any) {
    return e.code
  }
  return undefined
}

describe('inbox store', () => {
  it('captures once per provider message identity and filters only the exact verified self', async () => {
    await using inbox = await InboxStore.open(path(), { selfIdentity: 'U_SELF' })
    const collector = inbox.collector()
    expect(await inSession(inbox, (session) => session.capture(message('r1', 'm1')))).toBe('captured')
    expect(await collector.capture(collected('r1', 'm1'))).toBe('duplicate')
    expect(
      await collector.capture(collected('r1', 'me', { sender: { kind: 'human', verifiedIdentity: 'U_SELF' } })),
    ).toBe('self_filtered')
    expect(
      await collector.capture(collected('r1', 'm2', { sender: { kind: 'unknown', verifiedIdentity: 'U_SELF' } })),
    ).toBe('captured')
    expect(await collector.capture(collected('r1', 'm3', { sender: { kind: 'human', verifiedIdentity: null } }))).toBe(
      'captured',
    )
    expect(await inbox.pendingCount()).toBe(3)
  })

  it('first reads once, dispositions before ACK, effect receipts for material ones', async () => {
    await using inbox = await InboxStore.open(path())
    await inbox.collector().capture(collected('r', 'q', { attention: 'direct_question' }))
    await inbox.collector().capture(collected('r', 'o'))
    expect(await inbox.ack(ref('r', 'q'))).toBe('not_read')
    expect(await inSession(inbox, (session) => session.recordFirstReads('turn_1'))).toEqual({
      observationsNew: 2,
      directQuestions: 1,
      verifiedReplies: 0,
      pending: 2,
    })
    expect(await inSession(inbox, (session) => session.recordFirstReads('turn_2'))).toEqual({
      observationsNew: 0,
      directQuestions: 0,
      verifiedReplies: 0,
      pending: 2,
    })
    const drained = await inbox.pending()
    expect(drained.map((m) => [m.providerMessageId, m.read, (m.payload as any).text])).toEqual([
      ['q', true, `${SECRET} (q)`],
      ['o', true, `${SECRET} (o)`],
    ])
    expect(await inbox.dispose(ref('r', 'q'), 'record_context')).toBe('recorded')
    expect(await inbox.ack(ref('r', 'q'))).toBe('effect_not_bound')
    expect(await inbox.dispose(ref('r', 'q'), 'record_context', 'effect_7')).toBe('recorded')
    expect(await inbox.ack(ref('r', 'q'))).toBe('acked')
    expect(await inbox.ack(ref('r', 'o'))).toBe('no_disposition')
    expect(await inbox.dispose(ref('r', 'o'), 'continue_current_work')).toBe('recorded')
    expect(await inbox.ack(ref('r', 'o'))).toBe('acked')
    expect(await inbox.pendingCount()).toBe(0)
  })

  it('reactions only after a turn-start read, once, failing closed when uncertain', async () => {
    const file = path()
    await using inbox = await InboxStore.open(file)
    await inbox.collector().capture(collected('r', 'm'))
    expect(await inSession(inbox, (session) => session.beginReaction(ref('r', 'm')))).toBe('not_read')
    await inSession(inbox, (session) => session.recordFirstReads('turn_1'))
    const first = await inSession(inbox, async (session) => [
      await session.reactionCandidates('collector_1', 4),
      await session.beginReaction(ref('r', 'm')),
      // In flight: no second create.
      await session.beginReaction(ref('r', 'm')),
    ])
    expect(first).toEqual([[ref('r', 'm')], 'proceed', 'in_flight'])
    // Never finished (a crash), past attemptStaleMs: uncertain, offered for its readback, no create.
    await using later = await InboxStore.open(file, { attemptStaleMs: 0 })
    const readback = await inSession(later, async (session) => [
      await session.reactionCandidates('collector_1', 4),
      await session.beginReaction(ref('r', 'm')),
      await session.resolveReaction(ref('r', 'm'), 'added'),
      await session.beginReaction(ref('r', 'm')),
    ])
    expect(readback).toEqual([[ref('r', 'm')], 'uncertain', 'recorded', 'already_added'])
  })

  it('cursors are single-flight and advance only after inbox readback', async () => {
    const file = path()
    await using a = await InboxStore.open(file)
    await using b = await InboxStore.open(file)
    // A claim outlives its session: its lease is in the file.
    const claim = await inSession(a, (session) => session.claimCursor('r', 'history', 60_000))
    if (claim.outcome !== 'claimed') throw new Error('not claimed')
    const other = await inSession(b, async (session) => [
      await session.claimCursor('r', 'history', 60_000),
      (await session.claimCursor('r', 'ack', 60_000)).outcome,
    ])
    expect(other).toEqual([{ outcome: 'busy' }, 'claimed'])
    const advance = (session: TurnStartSession) =>
      session.advanceCursor('r', 'history', claim.token, 'ts_2', [ref('r', 'm1')])
    expect(await inSession(a, advance)).toBe('missing_messages')
    await b.collector().capture(collected('r', 'm1'))
    expect(await inSession(a, advance)).toBe('advanced')
    expect(await b.cursor('r', 'history')).toBe('ts_2')
    expect(await b.cursor('r', 'ack')).toBe(null)
  })

  it('is its own file: the public journal and the inbox refuse each other', async () => {
    const inboxFile = path()
    await (await InboxStore.open(inboxFile)).close()
    expect(await code(HookJournal.open(inboxFile))).toBe('ERR_LOOPX_NOT_A_JOURNAL')
    const journalFile = path()
    await (await HookJournal.open(journalFile)).close()
    expect(await code(InboxStore.open(journalFile))).toBe('ERR_LOOPX_NOT_AN_INBOX')
  })

  it('misuse throws with a stable code and no private value', async () => {
    const inbox = await InboxStore.open(path())
    const long = 'x'.repeat(513)
    let error: any
    await inbox
      .collector()
      .capture(collected(long, 'm'))
      .catch((e) => (error = e))
    expect([error.code, error.message]).toEqual(['ERR_LOOPX_INVALID_ARGUMENT', 'invalid argument: routeId'])
    expect(await code(inbox.dispose(ref('r', 'm'), 'archive' as any))).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    await inbox.close()
    expect(await code(inbox.pendingCount())).toBe('ERR_LOOPX_INBOX_CLOSED')
  })
})

describe('a turn-start provider over the inbox', () => {
  it('captures, first-reads and reacts privately; the public outcome holds counts only', async () => {
    await using inbox = await InboxStore.open(path(), { selfIdentity: 'U_SELF' })
    const registration: TurnStartHookRegistration = {
      schema_version: 'loopx_turn_start_capability_hook_registration_v0',
      hook_id: 'team_inbox.turn_start_read',
      capability_id: 'team_inbox',
      phase: 'turn_start',
      required_read: { command: 'loopx inbox read --pending' },
      write_scopes: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
      budget: { timeout_ms: 2000, max_attempts_per_dispatch: 4, max_routes: 2 },
      failure_policy: 'isolate',
    }
    // A fake two-route provider: the routes' new messages, then reactions.
    const routes: Record<string, CaptureInput[]> = {
      chat: [message('chat', 'c1', { attention: 'direct_question' }), message('chat', 'c2')],
      mail: [message('mail', 'e1'), message('mail', 'self', { sender: { kind: 'human', verifiedIdentity: 'U_SELF' } })],
    }
    const reacted: string[] = []
    const provider = async (input: TurnStartHookInput, { session }: TurnStartContext): Promise<TurnStartReceipt> => {
      for (const messages of Object.values(routes)) for (const m of messages) await session!.capture(m)
      const reads = await session!.recordFirstReads(input.turn.turn_instance_id)
      let added = 0
      for (const m of await session!.reactionCandidates(input.hook_id, input.budget.max_attempts_per_dispatch)) {
        if ((await session!.beginReaction(m)) !== 'proceed') continue
        reacted.push(m.providerMessageId) // the provider's API call would be here
        await session!.finishReaction(m, 'added')
        added++
      }
      return {
        schema_version: 'loopx_turn_start_hook_receipt_v0',
        hook_id: input.hook_id,
        status: reads.observationsNew > 0 ? 'ok' : 'empty',
        error_code: null,
        agent_read_required: reads.pending > 0,
        observations_new: reads.observationsNew,
        pending: reads.pending,
        direct_questions: reads.directQuestions,
        verified_replies: reads.verifiedReplies,
        routes_ok: 2,
        routes_failed: 0,
        reactions_added: added,
        external_writes_performed: added,
      }
    }
    const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
    kernel.register({ registration, provider })
    const request = {
      turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: 'turn_1' },
      quota: { max_units: 1 },
    }
    const first = await kernel.dispatchTurnStart(request)
    expect(first.hooks[0]!.receipt).toMatchObject({
      status: 'ok',
      observations_new: 3,
      pending: 3,
      direct_questions: 1,
      reactions_added: 3,
    })
    expect(first.lane).toEqual({ decision: 'preempt_material_review', reason: 'direct_question' })
    expect(reacted.sort()).toEqual(['c1', 'c2', 'e1'])
    // The next turn: nothing new, no second reaction, the material still pending.
    const second = await kernel.dispatchTurnStart({ ...request, turn: { ...request.turn, turn_instance_id: 'turn_2' } })
    expect(second.hooks[0]!.receipt).toMatchObject({
      status: 'empty',
      observations_new: 0,
      pending: 3,
      reactions_added: 0,
    })
    expect(second.lane.reason).toBe('material_still_pending')
    expect(reacted).toHaveLength(3)
    // Nothing private reached the public outcome.
    const text = JSON.stringify([first, second])
    for (const secret of [SECRET, 'launch', 'chat', 'mail', 'c1', 'e1', 'U_SELF']) expect(text).not.toContain(secret)
  })
})
