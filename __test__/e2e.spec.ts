// End to end (issue 4, item 3; RFC section 12): every run starts at a real
// committed completion or replan writeback through the reference seam (never
// by calling the periodic-report provider) and ends at a validated intent
// receipt and the fake scheduler's decision, never at an external service.
//
//   composition root: HookRuntime (phase enabled) + installPeriodicReport
//   TurnSettlement.settle(writeback) -> validate, durable writeback, quota spend
//     -> dispatch -> periodic_report.runtime_trigger -> one trigger-evaluation intent
//   PeriodicReportScheduler.runOnce() -> admit -> reducer -> promote / hold
//
// Every test runs with the JS network entry points patched to throw and
// count, and asserts no call and no new socket. The last test plants private
// names, paths, URLs, credentials and exception text where they must be
// refused or dropped, then scans every byte of the hook journal, the Turn
// journal, the capability store (db, -wal, -shm) and every outcome.
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { guardNetwork as guardJsNetwork } from './support/network'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  HookRuntime,
  IntentKinds,
  defineIntentKind,
  intent,
  proposed,
  validateDispatchReceipt,
  validateHookResult,
  type IntentKindDefinition,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
  type Profile,
  type PostWritebackIntent,
} from '../lib/index.js'
import { TurnSettlement, type SettleResult, type WritebackRequest } from '../lib/orchestrator/index.js'
import {
  PeriodicReportScheduler,
  TRIGGER_EVALUATION,
  installPeriodicReport,
} from '../lib/capabilities/periodic_report/index.js'

// ---------------------------------------------------------------- no network

/** Socket inodes this process holds now (Linux), to catch sockets opened outside JS. */
function socketInodes(): Set<string> {
  const out = new Set<string>()
  try {
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        const target = readlinkSync(`/proc/self/fd/${fd}`)
        if (target.startsWith('socket:')) out.add(target)
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    // not Linux
  }
  return out
}

let network: { calls: string[]; restore: () => void; sockets: Set<string> } | undefined

/** Patches every JS network entry point to throw and count, and notes the open sockets. */
function guardNetwork() {
  return { ...guardJsNetwork(), sockets: socketInodes() }
}

const dirs: string[] = []
const closers: (() => Promise<void> | void)[] = []

beforeEach(() => {
  network = guardNetwork()
})

afterEach(async () => {
  const guard = network!
  network = undefined
  const opened = [...socketInodes()].filter((s) => !guard.sockets.has(s))
  guard.restore()
  for (const close of closers.splice(0).reverse()) {
    try {
      await close()
    } catch {
      // already closed
    }
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  // Nothing opened a socket or called fetch during the run.
  expect(guard.calls).toEqual([])
  expect(opened).toEqual([])
})

// ---------------------------------------------------------------- the composition root

const WEEK_35 = new Date('2026-08-26T10:00:00Z')
const WEEK_36 = new Date('2026-09-02T10:00:00Z')

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'loopx-hooks-e2e-'))
  dirs.push(d)
  return d
}

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

interface RootOptions {
  dir?: string
  profile?: Partial<Profile>
  install?: boolean
  threshold?: number
  crash?: Parameters<typeof TurnSettlement.open>[0]['crash']
  extra?: (hooks: HookRuntime) => void
}

/** The host's composition root: runtime, capability, seam, scheduler. */
async function compositionRoot(options: RootOptions = {}) {
  const dir = options.dir ?? tempDir()
  const clock = { now: WEEK_35 }
  const hooks = await HookRuntime.open({
    journal: join(dir, 'hooks.journal'),
    profile: options.profile ?? { enabled: true },
  })
  closers.push(() => hooks.close())
  const installed = options.install === false ? null : installPeriodicReport(hooks)
  options.extra?.(hooks)
  const seam = await TurnSettlement.open({
    turnJournalPath: join(dir, 'turn.journal'),
    hooks,
    now: () => clock.now,
    crash: options.crash,
  })
  closers.push(() => seam.close())
  const scheduler = PeriodicReportScheduler.open({
    journal: hooks.journal,
    storePath: join(dir, 'periodic_report.store'),
    completionThreshold: options.threshold ?? 3,
    now: () => clock.now,
  })
  closers.push(() => scheduler.close())
  return { dir, clock, hooks, installed, seam, scheduler }
}

const KINDS = () => new IntentKinds([TRIGGER_EVALUATION as unknown as IntentKindDefinition])

