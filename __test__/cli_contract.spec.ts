// The CLI's contract with a shell (docs/cli.md): exit 2 for each kind of
// usage error and exit 1 for operational failures, one flag per concept and
// the renamed command named by its old name, and `--json` printing the very
// value the library returns for the same call (decide and done on two
// byte-identical copies of one journal, one through the CLI, one through
// HookJournal).
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { HookJournal, HookRuntime, type DecideOutcome, type DoneOutcome } from '../lib/index.js'
import { TempDir, goodProvider, registration, request, signalKind } from './support/runtime.js'

const BIN = join(__dirname, '..', 'bin', 'loopx-hooks.js')

interface Run {
  status: number | null
  stdout: string
  stderr: string
}

function cli(args: string[]): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env } })
  if (r.error) throw r.error
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Exit `status`, nothing on stdout, one `loopx-hooks:` line on stderr matching `pattern`. */
function expectFailure(r: Run, status: 1 | 2, pattern: RegExp): void {
  expect([r.status, r.stdout], r.stderr).toEqual([status, ''])
  expect(r.stderr).toMatch(/^loopx-hooks: [^\n]+\n$/)
  expect(r.stderr).toMatch(pattern)
}

const tmp = new TempDir('loopx-cli-contract-')
const kind = signalKind('clic')
let db = ''
let intentIds: string[] = []

/** A byte-identical copy of the closed journal, for one side of a comparison. */
function copy(name: string): string {
  const to = tmp.path(`${name}.db`)
  copyFileSync(db, to)
  if (existsSync(`${db}-wal`)) copyFileSync(`${db}-wal`, `${to}-wal`)
  return to
}

beforeAll(async () => {
  db = tmp.path('journal.db')
  const runtime = await HookRuntime.open({ journal: db, profile: { enabled: true } })
  runtime.defineIntentKind(kind)
  runtime.register({ registration: registration('clic.hook'), provider: goodProvider() })
  for (const n of [1, 2, 3]) {
    const id = `000${n}`
    await runtime.dispatch(
      request({
        receipt: { receipt_id: `receipt_${id}`, effect_id: `effect_${id}` },
        settlement: { effect_id: `effect_${id}` },
      }),
    )
  }
  intentIds = (await runtime.journal.listIntents({ pendingOnly: true })).items.map((i) => i.intentId)
  await runtime.close()
  expect(intentIds).toHaveLength(3)
})
afterAll(() => tmp.cleanup())

