// Nothing private reaches a file (RFC section 9: the journal "does not store
// raw provider exceptions, task context, credentials, or external payloads";
// contract-v0 section 1's credential shapes), tested generatively: a
// credential-like value is planted in EVERY string member of a request, a
// registration, a hook result (its intent and payload included), a thrown
// error, a rejection and an outbox call, one member at a time. The members
// are enumerated by walking base documents typed as the generated contract
// types with no member optional (`Complete<T>`), so a member added to a Rust
// struct fails the type check here until it is planted too; none is listed
// by hand. A child runs every case against one journal, then dispatches once
// more and is SIGKILLed inside the provider call; every persisted byte of the
// journal (SQLite: every file beside it, the attempt ledgers included;
// PostgreSQL: pg_dump of the schema) is searched for
// every planted value, in several encodings; then again after recover(),
// and after a prune with its archive table and its JSON Lines export. On
// SQLite it all runs again with the inline commit.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import type {
  DispatchRequest,
  IntentKindDefinition,
  PostWritebackHookRegistration,
  PostWritebackHookResult,
} from '../lib/index.js'
import { BACKENDS, Targets, type Backend } from './support/backends'
import { runChildScript } from './support/child'
import { findPlanted, randomTag } from './support/runtime'

/** `T` with every member, at every depth, required: a base document must hold them all. */
type Complete<T> = T extends (infer U)[] ? Complete<U>[] : T extends object ? { [K in keyof T]-?: Complete<T[K]> } : T

const KIND: IntentKindDefinition = {
  intent_kind: 'plant.signal',
  capability_id: 'plant',
  operations: ['evaluate'],
  payload_schema: {
    type: 'object',
    properties: { ref: { type: 'string', format: 'opaque_ref' } },
    required: ['ref'],
    additionalProperties: false,
  },
}

const registration = (hookId: string, scopes: string[]): Complete<PostWritebackHookRegistration> => ({
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: hookId,
  capability_id: 'plant',
  phase: 'post_writeback',
  event_kinds: ['todo_completed'],
  intent_kinds: ['plant.signal'],
  requested_read_scope: scopes as PostWritebackHookRegistration['requested_read_scope'],
  budget: { max_invocations_per_dispatch: 2, max_intents_per_dispatch: 1, max_result_bytes: 16384, timeout_ms: 5000 },
  failure_policy: 'isolate',
})

/** Hooks that read one scope each, so every request member lies outside some hook's scope. */
const HOOKS = [
  registration('plant.identity', ['settlement_identity']),
  registration('plant.facts', ['bounded_event_projection']),
  registration('plant.result', ['settlement_identity', 'bounded_event_projection']),
]

const request = (rid: string): Complete<DispatchRequest> => ({
  settlement: {
    goal_id: 'goal_1',
    agent_id: 'agent_1',
    todo_id: `todo_${rid}`,
    turn_instance_id: `turn_${rid}`,
    effect_id: `effect_${rid}`,
  },
  receipt: {
    receipt_id: rid,
    effect_id: `effect_${rid}`,
    step_kind: 'durable_writeback',
    status: 'committed',
    checkpointed: true,
    state_revision: `rev_${rid}`,
    committed_at: '2026-08-26T00:00:00Z',
  },
  event: { event_kind: 'todo_completed', fact_refs: [`fact_${rid}`] },
})

const result = (): Complete<PostWritebackHookResult> => ({
  schema_version: 'loopx_post_writeback_hook_result_v0',
  status: 'proposed',
  intents: [
    {
      schema_version: 'loopx_post_writeback_intent_v0',
      intent_id: `pwi_${'0'.repeat(64)}`,
      hook_id: 'plant.result',
      capability_id: 'plant',
      source_dispatch_id: `pwh_${'0'.repeat(64)}`,
      intent_kind: 'plant.signal',
      operation: 'evaluate',
      policy_version: 'v1',
      payload: { ref: 'ref_1' },
      budget: { max_attempts: 1, max_result_bytes: 1024 },
      requested_write_scope: ['scope.one'],
      failure_policy: 'isolate',
      grants_new_action_authority: false,
      external_write_performed: false,
    },
  ],
})

