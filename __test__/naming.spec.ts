import type { PostWritebackIntent } from '../lib/index.js'
// The naming rule, written once (docs/api.md "Naming" points here):
// - Contract documents keep the RFC's spelling (snake_case members, `status`,
//   ISO 8601 `..._at` strings); every other object of the TypeScript API is
//   camelCase, its objects checked here as the runtime returns them.
// - One name per concept: each name is exported by one entry point and means
//   one declaration; an explicit export never hides a generated binding's.
//   Filters say what they filter by (`capabilityId`, `intentKind`).
// - A member ending `At` is a time as an epoch-ms number (a bare `at` is not
//   a time); a timestamp kept as a source's own text ends `Iso`.
// - A duration ends `Ms` (fractional where finer: `latencyMs`), never another unit.
// - A result union of ours discriminates on `outcome` (more than two kinds) or
//   `ok` (a verdict); contract documents keep the RFC's `status`.
// - No `any` in the main entry point's public types.
// - Telemetry: the package's name `loopx-hooks` names where it comes from
//   (diagnostics channels `loopx-hooks:<event>`, the OpenTelemetry scope,
//   span names `loopx-hooks <operation>`); OpenTelemetry attribute and metric
//   names live in one namespace, `loopx.` (metrics `loopx.hooks.*`),
//   dot-delimited, snake_case within a component, as OpenTelemetry's naming
//   conventions ask.
import { afterAll, describe, expect, it } from 'vitest'

import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import ts from 'typescript'

import { main, type Io } from '../lib/cli.js'
import { channels, defineHook, HookRuntime, LoopxHooksError, SIDECAR_MIRROR_CHANNEL } from '../lib/index.js'
import { TurnSettlement } from '../lib/orchestrator/index.js'
import { Fixtures, TempDir, goodProvider, registration, request, signalKind, signalResult } from './support/runtime.js'
import { Surface } from './support/surface_names.js'

const fx = new Fixtures()
afterAll(() => fx.cleanup())

/**
 * Members that hold a contract document, spelled as the RFC spells it (the
 * orchestrator's `settlement` and `receipts` are the dispatch request's).
 */
const CONTRACT_MEMBERS = new Set(['request', 'receipt', 'intent', 'settlement', 'receipts'])
/** Records keyed by a value (a code or an outcome kind), not by field names. */
const VALUE_KEYED = new Set(['errors', 'failureCodes', 'providerReplies'])
const CAMEL = /^[a-z][a-zA-Z0-9]*$/

/** Every key path under `value` that is not camelCase, contract documents skipped. */
function offenders(value: unknown, path = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => offenders(v, `${path}/${i}`))
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([k, v]) => [
    ...(CAMEL.test(k) ? [] : [`${path}/${k}`]),
    ...(CONTRACT_MEMBERS.has(k) || VALUE_KEYED.has(k) ? [] : offenders(v, `${path}/${k}`)),
  ])
}

async function cliJson(args: string[]): Promise<unknown> {
  let out = ''
  const io: Io = {
    stdout: { write: (chunk: string) => (out += chunk) },
    stderr: { write: () => true },
    stdin: (async function* () {})(),
    env: { NO_COLOR: '1' },
  }
  const status = await main(args, io)
  expect(status, args.join(' ')).toBeLessThanOrEqual(1)
  return JSON.parse(out)
}

