// Misuse anywhere on the public surface is a coded error. The walk takes every
// export of every entry point in package.json "exports", every class's static
// and prototype methods (on live instances) and constructor, and calls each
// with each wrong kind of value (undefined, null, a number, a string, an array,
// an object, where another kind belongs) in each argument position, and in each
// member of an object argument. A call may succeed (an optional argument), or
// return a validator's typed verdict, or throw or reject with a LoopxHooksError
// ERR_LOOPX_INVALID_ARGUMENT whose message names the argument or member; any
// other throw fails the walk. A new export, method or parameter is walked as
// soon as it exists: the walk fails until it has a valid sample (SAMPLES) for
// the arguments before a position, and it is never a list of methods to test.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as root from '../lib/index.js'
import * as orchestrator from '../lib/orchestrator/index.js'
import * as otel from '../lib/otel.js'
import * as periodicReport from '../lib/capabilities/periodic_report/index.js'
import { TriggerStore } from '../lib/capabilities/periodic_report/store.js'
import { turnStartReceipt, turnStartRegistration, turnStartRequest } from './support/turn_start.js'
import { TempDir, goodProvider, registration, request, signalKind } from './support/runtime.js'
import { paramNames, publicClass, wrongKinds, kindOf, type Callable } from './support/walk.js'

const repo = join(__dirname, '..')
const ENTRIES: Record<string, Record<string, unknown>> = {
  '.': root,
  './orchestrator': orchestrator,
  './otel': otel,
  './capabilities/periodic_report': periodicReport,
}

/**
 * What the walk does not call, each with its reason. Constructors that are
 * private or internal are reached through their factories (`open`), which
 * are walked.
 */
const EXCLUDED: Record<string, string> = {
  'HookJournal.constructor': 'internal: wraps a native journal; HookJournal.open and openReadOnly are walked',
  'HookRuntime.constructor': 'private: HookRuntime.open is walked',
  'ShippedHookRuntime.constructor': "internal: HookRuntime.open({ dialect: 'loopx-shipped-v0' }) makes one",
  'InboxStore.constructor': 'private: InboxStore.open is walked',
  'TurnStartSession.constructor': 'internal: the kernel makes one per provider call',
  'TurnSettlement.constructor': 'private: TurnSettlement.open is walked',
  'PeriodicReportScheduler.constructor': 'private: PeriodicReportScheduler.open is walked',
  'TriggerStore.constructor': 'private: TriggerStore.open is walked',
  'LoopxHooksError.constructor': 'the error class itself: it makes the caller an error, it takes no input',
}

/** Classes whose methods are not walked on a live instance, each with its reason. */
const NOT_LIVE: Record<string, string> = {
  LoopxHooksError: 'an Error: no methods of its own',
}

/**
 * Parameters that are documents: the addon judges them whole against their
 * contract, so their members are not walked one by one (validators.spec.ts
 * and hostile_inputs.spec.ts walk documents), and a document of the wrong
 * kind may be answered with the contract's own verdict.
 */
const DOCUMENTS = new Set([
  'doc',
  'registration',
  'definition',
  'request',
  'requests',
  'input',
  'value',
  'parts',
  'receipt',
  'settlement',
])

/** Codes a document argument may be refused with: the contract's verdicts, with their violations. */
const VERDICTS = new Set(['ERR_LOOPX_REGISTRATION_REJECTED', 'ERR_LOOPX_INTENT_KIND_REJECTED'])

const tmp = new TempDir('loopx-misuse-walk-')
const example = (name: string) =>
  JSON.parse(readFileSync(join(repo, 'examples', `${name}.json`), 'utf8')) as Record<string, unknown>
const kind = signalKind('walk')
const hook = { registration: registration('walk.hook'), provider: goodProvider() }
const message = { routeId: 'route', providerMessageId: 'm1' }
let file = 0
const fresh = (name: string) => tmp.path(`${name}-${file++}.db`)

/**
 * A valid value for a parameter or member, by its name (or `Owner.method.name`
 * where one name means different things). Each is a fresh value per call.
 */
