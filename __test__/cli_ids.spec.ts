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
import { MIN_PREFIX, type IdKind } from '../lib/cli/ids.js'
import type { HookJournal } from '../lib/journal.js'
import {
  Fixtures,
  goodProvider,
  intent,
  proposed,
  registration,
  request,
  signalKind,
  type HookRuntime,
} from './support/runtime'

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

// ---------------------------------------------------------------- a crowded journal

/**
 * Enough ids that two share a prefix of MIN_PREFIX hex digits: each dispatch
 * runs HOOKS hooks (the most one dispatch calls) proposing CEILING intents in
 * all (the most one dispatch records). With about 1,000 ids of each kind out
 * of 16^4 prefixes a shared one is all but certain, and the inputs are fixed,
 * so every run derives the same ids.
 */
const HOOKS = 16
const CEILING = 64
const DISPATCHES = 64

/** Every id of `kind` in the journal, by its own listing. */
async function everyId(journal: HookJournal, kind: IdKind): Promise<string[]> {
  const ids: string[] = []
  for (let after: number | null | undefined; after !== null;) {
    const query = { limit: 1000, ...(after !== undefined ? { after } : {}) }
    const page =
      kind === 'intent'
        ? await journal.listIntents(query).then((p) => ({ ids: p.items.map((r) => r.intentId), next: p.nextCursor }))
        : await journal
            .listDispatches(query)
            .then((p) => ({ ids: p.items.map((r) => r.dispatchId), next: p.nextCursor }))
    ids.push(...page.ids)
    after = page.next
  }
  return ids
}

async function everyIntent(journal: HookJournal): Promise<StoredIntent[]> {
  const rows: StoredIntent[] = []
  for (let after: number | null | undefined; after !== null;) {
    const page = await journal.listIntents({ limit: 1000, ...(after !== undefined ? { after } : {}) })
    rows.push(...page.items)
    after = page.nextCursor
  }
  return rows
}

/**
 * The first two of `ids` (in sorted order) that share their first MIN_PREFIX
 * hex digits: that prefix, the two ids, and for each the shortest prefix no
 * other id starts with. Fails the test when no two share one.
 */