describe('one naming rule', () => {
  it('returns every non-contract object camelCase, embedded contract documents as the RFC spells them', async () => {
    const { runtime, journalPath } = await fx.runtime({ capabilities: ['alpha', 'beta'] })
    runtime.register({ registration: registration('alpha.good'), provider: goodProvider() })
    runtime.register({
      registration: registration('beta.broken'),
      provider: () => {
        throw new Error('broken')
      },
    })
    const outcome = await runtime.dispatch(request())
    const journal = runtime.journal
    const dispatches = await journal.listDispatches()
    const failed = dispatches.items.find((d) => d.state === 'failed')!
    const [claimed] = await journal.claim({ executorId: 'naming.one', leaseMs: 60_000 })
    const decided = await journal.decide({
      intentId: claimed!.intentId,
      executorId: 'naming.one',
      decision: 'admit',
      reasonCode: 'ok',
    })
    const conflict = await journal.decide({
      intentId: claimed!.intentId,
      executorId: 'naming.one',
      decision: 'reject',
      reasonCode: 'changed_mind',
    })
    expect(conflict).toMatchObject({
      outcome: 'conflict',
      existing: { decision: 'admit', executorId: 'naming.one', reasonCode: 'ok', decidedAt: expect.any(Number) },
    })
    const returned = {
      outcome,
      dispatches,
      row: await journal.getDispatch(failed.dispatchId),
      failures: await journal.listFailures(failed.dispatchId),
      intents: await journal.listIntents(),
      claimed,
      decided,
      conflict,
      stats: await journal.stats(),
      integrity: await journal.integrity(),
      metrics: runtime.metrics(),
    }
    expect(offenders(returned)).toEqual([])
    // Not vacuous: the rows hold camelCase ids and the embedded documents snake_case ones.
    expect(claimed).toMatchObject({
      intentId: (claimed!.intent as PostWritebackIntent).intent_id,
      dispatchId: (claimed!.intent as PostWritebackIntent).source_dispatch_id,
    })
    expect(returned.stats).toMatchObject({ proposed: 1, failed: 1, notApplicable: 0, intentsOpen: 1 })
    expect(offenders({ intent: claimed!.intent, x: { intent_id: 1 } })).toEqual(['/x/intent_id'])
    expect(returned.metrics.failureCodes).toMatchObject({ producer_failed: 1 })

    await runtime.close()
    for (const command of ['show', 'dispatches', 'intents', 'owed']) {
      expect(offenders(await cliJson(['journal', command, '--db', journalPath, '--json'])), command).toEqual([])
    }
  })

  it("returns the orchestrator seam's rows, results and markers camelCase", async () => {
    const { runtime, dir } = await fx.runtime({ capabilities: ['alpha'] })
    runtime.register({ registration: registration('alpha.good'), provider: goodProvider() })
    const seam = await TurnSettlement.open({ turnJournalPath: join(dir, 'turn.journal'), hooks: runtime })
    try {
      const settled = await seam.settle({
        kind: 'todo_completed',
        goalId: 'goal_0001',
        agentId: 'agent_0001',
        todoId: 'todo_1',
        turnInstanceId: 'turn_1',
        effectId: 'effect_1',
        stateRevision: 'rev_1',
        factRefs: ['fact_1'],
      })
      const contents = seam.contents()
      expect(contents.dispatchMarkers).toHaveLength(1)
      expect(contents.settlements[0]).toMatchObject({ effectId: 'effect_1', factRefs: ['fact_1'] })
      expect(offenders({ settled, contents, report: await seam.recover() })).toEqual([])
    } finally {
      await seam.close()
    }
  })
})

/** Contract documents among the exported result unions: spelled as their specs spell them. */
const DOCUMENT_UNIONS = new Set(['RowReceipt'])

