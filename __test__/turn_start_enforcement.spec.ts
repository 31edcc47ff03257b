// Turn-start enforcement across the boundary: a session closes the moment
// its hook's call ends, whatever else the dispatch still runs; any text a
// provider can hand over is captured (a lone surrogate becomes U+FFFD),
// argument errors name the argument, an identity that cannot match fails
// open to capture; purged private text is gone from every file of the inbox,
// after a crash and in a live reopened store. Each test quotes the RFC
// sentence it holds; every receipt a dispatch here publishes passes core's
// own validator. The rules themselves are tested where they live, in
// src/turn_start/tests/kernel/session/enforcement.rs.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterAll, describe, expect, it } from 'vitest'

import {
  InboxStore,
  LoopxHooksError,
  TurnStartKernel,
  validateTurnStartReceipt,
  type CaptureInput,
  type TurnStartHookRegistration,
  type TurnStartOutcome,
  type TurnStartProviderFn,
  type TurnStartReceipt,
  type TurnStartSession,
} from '../lib/index.js'
import { inSession } from './support/inbox_session.js'

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'children', 'inbox-purger.mjs')
const dir = mkdtempSync(join(tmpdir(), 'loopx-enforce-'))
const stores: InboxStore[] = []
afterAll(async () => {
  for (const s of stores) await s.close()
  rmSync(dir, { recursive: true, force: true })
})
let n = 0

function registration(capability: string, timeoutMs = 3000): TurnStartHookRegistration {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v0',
    hook_id: `${capability}.turn_start_read`,
    capability_id: capability,
    phase: 'turn_start',
    required_read: { command: 'loopx inbox read' },
    write_scopes: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
    budget: { timeout_ms: timeoutMs, max_attempts_per_dispatch: 4, max_routes: 2 },
    failure_policy: 'isolate',
  }
}

const request = {
  turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: 'turn_1' },
  quota: { max_units: 1 },
}

function empty(hookId: string): TurnStartReceipt {
  return {
    schema_version: 'loopx_turn_start_hook_receipt_v0',
    hook_id: hookId,
    status: 'empty',
    error_code: null,
    agent_read_required: true,
    observations_new: 0,
    pending: 1,
    direct_questions: 0,
    verified_replies: 0,
    routes_ok: 1,
    routes_failed: 0,
    reactions_added: 0,
    external_writes_performed: 0,
  }
}

const message = (id: string) => ({ routeId: 'route', providerMessageId: id })
const capture = (id: string, text = 'hello'): CaptureInput => ({
  ...message(id),
  source: 'turn_start',
  sender: { kind: 'human', verifiedIdentity: null },
  attention: 'ordinary',
  payload: { text },
})
/** The same message as realtime collection captures it (`InboxStore.collector()`). */
const collected = (id: string, text = 'hello'): CaptureInput => ({ ...capture(id, text), source: 'collector' })

async function errorOf(promise: Promise<unknown>): Promise<{ code: string; message: string } | undefined> {
  try {
    await promise
    return undefined
  } catch (error) {
    if (!(error instanceof LoopxHooksError)) return { code: 'not a LoopxHooksError', message: String(error) }
    return { code: error.code, message: error.message }
  }
}

async function openInbox(options = {}): Promise<InboxStore> {
  const inbox = await InboxStore.open(join(dir, `inbox-${++n}.sqlite`), options)
  stores.push(inbox)
  return inbox
}

function published(outcome: TurnStartOutcome): TurnStartOutcome {
  for (const hook of outcome.hooks)
    expect(validateTurnStartReceipt(hook.receipt), hook.hookId).toMatchObject({ ok: true })
  return outcome
}

describe('a session closes the moment its hook call ends', () => {
  // A session "lives exactly as long as the call": docs/turn-start.md promises
  // ERR_LOOPX_SESSION_CLOSED once the invocation ends, and no reaction can be
  // created after a timeout while a later hook of the same dispatch runs.
  for (const ending of ['timed out', 'threw'] as const) {
    it(`after hook A ${ending}, its session refuses capture, readRoute and beginReaction while hook B runs`, async () => {
      const inbox = await openInbox()
      await inbox.collector().capture(collected('m1'))
      await inSession(inbox, (session) => session.recordFirstReads('turn_0'))
      const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
      let kept: TurnStartSession | undefined
      const a: TurnStartProviderFn = async (input, { session }) => {
        kept = session
        if (ending === 'threw') throw new Error('provider failed')
        await new Promise((resolve) => setTimeout(resolve, 2000))
        return empty(input.hook_id)
      }
      const codes: (string | undefined)[] = []
      const b: TurnStartProviderFn = async (input) => {
        const late = kept!
        for (const call of [
          late.capture(capture('late')),
          late.readRoute('route'),
          late.beginReaction(message('m1')),
          late.recordFirstReads('turn_late'),
        ])
          codes.push((await errorOf(call))?.code)
        return empty(input.hook_id)
      }
      kernel.register({ registration: registration('alpha', 100), provider: a })
      kernel.register({ registration: registration('beta'), provider: b })
      const outcome = published(await kernel.dispatchTurnStart(request))
      expect(outcome.hooks[0]!.receipt.status).toBe(ending === 'timed out' ? 'timed_out' : 'provider_contract_error')
      expect(codes).toEqual(Array(4).fill('ERR_LOOPX_SESSION_CLOSED'))
      expect(await inbox.contains(message('late'))).toBe(false)
      // No attempt was recorded after the call ended: the reaction is still open to a first attempt.
      expect(await inSession(inbox, (session) => session.beginReaction(message('m1')))).toBe('proceed')
    })
  }
})

