// "Realtime collection cannot consume that [reaction] scope" (the turn-start
// RFC, Authority): the store's surface is split, so the promise does not
// depend on what the composition root hands to whom. The raw `InboxStore` is
// the owner's (drain, dispositions, ACK, retention); `InboxCollector` only
// captures, as realtime collection; first reads, cursor writes and reactions
// exist only on a turn-start session. Every removed method is tried on the
// store and the collector, typed and through `as any`, and on the addon's
// objects beneath them: each is absent or refused with a coded error, and the
// inbox is unchanged (no first read, no reaction attempt, no cursor).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { afterAll, describe, expect, it } from 'vitest'

import { NativeInboxCollector, NativeInboxStore } from '../index.js'
import { InboxCollector, InboxStore, LoopxHooksError, TurnStartKernel, type CaptureInput } from '../lib/index.js'
import { openNativeInbox } from '../lib/addon.js'
import { inSession } from './support/inbox_session.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-inbox-surface-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

const message = { routeId: 'route', providerMessageId: 'm1' }
const input = (source: CaptureInput['source'], providerMessageId = 'm1'): CaptureInput => ({
  routeId: 'route',
  providerMessageId,
  source,
  sender: { kind: 'human', verifiedIdentity: 'U_human' },
  attention: 'direct_question',
  payload: { text: 'can you look at this?' },
})

/** Each method a session keeps for itself, with arguments it would take. */
const SESSION_ONLY: [string, unknown[]][] = [
  ['recordFirstReads', ['made_up_turn']],
  ['claimCursor', ['route', 'history', 60_000]],
  ['advanceCursor', ['route', 'history', 'token', 'm1', [message]]],
  ['releaseCursor', ['route', 'history', 'token']],
  ['reactionCandidates', ['collector_realtime', 8]],
  ['beginReaction', [message]],
  ['finishReaction', [message, 'added']],
  ['resolveReaction', [message, 'added']],
]

/** What calling `name` on `target` did: `absent`, a coded refusal, or `succeeded`. */
async function attempt(target: object, name: string, args: unknown[]): Promise<string> {
  const method = (target as Record<string, unknown>)[name]
  if (typeof method !== 'function') return 'absent'
  try {
    await (method as (...a: unknown[]) => unknown).apply(target, args)
    return 'succeeded'
  } catch (error) {
    return error instanceof LoopxHooksError ? error.code : `uncoded: ${String(error)}`
  }
}

/**
 * Another process holding the file's write lock (SQLite's locks do not
 * separate two SQLite libraries in one process); `release` ends it.
 */
async function holdWriteLock(file: string): Promise<{ release: () => Promise<void> }> {
  const code =
    "const db = new (require('better-sqlite3'))(process.argv[1]); db.exec('BEGIN IMMEDIATE');" +
    "process.stdout.write('locked\\n'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0))"
  const child = spawn(process.execPath, ['-e', code, file], {
    cwd: join(__dirname, '..'),
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  await once(child.stdout, 'data')
  return {
    release: async () => {
      child.stdin.end()
      await once(child, 'exit')
    },
  }
}

describe('the inbox store surface is split', () => {
  it('neither the store nor its collector can record a first read, write a cursor or react; the inbox is unchanged', async () => {
    const file = join(dir, `inbox-${++n}.sqlite`)
    await using inbox = await InboxStore.open(file)
    const collector = inbox.collector()
    expect(collector).toBeInstanceOf(InboxCollector)
    expect(await collector.capture(input('collector'))).toBe('captured')

    const tried: Record<string, string> = {}
    for (const [target, label] of [
      [inbox, 'store'],
      [collector, 'collector'],
    ] as const) {
      for (const [name, args] of SESSION_ONLY) tried[`${label}.${name}`] = await attempt(target, name, args)
    }
    // A turn-start capture: the store has no capture; the collector refuses another source.
    tried['store.capture'] = await attempt(inbox, 'capture', [input('turn_start', 'm2')])
    tried['collector.capture'] = await attempt(collector, 'capture', [input('turn_start', 'm2')])
    // The addon's own objects on the same file, beneath the package's classes:
    // the same methods are absent, and core refuses the collector's turn-start capture.
    const native = await openNativeInbox(file)
    for (const [target, label] of [
      [native, 'native store'],
      [native.collector(), 'native collector'],
    ] as const) {
      for (const [name, args] of SESSION_ONLY)
        tried[`${label}.${name}`] = await attempt(target, name, [JSON.stringify({ args })])
    }
    tried['native store.capture'] = await attempt(native, 'capture', [JSON.stringify({ input: input('turn_start') })])
    tried['native collector.capture'] = await attempt(native.collector(), 'capture', [
      JSON.stringify({ input: input('turn_start', 'm2') }),
    ])
    await native.close()
    expect(tried).toEqual({
      ...Object.fromEntries(
        ['store', 'collector', 'native store', 'native collector'].flatMap((label) =>
          SESSION_ONLY.map(([name]) => [`${label}.${name}`, 'absent']),
        ),
      ),
      'store.capture': 'absent',
      'collector.capture': 'ERR_LOOPX_INVALID_ARGUMENT',
      'native store.capture': 'absent',
      'native collector.capture': 'ERR_LOOPX_INVALID_ARGUMENT',
    })
    // The napi classes themselves hold none of them.
    const methods = (c: { prototype: object }) =>
      Object.getOwnPropertyNames(c.prototype).filter((m) => m !== 'constructor')
    expect(methods(NativeInboxCollector)).toEqual(['capture'])
    for (const [name] of [...SESSION_ONLY, ['capture']]) expect(methods(NativeInboxStore), name).not.toContain(name)
    const refused = await collector.capture(input('turn_start', 'm2')).catch((e: LoopxHooksError) => e.message)
    expect(refused).toBe('invalid argument: source')

    // Unchanged: one message, unread, no cursor.
    expect((await inbox.pending()).map((m) => [m.providerMessageId, m.source, m.read])).toEqual([
      ['m1', 'collector', false],
    ])
    expect(await inbox.cursor('route', 'history')).toBe(null)
    // A granted session then finds the message unread and its reaction never attempted.
    const granted = await inSession(inbox, async (session, hook) => [
      (await session.recordFirstReads(hook.turn.turn_instance_id)).observationsNew,
      await session.reactionCandidates('collector_realtime', 8),
      await session.beginReaction(message),
    ])
    expect(granted).toEqual([1, [message], 'proceed'])
  })

  it('a collector is no store: the kernel refuses it as its inbox', async () => {
    await using inbox = await InboxStore.open(join(dir, `inbox-${++n}.sqlite`))
    let code: string | undefined
    try {
      new TurnStartKernel({ profile: { enabled: true }, inbox: inbox.collector() as any })
    } catch (error) {
      code = (error as LoopxHooksError).code
    }
    expect(code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
  })

  it('a closed store closes its collector; a busy file keeps its code', async () => {
    const file = join(dir, `inbox-${++n}.sqlite`)
    const inbox = await InboxStore.open(file, { busyTimeoutMs: 0 })
    const collector = inbox.collector()
    // Another process holds the write lock: the collector's capture is busy, and writes nothing.
    const lock = await holdWriteLock(file)
    expect(await attempt(collector, 'capture', [input('collector')])).toBe('ERR_LOOPX_INBOX_BUSY')
    await lock.release()
    expect(await inbox.pendingCount()).toBe(0)
    expect(await attempt(collector, 'capture', [input('collector')])).toBe('succeeded')
    await inbox.close()
    expect(await attempt(collector, 'capture', [input('collector')])).toBe('ERR_LOOPX_INBOX_CLOSED')
  })
})
