// The periodic_report capability (issue 4, item 2; RFC slice 3): its intent
// kind and hook (the RFC's example documents), the mapping of completion and
// replan projections to one trigger-evaluation intent, the capability-owned
// weekly_v0 trigger reducer, and the fake scheduler acting as the governed
// executor (outbox -> admit -> dedupe on intent_id -> reducer -> decision,
// and nothing after). Also: the core never imports the capability, and its
// behaviour does not depend on the capability's name.
//
// Writebacks go through the reference seam on real files in temp dirs.
import fs, { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'

import { guardNetwork } from './support/network'
import { afterEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  IntentKinds,
  defineHook,
  dispatchId,
  intent,
  proposed,
  registrationDigest,
  validateHookResult,
  validateIntentKindDefinition,
  validateRegistration,
  type IntentKindDefinition,
  type PostWritebackHookInput,
  type PostWritebackIntent,
} from '../lib/index.js'
import { TurnSettlement, type WritebackRequest } from '../lib/orchestrator/index.js'
import {
  PeriodicReportScheduler,
  TRIGGER_EVALUATION,
  installPeriodicReport,
  triggerEvaluationKind,
  type TriggerEvent,
  type TriggerPolicy,
  type WindowState,
} from '../lib/capabilities/periodic_report/index.js'
// The capability's own parts, from their modules (not part of its public entry).
import {
  runtimeTriggerHook,
  runtimeTriggerProvider,
  runtimeTriggerRegistration,
} from '../lib/capabilities/periodic_report/hook.js'
import { isoWeek, reduceTrigger } from '../lib/capabilities/periodic_report/reducer.js'

const ROOT = join(__dirname, '..')

// IntentKinds takes the mutable generated type; the typed kind is readonly (the same document).
const triggerKinds = () => new IntentKinds([TRIGGER_EVALUATION as unknown as IntentKindDefinition])
const example = (name: string) => JSON.parse(readFileSync(join(ROOT, 'examples', `${name}.json`), 'utf8'))

const dirs: string[] = []
const closers: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) {
    try {
      await close()
    } catch {
      // already closed
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'loopx-hooks-periodic-'))
  dirs.push(d)
  return d
}

const WEEK_35 = new Date('2026-08-26T10:00:00Z') // a Wednesday of 2026-W35

function completion(n: number | string, over: Partial<WritebackRequest> = {}): WritebackRequest {
  return {
    kind: 'todo_completed',
    goalId: 'goal_0001',
    agentId: 'agent_0001',
    todoId: `todo_${n}`,
    turnInstanceId: `turn_${n}`,
    effectId: `effect_${n}`,
    stateRevision: `rev_${n}`,
    factRefs: [`event_${n}`],
    ...over,
  }
}

const replan = (n: number | string) => completion(n, { kind: 'replan_recorded' })

/** A composition root with periodic_report installed (phase enabled), the seam, and a scheduler. */
async function world(
  options: { dir?: string; capabilityId?: string; threshold?: number; clock?: { now: Date }; store?: string } = {},
) {
  const dir = options.dir ?? tempDir()
  const hooks = await HookRuntime.open({
    journal: join(dir, 'hooks.journal'),
    profile: { enabled: true },
    synchronous: 'normal',
  })
  closers.push(() => hooks.close())
  const installed = installPeriodicReport(hooks, options.capabilityId ? { capabilityId: options.capabilityId } : {})
  const clock = options.clock ?? { now: WEEK_35 }
  const seam = await TurnSettlement.open({ turnJournalPath: join(dir, 'turn.journal'), hooks, now: () => clock.now })
  closers.push(() => seam.close())
  const scheduler = PeriodicReportScheduler.open({
    journal: hooks.journal,
    storePath: options.store ?? join(dir, 'periodic_report.store'),
    completionThreshold: options.threshold ?? 3,
    now: () => clock.now,
    ...(options.capabilityId ? { capabilityId: options.capabilityId } : {}),
  })
  closers.push(() => scheduler.close())
  return { dir, hooks, installed, seam, scheduler, clock }
}