/** The outbox calls' arguments, each complete (`$INTENT` becomes a pending intent's id in the child). */
const OUTBOX: { call: 'decide' | 'claim' | 'markDone'; args: Record<string, unknown> }[] = [
  { call: 'decide', args: { intentId: '$INTENT', executorId: 'plant.exec', decision: 'admit', reasonCode: 'ok' } },
  {
    call: 'claim',
    args: { executorId: 'plant.exec', leaseMs: 1000, batch: 1, capabilityId: 'plant', intentKind: 'plant.signal' },
  },
  { call: 'markDone', args: { intentId: '$INTENT', executorId: 'plant.exec' } },
]

const THROWN = ['error_message', 'error_name', 'error_stack', 'error_cause', 'error_property', 'string', 'object']

/** Every JSON Pointer to a string member of `doc` (array items included, and one more item for each string array). */
function stringMembers(doc: unknown, at = ''): string[] {
  if (typeof doc === 'string') return [at]
  if (Array.isArray(doc)) {
    const items = doc.flatMap((v, i) => stringMembers(v, `${at}/${i}`))
    return doc.every((v) => typeof v === 'string') ? [...items, `${at}/${doc.length}`] : items
  }
  if (doc && typeof doc === 'object') return Object.entries(doc).flatMap(([k, v]) => stringMembers(v, `${at}/${k}`))
  return []
}

function plantAt<T>(doc: T, pointer: string, value: string): T {
  const copy = structuredClone(doc) as Record<string, unknown>
  const keys = pointer.split('/').slice(1)
  let node = copy as Record<string, unknown>
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>
  node[keys.at(-1)!] = value
  return copy as T
}

/** A fresh credential-like value, rotating through contract-v0's shapes; its random part is the needle. */
function secret(n: number): { value: string; needle: string } {
  const tag = randomTag(24)
  const shapes = [
    `ghp_${tag}abcdefghijkl`,
    `eyJhbGciOiJIUzI1NiJ9.eyJ${tag}.c2ln${tag}`,
    `sk_live_${tag}`,
    `xoxb-${tag}`,
    `glpat-${tag}`,
    `AKIA${tag
      .toUpperCase()
      .replace(/[^A-Z0-9]/g, 'Q')
      .slice(0, 16)}`,
  ]
  const value = shapes[n % shapes.length]!
  return { value, needle: value.startsWith('AKIA') ? value : tag }
}

interface Case {
  group: string
  name: string
  receiptId?: string
  request?: DispatchRequest
  registration?: PostWritebackHookRegistration
  result?: PostWritebackHookResult
  thrown?: string
  call?: string
  args?: Record<string, unknown>
}

function generate(): {
  cases: Case[]
  needles: string[]
  kill: { receiptId: string; hookId: string; request: DispatchRequest }
} {
  const cases: Case[] = []
  const needles: string[] = []
  let n = 0
  const next = () => {
    const s = secret(n++)
    needles.push(s.value, s.needle)
    return s.value
  }
  // A good dispatch first, so the outbox has an intent to act on.
  cases.push({ group: 'request', name: 'baseline', request: request('base') })
  for (const pointer of stringMembers(request('r'))) {
    const rid = `req${n}`
    cases.push({ group: 'request', name: `request${pointer}`, request: plantAt(request(rid), pointer, next()) })
  }
  for (const pointer of stringMembers(HOOKS[0])) {
    cases.push({
      group: 'registration',
      name: `registration${pointer}`,
      registration: plantAt(HOOKS[0]!, pointer, next()),
    })
  }
  for (const pointer of stringMembers(result())) {
    const rid = `res${n}`
    cases.push({
      group: 'result',
      name: `result${pointer}`,
      receiptId: rid,
      request: request(rid),
      result: plantAt(result(), pointer, next()),
    })
  }
  for (const group of ['thrown', 'rejection']) {
    for (const thrown of THROWN) {
      const rid = `${group}${n}`
      cases.push({
        group,
        name: `${group}:${thrown}`,
        receiptId: rid,
        request: request(rid),
        thrown,
        value: next(),
      } as Case)
    }
  }
  for (const { call, args } of OUTBOX) {
    for (const pointer of stringMembers(args).filter((p) => args[p.slice(1)] !== '$INTENT')) {
      cases.push({ group: 'outbox', name: `${call}${pointer}`, call, args: plantAt(args, pointer, next()) })
    }
  }
  // The crash: a request member plant.facts does not read, and plant.facts's provider kills the process.
  const kill = {
    receiptId: 'kill',
    hookId: 'plant.facts',
    request: plantAt(request('kill'), '/settlement/goal_id', next()),
  }
  return { cases, needles, kill }
}

