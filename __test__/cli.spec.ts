// The `loopx-hooks` command line (bin/loopx-hooks.js over dist/cli.js), run as
// a real child process: validate verdicts and exit statuses, usage errors as
// one line without a stack, and the journal readers against a journal made
// here with HookRuntime (proposing, failing and not-applicable hooks).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  IntentKinds,
  notApplicable,
  proposed,
  validateIntentKindDefinition,
  validateRegistration,
  type DispatchRequest,
  type DispatchRow,
  type FailureRow,
  type IntentKindDefinition,
  type JournalStats,
  type PostWritebackHookRegistration,
  type StoredIntent,
} from '../lib/index.js'
// The untyped builder `intent` wraps; the public way is `intent(input, kind, spec)`.
import { buildIntent } from '../lib/addon_api.js'
import { main, type Io } from '../lib/cli.js'

const root = join(__dirname, '..')
const BIN = join(root, 'bin', 'loopx-hooks.js')
const example = (name: string) => join(root, 'examples', `${name}.json`)
const exampleText = (name: string) => readFileSync(example(name), 'utf8')
const DISPATCH_ID = JSON.parse(exampleText('hook_input')).dispatch_id as string

interface Run {
  status: number | null
  stdout: string
  stderr: string
}

function cli(args: string[], options: { input?: string | Buffer; env?: Record<string, string> } = {}): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: root,
    input: options.input ?? '',
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '', ...options.env },
    timeout: 20_000,
  })
  if (r.error) throw r.error
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/**
 * Nothing on stdout, exactly one `loopx-hooks: ...` line on stderr and no
 * stack frame; exit 2 for a usage error, 1 for an operational failure.
 */
function expectOneLineError(r: Run, pattern?: RegExp, status: 1 | 2 = 2): void {
  expect(r.status, r.stderr).toBe(status)
  expect(r.stdout).toBe('')
  expect(r.stderr).toMatch(/^loopx-hooks: [^\n]+\n$/)
  expect(r.stderr).not.toMatch(/^\s+at /m)
  if (pattern) expect(r.stderr).toMatch(pattern)
}

const EXAMPLE_ARGS: Record<string, string[]> = {
  registration: ['registration', example('registration'), '--kinds', example('intent_kind')],
  hook_input: ['hook-input', example('hook_input'), '--registration', example('registration')],
  hook_result: [
    'hook-result',
    example('hook_result'),
    '--registration',
    example('registration'),
    '--kinds',
    example('intent_kind'),
    '--dispatch-id',
    DISPATCH_ID,
  ],
  intent_kind: ['intent-kind', example('intent_kind')],
  dispatch_receipt: ['dispatch-receipt', example('dispatch_receipt')],
  turn_start_registration: ['turn-start-registration', example('turn_start_registration')],
  turn_start_receipt: ['turn-start-receipt', example('turn_start_receipt')],
}