const SAMPLES: Record<string, () => unknown> = {
  doc: () => ({}),
  'buildIntent.input': () => example('hook_input'),
  'intent.input': () => example('hook_input'),
  'buildIntent.spec': () => ({ intentKind: kind.intent_kind, operation: 'signal', policyVersion: 'v1', payload: {} }),
  'intent.kind': () => kind,
  'dispatchId.parts': () => ({
    receiptId: 'r1',
    effectId: 'e1',
    hookId: 'walk.hook',
    capabilityId: 'walk',
    registrationDigest: 'sha256:0',
    registrationSchemaVersion: 'loopx_post_writeback_capability_hook_registration_v0',
    eventKind: 'todo_completed',
  }),
  'intentId.parts': () => ({
    dispatchId: `pwh_${'0'.repeat(64)}`,
    intentKind: 'walk.signal',
    policyVersion: 'v1',
    payload: {},
  }),
  'defineHook.spec': () => ({
    kinds: [kind],
    registration: registration('walk.defined'),
    provider: () => null as never,
  }),
  'intent.spec': () => ({ operation: 'signal', policyVersion: 'v1', payload: {} }),
  decision: () => ({
    intentId: `pwi_${'0'.repeat(64)}`,
    executorId: 'walk.executor',
    decision: 'admit',
    reasonCode: 'ok',
  }),
  'claim.options': () => ({ executorId: 'walk.executor', leaseMs: 1000 }),
  'consume.options': () => ({ executorId: 'walk.executor', leaseMs: 1000 }),
  policy: () => ({ policyVersion: 'weekly_v0', completionThreshold: 3 }),
  state: () => ({ window: '2026-W01', completedSegments: [], promoted: false, promotedBy: null }),
  event: () => ({ intentId: 'pwi_1', transition: 'segment_completed', segmentRef: 'seg', window: '2026-W01' }),
  decidedAt: () => Date.parse('2026-08-26T00:00:00Z'),
  committedAt: () => '2026-08-26T00:00:00Z',
  receipt: () => request().receipt,
  settlement: () => request().settlement,
  record: () => ({ ...request(), eventKind: 'todo_completed', factRefs: [] }),
  runtime: () => live.HookRuntime![0],
  capabilityId: () => 'walkcap',
  window: () => '2026-W01',
  date: () => new Date(0),
  value: () => 'cursor_1',
  read: () => [],
  'PeriodicReportScheduler.open.options': () => ({ journal: live.HookJournal![0], storePath: fresh('scheduler') }),
  registration: () => registration('walk.other'),
  kinds: () => new root.IntentKinds([kind]),
  context: () => new root.HookContext(registration('walk.hook')),
  dispatchId: () => `pwh_${'0'.repeat(64)}`,
  intentId: () => `pwi_${'0'.repeat(64)}`,
  executorId: () => 'walk.executor',
  text: () => '{}',
  input: () => ({}),
  intents: () => [],
  definition: () => kind,
  hook: () => ({ ...hook }),
  request: () => request(),
  requests: () => [request()],
  query: () => ({}),
  options: () => ({}),
  message: () => ({ ...message }),
  disposition: () => 'no_follow_up',
  result: () => 'added',
  scope: () => 'route',
  kind: () => 'history',
  leaseMs: () => 1000,
  token: () => 'token',
  collectorId: () => 'collector',
  max: () => 1,
  readRef: () => 'read_1',
  routeId: () => 'route',
  effectId: () => 'effect_0001',
  receiptId: () => 'receipt_0001',
  path: () => fresh('path'),
  journal: () => fresh('journal'),
  'HookJournal.openReadOnly.journal': () => livePath,
  'HookRuntime.open.options': () => ({ journal: fresh('runtime'), profile: { enabled: true } }),
  'TurnSettlement.open.options': () => ({ turnJournalPath: fresh('turn') }),
  'TurnStartKernel.register.hook': () => ({
    registration: turnStartRegistration('walkts'),
    provider: () => null,
  }),
  'TurnStartKernel.dispatchTurnStart.request': () => turnStartRequest(),
  'ShippedHookRuntime.register.hook': () => ({ registration: shippedRegistration(), provider: () => null as never }),
  source: () => shippedSource(),
  'validateShippedHookInput.registration': () => shippedRegistration(),
  'validateShippedResult.registration': () => shippedRegistration(),
  eventId: () => `pwr_${'0'.repeat(24)}`,
  'ShippedTurnStart.register.hook': () => ({
    registration: shippedTurnStartRegistration('walk.ts.other'),
    provider: () => null,
  }),
  sources: () => [shippedSource()],
}

function shippedRegistration(): root.ShippedRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: 'walk.shipped',
    capability_id: 'walk-shipped',
    policy_version: 'v0',
    phase: 'post_writeback',
    event_kinds: ['refresh_state'],
    intent_kinds: ['walk.deliver'],
    budget: { max_invocations_per_dispatch: 1, max_input_bytes: 4096, max_result_bytes: 4096 },
    failure_policy: 'isolate',
    requested_read_scope: [],
    requested_write_scope: [],
  }
}

function shippedTurnStartRegistration(hookId: string): root.ShippedTurnStartRegistration {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v1',
    hook_id: hookId,
    capability_id: 'walk-inbox',
    phase: 'turn_start',
    budget: { max_invocations_per_dispatch: 1, max_result_bytes: 4096 },
    failure_policy: 'isolate',
    requested_read_scope: [],
    requested_write_scope: ['owner_private_inbox'],
    required_read: null,
  }
}

