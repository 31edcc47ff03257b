/**
 * A capability author's view: the periodic_report capability defines its
 * intent kind once (at the composition root) and registers one post-writeback
 * hook whose provider proposes an evaluation of its runtime trigger.
 *
 * Everything here is typed from the definitions: the provider may only return
 * intents of the kinds its registration names, with payloads that match the
 * kind's schema. A wrong payload field, an unknown operation or an intent of
 * another kind does not compile. It imports the package by its name, as an
 * application does (installed, that is the package's dist/index.js; in this
 * repository, tsconfig.json maps the name to lib/index.ts for the type check
 * and the tests run dist/index.js).
 */
import { defineHook, defineIntentKind, intent, notApplicable, proposed, type HookRuntime } from 'loopx-hooks'

/** The intent kind, with its literal types kept (no `as const` needed). */
export const triggerEvaluation = defineIntentKind({
  intent_kind: 'periodic_report.trigger_evaluation',
  capability_id: 'periodic_report',
  operations: ['evaluate_runtime_trigger'],
  payload_schema: {
    type: 'object',
    properties: {
      segment_ref: { type: 'string', format: 'opaque_ref' },
      source_event_refs: {
        type: 'array',
        items: { type: 'string', format: 'opaque_ref' },
        maxItems: 32,
        uniqueItems: true,
      },
    },
    required: ['segment_ref', 'source_event_refs'],
    additionalProperties: false,
  },
})

/** The hook: its registration and a provider typed from the kinds it names. */
export const runtimeTrigger = defineHook({
  kinds: [triggerEvaluation],
  registration: {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: 'periodic_report.runtime_trigger',
    capability_id: 'periodic_report',
    phase: 'post_writeback',
    event_kinds: ['todo_completed', 'replan_recorded'],
    intent_kinds: ['periodic_report.trigger_evaluation'],
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
    budget: { max_invocations_per_dispatch: 2, max_intents_per_dispatch: 1, max_result_bytes: 16384, timeout_ms: 1000 },
    failure_policy: 'isolate',
  },
  provider: (input) => {
    // Only completed todos with facts to report are worth an evaluation.
    if (input.source.event_kind !== 'todo_completed' || input.projection.fact_refs.length === 0) return notApplicable()
    return proposed([
      intent(input, triggerEvaluation, {
        operation: 'evaluate_runtime_trigger',
        policyVersion: 'weekly_v0',
        payload: { segment_ref: input.source.todo_id, source_event_refs: [...input.projection.fact_refs] },
      }),
    ])
  },
})

/** Installs the capability on a runtime (at the composition root, before any dispatch). */
export function installRuntimeTrigger(runtime: HookRuntime): void {
  // The hook carries its kind (defineHook keeps it), so register defines it too.
  runtime.register(runtimeTrigger)
}
