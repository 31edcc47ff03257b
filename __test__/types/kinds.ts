// Shared typed definitions for the type-level fixtures (no assertions here).
import { defineIntentKind, type PostWritebackHookRegistration } from '../../lib/index.js'

/** Kind A: periodic_report.trigger_evaluation, opaque refs only. */
export const kindA = defineIntentKind({
  intent_kind: 'periodic_report.trigger_evaluation',
  capability_id: 'periodic_report',
  operations: ['evaluate_runtime_trigger'],
  payload_schema: {
    type: 'object',
    properties: {
      segment_ref: { type: 'string', format: 'opaque_ref' },
      source_event_refs: { type: 'array', items: { type: 'string', format: 'opaque_ref' }, maxItems: 32 },
    },
    required: ['segment_ref', 'source_event_refs'],
    additionalProperties: false,
  },
})

/** Kind B: periodic_report.digest, an enum, an integer, a boolean and a nested object. */
export const kindB = defineIntentKind({
  intent_kind: 'periodic_report.digest',
  capability_id: 'periodic_report',
  operations: ['compose_digest', 'skip_digest'],
  payload_schema: {
    type: 'object',
    properties: {
      window: { type: 'string', enum: ['daily', 'weekly'] },
      count: { type: 'integer', minimum: 0, maximum: 100 },
      urgent: { type: 'boolean' },
      scope: {
        type: 'object',
        properties: { goal_ref: { type: 'string', format: 'opaque_ref' } },
        required: ['goal_ref'],
        additionalProperties: false,
      },
    },
    required: ['window', 'count', 'urgent', 'scope'],
    additionalProperties: false,
  },
})

/** A registration without its intent_kinds; each fixture adds them, contextually typed by defineHook. */
export const baseRegistration = (): Omit<PostWritebackHookRegistration, 'intent_kinds'> => ({
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: 'periodic_report.runtime_trigger',
  capability_id: 'periodic_report',
  phase: 'post_writeback',
  event_kinds: ['todo_completed'],
  requested_read_scope: ['settlement_identity'],
  budget: { max_invocations_per_dispatch: 1, max_intents_per_dispatch: 2, max_result_bytes: 16384, timeout_ms: 1000 },
  failure_policy: 'isolate',
})