describe('any text a provider can hand over is captured; argument errors name the argument', () => {
  it('a lone surrogate in the text (a truncated emoji) is captured as U+FFFD, through a session and a collector', async () => {
    const inbox = await openInbox()
    const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
    kernel.register({
      registration: registration('alpha'),
      provider: async (input, { session }) => {
        expect(await session!.capture(capture('s1', 'cut \ud83d'))).toBe('captured')
        await session!.recordFirstReads('turn_1')
        return { ...empty(input.hook_id), status: 'ok', observations_new: 1 }
      },
    })
    published(await kernel.dispatchTurnStart(request))
    expect(await inbox.collector().capture(collected('s2', 'tail \udc00 and a whole \ud83d\ude00'))).toBe('captured')
    const texts = (await inbox.pending()).map((m) => (m.payload as { text: string }).text)
    expect(texts).toEqual(['cut \ufffd', 'tail \ufffd and a whole \ud83d\ude00'])
  })

  it('a lone surrogate in an identity is refused naming the argument (camelCase, as the caller spells it)', async () => {
    const inbox = await openInbox()
    const collector = inbox.collector()
    const cases: [() => Promise<unknown>, string][] = [
      [() => collector.capture({ ...collected('x'), providerMessageId: 'm\ud800' }), 'providerMessageId'],
      [() => collector.capture({ ...collected('x'), routeId: '\udfff' }), 'routeId'],
      [() => inbox.contains({ routeId: 'route', providerMessageId: '\ud83d' }), 'providerMessageId'],
      [() => inSession(inbox, (session) => session.recordFirstReads('turn\ud800')), 'readRef'],
      [() => inSession(inbox, (session) => session.reactionCandidates('', 1)), 'collectorId'],
      [() => collector.capture({ ...collected('x'), sender: { kind: 'robot' } } as unknown as CaptureInput), 'sender'],
      // A collector captures only as realtime collection.
      [() => collector.capture(capture('x')), 'source'],
    ]
    for (const [call, name] of cases) {
      expect(await errorOf(call())).toEqual({
        code: 'ERR_LOOPX_INVALID_ARGUMENT',
        message: `invalid argument: ${name}`,
      })
    }
    expect(await inbox.pendingCount()).toBe(0)
  })

  // "unresolved identity fails open to capture"
  it('a self-filter identity that cannot match (empty, over 512 bytes, a lone surrogate) fails open to capture', async () => {
    const cannotMatch = ['', 'U'.repeat(513), 'U_SELF\ud800']
    for (const own of cannotMatch) {
      const inbox = await openInbox({ selfIdentity: own })
      for (const [i, sender] of [...cannotMatch, own].entries()) {
        const input = { ...collected(`m${i}`), sender: { kind: 'human' as const, verifiedIdentity: sender } }
        expect(await inbox.collector().capture(input), JSON.stringify([own.length, sender.length])).toBe('captured')
      }
    }
    // An identity that can match still filters.
    const inbox = await openInbox({ selfIdentity: 'U_SELF' })
    const self = { ...collected('own'), sender: { kind: 'human' as const, verifiedIdentity: 'U_SELF' } }
    expect(await inbox.collector().capture(self)).toBe('self_filtered')
  })
})

describe('purged private text is gone from every file of the inbox', () => {
  const files = (path: string) => [path, `${path}-wal`, `${path}-shm`]
  const holding = (path: string, text: string) =>
    files(path).filter((f) => {
      try {
        return readFileSync(f).includes(Buffer.from(text))
      } catch {
        return false
      }
    })

  // "Private content has a retention bound" (docs/turn-start.md): after the purge, not in
  // the db, the -wal or the -shm, whether the purging process died or not.
  it('after the purging process is SIGKILLed, and in a live reopened store', async () => {
    const path = join(dir, `purged-${++n}.sqlite`)
    const [purged, kept] = ['PURGED_MARKER_7311', 'KEPT_MARKER_7312']
    const child = spawnSync(process.execPath, [CHILD, path, purged, kept], { encoding: 'utf8', timeout: 30_000 })
    expect(child.signal).toBe('SIGKILL')
    expect(JSON.parse(child.stdout.trim())).toEqual({
      t: 'purged',
      acked: 'acked',
      counts: { ackedWithPayload: 0, ackedPurged: 1 },
    })
    // The scan finds what is still there: the pending message's text.
    expect(holding(path, kept).length).toBeGreaterThan(0)
    expect(holding(path, purged)).toEqual([])
    const live = await InboxStore.open(path, { retentionMs: 0 })
    stores.push(live)
    expect(await live.pendingCount()).toBe(1)
    expect(holding(path, purged)).toEqual([])
    // A purge in the live store: gone while it stays open, and kept text was findable before.
    const m2 = message('m2')
    expect(holding(path, kept).length).toBeGreaterThan(0)
    await live.dispose(m2, 'no_follow_up')
    expect(await live.ack(m2)).toBe('acked')
    expect(holding(path, kept)).toEqual([])
    expect(holding(path, purged)).toEqual([])
  })
})
