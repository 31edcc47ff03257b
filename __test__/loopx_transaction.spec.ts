// loopx-hooks/loopx, the documents and the request: LoopX's post-writeback
// hook transaction answered by this package, as LoopX's own test
// (tests/control_plane_ts/post_writeback_hook_transaction.test.ts) states it.
// Each `follows "..."` case re-expresses the LoopX test of that name; the
// sidecar, lock and concurrency ones are in loopx_transaction_store.spec.ts,
// retries, replays and the envelope in loopx_transaction_retry.spec.ts. The
// rest are what only the two-phase protocol expresses: a finalize binds its
// preflight's facts and plans, and a refused request writes nothing.
import { readdirSync } from 'node:fs'

import { afterEach, describe, expect, it } from 'vitest'

import { LoopxHooksError } from '../lib/index.js'
import {
  POST_WRITEBACK_HOOK_SOURCE_SCHEMA_VERSION,
  POST_WRITEBACK_HOOK_TRANSACTION_REQUEST_SCHEMA_VERSION,
  POST_WRITEBACK_HOOK_TRANSACTION_RESULT_SCHEMA_VERSION,
} from '../lib/loopx.js'
import {
  HOOK,
  Roots,
  evaluate,
  failureCodes,
  finalize,
  finalized,
  intentResult,
  legacyHookInput,
  notReturned,
  registration,
  rejection,
  request,
  returned,
  source,
  type Doc,
} from './support/loopx_transaction.js'

const roots = new Roots()
afterEach(() => roots.cleanup())

/** Python's str.strip() whitespace, which LoopX strips before hashing identities. */
const PY_WHITESPACE = String.fromCodePoint(
  ...[0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680],
  ...Array.from({ length: 11 }, (_, i) => 0x2000 + i),
  ...[0x2028, 0x2029, 0x202f, 0x205f, 0x3000],
)
const padded = (text: string) => `${PY_WHITESPACE}${text}${PY_WHITESPACE}`

async function expectRefused(req: unknown, message: string, code = 'ERR_LOOPX_TRANSACTION_INVALID') {
  const error = await rejection(req)
  expect(error).toBeInstanceOf(LoopxHooksError)
  expect({ code: error.code, message: error.message }).toEqual({ code, message })
}