/**
 * The end of one run: the committed writeback's trigger hook recorded a
 * valid sidecar receipt with exactly one typed trigger-evaluation intent.
 * Returns that intent's id.
 */
async function expectValidatedIntentReceipt(
  root: Awaited<ReturnType<typeof compositionRoot>>,
  settled: SettleResult,
  n: number | string,
) {
  expect(settled.primary.steps.map((s) => s.status)).toEqual(['passed', 'committed', 'spent'])
  const hooks = settled.dispatch!.hooks.filter((h) => h.hookId === 'periodic_report.runtime_trigger')
  expect(hooks).toHaveLength(1)
  const hook = hooks[0]!
  expect(hook.outcome).toBe('recorded')
  const receipt = hook.receipt!
  expect(validateDispatchReceipt(receipt)).toMatchObject({ ok: true })
  expect(receipt).toMatchObject({
    hook_id: 'periodic_report.runtime_trigger',
    capability_id: 'periodic_report',
    receipt_id: settled.primary.receipt!.receipt_id,
    effect_id: settled.primary.receipt!.effect_id,
    status: 'proposed',
    failure: null,
  })
  expect(receipt.intent_ids).toHaveLength(1)
  // The intent as the outbox holds it, validated again against the registration and kind.
  const stored = (await root.hooks.journal.listIntents({ dispatchId: hook.dispatchId })).items
  expect(stored).toHaveLength(1)
  const doc = stored[0]!.intent as PostWritebackIntent
  expect(validateHookResult(proposed([doc]), root.installed!.registration, hook.dispatchId, KINDS())).toMatchObject({
    ok: true,
  })
  expect(doc).toMatchObject({
    intent_id: receipt.intent_ids[0],
    intent_kind: 'periodic_report.trigger_evaluation',
    operation: 'evaluate_runtime_trigger',
    policy_version: 'weekly_v0',
    payload: { segment_ref: `todo_${n}`, source_event_refs: [settled.primary.receipt!.receipt_id, `event_${n}`] },
    requested_write_scope: [],
    grants_new_action_authority: false,
    external_write_performed: false,
  })
  return doc.intent_id
}

// ---------------------------------------------------------------- the matrix rows