describe('the public types follow the rule', () => {
  const surface = new Surface()
  const members = surface.members(surface.exports)
  const text = (t: ts.Type) => surface.checker.typeToString(t)

  it('walks every entry point and enough of their types for the checks to bite', () => {
    expect(new Set(surface.exports.map((e) => e.subpath))).toEqual(
      new Set(['.', './orchestrator', './loopx', './otel', './capabilities/periodic_report']),
    )
    // Each type is walked once, under the first path that reaches it.
    expect(members.map((m) => m.name)).toEqual(
      expect.arrayContaining(['failedAt', 'latencyMs', 'spentAt', 'completedAt', 'decidedAt', 'recordedAtIso']),
    )
  })

  it('gives each name one meaning: no name in two entry points, no explicit export hiding a binding', () => {
    const byName = new Map<string, string[]>()
    for (const e of surface.exports) byName.set(e.name, [...(byName.get(e.name) ?? []), e.subpath])
    expect([...byName].filter(([, where]) => where.length > 1)).toEqual([])
    expect(surface.shadowed).toEqual([])
  })

  it('has no any in the main entry point', () => {
    const main = surface.exports.filter((e) => e.subpath === '.')
    expect(main.filter((e) => surface.mentionsAny(surface.typeOf(e.symbol))).map((e) => e.name)).toEqual([])
    expect(members.filter((m) => m.path.startsWith('.: ') && surface.mentionsAny(m.type)).map((m) => m.path)).toEqual(
      [],
    )
  })

  it('names every time ...At as epoch ms, every duration ...Ms', () => {
    const times = members.filter((m) => /At$/.test(m.name) || m.name === 'at')
    expect(
      times.filter((m) => (m.name === 'at' ? /number/.test(text(m.type)) : !/^number( \| null)?$/.test(text(m.type)))),
    ).toEqual([])
    expect(times.length).toBeGreaterThan(5)
    const units = members.filter((m) => /(Micros|Millis|Nanos|Seconds|Secs|Sec|Us|Ns|Mins|Minutes)$/.test(m.name))
    expect(units.map((m) => m.path)).toEqual([])
    for (const m of members.filter((m) => /Ms$/.test(m.name))) expect(text(m.type), m.path).toMatch(/number|Histogram/)
  })

  it('discriminates its own result unions on outcome or ok', () => {
    const offending: string[] = []
    const results = surface.exports.filter((e) => /(Outcome|Result|Verdict|Report)$/.test(e.name))
    expect(results.map((e) => e.name)).toEqual(
      expect.arrayContaining(['DecideOutcome', 'ClaimOutcome', 'ValidationResult']),
    )
    for (const e of results) {
      const type = surface.typeOf(e.symbol)
      if (!type.isUnion() || DOCUMENT_UNIONS.has(e.name)) continue
      const objects = type.types.filter((t) => t.flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection))
      if (objects.length < 2 || objects.some((t) => t.getProperty('schema_version'))) continue
      const literal = (t: ts.Type, name: string) => {
        const p = t.getProperty(name)
        return p !== undefined && (surface.checker.getTypeOfSymbol(p).flags & ts.TypeFlags.Literal) !== 0
      }
      const tags = objects[0]!.getProperties().filter((p) => objects.every((t) => literal(t, p.name)))
      if (!tags.some((p) => p.name === 'outcome' || p.name === 'ok')) offending.push(`${e.subpath}: ${e.name}`)
    }
    expect(offending).toEqual([])
  })

  it('uses one telemetry namespace per kind of name', () => {
    for (const name of [...Object.values(channels), SIDECAR_MIRROR_CHANNEL])
      expect(name).toMatch(/^loopx-hooks:[a-z-]+$/)
    const source = ['otel.ts', 'otel_turn_start.ts'].map((f) => readFileSync(join(__dirname, '..', 'lib', f), 'utf8'))
    const metricNames = source.flatMap((s) => [...s.matchAll(/meter\.create\w+\(\s*'([^']+)'/g)].map((m) => m[1]!))
    const attributes = source.flatMap((s) => [...s.matchAll(/'(loopx[^' ]*)'\s*[:,]/g)].map((m) => m[1]!))
    const spans = source.flatMap((s) => [...s.matchAll(/startSpan\(\s*'([^']+)'/g)].map((m) => m[1]!))
    expect(metricNames.length).toBeGreaterThan(10)
    expect(attributes.length).toBeGreaterThan(10)
    expect(metricNames.filter((n) => !/^loopx\.hooks(\.[a-z][a-z_]*)+$/.test(n))).toEqual([])
    expect(attributes.filter((n) => !/^loopx(\.[a-z][a-z_]*)+$/.test(n))).toEqual([])
    expect(spans.filter((n) => !/^loopx-hooks [a-z][a-z -]*$/.test(n))).toEqual([])
  })
})

describe('one name per filter', () => {
  it('claims by capabilityId and intentKind, the names IntentQuery uses; the old names are unknown options', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha'] })
    runtime.register({ registration: registration('alpha.good'), provider: goodProvider() })
    await runtime.dispatch(request())
    const journal = runtime.journal
    const lease = { executorId: 'naming.filter', leaseMs: 60_000 }
    expect(await journal.claim({ ...lease, capabilityId: 'beta' })).toEqual([])
    expect(await journal.claim({ ...lease, intentKind: 'alpha.other' })).toEqual([])
    const [claimed] = await journal.claim({ ...lease, capabilityId: 'alpha', intentKind: 'alpha.signal' })
    expect(claimed).toMatchObject({ capabilityId: 'alpha', intentKind: 'alpha.signal' })
    expect((await journal.listIntents({ capabilityId: 'alpha', intentKind: 'alpha.signal' })).items).toHaveLength(1)
    for (const old of [{ capability: 'alpha' }, { kind: 'alpha.signal' }]) {
      const thrown = await journal.claim({ ...lease, ...old } as never).catch((e: unknown) => e)
      expect(thrown).toBeInstanceOf(LoopxHooksError)
      expect(thrown).toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
    }
    await runtime.close()
  })
})

describe('one way to say where the journal is', () => {
  it('takes journal only; a postgres:// string goes to PostgreSQL, never to a file of that name', async () => {
    // Port 1 refuses at once: the open fails coded as PostgreSQL unavailable, and nothing is made on disk.
    const url = 'postgres://naming@127.0.0.1:1/db?connect_timeout=1'
    const thrown = await HookRuntime.open({ journal: url }).catch((e: unknown) => e)
    expect(thrown).toBeInstanceOf(LoopxHooksError)
    expect(thrown).toMatchObject({ code: 'ERR_LOOPX_JOURNAL_UNAVAILABLE' })
    expect(existsSync('postgres:')).toBe(false)
    const old = await HookRuntime.open({ journalPath: 'x.db' } as never).catch((e: unknown) => e)
    expect(old).toMatchObject({ code: 'ERR_LOOPX_INVALID_ARGUMENT' })
    expect(existsSync('x.db')).toBe(false)
  })
})

describe('kinds are given once', () => {
  it('register defines the kinds a defineHook hook carries; the same definition again is a no-op', async () => {
    const tmp = new TempDir()
    const runtime = await HookRuntime.open({ journal: tmp.path('kinds.db'), profile: { enabled: true } })
    try {
      const kind = signalKind('alpha')
      const hook = (id: string) =>
        defineHook({ kinds: [kind], registration: registration(id), provider: (input) => signalResult(input) as never })
      runtime.register(hook('alpha.one'))
      runtime.register(hook('alpha.two'))
      runtime.defineIntentKind(kind)
      const outcome = await runtime.dispatch(request())
      expect(outcome.hooks.map((h) => h.outcome)).toEqual(['recorded', 'recorded'])
      // Another definition under a defined name is refused, hook and all.
      const other = { ...kind, operations: ['evaluate'] as const }
      const refused = (() => {
        try {
          runtime.register({ ...hook('alpha.three'), kinds: [other] })
        } catch (error) {
          return error
        }
      })()
      expect(refused).toMatchObject({
        code: 'ERR_LOOPX_INTENT_KIND_REJECTED',
        violations: [{ path: '/intent_kind', rule: 'duplicate_item' }],
      })
      expect((await runtime.dispatch(request())).hooks.map((h) => h.hookId)).toEqual(['alpha.one', 'alpha.two'])
    } finally {
      await runtime.close()
      tmp.cleanup()
    }
  })
})