// ---------------------------------------------------------------- kind and hook

describe('intent kind and hook', () => {
  it('are the RFC example documents, and the package validators accept them', () => {
    expect(TRIGGER_EVALUATION).toEqual(example('intent_kind'))
    expect(runtimeTriggerRegistration()).toEqual(example('registration'))
    expect(validateIntentKindDefinition(TRIGGER_EVALUATION).ok).toBe(true)
    expect(validateRegistration(runtimeTriggerRegistration(), triggerKinds()).ok).toBe(true)
    expect(runtimeTriggerHook().registration).toEqual(example('registration'))
  })

  it('installs at the composition root: kind, then hook', async () => {
    const hooks = await HookRuntime.open({ journal: join(tempDir(), 'hooks.journal') })
    closers.push(() => hooks.close())
    expect(installPeriodicReport(hooks)).toEqual({
      capabilityId: 'periodic_report',
      hookId: 'periodic_report.runtime_trigger',
      intentKind: 'periodic_report.trigger_evaluation',
      registration: example('registration'),
    })
    // Twice: the kind is the same definition (a no-op), the hook a duplicate, refused by core.
    expect(() => installPeriodicReport(hooks)).toThrow(
      expect.objectContaining({
        code: 'ERR_LOOPX_REGISTRATION_REJECTED',
        violations: [{ path: '/hook_id', rule: 'duplicate_item' }],
      }),
    )
  })

  function inputFor(
    eventKind: 'todo_completed' | 'replan_recorded',
    transition: string,
    factRefs: string[],
  ): PostWritebackHookInput {
    const base = example('hook_input') as PostWritebackHookInput
    const reg = runtimeTriggerRegistration()
    return {
      ...base,
      dispatch_id: dispatchId({
        receiptId: base.source.receipt_id,
        effectId: base.source.effect_id,
        hookId: reg.hook_id,
        capabilityId: reg.capability_id,
        registrationDigest: registrationDigest(reg),
        registrationSchemaVersion: reg.schema_version,
        eventKind,
      }),
      source: { ...base.source, event_kind: eventKind },
      projection: { ...base.projection, transition: transition as never, fact_refs: factRefs },
    }
  }

  it('maps a completion and a replan projection to exactly one valid trigger-evaluation intent, anything else to not_applicable', () => {
    const provider = runtimeTriggerProvider()
    const kinds = triggerKinds()
    const reg = runtimeTriggerRegistration()
    for (const [eventKind, transition] of [
      ['todo_completed', 'segment_completed'],
      ['replan_recorded', 'replan_recorded'],
    ] as const) {
      const input = inputFor(eventKind, transition, ['event_a', 'event_b'])
      const result = provider(input)
      expect(result.status).toBe('proposed')
      expect(result.intents).toHaveLength(1)
      expect(result.intents[0]).toMatchObject({
        intent_kind: 'periodic_report.trigger_evaluation',
        operation: 'evaluate_runtime_trigger',
        policy_version: 'weekly_v0',
        payload: { segment_ref: 'todo_opaque', source_event_refs: ['receipt_opaque', 'event_a', 'event_b'] },
        requested_write_scope: [],
        grants_new_action_authority: false,
        external_write_performed: false,
      })
      expect(validateHookResult(result, reg, input.dispatch_id, kinds)).toMatchObject({ ok: true })
      // Deterministic: the same input, the same result (so a replay is never a conflict).
      expect(provider(input)).toEqual(result)
    }
    expect(provider(inputFor('todo_completed', 'segment_started', ['event_a']))).toEqual({
      schema_version: 'loopx_post_writeback_hook_result_v0',
      status: 'not_applicable',
      intents: [],
    })
  })

  it('keeps source_event_refs unique and within the kind bound (32)', () => {
    const many = Array.from({ length: 32 }, (_, i) => `event_${i}`)
    const input = inputFor('todo_completed', 'segment_completed', ['receipt_opaque', ...many.slice(0, 31)])
    const refs = runtimeTriggerProvider()(input).intents[0]!.payload.source_event_refs
    expect(refs).toEqual(['receipt_opaque', ...many.slice(0, 31)])
    const full = runtimeTriggerProvider()(inputFor('todo_completed', 'segment_completed', many)).intents[0]!.payload
      .source_event_refs
    expect(full).toHaveLength(32)
    expect(new Set(full).size).toBe(32)
  })
})