describe('RFC validation matrix, periodic-report rows', () => {
  it('the network guard is live (self-test)', async () => {
    expect(() => (globalThis.fetch as unknown as (u: string) => void)('https://example.invalid/')).toThrow(
      'network disabled',
    )
    expect(() => net.connect({ port: 9, host: '127.0.0.1' })).toThrow('network disabled')
    expect(network!.calls).toEqual(['fetch', 'net.connect'])
    network!.calls.length = 0
  })

  it('completion threshold: each committed completion gives one typed trigger-evaluation intent; the fake scheduler promotes at the threshold', async () => {
    const root = await compositionRoot({ threshold: 3 })
    const decisions: string[] = []
    for (const n of [1, 2, 3]) {
      const settled = await root.seam.settle(completion(n))
      const intentId = await expectValidatedIntentReceipt(root, settled, n)
      const pass = await root.scheduler.runOnce()
      expect(pass.admitted).toEqual([intentId])
      expect(pass.evaluated).toHaveLength(1)
      expect(pass.evaluated[0]!.intentId).toBe(intentId)
      decisions.push(`${pass.evaluated[0]!.decision}:${pass.evaluated[0]!.reason}`)
    }
    expect(decisions).toEqual(['hold:below_threshold', 'hold:below_threshold', 'promote:completion_threshold_reached'])
    expect(await root.hooks.journal.stats()).toMatchObject({ proposed: 3, intents: 3, intentsOpen: 0, failed: 0 })
    expect(root.seam.contents().quotaSpends).toHaveLength(3)
    // The scheduler's decisions are its own records; no other file or service was touched.
    expect(root.scheduler.decisions().map((d) => d.decision)).toEqual(['hold', 'hold', 'promote'])
  })

  it('replan transition: a committed replan gives one typed trigger-evaluation intent; the scheduler promotes it, once per window', async () => {
    const root = await compositionRoot({ threshold: 3 })
    const outcomes: string[] = []
    const step = async (req: WritebackRequest, n: string) => {
      const settled = await root.seam.settle(req)
      const intentId = await expectValidatedIntentReceipt(root, settled, n)
      const pass = await root.scheduler.runOnce()
      expect(pass.evaluated.map((d) => d.intentId)).toEqual([intentId])
      outcomes.push(
        `${pass.evaluated[0]!.window} ${pass.evaluated[0]!.transition} ${pass.evaluated[0]!.decision}:${pass.evaluated[0]!.reason}`,
      )
    }
    await step(completion('a'), 'a')
    await step(replan('b'), 'b')
    await step(replan('c'), 'c')
    root.clock.now = WEEK_36
    await step(replan('d'), 'd')
    expect(outcomes).toEqual([
      '2026-W35 segment_completed hold:below_threshold',
      '2026-W35 replan_recorded promote:replan_recorded',
      '2026-W35 replan_recorded hold:already_promoted_in_window',
      '2026-W36 replan_recorded promote:replan_recorded',
    ])
  })

  it('phase disabled, or the capability not installed: zero invocations, no intent, nothing for the scheduler', async () => {
    for (const options of [{ profile: {} }, { install: false }] as RootOptions[]) {
      const root = await compositionRoot(options)
      const settled = await root.seam.settle(completion(1))
      expect(settled.primary.steps.map((s) => s.status)).toEqual(['passed', 'committed', 'spent'])
      expect(settled.dispatch!.hooks).toEqual([])
      expect((await root.hooks.journal.stats()).intents).toBe(0)
      expect(await root.scheduler.runOnce()).toMatchObject({ listed: 0, evaluated: [] })
    }
  })

  it('a failed primary validation or writeback gives no intent and no decision', async () => {
    const root = await compositionRoot({ threshold: 1 })
    await root.seam.settle(completion(1))
    const rejected = [
      await root.seam.settle(completion(2, { todoId: '' })),
      await root.seam.settle(completion(1, { stateRevision: 'rev_other' })),
    ]
    expect(rejected.map((r) => [r.primary.ok, r.dispatch])).toEqual([
      [false, null],
      [false, null],
    ])
    expect((await root.hooks.journal.stats()).intents).toBe(1)
    expect((await root.scheduler.runOnce()).evaluated).toHaveLength(1)
  })

  it('crash after the writeback, restart, recover(): the same intent once, one decision; a replayed writeback adds nothing', async () => {
    const crashed = await compositionRoot({ crash: { at: 'after_writeback', mode: 'throw' } })
    await expect(crashed.seam.settle(replan(1))).rejects.toMatchObject({ code: 'ERR_LOOPX_SIMULATED_CRASH' })
    expect((await crashed.hooks.journal.stats()).intents).toBe(0)
    for (const close of closers.splice(0).reverse()) await close()

    const root = await compositionRoot({ dir: crashed.dir, threshold: 1 })
    const report = await root.seam.recover()
    expect(report.quotaSpends).toHaveLength(1)
    expect(report.redispatched).toHaveLength(1)
    const hook = report.redispatched[0]!.dispatch!.hooks[0]!
    expect(hook).toMatchObject({ hookId: 'periodic_report.runtime_trigger', outcome: 'recorded' })
    expect(validateDispatchReceipt(hook.receipt).ok).toBe(true)
    const pass = await root.scheduler.runOnce()
    expect(pass.evaluated.map((d) => `${d.intentId} ${d.decision}:${d.reason}`)).toEqual([
      `${hook.receipt!.intent_ids[0]} promote:replan_recorded`,
    ])

    // The orchestrator replays the same writeback: same receipt, replayed dispatch, nothing new for the scheduler.
    const replay = await root.seam.settle(replan(1))
    expect(replay.primary.steps.map((s) => s.status)).toEqual(['passed', 'replayed', 'already_spent'])
    expect(replay.dispatch!.hooks[0]).toMatchObject({ outcome: 'replayed', dispatchId: hook.dispatchId })
    expect(await root.scheduler.runOnce()).toMatchObject({ listed: 0, evaluated: [] })
    expect(await root.hooks.journal.stats()).toMatchObject({ proposed: 1, intents: 1 })
  })
})

// ---------------------------------------------------------------- public-boundary scan

function alnum(n: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
  let s = ''
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)]
  return s
}

