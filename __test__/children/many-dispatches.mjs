// N concurrent dispatches of instant providers (one sync, one promise) in one
// process; prints the outcome counts and the heap/RSS growth as one JSON line.
//   node many-dispatches.mjs <journal> <n>
import { HookRuntime, defineIntentKind, intent, proposed } from '../../dist/index.js'

const [journalPath, nArg] = process.argv.slice(2)
const n = Number(nArg)

const kind = (c) =>
  defineIntentKind({
    intent_kind: `${c}.signal`,
    capability_id: c,
    operations: ['evaluate'],
    payload_schema: {
      type: 'object',
      properties: { ref: { type: 'string', format: 'opaque_ref' } },
      required: ['ref'],
      additionalProperties: false,
    },
  })

const runtime = await HookRuntime.open({ journal: journalPath, profile: { enabled: true }, synchronous: 'normal' })
for (const c of ['instant', 'promised']) {
  const k = kind(c)
  runtime.defineIntentKind(k)
  const result = (input) =>
    proposed([
      intent(input, k, { operation: 'evaluate', policyVersion: 'v0', payload: { ref: input.source.receipt_id } }),
    ])
  runtime.register({
    registration: {
      schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
      hook_id: `${c}.hook`,
      capability_id: c,
      phase: 'post_writeback',
      event_kinds: ['todo_completed'],
      intent_kinds: [`${c}.signal`],
      requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
      budget: {
        max_invocations_per_dispatch: 1,
        max_intents_per_dispatch: 1,
        max_result_bytes: 4096,
        timeout_ms: 1000,
      },
      failure_policy: 'isolate',
    },
    provider: c === 'instant' ? result : async (input) => result(input),
  })
}

const request = (i) => ({
  settlement: { goal_id: 'g1', agent_id: 'a1', todo_id: 't1', turn_instance_id: 'u1', effect_id: 'e1' },
  receipt: {
    receipt_id: `r_${i}`,
    effect_id: 'e1',
    step_kind: 'durable_writeback',
    status: 'committed',
    checkpointed: true,
    state_revision: 'v1',
    committed_at: '2026-08-26T00:00:00Z',
  },
  event: { event_kind: 'todo_completed', fact_refs: ['f1'] },
})

globalThis.gc?.()
const before = process.memoryUsage()
let peakRss = before.rss
let peakHeap = before.heapUsed
const sampler = setInterval(() => {
  const m = process.memoryUsage()
  peakRss = Math.max(peakRss, m.rss)
  peakHeap = Math.max(peakHeap, m.heapUsed)
}, 50)
const outs = await Promise.all(Array.from({ length: n }, (_, i) => runtime.dispatch(request(i))))
clearInterval(sampler)
const outcomes = {}
const failures = {}
for (const o of outs) {
  for (const h of o.hooks) {
    outcomes[h.outcome] = (outcomes[h.outcome] ?? 0) + 1
    if (h.failureCode) failures[h.failureCode] = (failures[h.failureCode] ?? 0) + 1
  }
}
const stats = await runtime.journal.stats()
await runtime.close()
const mb = (b) => Math.round((b / 1048576) * 10) / 10
console.log(
  JSON.stringify({
    n,
    outcomes,
    failures,
    proposed: stats.proposed,
    rssGrowthMb: mb(peakRss - before.rss),
    heapGrowthMb: mb(peakHeap - before.heapUsed),
  }),
)