describe("LoopX's transaction scenarios: documents and requests", () => {
  it('follows "source and dispatch identities replay the retired Python canonical bytes"', async () => {
    const emoji = source()
    emoji.identity.agent_id = 'agent-😀'
    const [plan] = (await evaluate(request(null, { source: emoji }))).provider_plan
    expect(plan!.hook_input.receipt.event_id).toBe('pwr_1e21e6cc20ec36025f486859')
    expect(plan!.dispatch_id).toBe('pwh_bd119d54eba68a96ecd93c21ff3565283decd8c1e3746d2d9ab1bfc621098933')

    const spaced = source()
    spaced.event_kind = padded('refresh_state')
    spaced.state_version = padded('state-v1')
    spaced.committed_at = padded('2026-09-02T12:00:00Z')
    spaced.identity = {
      goal_id: padded('goal-1'),
      agent_id: padded('agent-\uFEFF'),
      todo_id: padded('todo-1'),
      turn_instance_id: padded('turn-1'),
      effect_id: padded('effect-1'),
    }
    const [spacedPlan] = (await evaluate(request(null, { source: spaced }))).provider_plan
    expect(spacedPlan!.hook_input.receipt.event_id).toBe('pwr_d67ba8a0f7e295de520d0989')
    expect(spacedPlan!.dispatch_id).toBe('pwh_143821700486f93b3af19a6c473caee038819832f2c4a70819ac7d7ff81690ac')

    // A byte order mark is no Python whitespace, but no admitted identity either.
    const bom = source()
    bom.identity.agent_id = '\uFEFF'
    bom.state_version = '\uFEFF'
    const refused = await evaluate(request(null, { source: bom }))
    expect(refused.provider_plan).toEqual([])
    expect(refused.dispatch!.failures[0]!.error_code).toBe('registration_or_input_rejected')
  })

  it('follows "todoless autonomous replan source preserves an explicit null Todo identity"', async () => {
    const todoless = source()
    todoless.identity.todo_id = null
    const [plan] = (await evaluate(request(null, { source: todoless }))).provider_plan
    expect(plan!.hook_input.identity).toEqual({
      goal_id: 'goal-1',
      agent_id: 'agent-1',
      todo_id: null,
      turn_instance_id: 'turn-1',
      effect_id: 'effect-1',
    })
  })

  it('follows "legacy hook input is exact-validated and preserves its durable event identity"', async () => {
    const legacy = (hookInput: Doc) => evaluate(request(null, { source: null, hook_input: hookInput }))
    const [plan] = (await legacy(legacyHookInput())).provider_plan
    expect(plan!.hook_input.receipt.event_id).toBe('evt-stage-1')

    const extra = await legacy({ ...legacyHookInput(), unexpected: true })
    expect(extra.provider_plan).toEqual([])
    expect(extra.dispatch!.failures[0]!.error_code).toBe('registration_or_input_rejected')

    const del = legacyHookInput()
    del.receipt.event_id = 'evt-\u007f'
    const [delPlan] = (await legacy(del)).provider_plan
    expect(delPlan!.dispatch_id).toBe('pwh_814eeff656b73bb32cdfb8cb56adfdc3df1a51b299fbbfac5b339a56daeee9ce')

    const spaced = legacyHookInput()
    spaced.receipt.event_id = '\u0085evt-\uFEFF\u0085'
    const [spacedPlan] = (await legacy(spaced)).provider_plan
    expect(spacedPlan!.dispatch_id).toBe('pwh_e1e565a53173e5e5a6d932096699fd022494355a32913f1fb15acd8e0128fd33')
  })

  it('follows "batch preflight orders hooks and grants each provider only its read scope"', async () => {
    const registrations = () => [
      registration('periodic_report.z', ['project_progress']),
      registration('periodic_report.a', ['stage_completion']),
    ]
    const pre = await evaluate(request(null, { registrations: registrations() }))
    expect(pre.phase).toBe('preflight')
    expect(pre.dispatch).toBeNull()
    expect(pre.provider_plan.map((p) => p.hook_id)).toEqual(['periodic_report.a', 'periodic_report.z'])
    expect(pre.provider_plan.map((p) => p.hook_input.projection)).toEqual([
      { stage_completion: { transition: 'goal_terminal' } },
      { project_progress: { items: [] } },
    ])

    const outcomes = pre.provider_plan.map((p, i) => returned(p, intentResult(p, `intent-${i}`)))
    const dispatch = await finalized(finalize(null, pre, outcomes, { registrations: registrations() }))
    expect(dispatch).toMatchObject({ registered_count: 2, invoked_count: 2, intent_count: 2, failures: [] })
  })

  it('follows "duplicate hook order is bound into the transaction identity"', async () => {
    const stage = registration('periodic_report.duplicate', ['stage_completion'])
    const progress = registration('periodic_report.duplicate', ['project_progress'])
    const stageFirst = await evaluate(request(null, { registrations: [stage, progress] }))
    const progressFirst = await evaluate(request(null, { registrations: [progress, stage] }))
    expect(stageFirst.transaction_id).not.toBe(progressFirst.transaction_id)
    expect(stageFirst.provider_plan[0]!.hook_input.projection).toEqual({
      stage_completion: { transition: 'goal_terminal' },
    })
    expect(progressFirst.provider_plan[0]!.hook_input.projection).toEqual({ project_progress: { items: [] } })
  })

  it('follows "finalize requires one bound outcome for every current provider plan"', async () => {
    const pre = await evaluate(request(null))
    await expectRefused(finalize(null, pre, []), 'provider_outcomes do not cover the current provider plan')
  })

  it('follows "registration and provider failures preserve canonical per-hook order"', async () => {
    const invalid = { ...registration('periodic_report.b'), requested_write_scope: ['forbidden'] }
    const registrations = [
      registration('periodic_report.c'),
      registration('periodic_report.a'),
      invalid,
      registration('periodic_report.a'),
    ]
    const pre = await evaluate(request(null, { registrations }))
    const outcomes = pre.provider_plan.map((p) =>
      notReturned(p, p.hook_id === 'periodic_report.a' ? 'producer_failed' : 'contract_rejected'),
    )
    const dispatch = await finalized(finalize(null, pre, outcomes, { registrations }))
    expect(failureCodes(dispatch)).toEqual([
      ['periodic_report.a', 'producer_failed'],
      ['periodic_report.a', 'duplicate_hook_id'],
      ['periodic_report.b', 'registration_or_input_rejected'],
      ['periodic_report.c', 'contract_rejected'],
    ])
  })

  it('follows "finalize rejects a transaction id from different source facts"', async () => {
    const pre = await evaluate(request(null))
    const changed = { ...source(), state_version: 'state-v2' }
    await expectRefused(
      finalize(null, pre, [returned(pre.provider_plan[0]!)], { source: changed }),
      'finalize transaction_id does not match source and registrations',
    )
  })

  it('follows "transaction request rejects unknown top-level fields"', async () => {
    await expectRefused(
      request(null, { unexpected: true }),
      'post-writeback hook transaction request fields are invalid',
    )
  })

  it('follows "finalize still rejects an unknown extra outcome"', async () => {
    const pre = await evaluate(request(null))
    const plan = pre.provider_plan[0]!
    const stranger = { ...returned(plan), dispatch_id: `pwh_${'f'.repeat(64)}` }
    await expectRefused(
      finalize(null, pre, [returned(plan), stranger]),
      'provider outcome dispatch_id is outside this transaction',
    )
  })
})

