// Payloads are typed from the kind's schema: a wrong field type, a missing
// field, an extra field or an enum value outside the enum does not compile.
import { intent, type PayloadOf, type PostWritebackHookInput } from '../../lib/index.js'
import { kindA, kindB } from './kinds.js'

declare const input: PostWritebackHookInput

// Correct payloads compile.
export const okA = intent(input, kindA, {
  operation: 'evaluate_runtime_trigger',
  policyVersion: 'v0',
  payload: { segment_ref: 's', source_event_refs: ['e1'] },
})
export const okB = intent(input, kindB, {
  operation: 'compose_digest',
  policyVersion: 'v0',
  payload: { window: 'weekly', count: 100, urgent: true, scope: { goal_ref: 'g' } },
})
export const kindOfA: 'periodic_report.trigger_evaluation' = okA.intent_kind
export const windowOfB: 'daily' | 'weekly' = okB.payload.window

// Wrong field type.
intent(input, kindA, {
  operation: 'evaluate_runtime_trigger',
  policyVersion: 'v0',
  // @ts-expect-error segment_ref is an opaque ref (string), not a number
  payload: { segment_ref: 1, source_event_refs: [] },
})
intent(input, kindA, {
  operation: 'evaluate_runtime_trigger',
  policyVersion: 'v0',
  // @ts-expect-error array items are opaque refs
  payload: { segment_ref: 's', source_event_refs: [1] },
})
intent(input, kindB, {
  operation: 'compose_digest',
  policyVersion: 'v0',
  // @ts-expect-error count is an integer, not a string
  payload: { window: 'daily', count: '3', urgent: false, scope: { goal_ref: 'g' } },
})
intent(input, kindB, {
  operation: 'compose_digest',
  policyVersion: 'v0',
  // @ts-expect-error urgent is a boolean
  payload: { window: 'daily', count: 3, urgent: 'yes', scope: { goal_ref: 'g' } },
})

// Missing field.
// @ts-expect-error source_event_refs is required
intent(input, kindA, { operation: 'evaluate_runtime_trigger', policyVersion: 'v0', payload: { segment_ref: 's' } })
intent(input, kindB, {
  operation: 'compose_digest',
  policyVersion: 'v0',
  // @ts-expect-error scope.goal_ref is required
  payload: { window: 'daily', count: 3, urgent: false, scope: {} },
})

// Extra field.
intent(input, kindA, {
  operation: 'evaluate_runtime_trigger',
  policyVersion: 'v0',
  // @ts-expect-error note is not in the schema
  payload: { segment_ref: 's', source_event_refs: [], note: 'free text' },
})
intent(input, kindB, {
  operation: 'compose_digest',
  policyVersion: 'v0',
  // @ts-expect-error nested objects are closed too
  payload: { window: 'daily', count: 3, urgent: false, scope: { goal_ref: 'g', path: '/etc' } },
})

// Enum value outside the enum.
intent(input, kindB, {
  operation: 'compose_digest',
  policyVersion: 'v0',
  // @ts-expect-error 'hourly' is not one of daily, weekly
  payload: { window: 'hourly', count: 3, urgent: false, scope: { goal_ref: 'g' } },
})

// Operation outside the kind's operations.
intent(input, kindA, {
  // @ts-expect-error compose_digest belongs to kind B
  operation: 'compose_digest',
  policyVersion: 'v0',
  payload: { segment_ref: 's', source_event_refs: [] },
})

// PayloadOf as a plain type.
type DigestPayload = PayloadOf<typeof kindB.payload_schema>
export const digest: DigestPayload = { window: 'daily', count: 0, urgent: false, scope: { goal_ref: 'g' } }
// @ts-expect-error 'monthly' is outside the enum
export const badDigest: DigestPayload = { window: 'monthly', count: 0, urgent: false, scope: { goal_ref: 'g' } }
