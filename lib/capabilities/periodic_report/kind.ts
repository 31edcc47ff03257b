/**
 * The periodic_report capability's intent kind (RFC section 8):
 * `periodic_report.trigger_evaluation`, operation `evaluate_runtime_trigger`,
 * payload `{segment_ref, source_event_refs}`. The capability owns it; it is
 * defined at the composition root by `installPeriodicReport`.
 */
import { expectArgs } from '../../args.js'
import { defineIntentKind } from '../../index.js'

/** The capability's id. */
export const CAPABILITY_ID = 'periodic_report'
/** The one operation of its intent kind. */
export const OPERATION = 'evaluate_runtime_trigger'
/** The trigger policy this capability's intents ask for. */
export const POLICY_VERSION = 'weekly_v0'

/**
 * The trigger-evaluation kind owned by `capabilityId`. The id is a
 * parameter only so that a test can install the same logic under another
 * name and show core treats both alike; the capability is `periodic_report`.
 */
export function triggerEvaluationKind<const C extends string = typeof CAPABILITY_ID>(
  capabilityId: C = CAPABILITY_ID as C,
) {
  expectArgs('triggerEvaluationKind', { capabilityId: [capabilityId, 'string'] })
  return defineIntentKind({
    intent_kind: `${capabilityId}.trigger_evaluation` as `${C}.trigger_evaluation`,
    capability_id: capabilityId,
    operations: [OPERATION],
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
  } as const)
}

/** The typed trigger-evaluation intent kind (`triggerEvaluationKind`'s result). */
export type TriggerEvaluationKind = ReturnType<typeof triggerEvaluationKind<string>>

/** `periodic_report.trigger_evaluation`, as in the RFC's example. */
export const TRIGGER_EVALUATION = triggerEvaluationKind()