describe('only the two-phase protocol', () => {
  it('exports LoopX schema versions and answers its result documents member for member', async () => {
    expect(POST_WRITEBACK_HOOK_TRANSACTION_REQUEST_SCHEMA_VERSION).toBe(
      'loopx_post_writeback_hook_transaction_request_v0',
    )
    expect(POST_WRITEBACK_HOOK_TRANSACTION_RESULT_SCHEMA_VERSION).toBe(
      'loopx_post_writeback_hook_transaction_result_v0',
    )
    expect(POST_WRITEBACK_HOOK_SOURCE_SCHEMA_VERSION).toBe('loopx_post_writeback_hook_source_v0')

    const pre = await evaluate(request(null))
    expect(Object.keys(pre).sort()).toEqual(['dispatch', 'phase', 'provider_plan', 'schema_version', 'transaction_id'])
    expect(pre.schema_version).toBe(POST_WRITEBACK_HOOK_TRANSACTION_RESULT_SCHEMA_VERSION)
    expect(pre.transaction_id).toMatch(/^pwtx_[0-9a-f]{64}$/)
    const plan = pre.provider_plan[0]!
    expect(plan).toMatchObject({ hook_id: HOOK, capability_id: 'periodic-report', attempt_count: 1, retry: false })
    expect(Object.keys(plan).sort()).toEqual([
      'attempt_count',
      'capability_id',
      'dispatch_id',
      'hook_id',
      'hook_input',
      'receipt_snapshot',
      'retry',
    ])

    const answer = await evaluate(finalize(null, pre, [returned(plan)]))
    expect(answer).toMatchObject({ phase: 'finalize', transaction_id: pre.transaction_id, provider_plan: [] })
    expect(answer.dispatch).toEqual({
      schema_version: 'loopx_post_writeback_capability_hook_dispatch_v0',
      phase: 'post_writeback',
      registered_count: 1,
      invoked_count: 1,
      replayed_hooks: [],
      retried_hooks: [],
      intent_count: 1,
      intents: [intentResult(plan).intent],
      failures: [],
      primary_writeback_preserved: true,
      external_writes_performed: false,
    })
  })

  it('a finalize must cover every plan: one outcome for two plans is refused and writes nothing', async () => {
    const root = roots.make()
    const registrations = [registration('periodic_report.a'), registration('periodic_report.b')]
    const pre = await evaluate(request(root, { registrations }))
    expect(pre.provider_plan).toHaveLength(2)
    await expectRefused(
      finalize(root, pre, [returned(pre.provider_plan[0]!)], { registrations }),
      'provider_outcomes do not cover the current provider plan',
    )
    expect(readdirSync(root)).toEqual([])
  })

  it('a transaction_id binds the source, the registrations and the runtime root: another of any is refused', async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const outcomes = [returned(pre.provider_plan[0]!)]
    const message = 'finalize transaction_id does not match source and registrations'
    await expectRefused(
      finalize(root, pre, outcomes, { source: { ...source(), committed_at: '2026-09-03T12:00:00Z' } }),
      message,
    )
    await expectRefused(
      finalize(root, pre, outcomes, { source: { ...source(), projection: { stage_completion: {} } } }),
      message,
    )
    await expectRefused(
      finalize(root, pre, outcomes, { registrations: [registration(HOOK, ['stage_completion'], 8_192)] }),
      message,
    )
    const elsewhere = roots.make()
    await expectRefused(finalize(elsewhere, pre, outcomes), message)
    expect(readdirSync(root)).toEqual([])
    expect(readdirSync(elsewhere)).toEqual([])
  })

  it('an unknown extra outcome is refused before any receipt is written', async () => {
    const root = roots.make()
    const pre = await evaluate(request(root))
    const plan = pre.provider_plan[0]!
    const stranger = { ...returned(plan), dispatch_id: `pwh_${'0'.repeat(64)}` }
    await expectRefused(
      finalize(root, pre, [returned(plan), stranger]),
      'provider outcome dispatch_id is outside this transaction',
    )
    expect(readdirSync(root)).toEqual([])
  })

  it.each<[string, (root: string) => unknown, string, string?]>([
    [
      'another schema version',
      (r) => request(r, { schema_version: 'loopx_post_writeback_hook_transaction_request_v9' }),
      'post-writeback hook transaction schema is invalid',
    ],
    [
      'an unknown phase',
      (r) => request(r, { phase: 'commit' }),
      'post-writeback hook transaction phase is unsupported',
    ],
    [
      'a preflight with a transaction_id',
      (r) => request(r, { transaction_id: `pwtx_${'0'.repeat(64)}` }),
      'preflight transaction_id must be null',
    ],
    ['a finalize without one', (r) => request(r, { phase: 'finalize' }), 'finalize transaction_id is required'],
    [
      'neither source nor hook_input',
      (r) => request(r, { source: null }),
      'exactly one of source or hook_input is required',
    ],
    [
      'both source and hook_input',
      (r) => request(r, { hook_input: legacyHookInput() }),
      'exactly one of source or hook_input is required',
    ],
    ['a relative runtime_root', () => request('relative/root'), 'runtime_root must be absolute'],
    [
      'more than 128 registrations',
      (r) =>
        request(r, { registrations: Array.from({ length: 129 }, (_, i) => registration(`periodic_report.h${i}`)) }),
      'registrations exceed the batch limit',
    ],
    [
      'a goal_id that is no path segment',
      (r) => request(r, { source: { ...source(), identity: { ...source().identity, goal_id: '../escape' } } }),
      'source.identity.goal_id is not a safe path segment',
      'ERR_LOOPX_TRANSACTION_SOURCE_INVALID',
    ],
    [
      'a source with an unknown field',
      (r) => request(r, { source: { ...source(), extra: 1 } }),
      'source fields are invalid',
      'ERR_LOOPX_TRANSACTION_SOURCE_INVALID',
    ],
  ])('refuses %s with LoopX message and a stable code, writing nothing', async (_, make, message, code) => {
    const root = roots.make()
    await expectRefused(make(root), message, code)
    expect(readdirSync(root)).toEqual([])
  })

  it("refuses a request that is no JSON object as the caller's misuse, naming the argument", async () => {
    const cyclic: Record<string, unknown> = {}
    cyclic['self'] = cyclic
    for (const req of [null, ['not', 'an', 'object'], 'request', 42, cyclic]) {
      const error = await rejection(req)
      expect(error).toBeInstanceOf(LoopxHooksError)
      expect(error.code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
      expect(error.message).toMatch(/evaluatePostWritebackHookTransaction: invalid argument: request/)
    }
  })

  it('refuses two outcomes for one dispatch_id', async () => {
    const pre = await evaluate(request(null))
    const plan = pre.provider_plan[0]!
    await expectRefused(
      finalize(null, pre, [returned(plan), returned(plan)]),
      'provider_outcomes contain duplicate dispatch_id',
    )
  })
})