// ---------------------------------------------------------------- reducer

describe('trigger reducer (weekly_v0)', () => {
  const policy = (completionThreshold: number): TriggerPolicy => ({ policyVersion: 'weekly_v0', completionThreshold })
  const ev = (
    n: number,
    transition: TriggerEvent['transition'] = 'segment_completed',
    window = '2026-W35',
    segment = `seg_${n}`,
  ): TriggerEvent => ({
    intentId: `pwi_${n}`,
    transition,
    segmentRef: segment,
    window,
  })
  function run(events: TriggerEvent[], p: TriggerPolicy) {
    let state: WindowState | null = null
    return events.map((e) => {
      const out = reduceTrigger(state, e, p)
      state = out.state
      return `${out.decision.decision}:${out.decision.reason}:${out.decision.completions}`
    })
  }

  it('promotes after the configured number of distinct segment completions, once per window', () => {
    expect(run([ev(1), ev(2), ev(3), ev(4)], policy(3))).toEqual([
      'hold:below_threshold:1',
      'hold:below_threshold:2',
      'promote:completion_threshold_reached:3',
      'hold:already_promoted_in_window:4',
    ])
    expect(run([ev(1), ev(2)], policy(1))).toEqual([
      'promote:completion_threshold_reached:1',
      'hold:already_promoted_in_window:2',
    ])
    // The same segment twice counts once.
    expect(run([ev(1), ev(2, 'segment_completed', '2026-W35', 'seg_1'), ev(3)], policy(2))).toEqual([
      'hold:below_threshold:1',
      'hold:segment_already_counted:1',
      'promote:completion_threshold_reached:2',
    ])
  })

  it('promotes on a replan, never twice for one window, and starts afresh in the next window', () => {
    expect(run([ev(1), ev(2, 'replan_recorded'), ev(3, 'replan_recorded'), ev(4), ev(5), ev(6)], policy(3))).toEqual([
      'hold:below_threshold:1',
      'promote:replan_recorded:1',
      'hold:already_promoted_in_window:1',
      'hold:already_promoted_in_window:2',
      'hold:already_promoted_in_window:3',
      'hold:already_promoted_in_window:4',
    ])
    expect(
      run(
        [ev(1, 'replan_recorded'), ev(2, 'replan_recorded', '2026-W36'), ev(3, 'segment_completed', '2026-W36')],
        policy(1),
      ),
    ).toEqual(['promote:replan_recorded:0', 'promote:replan_recorded:0', 'hold:already_promoted_in_window:1'])
  })

  it('is pure and checks its policy', () => {
    const state: WindowState = { window: '2026-W35', completedSegments: ['seg_1'], promoted: false, promotedBy: null }
    const frozen = structuredClone(state)
    reduceTrigger(state, ev(2), policy(2))
    expect(state).toEqual(frozen)
    // A policy out of range is the caller's misuse: a coded error naming the member.
    const misuse = { name: 'LoopxHooksError', code: 'ERR_LOOPX_INVALID_ARGUMENT' }
    expect(() => reduceTrigger(null, ev(1), policy(0))).toThrow(expect.objectContaining(misuse))
    expect(() => reduceTrigger(null, ev(1), policy(0))).toThrow(/completionThreshold/)
    expect(() => reduceTrigger(null, ev(1), { policyVersion: 'monthly_v1' as never, completionThreshold: 1 })).toThrow(
      /policyVersion/,
    )
  })

  it('windows are ISO weeks in UTC', () => {
    expect(isoWeek(WEEK_35)).toBe('2026-W35')
    expect(isoWeek(new Date('2026-01-01T00:00:00Z'))).toBe('2026-W01') // a Thursday
    expect(isoWeek(new Date('2027-01-01T12:00:00Z'))).toBe('2026-W53') // a Friday
    expect(isoWeek(new Date('2024-12-30T00:00:00Z'))).toBe('2025-W01')
    expect(isoWeek(new Date('2026-08-30T23:59:59Z'))).toBe('2026-W35') // Sunday ends the week
    expect(isoWeek(new Date('2026-08-31T00:00:00Z'))).toBe('2026-W36')
  })
})