function collision(ids: string[], kind: IdKind): { prefix: string; ids: [string, string]; unique: [string, string] } {
  const sorted = [...ids].sort()
  const width = 'pwi_'.length + MIN_PREFIX
  const common = (a: string, b: string | undefined) => {
    let n = 0
    while (b !== undefined && n < a.length && a[n] === b[n]) n++
    return n
  }
  // An id shares its longest prefix with one of its neighbours in sorted order.
  const unique = (k: number) =>
    sorted[k]!.slice(0, Math.max(common(sorted[k]!, sorted[k - 1]), common(sorted[k]!, sorted[k + 1])) + 1)
  for (let k = 1; k < sorted.length; k++) {
    if (sorted[k - 1]!.slice(0, width) !== sorted[k]!.slice(0, width)) continue
    return {
      prefix: sorted[k]!.slice(0, width),
      ids: [sorted[k - 1]!, sorted[k]!],
      unique: [unique(k - 1), unique(k)],
    }
  }
  throw new Error(
    `no two of the journal's ${ids.length} ${kind} ids share a prefix of ${MIN_PREFIX} hex digits: dispatch more (DISPATCHES) or change the inputs`,
  )
}

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
    // A journal of its own: the suite's other tests count the intents of theirs.
    const crowded = await fx.runtime({
      capabilities: ['alpha'],
      profile: { maxHooksPerDispatch: HOOKS, maxIntentsPerDispatch: CEILING },
    })
    const journal = crowded.runtime.journal
    const crowdedDb = crowded.journalPath
    const kind = signalKind('alpha')
    for (let h = 0; h < HOOKS; h++) {
      crowded.runtime.register({
        registration: registration(`alpha.h${String(h).padStart(2, '0')}`, {
          budget: { max_intents_per_dispatch: CEILING / HOOKS },
        }),
        provider: (input) =>
          proposed(
            Array.from({ length: CEILING / HOOKS }, (_, level) =>
              intent(input, kind, {
                operation: 'evaluate',
                policyVersion: 'v0',
                payload: { ref: input.source.receipt_id, refs: [...input.projection.fact_refs], level },
              }),
            ),
          ),
      })
    }
    for (let n = 1; n <= DISPATCHES; n++) {
      const outcome = await crowded.runtime.dispatch(
        request({ receipt: { receipt_id: `receipt_${String(n).padStart(4, '0')}` } }),
      )
      expect(outcome.hooks.map((h) => h.outcome)).toStrictEqual(Array(HOOKS).fill('recorded'))
    }
    const intentIds = await everyId(journal, 'intent')
    const dispatchIds = await everyId(journal, 'dispatch')
    expect(intentIds).toHaveLength(DISPATCHES * CEILING)
    expect(dispatchIds).toHaveLength(DISPATCHES * HOOKS)

    // --intent: the shared prefix (as typed, and as a shortened id) decides nothing.
    const i = collision(intentIds, 'intent')
    const decide = (given: string) =>
      cli([
        'journal',
        'decide',
        '--db',
        crowdedDb,
        '--intent',
        given,
        '--executor',
        'alpha.x',
        '--decision',
        'admit',
        '--reason',
        'ok_by_policy',
      ])
    for (const given of [i.prefix, `${i.prefix}…`]) {
      const r = decide(given)
      badArgument(r, /ambiguous/)
      expect(r.stderr).toBe(
        `loopx-hooks: ERR_LOOPX_INVALID_ARGUMENT: invalid argument: --intent: ${i.prefix} is ambiguous (more than one intent id starts with it)\n`,
      )
      for (const id of i.ids) expect(r.stderr).not.toContain(id.slice(0, i.prefix.length + 1))
    }
    expect((await everyIntent(journal)).filter((row) => row.decision !== null)).toStrictEqual([])
    // A longer prefix unique to each of them decides exactly that intent.
    for (const [k, unique] of i.unique.entries()) {
      expect(unique.length).toBeLessThan(i.ids[k]!.length)
      expect(decide(unique)).toStrictEqual({
        status: 0,
        stdout: 'decided: admit by alpha.x (ok_by_policy)\n',
        stderr: '',
      })
      const decided = (await everyIntent(journal)).filter((row) => row.decision !== null).map((row) => row.intentId)
      expect(decided.sort()).toStrictEqual(i.ids.slice(0, k + 1).sort())
    }

    // --dispatch-id: the shared prefix lists nothing; a longer one lists that dispatch's intents.
    const d = collision(dispatchIds, 'dispatch')
    for (const format of [[], ['--json']]) {
      const r = cli(['journal', 'intents', '--db', crowdedDb, '--dispatch-id', d.prefix, ...format])
      badArgument(r, /ambiguous/)
      expect(r.stderr).toBe(
        `loopx-hooks: ERR_LOOPX_INVALID_ARGUMENT: invalid argument: --dispatch-id: ${d.prefix} is ambiguous (more than one dispatch id starts with it)\n`,
      )
      for (const id of d.ids) expect(r.stderr).not.toContain(id.slice(0, d.prefix.length + 1))
    }
    for (const [k, unique] of d.unique.entries()) {
      expect(unique.length).toBeLessThan(d.ids[k]!.length)
      const r = cli(['journal', 'intents', '--db', crowdedDb, '--dispatch-id', unique, '--json'])
      expect(r.status, r.stderr).toBe(0)
      const listed = (JSON.parse(r.stdout) as { items: StoredIntent[] }).items
      expect(listed).toHaveLength(CEILING / HOOKS)
      expect(listed.map((row) => row.dispatchId)).toStrictEqual(Array(CEILING / HOOKS).fill(d.ids[k]))
    }
  })
})