/** The planted values of one run, and the needles searched for (each value and distinctive parts of it). */
function plant() {
  const tag = Array.from({ length: 16 }, () => Math.floor(Math.random() * 16).toString(16)).join('')
  const tokenBody = alnum(36)
  const secrets = {
    person: `Margarethe Okonkwo ${tag}`,
    personId: `margarethe.okonkwo.${tag}`, // opaque-ref grammar, but a display name: used only inside rejected values
    path: `/home/alice/projects/${tag}/plan.md`,
    url: `https://internal.corp.example/wiki/${tag}?session=${tag}`,
    github: `ghp_${tokenBody}`,
    slack: `xoxb-${tag}-${tag}`,
    jwt: `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYXJnYXJldGhlIn0.${tag}`,
    mail: `margarethe.${tag}@corp.internal`,
    exception: `ProviderCrash: lost connection to warehouse ${tag}`,
    transcript: `User: paste the deploy key for ${tag} here`,
  }
  const needles = [
    ...Object.values(secrets),
    tag,
    tokenBody,
    'Margarethe',
    'Okonkwo',
    'margarethe',
    '/home/alice',
    'internal.corp.example',
    'corp.internal',
    'ghp_',
    'xoxb-',
    'eyJhbGciOiJIUzI1NiJ9',
    'ProviderCrash',
    'warehouse',
    'deploy key',
  ]
  return { secrets, needles, all: Object.values(secrets).join(' | ') }
}

/** The encodings a needle is searched in. */
function encodings(needle: string): { label: string; bytes: Buffer }[] {
  const utf8 = Buffer.from(needle, 'utf8')
  const le = Buffer.from(needle, 'utf16le')
  const hex = utf8.toString('hex')
  const out = [
    { label: 'utf8', bytes: utf8 },
    { label: 'utf16le', bytes: le },
    { label: 'utf16be', bytes: Buffer.from(le).swap16() },
    { label: 'hex', bytes: Buffer.from(hex) },
    { label: 'HEX', bytes: Buffer.from(hex.toUpperCase()) },
  ]
  const b64 = utf8.toString('base64').replace(/=+$/, '')
  if (b64.length >= 12) out.push({ label: 'base64', bytes: Buffer.from(b64) })
  return out
}

function scan(haystacks: { name: string; bytes: Buffer }[], needles: string[]): string[] {
  const hits: string[] = []
  for (const needle of needles) {
    for (const enc of encodings(needle)) {
      for (const h of haystacks) {
        const at = h.bytes.indexOf(enc.bytes)
        if (at >= 0) hits.push(`${JSON.stringify(needle)} (${enc.label}) in ${h.name} at ${at}`)
      }
    }
  }
  return hits
}

function filesIn(dir: string): { name: string; bytes: Buffer }[] {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .filter((p) => statSync(p).isFile())
    .map((p) => ({ name: p.slice(dir.length + 1), bytes: readFileSync(p) }))
}

const LEAKY = defineIntentKind({
  intent_kind: 'leaky.signal',
  capability_id: 'leaky',
  operations: ['evaluate'],
  payload_schema: {
    type: 'object',
    properties: { ref: { type: 'string', format: 'opaque_ref' } },
    required: ['ref'],
    additionalProperties: false,
  },
} as const)

function leakyRegistration(hookId: string): PostWritebackHookRegistration {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: 'leaky',
    phase: 'post_writeback',
    event_kinds: ['todo_completed', 'replan_recorded'],
    intent_kinds: ['leaky.signal'],
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
    budget: { max_invocations_per_dispatch: 2, max_intents_per_dispatch: 1, max_result_bytes: 4096, timeout_ms: 100 },
    failure_policy: 'isolate',
  }
}