describe('validate', () => {
  it('accepts every example document (exit 0), in human and JSON form', () => {
    const names = readdirSync(join(root, 'examples'))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.slice(0, -'.json'.length))
    // Every example has its contract in the CLI.
    expect(names.filter((n) => !(n in EXAMPLE_ARGS))).toEqual([])
    for (const name of names) {
      const args = EXAMPLE_ARGS[name]!
      const human = cli(['validate', ...args])
      expect(human, name).toEqual({ status: 0, stdout: 'valid\n', stderr: '' })
      const json = cli(['validate', ...args, '--json'])
      expect(json, name).toEqual({ status: 0, stdout: '{"ok":true}\n', stderr: '' })
    }
  })

  it('accepts a failure receipt', () => {
    const doc = {
      schema_version: 'loopx_post_writeback_failure_receipt_v0',
      dispatch_id: DISPATCH_ID,
      hook_id: 'periodic_report.runtime_trigger',
      code: 'result_contract_rejected',
      rule: 'intent_id_mismatch',
      attempt: 2,
    }
    expect(cli(['validate', 'failure-receipt', '-', '--json'], { input: JSON.stringify(doc) })).toEqual({
      status: 0,
      stdout: '{"ok":true}\n',
      stderr: '',
    })
  })

  it('rejects a mutated registration with exit 1 and the exact violations', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-cli-'))
    try {
      const doc = JSON.parse(exampleText('registration'))
      doc.extra = 1
      doc.hook_id = 'Bad Hook'
      delete doc.failure_policy
      doc.budget.timeout_ms = 0
      const file = join(dir, 'registration.json')
      writeFileSync(file, JSON.stringify(doc, null, 2))
      const expected = [
        { path: '/extra', rule: 'unknown_field' },
        { path: '/failure_policy', rule: 'missing_field' },
        { path: '/hook_id', rule: 'bad_token' },
        { path: '/budget/timeout_ms', rule: 'out_of_range' },
      ]
      const json = cli(['validate', 'registration', file, '--kinds', example('intent_kind'), '--json'])
      expect(json.status).toBe(1)
      expect(json.stderr).toBe('')
      expect(JSON.parse(json.stdout)).toEqual({ ok: false, violations: expected })
      // The very verdict of the library, in process.
      const inProcess = validateRegistration(
        readFileSync(file, 'utf8'),
        new IntentKinds([JSON.parse(exampleText('intent_kind'))]),
      )
      expect(JSON.parse(json.stdout)).toEqual(inProcess)

      const human = cli(['validate', 'registration', file, '--kinds', example('intent_kind')])
      expect(human.status).toBe(1)
      expect(human.stdout).toBe(
        [
          '  /extra              unknown_field',
          '  /failure_policy     missing_field',
          '  /hook_id            bad_token',
          '  /budget/timeout_ms  out_of_range',
          '',
        ].join('\n'),
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('rejects a mutated hook result read from standard input', () => {
    const doc = JSON.parse(exampleText('hook_result'))
    doc.intents[0].payload.segment_ref = 'x y'
    doc.intents[0].grants_new_action_authority = true
    const args = [
      'validate',
      'hook-result',
      '-',
      '--registration',
      example('registration'),
      '--kinds',
      example('intent_kind'),
      '--dispatch-id',
      DISPATCH_ID,
    ]
    const r = cli([...args, '--json'], { input: JSON.stringify(doc) })
    expect(r.status).toBe(1)
    expect(JSON.parse(r.stdout)).toEqual({
      ok: false,
      violations: [
        { path: '/intents/0/payload/segment_ref', rule: 'bad_opaque_ref' },
        { path: '/intents/0/grants_new_action_authority', rule: 'authority_claimed' },
      ],
    })
    // Another dispatch id: every intent is someone else's.
    const other = cli([
      'validate',
      'hook-result',
      example('hook_result'),
      '--registration',
      example('registration'),
      '--kinds',
      example('intent_kind'),
      '--dispatch-id',
      `pwh_${'0'.repeat(64)}`,
      '--json',
    ])
    expect(other.status).toBe(1)
    expect(JSON.parse(other.stdout).violations.map((v: { rule: string }) => v.rule)).toEqual([
      'dispatch_mismatch',
      'intent_id_mismatch',
    ])
  })

  it('judges standard input the same as a file', () => {
    const r = cli(['validate', 'intent-kind', '-', '--json'], { input: exampleText('intent_kind') })
    expect(r).toEqual({ status: 0, stdout: '{"ok":true}\n', stderr: '' })
    const bad = cli(['validate', 'dispatch-receipt', '-'], { input: '{"a":1, "b c":2}' })
    expect(bad.status).toBe(1)
    const lines = bad.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^ {2}\/a +unknown_field$/)
    expect(lines[1]).toMatch(/^ {2}"\/b c" +unknown_field$/)
    expect(lines.slice(2).every((l) => / missing_field$/.test(l))).toBe(true)
    // The rules form one column.
    expect(new Set(lines.map((l) => l.search(/\S+$/))).size).toBe(1)
  })

  it('hands the text itself to the validator: tricky JSON text gets the library verdict on that text', () => {
    const texts = [
      '{"intent_kind": 1e400}', // beyond f64: JSON.parse would say Infinity
      '{"intent_kind": 12345678901234567890}', // beyond 2^53
      '{"intent_kind": "a", "intent_kind": "b"}', // a duplicated member
      '\ufeff{}', // a byte order mark
      '',
      'not json',
      '[1, 2',
    ]
    for (const text of texts) {
      const r = cli(['validate', 'intent-kind', '-', '--json'], { input: text })
      const verdict = validateIntentKindDefinition(text)
      const expected = verdict.ok ? { ok: true } : { ok: false, violations: verdict.violations }
      expect(r.status, text).toBe(verdict.ok ? 0 : 1)
      expect(JSON.parse(r.stdout), text).toEqual(expected)
    }
    const bom = cli(['validate', 'intent-kind', '-', '--json'], {
      input: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(exampleText('intent_kind'))]),
    })
    expect(JSON.parse(bom.stdout)).toEqual({ ok: false, violations: [{ path: '', rule: 'not_json_value' }] })
  })

  it('says not_json_value for bytes that are not UTF-8', () => {
    const r = cli(['validate', 'dispatch-receipt', '-', '--json'], { input: Buffer.from([0x7b, 0xff, 0x7d]) })
    expect(r.status).toBe(1)
    expect(JSON.parse(r.stdout)).toEqual({ ok: false, violations: [{ path: '', rule: 'not_json_value' }] })
  })

  it('reports usage errors as one line with exit 2 and no stack', () => {
    expectOneLineError(cli(['validate', 'nonsense', example('registration')]), /unknown contract 'nonsense'/)
    // A FILE that cannot be read is an operational failure (exit 1), not a usage error.
    expectOneLineError(
      cli(['validate', 'intent-kind', join(root, 'examples', 'missing.json')]),
      /cannot read .*missing\.json: no such file/,
      1,
    )
    expectOneLineError(cli(['validate', 'intent-kind', join(root, 'examples')]), /is a directory/, 1)
    expectOneLineError(cli(['validate', 'intent-kind']), /needs a FILE/)
    expectOneLineError(cli(['validate']), /needs a contract/)
    expectOneLineError(cli(['validate', 'intent-kind', example('intent_kind'), 'extra']), /unexpected argument 'extra'/)
    const noDispatchId = EXAMPLE_ARGS.hook_result!.filter(
      (a, i, all) => a !== '--dispatch-id' && all[i - 1] !== '--dispatch-id',
    )
    expectOneLineError(cli(['validate', ...noDispatchId]), /contract 'hook-result' needs --dispatch-id/)
    expectOneLineError(cli(['validate', 'registration', example('registration')]), /needs --kinds/)
    expectOneLineError(cli(['validate', 'hook-input', example('hook_input')]), /needs --registration/)
    expectOneLineError(
      cli(['validate', 'intent-kind', example('intent_kind'), '--kinds', example('intent_kind')]),
      /--kinds does not apply/,
    )
    expectOneLineError(cli(['validate', 'intent-kind', example('intent_kind'), '--bogus']), /Unknown option '--bogus'/)
    expectOneLineError(cli(['frobnicate']), /unknown command 'frobnicate'/)
  })

  it('treats bad context files as usage errors (exit 2, one line, the library code)', () => {
    expectOneLineError(
      cli(['validate', 'registration', example('registration'), '--kinds', example('registration')]),
      /^loopx-hooks: ERR_LOOPX_INVALID_INTENT_KIND: --kinds \S+registration\.json: invalid intent kind definitions: \/0\/budget unknown_field/,
    )
    expectOneLineError(
      cli(['validate', 'registration', example('registration'), '--kinds', join(root, 'package.json')]),
      /ERR_LOOPX_INVALID_INTENT_KIND/,
    )
    expectOneLineError(
      cli(['validate', 'registration', example('registration'), '--kinds', join(root, 'tsconfig.base.json.missing')]),
      /cannot read --kinds/,
      1,
    )
    expectOneLineError(
      cli(['validate', 'registration', example('registration'), '--kinds', BIN]),
      /--kinds \S+: not JSON/,
    )
    expectOneLineError(
      cli(['validate', 'registration', '-', '--kinds', '-'], { input: '{}' }),
      /standard input is for the document/,
    )
    expectOneLineError(
      cli(['validate', 'hook-input', example('hook_input'), '--registration', example('intent_kind')]),
      /^loopx-hooks: ERR_LOOPX_INVALID_ARGUMENT: --registration \S+intent_kind\.json: /,
    )
  })

  it('prints usage: --help exits 0 on stdout, no arguments exit 2 on stderr', () => {
    const help = cli(['--help'])
    expect(help.status).toBe(0)
    expect(help.stdout).toMatch(/^Usage:/)
    expect(cli(['validate', '--help']).stdout).toMatch(
      /hook-result\s+--registration FILE --dispatch-id ID --kinds FILE/,
    )
    expect(cli(['journal', '-h']).stdout).toMatch(/owed\s+the identities HookRuntime\.recover\(\) would re-dispatch/)
    const none = cli([])
    expect(none.status).toBe(2)
    expect(none.stdout).toBe('')
    expect(none.stderr).toMatch(/^Usage:/)
    expect(cli(['--version']).stdout).toBe(`${JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version}\n`)
  })
})