function shippedSource(): root.ShippedSource {
  return {
    schema_version: 'loopx_post_writeback_hook_source_v0',
    event_kind: 'refresh_state',
    status: 'committed',
    durable: true,
    identity: { goal_id: 'g1', agent_id: 'a', todo_id: null, turn_instance_id: 't', effect_id: 'e' },
    state_version: 's',
    receipt_id: null,
    committed_at: '2026-09-02T12:00:00Z',
    projection: {},
  }
}

function sampleFor(owner: string, method: string, name: string): (() => unknown) | undefined {
  return SAMPLES[`${owner}.${method}.${name}`] ?? SAMPLES[`${method}.${name}`] ?? SAMPLES[name]
}

/** Each finding is one line: where, what was passed, what came back. */
const findings: string[] = []

function judge(where: string, names: string[], error: unknown): void {
  if (!(error instanceof root.LoopxHooksError)) {
    const e = error as { name?: string; code?: string; message?: string }
    findings.push(`${where}: threw ${e?.name ?? typeof error} ${e?.code ?? ''}: ${String(e?.message).slice(0, 120)}`)
    return
  }
  const document = names.some((n) => DOCUMENTS.has(n))
  if (document && VERDICTS.has(error.code) && (error.violations?.length ?? 0) > 0) return
  if (error.code !== 'ERR_LOOPX_INVALID_ARGUMENT' && !(error.code === 'ERR_LOOPX_NOT_JSON_VALUE' && document)) {
    findings.push(`${where}: ${error.code}: ${error.message.slice(0, 120)}`)
    return
  }
  if (!names.some((n) => new RegExp(`\\b${n}\\b`).test(error.message)))
    findings.push(`${where}: the message "${error.message.slice(0, 120)}" names none of ${names.join(', ')}`)
}

/** Calls `call` and judges what it threw or rejected with; a success is fine (an optional argument). */
async function attempt(where: string, names: string[], call: () => unknown): Promise<void> {
  try {
    const out = await call()
    dispose(out)
  } catch (error) {
    judge(where, names, error)
  }
}

/** Closes what a successful call opened. */
function dispose(value: unknown): void {
  if (value !== null && typeof value === 'object') {
    const v = value as { close?: () => unknown; [Symbol.dispose]?: () => void }
    if (typeof v[Symbol.dispose] === 'function') v[Symbol.dispose]!()
    else if (typeof v.close === 'function' && !(value instanceof root.HookJournal)) void v.close()
  }
}

/** Walks one callable: each wrong kind at each position, and in each member of an object argument. */
async function walk(owner: string, method: string, names: string[], call: Callable): Promise<void> {
  // Every other argument is a valid sample, so only the one under test is wrong.
  const others = (i: number): unknown[] | undefined => {
    const args: unknown[] = []
    for (const [j, name] of names.entries()) {
      if (j === i) continue
      const sample = sampleFor(owner, method, name)
      if (!sample && j < i) {
        findings.push(`${owner}.${method}: no sample for ${name}, so ${names[i]} cannot be walked`)
        return undefined
      }
      args[j] = sample?.()
    }
    return args
  }
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!
    const sample = sampleFor(owner, method, name)
    const expected = sample?.()
    const expectedKind = sample ? kindOf(expected) : undefined
    // A whole object argument of the wrong shape may be named by the member it lacks.
    const named = [name, ...(kindOf(expected) === 'object' ? Object.keys(expected as object) : [])]
    const with_ = (value: unknown): unknown[] | undefined => {
      const args = others(i)
      if (args) args[i] = value
      return args
    }
    if (!with_(undefined)) return
    for (const [label, wrong] of wrongKinds()) {
      if (label === expectedKind) continue
      await attempt(`${owner}.${method}(${name} = ${label})`, named, () => call(...with_(wrong)!))
    }
    const value = sample?.()
    if (DOCUMENTS.has(name) || kindOf(value) !== 'object' || (value as object).constructor !== Object) continue
    for (const member of Object.keys(value as object)) {
      const memberKind = kindOf((value as Record<string, unknown>)[member])
      for (const [label, wrong] of wrongKinds()) {
        if (label === memberKind) continue
        const arg = { ...(sample!() as object), [member]: wrong }
        await attempt(`${owner}.${method}(${name}.${member} = ${label})`, [member], () => call(...with_(arg)!))
      }
    }
  }
}