// ---------------------------------------------------------------- scheduler

/** Patches the JS file-writing entry points to count (and still work); `restore()` puts them back. */
function countFsWrites() {
  const calls: string[] = []
  const undo: (() => void)[] = []
  const writeFlags = (flags: unknown) => typeof flags === 'string' && /[wa+]/.test(flags)
  const patch = (target: object, key: string, isWrite: (args: unknown[]) => boolean = () => true) => {
    const t = target as Record<string, (...args: unknown[]) => unknown>
    const original = t[key]!
    t[key] = function (this: unknown, ...args: unknown[]) {
      if (isWrite(args)) calls.push(key)
      return original.apply(this, args)
    }
    undo.push(() => {
      t[key] = original
    })
  }
  for (const key of [
    'writeFile',
    'writeFileSync',
    'appendFile',
    'appendFileSync',
    'createWriteStream',
    'mkdir',
    'mkdirSync',
    'rename',
    'renameSync',
    'unlink',
    'unlinkSync',
    'rm',
    'rmSync',
    'copyFile',
    'copyFileSync',
    'truncate',
    'truncateSync',
  ])
    patch(fs, key)
  patch(fs, 'open', (args) => writeFlags(args[1]))
  patch(fs, 'openSync', (args) => writeFlags(args[1]))
  for (const key of ['writeFile', 'appendFile', 'mkdir', 'rename', 'unlink', 'rm', 'copyFile', 'truncate'])
    patch(fs.promises, key)
  patch(fs.promises, 'open', (args) => writeFlags(args[1]))
  return {
    calls,
    restore: () =>
      undo
        .splice(0)
        .reverse()
        .forEach((f) => f()),
  }
}