// ---------------------------------------------------------------- journal

function kind(capability: string): IntentKindDefinition {
  return {
    intent_kind: `${capability}.signal`,
    capability_id: capability,
    operations: ['evaluate'],
    payload_schema: {
      type: 'object',
      properties: { ref: { type: 'string', format: 'opaque_ref' } },
      required: ['ref'],
      additionalProperties: false,
    },
  } as IntentKindDefinition
}

function registration(hookId: string, maxInvocations = 1): PostWritebackHookRegistration {
  const capability = hookId.slice(0, hookId.indexOf('.'))
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: capability,
    phase: 'post_writeback',
    event_kinds: ['todo_completed', 'replan_recorded'],
    intent_kinds: [`${capability}.signal`],
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
    budget: {
      max_invocations_per_dispatch: maxInvocations,
      max_intents_per_dispatch: 1,
      max_result_bytes: 16384,
      timeout_ms: 1000,
    },
    failure_policy: 'isolate',
  }
}

function request(n: number): DispatchRequest {
  const id = String(n).padStart(4, '0')
  return {
    settlement: {
      goal_id: 'goal_0001',
      agent_id: 'agent_0001',
      todo_id: `todo_${id}`,
      turn_instance_id: 'turn_0001',
      effect_id: `effect_${id}`,
    },
    receipt: {
      receipt_id: `receipt_${id}`,
      effect_id: `effect_${id}`,
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: 'rev_0001',
      committed_at: '2026-08-26T00:00:00Z',
    },
    event: { event_kind: 'todo_completed', fact_refs: ['fact_0001'] },
  } as DispatchRequest
}

