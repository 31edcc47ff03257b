// Ids round-trip through the CLI: a table piped to another command prints
// whole ids (a terminal gets them shortened), and every id flag takes a whole
// id or a unique prefix, the shortened form included. A malformed, unknown
// or ambiguous id is ERR_LOOPX_INVALID_ARGUMENT with exit 2: never an empty
// list, and the value is never printed back unless it is an id's prefix.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import type { StoredIntent } from '../lib/index.js'
import { main, type Io } from '../lib/cli.js'
import { resolveId } from '../lib/cli/ids.js'
import type { HookJournal } from '../lib/journal.js'
import { Fixtures, goodProvider, registration, request, type HookRuntime } from './support/runtime'

const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '' } })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** `pwi_1234abcd…`, as a terminal's table shows an id. */
const shown = (id: string) => `${id.slice(0, 12)}…`

async function onTerminal(args: string[]): Promise<string> {
  let stdout = ''
  const io: Io = {
    stdout: { write: (s: string) => (stdout += s), isTTY: true },
    stderr: { write: () => true },
    stdin: (async function* () {})(),
    env: { NO_COLOR: '1' },
  }
  expect(await main(args, io)).toBe(0)
  return stdout
}

const fx = new Fixtures()
let runtime: HookRuntime
let db: string
let intents: StoredIntent[]

beforeAll(async () => {
  const opened = await fx.runtime({ capabilities: ['alpha'] })
  runtime = opened.runtime
  db = opened.journalPath
  runtime.register({ registration: registration('alpha.a'), provider: goodProvider() })
  for (const n of [1, 2, 3]) await runtime.dispatch(request({ receipt: { receipt_id: `receipt_000${n}` } }))
  intents = (await runtime.journal.listIntents({ limit: 100 })).items
  expect(intents).toHaveLength(3)
})
afterAll(() => fx.cleanup())

const badArgument = (r: { status: number | null; stdout: string; stderr: string }, pattern: RegExp) => {
  expect(r.status, r.stderr).toBe(2)
  expect(r.stdout).toBe('')
  expect(r.stderr).toMatch(/^loopx-hooks: ERR_LOOPX_INVALID_ARGUMENT: invalid argument: [^\n]+\n$/)
  expect(r.stderr).toMatch(pattern)
}

describe('CLI ids', () => {
  it('a piped table holds whole ids; a terminal shortens them', async () => {
    const piped = cli(['journal', 'intents', '--db', db])
    expect(piped.status).toBe(0)
    for (const i of intents) {
      expect(piped.stdout).toContain(i.intentId)
      expect(piped.stdout).toContain(i.dispatchId)
    }
    const terminal = await onTerminal(['journal', 'intents', '--db', db])
    for (const i of intents) {
      expect(terminal).toContain(shown(i.intentId))
      expect(terminal).not.toContain(i.intentId)
    }
    const dispatches = cli(['journal', 'dispatches', '--db', db]).stdout
    for (const i of intents) expect(dispatches).toContain(i.dispatchId)
  })

  it('decide and done take what a terminal table shows, and a shorter unique prefix', async () => {
    const [first, second] = intents
    const decided = cli([
      'journal',
      'decide',
      '--db',
      db,
      '--intent',
      shown(first!.intentId),
      '--executor',
      'alpha.x',
      '--decision',
      'admit',
      '--reason',
      'ok_by_policy',
    ])
    expect([decided.status, decided.stdout, decided.stderr]).toStrictEqual([
      0,
      'decided: admit by alpha.x (ok_by_policy)\n',
      '',
    ])
    const done = cli(['journal', 'done', '--db', db, '--intent', first!.intentId.slice(0, 10), '--executor', 'alpha.x'])
    expect([done.status, done.stdout]).toStrictEqual([0, 'done\n'])
    const rows = (await runtime.journal.listIntents({ limit: 100 })).items
    expect(rows.map((i) => [i.intentId, i.decision, i.doneAt !== null])).toStrictEqual([
      [first!.intentId, 'admit', true],
      [second!.intentId, null, false],
      [intents[2]!.intentId, null, false],
    ])
  })

  it('intents --dispatch-id takes a prefix and answers exactly that dispatch', () => {
    for (const given of [shown(intents[1]!.dispatchId), intents[1]!.dispatchId.slice(0, 8), intents[1]!.dispatchId]) {
      const r = cli(['journal', 'intents', '--db', db, '--dispatch-id', given, '--json'])
      expect(r.status, r.stderr).toBe(0)
      expect((JSON.parse(r.stdout) as { items: StoredIntent[] }).items.map((i) => i.intentId)).toStrictEqual([
        intents[1]!.intentId,
      ])
    }
  })

  it('a malformed, unknown or too short id is an argument error, never an empty list', () => {
    const unknownHex = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f']
      .map((c) => c.repeat(6))
      .find((hex) => !intents.some((i) => i.dispatchId.startsWith(`pwh_${hex}`)))!
    const cases: [string, RegExp][] = [
      ['pwh_zz12', /--dispatch-id must be a dispatch id/],
      [`pwh_${unknownHex}`, new RegExp(`--dispatch-id: no dispatch id starts with pwh_${unknownHex}`)],
      [`pwh_${'0'.repeat(64)}`, /--dispatch-id: no dispatch pwh_0{64} in the journal/],
      ['pwh_ab', /at least 4 hex digits/],
      [intents[0]!.intentId, /--dispatch-id must be a dispatch id/],
    ]
    for (const [given, pattern] of cases) {
      badArgument(cli(['journal', 'intents', '--db', db, '--dispatch-id', given]), pattern)
      badArgument(cli(['journal', 'intents', '--db', db, '--dispatch-id', given, '--json']), pattern)
    }
    // A value that is no id is never repeated.
    const secret = 'sk_live_cliplanted0123456789'
    const r = cli([
      'journal',
      'decide',
      '--db',
      db,
      '--intent',
      secret,
      '--executor',
      'alpha.x',
      '--decision',
      'admit',
      '--reason',
      'ok',
    ])
    badArgument(r, /--intent must be an intent id/)
    expect(r.stderr).not.toContain(secret)
  })

  it('an ambiguous prefix is refused and names no candidate', async () => {
    const ids = ['pwi_abcd01', 'pwi_abcd02', 'pwi_abce03'].map((p) => p.padEnd(68, '0'))
    const journal = {
      listIntents: async () => ({ items: ids.map((intentId) => ({ intentId })), nextCursor: null }),
    } as unknown as HookJournal
    await expect(resolveId(journal, 'intent', '--intent', 'pwi_abcd')).rejects.toMatchObject({
      code: 'ERR_LOOPX_INVALID_ARGUMENT',
      message: 'invalid argument: --intent: pwi_abcd is ambiguous (more than one intent id starts with it)',
    })
    await expect(resolveId(journal, 'intent', '--intent', 'pwi_abce…')).resolves.toBe(ids[2])
  })
})