/** name -> [size, mtimeMs] of every file under `dir`. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      const st = statSync(p)
      if (st.isDirectory()) walk(p)
      else out.set(relative(dir, p), `${st.size}:${st.mtimeMs}`)
    }
  }
  walk(dir)
  return out
}

describe('fake scheduler (governed executor)', () => {
  it('lists pending intents, admits them, runs the reducer, records promote/hold in its own store, marks them done; a second pass decides nothing new', async () => {
    const w = await world({ threshold: 2 })
    const settled = []
    for (const n of [1, 2, 3]) settled.push(await w.seam.settle(completion(n)))
    const intentIds = settled.map((s) => s.dispatch!.hooks[0]!.receipt!.intent_ids[0]!)

    const first = await w.scheduler.runOnce()
    expect(first.listed).toBe(3)
    expect(first.admitted).toEqual(intentIds)
    expect(first.rejected).toEqual([])
    expect(first.evaluated.map((d) => [d.intentId, d.decision, d.reason, d.segmentRef, d.window])).toEqual([
      [intentIds[0], 'hold', 'below_threshold', 'todo_1', '2026-W35'],
      [intentIds[1], 'promote', 'completion_threshold_reached', 'todo_2', '2026-W35'],
      [intentIds[2], 'hold', 'already_promoted_in_window', 'todo_3', '2026-W35'],
    ])
    const outbox = (await w.hooks.journal.listIntents()).items
    expect(outbox.map((i) => [i.decision, i.executorId, i.reasonCode, i.doneAt !== null])).toEqual(
      Array(3).fill(['admit', 'periodic_report.scheduler', 'admitted', true]),
    )
    expect(w.scheduler.decisions()).toEqual(first.evaluated)
    expect(w.scheduler.store.windows()).toEqual([
      {
        window: '2026-W35',
        completedSegments: ['todo_1', 'todo_2', 'todo_3'],
        promoted: true,
        promotedBy: intentIds[1],
      },
    ])

    const second = await w.scheduler.runOnce()
    expect(second).toEqual({ listed: 0, admitted: [], rejected: [], evaluated: [], duplicates: [], skipped: [] })
    expect(w.scheduler.decisions()).toEqual(first.evaluated)
  })

  it('dedupes on intent_id: a pass interrupted after the reducer (before markDone) is finished without a second decision', async () => {
    const w = await world({ threshold: 1 })
    const s = await w.seam.settle(replan(1))
    const intentId = s.dispatch!.hooks[0]!.receipt!.intent_ids[0]!
    // The interrupted pass: admitted and evaluated, never marked done.
    await w.hooks.journal.decide({
      intentId,
      executorId: 'periodic_report.scheduler',
      decision: 'admit',
      reasonCode: 'admitted',
    })
    w.scheduler.store.evaluate(
      { intentId, transition: 'replan_recorded', segmentRef: 'todo_1', window: '2026-W35' },
      w.scheduler.policy,
      WEEK_35.getTime(),
    )
    const before = w.scheduler.decisions()

    const pass = await w.scheduler.runOnce()
    expect(pass).toMatchObject({ listed: 1, admitted: [], evaluated: [], duplicates: [intentId] })
    expect(w.scheduler.decisions()).toEqual(before)
    expect((await w.hooks.journal.listIntents()).items[0]).toMatchObject({
      decision: 'admit',
      doneAt: expect.any(Number),
    })
  })

  it('rejects an intent its store already evaluated (fed again through another journal) as duplicate_intent', async () => {
    const store = join(tempDir(), 'shared.store')
    const a = await world({ store, threshold: 1 })
    const b = await world({ store, threshold: 1 })
    const sa = await a.seam.settle(completion(1))
    const sb = await b.seam.settle(completion(1))
    const intentId = sa.dispatch!.hooks[0]!.receipt!.intent_ids[0]!
    expect(sb.dispatch!.hooks[0]!.receipt!.intent_ids).toEqual([intentId]) // same receipt, same hook: same identity

    expect((await a.scheduler.runOnce()).evaluated).toHaveLength(1)
    const pass = await b.scheduler.runOnce()
    expect(pass).toMatchObject({
      admitted: [],
      evaluated: [],
      rejected: [{ intentId, reasonCode: 'duplicate_intent' }],
    })
    expect(b.scheduler.decisions()).toHaveLength(1)
    expect((await b.hooks.journal.listIntents()).items[0]).toMatchObject({
      decision: 'reject',
      reasonCode: 'duplicate_intent',
    })
  })

  it('an intent that requests write scope, or another policy, is recorded only: the scheduler rejects it and evaluates nothing', async () => {
    const w = await world()
    // Another hook of the same capability, proposing what the scheduler must not take.
    const kind = TRIGGER_EVALUATION
    w.hooks.register(
      defineHook({
        kinds: [kind],
        registration: {
          ...runtimeTriggerRegistration(),
          hook_id: 'periodic_report.overreaching',
          intent_kinds: [kind.intent_kind],
          budget: { ...runtimeTriggerRegistration().budget, max_intents_per_dispatch: 2 },
        },
        provider: (input) =>
          proposed([
            intent(input, kind, {
              operation: 'evaluate_runtime_trigger',
              policyVersion: 'weekly_v0',
              payload: { segment_ref: 'scoped', source_event_refs: [] },
              requestedWriteScope: ['periodic_report.outbox'],
            }),
            intent(input, kind, {
              operation: 'evaluate_runtime_trigger',
              policyVersion: 'monthly_v1',
              payload: { segment_ref: 'monthly', source_event_refs: [] },
            }),
          ]),
      }),
    )
    const s = await w.seam.settle(completion(1))
    expect(s.dispatch!.hooks.map((h) => [h.hookId, h.outcome])).toEqual([
      ['periodic_report.overreaching', 'recorded'],
      ['periodic_report.runtime_trigger', 'recorded'],
    ])
    const pass = await w.scheduler.runOnce()
    expect(pass.rejected.map((r) => r.reasonCode).sort()).toEqual([
      'unsupported_policy_version',
      'write_scope_not_granted',
    ])
    expect(pass.evaluated.map((d) => d.segmentRef)).toEqual(['todo_1'])
    const rejected = (await w.hooks.journal.listIntents()).items.filter((i) => i.decision === 'reject')
    expect(
      rejected
        .map((i) => i.intent.requested_write_scope.length + ':' + (i.intent as PostWritebackIntent).policy_version)
        .sort(),
    ).toEqual(['0:monthly_v1', '1:weekly_v0'])
  })

  it('leaves intents another executor decided alone', async () => {
    const w = await world()
    const s = await w.seam.settle(completion(1))
    const intentId = s.dispatch!.hooks[0]!.receipt!.intent_ids[0]!
    await w.hooks.journal.decide({
      intentId,
      executorId: 'someone.else',
      decision: 'admit',
      reasonCode: 'admitted_elsewhere',
    })
    expect(await w.scheduler.runOnce()).toMatchObject({ listed: 1, skipped: [intentId], evaluated: [] })
    expect(w.scheduler.decisions()).toEqual([])
  })

  it('stops before any sink: no socket, no fetch, no file write outside its store and the outbox during a pass', async () => {
    const w = await world({ threshold: 1 })
    for (const n of [1, 2]) await w.seam.settle(completion(n))
    await w.seam.settle(replan(3))
    const before = snapshot(w.dir)
    const net = guardNetwork()
    const writes = countFsWrites()
    let pass
    try {
      pass = await w.scheduler.runOnce()
    } finally {
      writes.restore()
      net.restore()
    }
    expect(pass.evaluated.map((d) => d.decision)).toEqual(['promote', 'hold', 'hold'])
    expect(net.calls).toEqual([])
    expect(writes.calls).toEqual([])
    const after = snapshot(w.dir)
    const changed = [...after].filter(([name, stamp]) => before.get(name) !== stamp).map(([name]) => name)
    const allowed = /^(periodic_report\.store|hooks\.journal)(-wal|-shm)?$/
    expect(changed.filter((name) => !allowed.test(name))).toEqual([])
    expect([...after.keys()].filter((name) => !before.has(name))).toEqual([])
    expect(changed.some((name) => name.startsWith('periodic_report.store'))).toBe(true)
  })
})

// ---------------------------------------------------------------- core independence

/** Comments out of TS or Rust source (block and line comments; good enough for a scan). */
function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"])\/\/.*$/gm, '$1')
}