const runChild = (args: string[]) => runChildScript('planted-everywhere.mjs', args, 120_000)

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))(
  'a credential planted in any string member never reaches a byte of the journal on %s',
  (_, backend) => {
    const targets = new Targets(backend)
    const dir = mkdtempSync(join(tmpdir(), 'loopx-planted-'))
    afterAll(async () => {
      await targets.cleanup()
      rmSync(dir, { recursive: true, force: true })
    })

    // The inline commit writes the same rows from the event loop's thread, so it is planted too.
    const inlines = backend.name === 'sqlite' ? [false, true] : [false]
    for (const inline of inlines) {
      it(`after a SIGKILL inside a provider call, after recover(), and after a prune that archives and exports${inline ? ', inline commit' : ''}`, async () => {
        const { cases, needles, kill } = generate()
        const label = `${backend.name}${inline ? '-inline' : ''}`
        const file = join(dir, `${label}.json`)
        writeFileSync(file, JSON.stringify({ kind: KIND, hooks: HOOKS, cases, kill }))
        const target = targets.fresh(`planted${inline ? '-inline' : ''}`)
        const arg = target.childArg(inline ? { synchronous: 'normal', inlineCommit: true } : { synchronous: 'normal' })

        const crashed = await runChild([arg, file, 'dispatch'])
        expect(crashed.signal, crashed.stderr).toBe('SIGKILL')
        expect(crashed.lines.filter((l) => l.t === 'error')).toStrictEqual([])
        const counts = crashed.lines.find((l) => l.t === 'cases')
        const groups = (g: string) => cases.filter((c) => c.group === g).length
        // Every dispatch case ran (admitted, or refused at admission where the planted
        // member is one admission checks); every registration and outbox call was refused.
        const dispatches = groups('request') + groups('result') + groups('thrown') + groups('rejection')
        expect(counts?.dispatched).toBeGreaterThan(dispatches - 6)
        expect(Number(counts?.dispatched) + Number(counts?.refused)).toBe(dispatches)
        expect(counts?.rejected).toBe(groups('registration') + groups('outbox'))
        // One dispatch at a time: each admitted one commits inline when the option is on;
        // without it, most wait for the writer thread.
        if (inline) expect(counts?.inline).toBe(counts?.dispatched)
        else expect(Number(counts?.inline)).toBeLessThan(Number(counts?.dispatched) / 2)
        expect(crashed.lines.at(-1)).toStrictEqual({ t: 'invoked' })
        expect(cases.length).toBeGreaterThan(60)
        expect(findPlanted(target.persistedBytes(), needles)).toStrictEqual([])

        const recovered = await runChild([arg, file, 'recover'])
        expect(recovered.signal, recovered.stderr).toBeNull()
        const report = recovered.lines.find((l) => l.t === 'recovered') as { outcomes: string[] } | undefined
        // The killed hook's identity is finished from the request the journal kept.
        expect(report?.outcomes).toContain('recorded')
        expect(findPlanted(target.persistedBytes(), needles)).toStrictEqual([])

        // A prune with its archive and its export file: neither holds one either.
        const exported = join(dir, `${label}-export.jsonl`)
        const pruned = await runChild([arg, file, 'prune', exported])
        expect(pruned.signal, pruned.stderr).toBeNull()
        const prunedCounts = pruned.lines.find((l) => l.t === 'pruned') as
          { dispatches: number; intents: number } | undefined
        expect(prunedCounts?.dispatches).toBeGreaterThan(30)
        expect(prunedCounts?.intents).toBeGreaterThan(0)
        const haystacks = [...target.persistedBytes(), { name: 'export', bytes: readFileSync(exported) }]
        expect(findPlanted(haystacks, needles)).toStrictEqual([])
      })
    }
  },
)