/** The column where each header starts, and the cells of a row at those columns. */
function headerStarts(header: string): { name: string; start: number }[] {
  return [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], start: m.index! }))
}

describe('journal', () => {
  let dir: string
  let db: string
  let runtime: HookRuntime
  let dispatches: DispatchRow[]
  let intents: StoredIntent[]
  let stats: JournalStats

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'loopx-cli-journal-'))
    db = join(dir, 'hooks.journal')
    runtime = await HookRuntime.open({ journal: db, profile: { enabled: true }, synchronous: 'normal' })
    for (const c of ['alpha', 'beta', 'gamma']) runtime.defineIntentKind(kind(c))
    runtime.register({
      registration: registration('alpha.proposer'),
      provider: (input) =>
        proposed([
          buildIntent(input, {
            intentKind: 'alpha.signal',
            operation: 'evaluate',
            policyVersion: 'v0',
            payload: { ref: input.source.receipt_id },
          }),
        ]),
    })
    runtime.register({
      registration: registration('beta.failing', 2),
      provider: () => {
        throw new Error('provider failure')
      },
    })
    runtime.register({ registration: registration('gamma.quiet'), provider: () => notApplicable() })
    for (let n = 1; n <= 4; n += 1) {
      const outcome = await runtime.dispatch(request(n))
      expect(outcome.hooks.map((h) => h.outcome)).toEqual(['recorded', 'failed', 'not_applicable'])
    }
    const all = (await runtime.journal.listIntents({ limit: 1000 })).items
    await runtime.journal.decide({
      intentId: all[0]!.intentId,
      executorId: 'alpha.executor',
      decision: 'admit',
      reasonCode: 'admitted_by_policy',
    })
    await runtime.journal.markDone(all[0]!.intentId, 'alpha.executor')
    await runtime.journal.decide({
      intentId: all[1]!.intentId,
      executorId: 'alpha.executor',
      decision: 'reject',
      reasonCode: 'duplicate_window',
    })
    dispatches = (await runtime.journal.listDispatches({ limit: 1000 })).items
    intents = (await runtime.journal.listIntents({ limit: 1000 })).items
    stats = await runtime.journal.stats()
    expect(dispatches).toHaveLength(12)
    expect(intents).toHaveLength(4)
  })

  afterAll(async () => {
    await runtime?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const json = (args: string[]) => {
    const r = cli(['journal', ...args, '--db', db, '--json'])
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    return JSON.parse(r.stdout)
  }

  it('show --json: stats, integrity and the latest dispatches, newest first', async () => {
    const out = json(['show'])
    expect(out).toEqual({
      stats,
      integrity: await runtime.journal.integrity(),
      latestDispatches: dispatches.slice(-10).reverse(),
    })
    expect(out.integrity).toEqual({ ok: true, messages: [] })
    expect(json(['show', '--limit', '3']).latestDispatches).toEqual(dispatches.slice(-3).reverse())
    expect(stats).toMatchObject({ proposed: 4, failed: 4, notApplicable: 4, intents: 4, intentsOpen: 2 })
  })

  it('dispatches --json: the journal rows, filtered and paged', () => {
    expect(json(['dispatches'])).toEqual({ items: dispatches, nextCursor: null })
    expect(json(['dispatches', '--state', 'failed'])).toEqual({
      items: dispatches.filter((d) => d.state === 'failed'),
      nextCursor: null,
    })
    expect(json(['dispatches', '--hook', 'gamma.quiet'])).toEqual({
      items: dispatches.filter((d) => d.hookId === 'gamma.quiet'),
      nextCursor: null,
    })
    const first = json(['dispatches', '--limit', '5'])
    expect(first).toEqual({ items: dispatches.slice(0, 5), nextCursor: dispatches[4]!.seq })
    const rest = json(['dispatches', '--after', String(first.nextCursor)])
    expect(rest).toEqual({ items: dispatches.slice(5), nextCursor: null })
    // Exactly the rest: no cursor when nothing follows.
    expect(json(['dispatches', '--limit', '12']).nextCursor).toBeNull()
  })

  it('intents --json: the journal rows, pending and per hook', () => {
    expect(json(['intents'])).toEqual({ items: intents, nextCursor: null })
    expect(json(['intents', '--pending'])).toEqual({ items: intents.slice(2), nextCursor: null })
    expect(json(['intents', '--hook', 'alpha.proposer']).items).toEqual(intents)
    expect(json(['intents', '--hook', 'beta.failing']).items).toEqual([])
    expect(json(['intents', '--dispatch-id', intents[3]!.dispatchId]).items).toEqual([intents[3]])
    expect(json(['intents', '--limit', '1'])).toEqual({ items: [intents[0]], nextCursor: intents[0]!.seq })
  })

  it('owed --json: the identities recover() would re-dispatch, with their failures', async () => {
    const failed = dispatches.filter((d) => d.state === 'failed')
    const failures: FailureRow[][] = await Promise.all(failed.map((d) => runtime.journal.listFailures(d.dispatchId)))
    const out = json(['owed'])
    expect(out).toEqual({ owed: failed.map((d, i) => ({ ...d, failures: failures[i] })) })
    expect(out.owed.map((u: DispatchRow) => u.hookId)).toEqual([
      'beta.failing',
      'beta.failing',
      'beta.failing',
      'beta.failing',
    ])
    expect(out.owed[0].failures[0]).toMatchObject({ attempt: 1, code: 'producer_failed' })
    expect(json(['owed', '--hook', 'alpha.proposer'])).toEqual({ owed: [] })
  })

  it('human tables: aligned headers, whole ids and no colour off a terminal', () => {
    const r = cli(['journal', 'dispatches', '--db', db])
    expect(r.status).toBe(0)
    expect(r.stdout).not.toContain('\x1b[')
    const lines = r.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(13)
    const starts = headerStarts(lines[0]!)
    expect(starts.map((s) => s.name)).toEqual([
      'SEQ',
      'DISPATCH',
      'STATE',
      'ATTEMPTS',
      'HOOK',
      'EVENT',
      'DETAIL',
      'UPDATED',
    ])
    dispatches.forEach((d, i) => {
      const line = lines[i + 1]!
      const at = (name: string) => line.slice(starts.find((s) => s.name === name)!.start)
      // Piped, a table's ids are whole, so they can be passed back (cli_ids.spec.ts).
      expect(at('DISPATCH').startsWith(`${d.dispatchId}  `)).toBe(true)
      expect(at('STATE').startsWith(`${d.state} `)).toBe(true)
      expect(at('HOOK').startsWith(`${d.hookId} `)).toBe(true)
      expect(at('EVENT').startsWith('todo_completed ')).toBe(true)
    })
    expect(lines.find((l) => l.includes('beta.failing'))).toContain('producer_failed')
    expect(lines.find((l) => l.includes('alpha.proposer'))).toContain('1 intent')

    const intentsOut = cli(['journal', 'intents', '--db', db]).stdout.trimEnd().split('\n')
    const iStarts = headerStarts(intentsOut[0]!)
    expect(iStarts.map((s) => s.name)).toEqual([
      'SEQ',
      'INTENT',
      'DISPATCH',
      'HOOK',
      'KIND',
      'OPERATION',
      'STATUS',
      'EXECUTOR',
      'REASON',
    ])
    const status = iStarts.find((s) => s.name === 'STATUS')!.start
    expect(intentsOut.slice(1).map((l) => l.slice(status).split(' ')[0])).toEqual([
      'done',
      'rejected',
      'undecided',
      'undecided',
    ])

    const more = cli(['journal', 'dispatches', '--db', db, '--limit', '2']).stdout
    expect(more.trimEnd().split('\n').at(-1)).toBe(`more rows follow: continue with --after ${dispatches[1]!.seq}`)
  })

  it('human show and owed', () => {
    const show = cli(['journal', 'show', '--db', db])
    expect(show.status).toBe(0)
    expect(show.stdout).toMatch(/^integrity\s+ok$/m)
    expect(show.stdout).toMatch(
      /^dispatches\s+12\s+\(checkpointed 0, failed 4, proposed 4, not_applicable 4, exhausted 0\)$/m,
    )
    expect(show.stdout).toMatch(/^intents\s+4\s+\(open 2\)$/m)
    expect(show.stdout).toMatch(/^latest 10 dispatches, newest first\n\s*SEQ\s+DISPATCH/m)

    const owed = cli(['journal', 'owed', '--db', db])
    expect(owed.status).toBe(0)
    expect(owed.stdout).toMatch(/^4 dispatch identities owed/)
    expect(owed.stdout).toContain('HookRuntime.recover()')
    expect(cli(['journal', 'owed', '--db', db, '--hook', 'gamma.quiet']).stdout).toMatch(/^nothing owed/)
  })

  it('colours only a terminal without NO_COLOR', async () => {
    const run = async (env: Record<string, string | undefined>) => {
      let stdout = ''
      const io: Io = {
        stdout: { write: (s: string) => (stdout += s), isTTY: true },
        stderr: { write: () => true },
        stdin: (async function* () {})(),
        env,
      }
      expect(await main(['journal', 'dispatches', '--db', db], io)).toBe(0)
      return stdout
    }
    const coloured = await run({})
    expect(coloured).toContain('\x1b[')
    // Colour never shifts the columns: without the escapes, it is the plain table.
    const plain = await run({ NO_COLOR: '1' })
    expect(plain).not.toContain('\x1b[')
    // eslint-disable-next-line no-control-regex
    expect(coloured.replace(/\x1b\[\d+m/g, '')).toBe(plain)
  })

  it('refuses what is not a journal (exit 1: operational), without creating or changing a file', () => {
    const missing = join(dir, 'missing.journal')
    expectOneLineError(
      cli(['journal', 'show', '--db', missing]),
      /^loopx-hooks: no journal at \S+missing\.journal\n$/,
      1,
    )
    expect(existsSync(missing)).toBe(false)

    const empty = join(dir, 'empty.journal')
    writeFileSync(empty, '')
    expectOneLineError(cli(['journal', 'dispatches', '--db', empty]), /no journal at .* \(empty file\)/, 1)
    expect(statSync(empty).size).toBe(0)

    const text = join(dir, 'notes.txt')
    writeFileSync(text, 'not a journal at all, just some text that is long enough\n'.repeat(4))
    const before = readFileSync(text)
    expectOneLineError(
      cli(['journal', 'show', '--db', text]),
      /^loopx-hooks: ERR_LOOPX_NOT_A_JOURNAL: \S+notes\.txt: /,
      1,
    )
    expect(readFileSync(text).equals(before)).toBe(true)

    expectOneLineError(cli(['journal', 'show', '--db', dir]), /not a file/, 1)
  })

  it('reports journal usage errors as one line with exit 2', () => {
    expectOneLineError(cli(['journal', 'show']), /journal show needs --db PATH/)
    expectOneLineError(cli(['journal']), /journal needs a command/)
    expectOneLineError(cli(['journal', 'list', '--db', db]), /unknown journal command 'list'/)
    expectOneLineError(cli(['journal', 'dispatches', '--db', db, '--state', 'done']), /unknown --state 'done'/)
    expectOneLineError(
      cli(['journal', 'dispatches', '--db', db, '--limit', '0']),
      /--limit needs an integer of at least 1/,
    )
    expectOneLineError(cli(['journal', 'dispatches', '--db', db, '--limit', 'many']), /--limit needs an integer/)
    expectOneLineError(
      cli(['journal', 'intents', '--db', db, '--state', 'failed']),
      /--state does not apply to 'journal intents'/,
    )
    expectOneLineError(cli(['journal', 'show', '--db', db, '--pending']), /--pending does not apply/)
    expectOneLineError(cli(['journal', 'show', '--db']), /argument missing/)
    expectOneLineError(
      cli(['validate', 'intent-kind', example('intent_kind'), '--db', db]),
      /--db does not apply to 'validate'/,
    )
  })
})