/** Rust source without its `#[cfg(test)]` items (a `mod x;` line or a braced block). */
function withoutTestItems(source: string): string {
  let out = source
  for (;;) {
    const at = out.indexOf('#[cfg(test)]')
    if (at < 0) return out
    let i = at + '#[cfg(test)]'.length
    while (i < out.length && out[i] !== ';' && out[i] !== '{') i++
    if (out[i] === '{') {
      let depth = 0
      for (; i < out.length; i++) {
        if (out[i] === '{') depth++
        else if (out[i] === '}' && --depth === 0) break
      }
    }
    out = out.slice(0, at) + out.slice(i + 1)
  }
}

function filesUnder(dir: string, keep: (path: string) => boolean): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else if (keep(p)) out.push(p)
    }
  }
  walk(dir)
  return out
}

describe('the core never imports the capability', () => {
  it('no core TypeScript (lib/, the orchestrator seam included) imports it or names it in code', () => {
    const core = filesUnder(
      join(ROOT, 'lib'),
      (p) => p.endsWith('.ts') && !p.endsWith('.d.ts') && !relative(join(ROOT, 'lib'), p).startsWith('capabilities'),
    )
    expect(core.length).toBeGreaterThan(5)
    expect(core.some((p) => p.includes('orchestrator'))).toBe(true)
    const offenders: string[] = []
    for (const file of core) {
      const code = stripComments(readFileSync(file, 'utf8'))
      const imports = [
        ...code.matchAll(
          /(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|require\(\s*['"]([^'"]+)['"]\s*\)|import\(\s*['"]([^'"]+)['"]\s*\)/g,
        ),
      ].map((m) => m[1] ?? m[2] ?? m[3]!)
      for (const spec of imports)
        if (/capabilities|periodic_report/.test(spec)) offenders.push(`${relative(ROOT, file)} imports ${spec}`)
      if (/periodic_report/.test(code)) offenders.push(`${relative(ROOT, file)} names periodic_report in code`)
    }
    expect(offenders).toEqual([])
  })

  it('no core Rust (src/, tests and the example generator aside) names it or a capabilities module', () => {
    const sources = filesUnder(join(ROOT, 'src'), (p) => p.endsWith('.rs')).filter(
      (p) => !/[/\\](tests|bin)[/\\]/.test(relative(ROOT, p)) && !/(^|[/\\])(tests|fixtures)\.rs$/.test(p),
    )
    expect(sources.length).toBeGreaterThan(10)
    const offenders = sources.filter((file) =>
      /periodic_report|capabilities/.test(withoutTestItems(stripComments(readFileSync(file, 'utf8')))),
    )
    expect(offenders.map((f) => relative(ROOT, f))).toEqual([])
  })

  it('behaves the same under another capability name: the same writebacks give the same outcome shapes', async () => {
    /** Ids and the capability's name replaced by placeholders. */
    const shape = (value: unknown, capability: string) =>
      JSON.parse(
        JSON.stringify(value)
          .replaceAll(capability, 'CAPABILITY')
          .replace(/\b(pwh_|pwi_)?[0-9a-f]{64}\b/g, '$1ID'),
      )
    async function scenario(capabilityId: string) {
      const w = await world({ capabilityId, threshold: 2 })
      const settles = []
      for (const req of [
        completion(1),
        completion(2),
        replan(3),
        completion(1),
        completion(2, { stateRevision: 'rev_x' }),
        completion(4, { goalId: '' }),
      ]) {
        settles.push(await w.seam.settle(req))
      }
      const pass1 = await w.scheduler.runOnce()
      const pass2 = await w.scheduler.runOnce()
      const journal = {
        stats: await w.hooks.journal.stats(),
        dispatches: (await w.hooks.journal.listDispatches()).items.map((d) => ({ ...d, createdAt: 0, updatedAt: 0 })),
        intents: (await w.hooks.journal.listIntents()).items.map((i) => ({ ...i, decidedAt: 0, doneAt: 0 })),
      }
      const { dispatchMarkers, ...primaryRows } = w.seam.contents()
      return {
        primary: { results: settles.map((s) => s.primary), rows: primaryRows },
        shaped: shape(
          { settles, pass1, pass2, dispatchMarkers, journal, decisions: w.scheduler.decisions() },
          capabilityId,
        ),
      }
    }
    const periodic = await scenario('periodic_report')
    const acme = await scenario('acme_report')
    expect(acme.shaped).toEqual(periodic.shaped)
    // The primary part is identical, ids included: the seam never sees the capability.
    expect(acme.primary).toEqual(periodic.primary)
    expect(periodic.shaped.pass1.evaluated.map((d: { decision: string }) => d.decision)).toEqual([
      'hold',
      'promote',
      'hold',
    ])
    expect(
      periodic.shaped.settles.map(
        (s: { dispatch: { hooks: { outcome: string }[] } | null }) => s.dispatch?.hooks.map((h) => h.outcome) ?? null,
      ),
    ).toEqual([['recorded'], ['recorded'], ['recorded'], ['replayed'], null, null])
  })

  it('the acme_report kind and registration are the same documents under the other name', () => {
    expect(
      JSON.parse(JSON.stringify(triggerEvaluationKind('acme_report')).replaceAll('acme_report', 'periodic_report')),
    ).toEqual(example('intent_kind'))
    expect(
      JSON.parse(
        JSON.stringify(runtimeTriggerRegistration('acme_report')).replaceAll('acme_report', 'periodic_report'),
      ),
    ).toEqual(example('registration'))
  })
})