describe('exit 2: usage errors', () => {
  it('an unknown command, journal command or flag', () => {
    expectFailure(cli(['frobnicate']), 2, /unknown command 'frobnicate'/)
    expectFailure(cli(['journal', 'list', '--db', db]), 2, /unknown journal command 'list'/)
    expectFailure(cli(['journal', 'show', '--db', db, '--bogus']), 2, /Unknown option '--bogus'/)
  })

  it('a flag that does not apply to the command', () => {
    expectFailure(cli(['journal', 'show', '--db', db, '--pending']), 2, /--pending does not apply to 'journal show'/)
    expectFailure(cli(['journal', 'owed', '--db', db, '--limit', '3']), 2, /--limit does not apply to 'journal owed'/)
    expectFailure(cli(['serve', '--stdio', '--json']), 2, /--json does not apply to 'serve'/)
  })

  it('a missing or bad value', () => {
    expectFailure(cli(['journal', 'show']), 2, /needs --db PATH/)
    expectFailure(cli(['journal', 'dispatches', '--db', db, '--limit', 'x']), 2, /--limit needs an integer/)
    expectFailure(cli(['journal', 'dispatches', '--db', db, '--state', 'done']), 2, /unknown --state 'done'/)
    const decide = ['journal', 'decide', '--db', db, '--intent', intentIds[0]!, '--executor', 'x.exec']
    expectFailure(cli([...decide, '--reason', 'ok']), 2, /needs --decision/)
    expectFailure(cli([...decide, '--decision', 'maybe', '--reason', 'ok']), 2, /--decision is admit or reject/)
    // A token the journal refuses is a bad value too (the library's code names it).
    expectFailure(cli([...decide, '--decision', 'admit', '--reason', 'Not A Token']), 2, /ERR_LOOPX_INVALID_ARGUMENT/)
  })

  it('one flag per concept: --dispatch is --dispatch-id, and the message says so', () => {
    expectFailure(cli(['journal', 'intents', '--db', db, '--dispatch', 'pwh_x']), 2, /--dispatch is now --dispatch-id/)
    // A dispatch the journal does not hold is an argument error, never an empty list (cli_ids.spec.ts).
    const unknown = `pwh_${'0'.repeat(64)}`
    expectFailure(
      cli(['journal', 'intents', '--db', db, '--json', '--dispatch-id', unknown]),
      2,
      /no dispatch pwh_0{64}/,
    )
  })

  it("'journal recover' is 'journal owed', and the message says what it does", () => {
    expectFailure(cli(['journal', 'recover', '--db', db]), 2, /'journal recover' is now 'journal owed' \(it lists what/)
    expect(cli(['journal', 'owed', '--db', db, '--json'])).toMatchObject({ status: 0, stdout: '{"owed":[]}\n' })
  })
})

describe('exit 1: operational failures', () => {
  it('a journal that is missing, or a file that is not one', () => {
    expectFailure(cli(['journal', 'show', '--db', tmp.path('none.db')]), 1, /no journal at /)
    expectFailure(cli(['journal', 'intents', '--db', BIN]), 1, /ERR_LOOPX_NOT_A_JOURNAL/)
    expectFailure(cli(['validate', 'intent-kind', tmp.path('none.json')]), 1, /cannot read .*no such file/)
  })

  it('a journal locked by another writer past the busy timeout', () => {
    const locked = copy('locked')
    const holder = new Database(locked)
    holder.exec('BEGIN EXCLUSIVE')
    try {
      const r = cli(
        ['journal', 'decide', '--db', locked, '--intent', intentIds[0]!, '--executor', 'x.exec'].concat([
          '--decision',
          'admit',
          '--reason',
          'ok',
        ]),
      )
      expectFailure(r, 1, /ERR_LOOPX_JOURNAL_BUSY/)
    } finally {
      holder.exec('ROLLBACK')
      holder.close()
    }
  }, 60_000)

  it('a PostgreSQL journal whose server cannot be reached', () => {
    expectFailure(cli(['journal', 'show', '--db', 'postgres://nobody@127.0.0.1:1/none']), 1, /ERR_LOOPX_JOURNAL_/)
  }, 60_000)
})

describe('--json prints what the library returns for the same call', () => {
  const args = (path: string, ...rest: string[]) => ['journal', ...rest, '--db', path, '--json']

  it('decide: a DecideOutcome, for each of its kinds', async () => {
    const viaCli = copy('decide-cli')
    const viaLibrary = copy('decide-lib')
    const journal = await HookJournal.open(viaLibrary)
    try {
      const calls: [string, string, 'admit' | 'reject', string][] = [
        [intentIds[0]!, 'x.exec', 'admit', 'ok'], // decided
        [intentIds[0]!, 'x.exec', 'admit', 'ok'], // same_decision
        [intentIds[0]!, 'y.exec', 'reject', 'no'], // conflict
        [`pwi_${'0'.repeat(64)}`, 'x.exec', 'admit', 'ok'], // unknown_intent
      ]
      const kinds: string[] = []
      for (const [intentId, executorId, decision, reasonCode] of calls) {
        const r = cli(
          args(
            viaCli,
            'decide',
            '--intent',
            intentId,
            '--executor',
            executorId,
            '--decision',
            decision,
            '--reason',
            reasonCode,
          ),
        )
        const printed = JSON.parse(r.stdout) as DecideOutcome
        const returned = await journal.decide({ intentId, executorId, decision, reasonCode })
        // The two copies were decided at different instants: the rest is equal.
        expect(printed).toEqual(
          returned.outcome === 'conflict'
            ? { ...returned, existing: { ...returned.existing, decidedAt: expect.any(Number) } }
            : returned,
        )
        expect(r.status).toBe(printed.outcome === 'decided' || printed.outcome === 'same_decision' ? 0 : 1)
        kinds.push(printed.outcome)
      }
      expect(kinds).toEqual(['decided', 'same_decision', 'conflict', 'unknown_intent'])
    } finally {
      await journal.close()
    }
  })

  it('done: a DoneOutcome (a JSON string), for each of its values', async () => {
    const viaCli = copy('done-cli')
    const viaLibrary = copy('done-lib')
    const journal = await HookJournal.open(viaLibrary)
    try {
      const decided = { executorId: 'x.exec', decision: 'admit', reasonCode: 'ok' } as const
      const r = cli(
        args(
          viaCli,
          'decide',
          '--intent',
          intentIds[1]!,
          '--executor',
          'x.exec',
          '--decision',
          'admit',
          '--reason',
          'ok',
        ),
      )
      expect(r.status).toBe(0)
      await journal.decide({ intentId: intentIds[1]!, ...decided })
      const seen: DoneOutcome[] = []
      for (const intentId of [intentIds[1]!, intentIds[1]!, intentIds[2]!, `pwi_${'0'.repeat(64)}`]) {
        const done = cli(args(viaCli, 'done', '--intent', intentId, '--executor', 'x.exec'))
        const printed = JSON.parse(done.stdout) as DoneOutcome
        expect(printed).toEqual(await journal.markDone(intentId, 'x.exec'))
        expect(done.status).toBe(printed === 'done' || printed === 'already_done' ? 0 : 1)
        seen.push(printed)
      }
      expect(seen).toEqual(['done', 'already_done', 'not_admitted', 'unknown_intent'])
    } finally {
      await journal.close()
    }
  })
})
