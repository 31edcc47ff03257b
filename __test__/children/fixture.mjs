// Shared fixture of the crash and concurrency tests: one intent kind, one hook
// whose single intent's payload derives from the receipt alone, so every
// dispatch_id and intent_id is a pure function of the receipt id.
import { writeSync } from 'node:fs'

import { defineHook, dispatchId, intent, intentId, proposed, registrationDigest } from '../../dist/index.js'

export const KIND = {
  intent_kind: 'crashtest.mark',
  capability_id: 'crashtest',
  operations: ['mark'],
  payload_schema: {
    type: 'object',
    properties: {
      receipt_ref: { type: 'string', format: 'opaque_ref' },
      n: { type: 'integer', minimum: 0, maximum: 1_000_000_000 },
    },
    required: ['receipt_ref', 'n'],
    additionalProperties: false,
  },
}

export const REGISTRATION = {
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: 'crashtest.marker',
  capability_id: 'crashtest',
  phase: 'post_writeback',
  event_kinds: ['todo_completed'],
  intent_kinds: ['crashtest.mark'],
  requested_read_scope: ['settlement_identity'],
  budget: {
    // Every invocation whose checkpoint reached the journal counts, crashes
    // included (contract-v0 §1): a killed dispatcher's attempt plus the
    // recovery's one. On PostgreSQL a process that takes over an identity
    // whose dispatcher was killed spends an attempt of its own, so a soak
    // round can leave more than one before its recovery (4 is the contract's most).
    max_invocations_per_dispatch: 4,
    max_intents_per_dispatch: 1,
    max_result_bytes: 4096,
    timeout_ms: 10_000,
  },
  failure_policy: 'isolate',
}

export const POLICY_VERSION = 'crashtest.v1'

/** The receipt id of receipt number `n`. */
export const receiptId = (n) => `r${n}`

/** The payload the provider proposes for `receiptId` (a function of it alone). */
export function payloadFor(rid) {
  return { receipt_ref: rid, n: Number(rid.slice(1)) }
}

/** A committed, checkpointed writeback of receipt `rid`. */
export function request(rid) {
  const n = rid.slice(1)
  return {
    settlement: {
      goal_id: 'goal1',
      agent_id: 'agent1',
      todo_id: `todo${n}`,
      turn_instance_id: `turn${n}`,
      effect_id: `e${n}`,
    },
    receipt: {
      receipt_id: rid,
      effect_id: `e${n}`,
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: `rev${n}`,
      committed_at: '2026-08-26T00:00:00Z',
    },
    event: { event_kind: 'todo_completed', fact_refs: [] },
  }
}

/** What the journal must end up holding for `rid`, recomputed from the identity rules. */
export function expected(rid) {
  const did = dispatchId({
    receiptId: rid,
    effectId: `e${rid.slice(1)}`,
    hookId: REGISTRATION.hook_id,
    capabilityId: REGISTRATION.capability_id,
    registrationDigest: registrationDigest(REGISTRATION),
    registrationSchemaVersion: REGISTRATION.schema_version,
    eventKind: 'todo_completed',
  })
  const iid = intentId({
    dispatchId: did,
    intentKind: KIND.intent_kind,
    policyVersion: POLICY_VERSION,
    payload: payloadFor(rid),
  })
  return { dispatchId: did, intentIds: [iid] }
}

/**
 * Installs the kind and the hook; the provider calls `onInvoke(receiptId)`,
 * then yields to the event loop a random few times before answering.
 */
export function install(runtime, onInvoke = () => {}) {
  runtime.defineIntentKind(KIND)
  runtime.register(
    defineHook({
      kinds: [KIND],
      registration: REGISTRATION,
      provider: async (input) => {
        onInvoke(input.source.receipt_id)
        const spins = Math.floor(Math.random() * 3)
        for (let i = 0; i < spins; i++) await new Promise((r) => setImmediate(r))
        const rid = input.source.receipt_id
        return proposed([
          intent(input, KIND, { operation: 'mark', policyVersion: POLICY_VERSION, payload: payloadFor(rid) }),
        ])
      },
    }),
  )
}

export const PROFILE = { enabled: true, replay: 'return', maxHooksPerDispatch: 16, maxDispatchWallMs: 60_000 }

/** One line on fd 1, written synchronously so it is in the pipe before the next await. */
export function emit(obj) {
  const text = JSON.stringify(obj) + '\n'
  let buf = Buffer.from(text)
  while (buf.length > 0) {
    const n = writeSync(1, buf)
    buf = buf.subarray(n)
  }
}

/**
 * Whether `promise` settles while only microtasks run. An outcome that comes
 * back from the writer thread needs the event loop to turn, so it never
 * does; one committed inline does (providers run a microtask after
 * `dispatch` returns).
 */
export async function settlesInMicrotasks(promise) {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let tick = 0; tick < 16 && !settled; tick++) await Promise.resolve()
  return settled
}
