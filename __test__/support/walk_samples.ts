// The valid values the walks give each parameter (by name), and live
// instances of each public class on temporary files: shared by
// misuse_walk.spec.ts (a wrong kind in each position) and error_class.spec.ts
// (valid arguments on closed instances). A parameter the walks meet without a
// sample here is a finding of theirs.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import * as root from '../../lib/index.js'
import * as orchestrator from '../../lib/orchestrator/index.js'
import * as otel from '../../lib/otel.js'
import * as loopx from '../../lib/loopx.js'
import { TriggerStore } from '../../lib/capabilities/periodic_report/store.js'
import * as periodicReport from '../../lib/capabilities/periodic_report/index.js'
import { turnStartReceipt, turnStartRegistration, turnStartRequest } from './turn_start.js'
import { TempDir, goodProvider, registration, request, signalKind } from './runtime.js'

export const repo = join(__dirname, '..', '..')
export const ENTRIES: Record<string, Record<string, unknown>> = {
  '.': root,
  './orchestrator': orchestrator,
  './otel': otel,
  './loopx': loopx,
  './capabilities/periodic_report': periodicReport,
}

/** The live instances the samples hand out (`runtime`, `journal`), set by the spec that opens them. */
export const state: { live: Record<string, object[]>; livePath: string } = { live: {}, livePath: '' }

export const tmp = new TempDir('loopx-misuse-walk-')
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
export const SAMPLES: Record<string, () => unknown> = {
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
  runtime: () => state.live.HookRuntime![0],
  capabilityId: () => 'walkcap',
  window: () => '2026-W01',
  date: () => new Date(0),
  value: () => 'cursor_1',
  read: () => [],
  'PeriodicReportScheduler.open.options': () => ({
    journal: state.live.HookJournal![0],
    storePath: fresh('scheduler'),
  }),
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
  'evaluatePostWritebackHookTransaction.request': () => ({
    schema_version: 'loopx_post_writeback_hook_transaction_request_v0',
    phase: 'preflight',
    runtime_root: null,
    source: null,
    hook_input: { schema_version: 'loopx_post_writeback_capability_hook_input_v0' },
    registrations: [],
    transaction_id: null,
    provider_outcomes: [],
  }),
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
  effectReceiptId: () => 'receipt_0001',
  runtimeRoot: () => tmp.path('sidecars'),
  path: () => fresh('path'),
  journal: () => fresh('journal'),
  'HookJournal.openReadOnly.journal': () => state.livePath,
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

export function sampleFor(owner: string, method: string, name: string): (() => unknown) | undefined {
  return SAMPLES[`${owner}.${method}.${name}`] ?? SAMPLES[`${method}.${name}`] ?? SAMPLES[name]
}

/** Live instances of each public class, by name, on temporary files. */
export async function instances(): Promise<Record<string, object[]>> {
  state.livePath = fresh('live')
  const runtime = await root.HookRuntime.open({ journal: state.livePath, profile: { enabled: true } })
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
  const reader = await root.HookJournal.openReadOnly(state.livePath)
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
    InboxCollector: [inbox.collector()],
    TurnStartKernel: [kernel],
    TurnStartSession: [session],
    TurnSettlement: [settlement],
    TriggerStore: [store],
    PeriodicReportScheduler: [scheduler],
    HookContext: [new root.HookContext(registration('walk.hook'))],
    IntentKinds: [new root.IntentKinds([kind])],
  }
}
