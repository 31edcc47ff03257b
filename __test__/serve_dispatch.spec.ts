// serve --stdio's two-phase dispatch ops (lib/cli/serve_dispatch.ts), in
// process: a dispatch prepared, begun and finished through serve gives the
// very outcome HookRuntime.dispatch gives for the same request and producer
// answer (both dialects), a bad request gets a coded error that echoes
// nothing the caller sent, an identity prepared twice is refused until
// finished or cancelled, and a caller that goes away leaves its checkpoints
// owed. The Python adapter's tests (python/tests/test_dispatch*.py) drive
// the same ops from a Python host.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { HookRuntime } from '../lib/index.js'
import { Server, serveCommand } from '../lib/cli/serve.js'
import { library, type Io } from '../lib/cli/io.js'

const root = join(__dirname, '..')
const exampleText = (name: string) => readFileSync(join(root, 'examples', `${name}.json`), 'utf8')
const shipped = JSON.parse(readFileSync(join(__dirname, 'support', 'shipped_documents.json'), 'utf8')) as Record<
  string,
  unknown
>
const dir = mkdtempSync(join(tmpdir(), 'loopx-serve-dispatch-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let dbs = 0
const db = () => join(dir, `j${++dbs}.sqlite`)

function request(tag: string): Record<string, unknown> {
  return {
    settlement: {
      goal_id: `goal_${tag}`,
      agent_id: 'agent_serve',
      todo_id: `todo_${tag}`,
      turn_instance_id: `turn_${tag}`,
      effect_id: `effect_${tag}`,
    },
    receipt: {
      receipt_id: `receipt_${tag}`,
      effect_id: `effect_${tag}`,
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: `revision_${tag}`,
      committed_at: '2026-08-26T00:00:00Z',
    },
    event: { event_kind: 'todo_completed', fact_refs: [`fact_${tag}`] },
  }
}

const NOT_APPLICABLE = { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'not_applicable', intents: [] }

/** One serve session, answered request by request. */
class Session {
  readonly server = new Server(library(), '0.0.0-test')
  #id = 0

  async send(op: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const line = await this.server.handle(JSON.stringify({ id: ++this.#id, op, ...fields }))
    return JSON.parse(line) as Record<string, unknown>
  }

  async ok(op: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const answer = await this.send(op, fields)
    expect(answer['error'], JSON.stringify(answer)).toBeUndefined()
    return answer['result'] as Record<string, unknown>
  }

  /** prepare, begin each call, finish with `reply` for each. */
  async dispatch(source: unknown, reply: (input: Record<string, unknown>) => Record<string, unknown>) {
    const plan = await this.ok('prepare', { request: JSON.stringify(source) })
    if (plan['done'] !== undefined) return plan['done']
    const calls = plan['calls'] as { slot: number; input: string }[]
    const outcomes = []
    for (const call of calls) {
      await this.ok('begin', { ticket: plan['ticket'], slot: call.slot })
      outcomes.push(reply(JSON.parse(call.input) as Record<string, unknown>))
    }
    return (await this.ok('finish', { ticket: plan['ticket'], outcomes }))['done']
  }
}

const openContract = (s: Session, journal: string, registration = exampleText('registration')) =>
  s.ok('open', {
    journal,
    profile: { enabled: true },
    kinds: [exampleText('intent_kind')],
    registrations: [registration],
  })

describe('serve --stdio two-phase dispatch', () => {
  it('finishes with the outcome HookRuntime.dispatch gives for the same request and answer', async () => {
    const s = new Session()
    await openContract(s, db())
    const viaServe = await s.dispatch(request('same'), () => ({
      status: 'returned',
      result: JSON.stringify(NOT_APPLICABLE),
    }))
    const replay = await s.dispatch(request('same'), () => {
      throw new Error('a replay calls no producer')
    })
    await s.ok('close')

    const runtime = await HookRuntime.open({ journal: db(), profile: { enabled: true } })
    try {
      runtime.defineIntentKind(JSON.parse(exampleText('intent_kind')))
      runtime.register({
        registration: JSON.parse(exampleText('registration')),
        provider: () => NOT_APPLICABLE as never,
      })
      expect(viaServe).toStrictEqual(await runtime.dispatch(request('same') as never))
      expect(replay).toStrictEqual(await runtime.dispatch(request('same') as never))
      expect((replay as { hooks: { outcome: string }[] }).hooks[0]!.outcome).toBe('replayed')
    } finally {
      await runtime.close()
    }
  })

  it('gives the shipped dispatch result ShippedHookRuntime.dispatch gives', async () => {
    const s = new Session()
    await s.ok('open', {
      journal: { path: db() },
      profile: { enabled: true },
      dialect: 'loopx-shipped-v0',
      registrations: [JSON.stringify(shipped['registration'])],
    })
    const viaServe = (await s.dispatch(shipped['source'], () => ({
      status: 'returned',
      result: JSON.stringify(shipped['hook_result']),
    }))) as { shipped: unknown }
    await s.ok('close')
    const runtime = await HookRuntime.open({
      journal: db(),
      profile: { enabled: true },
      dialect: 'loopx-shipped-v0',
    })
    try {
      runtime.register({
        registration: shipped['registration'] as never,
        provider: () => shipped['hook_result'] as never,
      })
      const viaNode = await runtime.dispatch(shipped['source'] as never)
      expect(viaServe.shipped).toStrictEqual(viaNode)
      expect(viaNode).toStrictEqual(shipped['dispatch_result'])
    } finally {
      await runtime.close()
    }
  })

  it('maps a raise, a timeout and a reply past its bound (twice max_result_bytes and 1 KiB) to their failure codes', async () => {
    const s = new Session()
    const reg = JSON.parse(exampleText('registration')) as { budget: { max_result_bytes: number } }
    reg.budget.max_result_bytes = 1024
    await openContract(s, db(), JSON.stringify(reg))
    const codes: unknown[] = []
    for (const [tag, outcome] of [
      ['raised', { status: 'raised', code: 'ValueError' }],
      ['timed', { status: 'timed_out' }],
      ['long', { status: 'returned', result: JSON.stringify({ ...NOT_APPLICABLE, pad: 'x'.repeat(4000) }) }],
      ['nul', { status: 'returned', result: '\u0000threw' }],
      ['notjson', { status: 'not_json' }],
    ] as const) {
      const done = (await s.dispatch(request(tag), () => outcome)) as {
        hooks: { failureCode: string; failureRule: string | null }[]
      }
      codes.push([done.hooks[0]!.failureCode, done.hooks[0]!.failureRule])
    }
    expect(codes).toStrictEqual([
      ['producer_failed', null],
      ['producer_timed_out', null],
      ['result_contract_rejected', 'result_too_large'],
      ['result_contract_rejected', 'not_json_value'],
      ['result_contract_rejected', 'not_json_value'],
    ])
    await s.ok('close')
  })

  it('answers bad requests with coded errors that echo nothing the caller sent', async () => {
    const s = new Session()
    const secret = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB'
    const bad: [string, Record<string, unknown>, string][] = [
      ['prepare', { request: '{}' }, 'ERR_LOOPX_SERVE_BAD_REQUEST'],
      ['recover_items', {}, 'ERR_LOOPX_SERVE_BAD_REQUEST'],
      [
        'open',
        { journal: `postgres://user:${secret}@127.0.0.1:1/db`, registrations: 'x' },
        'ERR_LOOPX_SERVE_BAD_REQUEST',
      ],
      ['open', { journal: 42, registrations: [] }, 'ERR_LOOPX_INVALID_ARGUMENT'],
      ['open', { journal: db(), registrations: [`{"hook_id": "${secret}"}`] }, 'ERR_LOOPX_REGISTRATION_REJECTED'],
      ['open', { journal: db(), dialect: secret, registrations: [] }, 'ERR_LOOPX_UNKNOWN_DIALECT'],
    ]
    for (const [op, fields, code] of bad) {
      const answer = await s.send(op, fields)
      expect(answer['error'], `${op} ${JSON.stringify(fields)}`).toMatchObject({ code })
      expect(JSON.stringify(answer)).not.toContain(secret)
    }
    const unreachable = await s.send('open', { journal: `postgres://user:${secret}@127.0.0.1:1/db`, registrations: [] })
    expect((unreachable['error'] as { code: string }).code).toMatch(/^ERR_LOOPX_JOURNAL_/)
    expect(JSON.stringify(unreachable)).not.toContain(secret)
    await openContract(s, db())
    expect((await s.send('open', { journal: db(), registrations: [] }))['error']).toMatchObject({
      code: 'ERR_LOOPX_SERVE_BAD_REQUEST',
    })
    expect((await s.send('prepare', { request: `{"x": "${secret}"}` }))['error']).toMatchObject({
      code: 'ERR_LOOPX_INVALID_ARGUMENT',
    })
    const plan = await s.ok('prepare', { request: JSON.stringify(request('bad')) })
    const ticket = plan['ticket']
    for (const fields of [
      { ticket: 999, outcomes: [] },
      { ticket, outcomes: [] },
      { ticket, outcomes: [{ status: secret }] },
      { ticket, outcomes: [{ status: 'raised', code: `Error: ${secret} at /home/user/app.py` }] },
      { ticket, outcomes: [{ status: 'returned', result: 7 }] },
    ]) {
      const answer = await s.send('finish', fields)
      expect(answer['error']).toMatchObject({ code: 'ERR_LOOPX_SERVE_BAD_REQUEST' })
      expect(JSON.stringify(answer)).not.toContain(secret)
      expect(JSON.stringify(answer)).not.toContain('/home/user')
    }
    // Refused finishes leave the ticket as it was: it still finishes.
    await s.ok('begin', { ticket, slot: 0 })
    const done = await s.ok('finish', {
      ticket,
      outcomes: [{ status: 'returned', result: JSON.stringify(NOT_APPLICABLE) }],
    })
    expect(done['done']).toMatchObject({ admitted: true, hooks: [{ outcome: 'not_applicable' }] })
    await s.ok('close')
  })

  it('holds many dispatches in flight on one journal, finished in any order', async () => {
    const s = new Session()
    await openContract(s, db())
    const plans = []
    for (const tag of ['m1', 'm2', 'm3']) {
      const plan = await s.ok('prepare', { request: JSON.stringify(request(tag)) })
      await s.ok('begin', { ticket: plan['ticket'], slot: 0 })
      plans.push(plan)
    }
    const finished = []
    for (const plan of plans.reverse()) {
      const done = await s.ok('finish', {
        ticket: plan['ticket'],
        outcomes: [{ status: 'returned', result: JSON.stringify(NOT_APPLICABLE) }],
      })
      finished.push((done['done'] as { hooks: { receipt: { receipt_id: string } }[] }).hooks[0]!.receipt.receipt_id)
    }
    expect(finished).toStrictEqual(['receipt_m3', 'receipt_m2', 'receipt_m1'])
    await s.ok('close')
  })

  it('refuses an identity prepared twice until it is finished or cancelled', async () => {
    const s = new Session()
    await openContract(s, db())
    const first = await s.ok('prepare', { request: JSON.stringify(request('twice')) })
    expect((await s.send('prepare', { request: JSON.stringify(request('twice')) }))['error']).toMatchObject({
      code: 'ERR_LOOPX_SERVE_IN_FLIGHT',
    })
    await s.ok('cancel', { ticket: first['ticket'] })
    const again = await s.ok('prepare', { request: JSON.stringify(request('twice')) })
    expect(again['calls']).toHaveLength(1)
    await s.ok('close')
  })

  it('leaves what a departed caller prepared and began owed, for recover_items in the next process', async () => {
    const journal = db()
    const lines = [
      {
        id: 1,
        op: 'open',
        journal,
        profile: { enabled: true },
        kinds: [exampleText('intent_kind')],
        registrations: [exampleText('registration')],
      },
      { id: 2, op: 'prepare', request: JSON.stringify(request('gone')) },
      { id: 3, op: 'begin', ticket: 1, slot: 0 },
    ].map((l) => JSON.stringify(l) + '\n')
    let out = ''
    const io: Io = {
      stdout: { write: (text: string) => ((out += text), true) },
      stderr: { write: () => true },
      stdin: (async function* () {
        yield* lines
      })(),
      env: {},
    }
    expect(await serveCommand(io, '0.0.0-test')).toBe(0)
    expect(
      out
        .split('\n')
        .filter(Boolean)
        .map((l) => Object.keys(JSON.parse(l) as object)),
    ).toStrictEqual([
      ['id', 'result'],
      ['id', 'result'],
      ['id', 'result'],
    ])
    const s = new Session()
    await openContract(s, journal)
    const items = await s.ok('recover_items')
    expect(items['hookIds']).toStrictEqual(['periodic_report.runtime_trigger'])
    expect((items['requests'] as string[]).map((r) => (JSON.parse(r) as { receipt: unknown }).receipt)).toStrictEqual([
      request('gone')['receipt'],
    ])
    await s.ok('close')
  })
})
