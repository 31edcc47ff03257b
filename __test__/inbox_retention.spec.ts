// Issue 12, turn-start item 8: private content has a retention bound. The
// inbox's `retentionMs` (default 7 days) bounds how long an acknowledged
// message keeps its private payload; the counts and receipts are kept. The
// clock-driven cases (purged exactly after the setting) are the Rust tests in
// src/turn_start/inbox/retention.rs, with an injected clock; here the setting
// crosses the boundary and 0 purges at the acknowledgement.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { InboxStore, LoopxHooksError } from '../lib/index.js'
import { inSession } from './support/inbox_session.js'

const dir = mkdtempSync(join(tmpdir(), 'loopx-retention-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let n = 0

async function settled(options: { retentionMs?: number }) {
  const file = join(dir, `inbox-${++n}.sqlite`)
  const inbox = await InboxStore.open(file, options)
  const message = { routeId: 'route', providerMessageId: 'm1' }
  await inbox.collector().capture({
    ...message,
    source: 'collector',
    sender: { kind: 'human', verifiedIdentity: null },
    attention: 'ordinary',
    payload: { text: 'PRIVATE_MARKER_0451' },
  })
  await inSession(inbox, (session) => session.recordFirstReads('turn_1'))
  await inbox.dispose(message, 'no_follow_up')
  expect(await inbox.ack(message)).toBe('acked')
  return { inbox, file, message }
}

describe('private content has a retention bound', () => {
  it('retentionMs 0: the acknowledged payload is purged at once, and the counts and receipts are kept', async () => {
    const { inbox, file, message } = await settled({ retentionMs: 0 })
    expect(await inbox.retentionCounts()).toEqual({ ackedWithPayload: 0, ackedPurged: 1 })
    expect(await inbox.contains(message)).toBe(true)
    expect(await inbox.ack(message)).toBe('already_acked')
    expect(await inSession(inbox, (session) => session.recordFirstReads('turn_2'))).toMatchObject({
      observationsNew: 0,
      pending: 0,
    })
    await inbox.close()
    // Not in the file either (secure_delete; the WAL is checkpointed on close).
    for (const f of [file, `${file}-wal`]) {
      let bytes = ''
      try {
        bytes = readFileSync(f, 'latin1')
      } catch {
        // no WAL left after close
      }
      expect(bytes.includes('PRIVATE_MARKER_0451'), f).toBe(false)
    }
  })

  it('by default (7 days) a fresh acknowledgement keeps its payload, and purgeExpired purges nothing', async () => {
    const { inbox } = await settled({})
    expect(await inbox.purgeExpired()).toBe(0)
    expect(await inbox.retentionCounts()).toEqual({ ackedWithPayload: 1, ackedPurged: 0 })
    await inbox.close()
  })

  it('a retention outside 0..=10 years is refused with a coded error', async () => {
    for (const retentionMs of [-1, 11 * 366 * 24 * 3600 * 1000]) {
      const error = await InboxStore.open(join(dir, `bad-${++n}.sqlite`), { retentionMs }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(LoopxHooksError)
      expect((error as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    }
  })
})