describe('public-boundary scan', () => {
  it('no planted private name, path, URL, credential or exception text reaches any persisted byte or outcome', async () => {
    const { secrets, needles, all } = plant()
    const leakyIntent = (input: PostWritebackHookInput, ref: string) =>
      intent(input, LEAKY, { operation: 'evaluate', policyVersion: 'v0', payload: { ref } })
    const providers: Record<string, (input: PostWritebackHookInput) => unknown> = {
      // throws an Error whose message and stack carry everything
      'leaky.throws': () => {
        const error = new Error(
          `${secrets.exception} for ${secrets.person} reading ${secrets.path} via ${secrets.url} with ${secrets.github}`,
        )
        ;(error as { code?: string }).code = secrets.slack
        throw error
      },
      // rejects with a plain object and a string
      'leaky.rejects': () => Promise.reject({ message: all, token: secrets.jwt }),
      // a URL where an opaque ref belongs
      'leaky.url_payload': (input) => proposed([leakyIntent(input, secrets.url)]),
      // a credential that fits the opaque-ref grammar
      'leaky.credential_payload': (input) => proposed([leakyIntent(input, secrets.github)]),
      // a member that is not in the contract, carrying prose
      'leaky.extra_member': (input) => ({
        ...proposed([leakyIntent(input, 'ok_ref')]),
        note: secrets.transcript,
        author: secrets.person,
      }),
      // something JSON cannot hold
      'leaky.not_json': () => ({ status: 'proposed', secret: secrets.mail, run: () => secrets.exception }),
      // answers after its timeout with secrets
      'leaky.late': (input) =>
        new Promise((resolve) => setTimeout(() => resolve(proposed([leakyIntent(input, secrets.personId)])), 300)),
    }
    const root = await compositionRoot({
      threshold: 1,
      extra: (hooks) => {
        hooks.defineIntentKind(LEAKY)
        for (const [hookId, provider] of Object.entries(providers))
          hooks.register({ registration: leakyRegistration(hookId), provider: provider as never })
      },
    })

    const outcomes: unknown[] = []
    // Writebacks whose values must be refused by the primary validation.
    for (const bad of [
      completion('x1', { goalId: secrets.person }),
      completion('x2', { todoId: secrets.path }),
      completion('x3', { factRefs: [secrets.url, secrets.mail] }),
      completion('x4', { stateRevision: secrets.github }),
      completion('x5', { agentId: secrets.jwt }),
      completion('x6', { turnInstanceId: secrets.slack }),
      completion('x7', { effectId: secrets.transcript }),
      { ...completion('x8'), prompt: secrets.transcript, author: secrets.person } as WritebackRequest,
    ]) {
      const result = await root.seam.settle(bad)
      expect(result.primary.ok).toBe(false)
      expect(result.dispatch).toBeNull()
      outcomes.push(result)
    }
    // Real writebacks: the trigger hook records, every leaky hook fails in isolation; replays exhaust them.
    for (const req of [completion(1), replan(2), completion(1), replan(2)]) outcomes.push(await root.seam.settle(req))
    const firstTwo = outcomes.slice(8, 10) as SettleResult[]
    for (const r of firstTwo) {
      const byHook = Object.fromEntries(r.dispatch!.hooks.map((h) => [h.hookId, `${h.outcome}:${h.failureCode}`]))
      expect(byHook).toEqual({
        'leaky.credential_payload': 'failed:result_contract_rejected',
        'leaky.extra_member': 'failed:result_contract_rejected',
        'leaky.late': 'failed:producer_timed_out',
        'leaky.not_json': 'failed:result_contract_rejected',
        'leaky.rejects': 'failed:producer_failed',
        'leaky.throws': 'failed:producer_failed',
        'leaky.url_payload': 'failed:result_contract_rejected',
        'periodic_report.runtime_trigger': 'recorded:null',
      })
    }
    await new Promise((resolve) => setTimeout(resolve, 400)) // let the late answers arrive (and be dropped)
    outcomes.push(await root.seam.recover())
    outcomes.push(await root.scheduler.runOnce())
    outcomes.push(root.scheduler.decisions(), root.seam.contents())
    outcomes.push(
      await root.hooks.journal.listDispatches({ limit: 1000 }),
      await root.hooks.journal.listIntents({ limit: 1000 }),
      await root.hooks.journal.stats(),
    )
    for (const d of (await root.hooks.journal.listDispatches({ limit: 1000 })).items)
      outcomes.push(await root.hooks.journal.listFailures(d.dispatchId))
    expect((await root.hooks.journal.stats()).intents).toBe(2) // the two trigger-evaluation intents, nothing else

    const outcomeBytes = { name: 'outcomes.json', bytes: Buffer.from(JSON.stringify(outcomes), 'utf8') }
    const whileOpen = filesIn(root.dir)
    expect(whileOpen.map((f) => f.name).sort()).toEqual(
      expect.arrayContaining([
        'hooks.journal',
        'turn.journal',
        'turn.journal-wal',
        'periodic_report.store',
        'periodic_report.store-wal',
      ]),
    )
    // Positive control: the scan reads real content (stored ids are found).
    const receiptId = (outcomes[8] as SettleResult).primary.receipt!.receipt_id
    expect(scan(whileOpen, [receiptId]).length).toBeGreaterThan(0)
    expect(scan(whileOpen, ['periodic_report.runtime_trigger']).length).toBeGreaterThan(0)

    expect(scan([...whileOpen, outcomeBytes], needles)).toEqual([])

    // And once everything is closed (WAL contents checkpointed into the main files).
    for (const close of closers.splice(0).reverse()) await close()
    const closed = filesIn(root.dir)
    expect(scan(closed, [receiptId]).length).toBeGreaterThan(0)
    expect(scan(closed, needles)).toEqual([])
  })
})