/** Live instances of each public class, by name, on temporary files. */
async function instances(): Promise<Record<string, object[]>> {
  livePath = fresh('live')
  const runtime = await root.HookRuntime.open({ journal: livePath, profile: { enabled: true } })
  runtime.defineIntentKind(kind)
  runtime.register({ ...hook })
  const shipped = await root.HookRuntime.open({
    dialect: 'loopx-shipped-v0',
    journal: fresh('shipped-live'),
    profile: { enabled: true },
  })
  shipped.register({ registration: shippedRegistration(), provider: () => null as never })
  const shippedTurnStart = new root.ShippedTurnStart()
  shippedTurnStart.register({ registration: shippedTurnStartRegistration('walk.ts'), provider: () => null as never })
  const journal = await root.HookJournal.open(fresh('journal-live'))
  const reader = await root.HookJournal.openReadOnly(livePath)
  const inbox = await root.InboxStore.open(fresh('inbox'))
  const kernel = new root.TurnStartKernel({ inbox })
  // A session kept past its provider call: its calls are refused, after their arguments are checked.
  let session: root.TurnStartSession | undefined
  const sessionKernel = new root.TurnStartKernel({ profile: { enabled: true }, inbox })
  sessionKernel.register({
    registration: { ...turnStartRegistration('walkss'), write_scopes: ['owner_private_inbox'] },
    provider: (input, context) => {
      session = context.session
      return turnStartReceipt(input)
    },
  })
  await sessionKernel.dispatchTurnStart(turnStartRequest())
  if (!session) throw new Error('the turn-start provider was not given a session')
  const settlement = await orchestrator.TurnSettlement.open({ turnJournalPath: fresh('turn-live'), hooks: runtime })
  const store = TriggerStore.open(fresh('store'))
  const scheduler = periodicReport.PeriodicReportScheduler.open({ journal, storePath: fresh('scheduler') })
  return {
    HookRuntime: [runtime],
    ShippedHookRuntime: [shipped],
    ShippedTurnStart: [shippedTurnStart],
    HookJournal: [journal, reader, runtime.journal],
    InboxStore: [inbox],
    TurnStartKernel: [kernel],
    TurnStartSession: [session],
    TurnSettlement: [settlement],
    TriggerStore: [store],
    PeriodicReportScheduler: [scheduler],
    HookContext: [new root.HookContext(registration('walk.hook'))],
    IntentKinds: [new root.IntentKinds([kind])],
  }
}

let live: Record<string, object[]> = {}
let livePath = ''

describe('every export, given the wrong kind of value anywhere, throws a coded invalid-argument error', () => {
  beforeAll(async () => {
    live = await instances()
  })
  afterAll(async () => {
    for (const list of Object.values(live)) for (const o of list) await (o as { close?: () => unknown }).close?.()
    tmp.cleanup()
  })

  it('walks the entry points package.json exports', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }
    const code = Object.keys(pkg.exports).filter((k) => !k.includes('*') && k !== './package.json')
    expect(Object.keys(ENTRIES).sort()).toEqual(code.sort())
  })

  it('finds nothing that slips past ERR_LOOPX_INVALID_ARGUMENT', async () => {
    let walked = 0
    const seen = new Set<unknown>()
    for (const [entry, mod] of Object.entries(ENTRIES)) {
      for (const [exportName, value] of Object.entries(mod)) {
        if (typeof value !== 'function' || seen.has(value)) continue
        seen.add(value)
        const fn = value as Callable & { prototype?: object }
        const cls = publicClass(fn)
        if (!cls) {
          walked++
          await walk(entry, exportName, paramNames(fn, exportName), (...a) => fn(...a))
          continue
        }
        if (!(`${exportName}.constructor` in EXCLUDED)) {
          walked++
          await walk(
            exportName,
            'constructor',
            paramNames(fn, 'constructor'),
            (...a) => new (fn as never as new (...x: unknown[]) => unknown)(...a),
          )
        }
        for (const name of Object.getOwnPropertyNames(fn)) {
          const member = (fn as never as Record<string, unknown>)[name]
          if (typeof member !== 'function' || ['length', 'name', 'prototype'].includes(name)) continue
          walked++
          await walk(exportName, name, paramNames(member as Callable, name, exportName), (...a) =>
            (member as Callable).apply(fn, a),
          )
        }
        const objects = live[exportName]
        if (exportName in NOT_LIVE) continue
        if (!objects) {
          findings.push(`${exportName}: no live instance to walk its methods on`)
          continue
        }
        for (const name of Object.getOwnPropertyNames(fn.prototype)) {
          if (name === 'constructor') continue
          const descriptor = Object.getOwnPropertyDescriptor(fn.prototype, name)!
          if (typeof descriptor.value !== 'function' || name === 'close') continue
          for (const object of objects) {
            walked++
            const method = descriptor.value as Callable
            await walk(exportName, name, paramNames(method, name, exportName), (...a) => method.apply(object, a))
          }
        }
      }
    }
    expect(walked).toBeGreaterThan(60)
    expect(findings).toEqual([])
  }, 120_000)
})
