/**
 * The hook `periodic_report.runtime_trigger`: it maps a committed completion
 * (`segment_completed`) or replan (`replan_recorded`) projection to exactly
 * one trigger-evaluation intent, and anything else to `not_applicable`. It
 * decides nothing about promotion (the capability's trigger reducer does,
 * later, under the scheduler) and performs no effect.
 */
import { defineHook, intent, notApplicable, proposed, type HookDefinition } from '../../index.js'
import type { PostWritebackHookInput, PostWritebackHookRegistration } from '../../../bindings/index'
import { expectArgs, expectOptions } from '../../args.js'
import { CAPABILITY_ID, OPERATION, POLICY_VERSION, triggerEvaluationKind, type TriggerEvaluationKind } from './kind.js'

/** The transitions this hook answers; core projects todo_completed and replan_recorded to them. */
export const TRIGGER_TRANSITIONS = ['segment_completed', 'replan_recorded'] as const

/** The payload's bound on source_event_refs (the kind's maxItems). */
const MAX_SOURCE_EVENT_REFS = 32

/** The hook's registration (the RFC's example for `periodic_report`). */
export function runtimeTriggerRegistration(
  capabilityId: string = CAPABILITY_ID,
  options?: { timeoutMs?: number },
): PostWritebackHookRegistration {
  expectArgs('runtimeTriggerRegistration', { capabilityId: [capabilityId, 'string'] })
  options = expectOptions('runtimeTriggerRegistration', 'options', options, { timeoutMs: 'number?' })
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: `${capabilityId}.runtime_trigger`,
    capability_id: capabilityId,
    phase: 'post_writeback',
    event_kinds: ['todo_completed', 'replan_recorded'],
    intent_kinds: [`${capabilityId}.trigger_evaluation`],
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
    budget: {
      max_invocations_per_dispatch: 1,
      max_intents_per_dispatch: 1,
      max_result_bytes: 16384,
      timeout_ms: options.timeoutMs ?? 1000,
    },
    failure_policy: 'isolate',
  }
}

/**
 * The provider. The segment is the Todo whose writeback committed; the
 * source events are the committed receipt and the event's fact refs.
 */
export function runtimeTriggerProvider(kind: TriggerEvaluationKind = triggerEvaluationKind()) {
  expectArgs('runtimeTriggerProvider', { kind: [kind, 'object'] })
  return (input: Readonly<PostWritebackHookInput>) => {
    const transition = input.projection.transition as string
    if (!(TRIGGER_TRANSITIONS as readonly string[]).includes(transition)) return notApplicable()
    // The segment is the Todo: without settlement_identity there is none to name.
    const segmentRef = input.source.todo_id
    if (segmentRef === undefined) return notApplicable()
    const sourceEventRefs = [...new Set([input.source.receipt_id, ...input.projection.fact_refs])].slice(
      0,
      MAX_SOURCE_EVENT_REFS,
    )
    return proposed([
      intent(input, kind, {
        operation: OPERATION,
        policyVersion: POLICY_VERSION,
        payload: { segment_ref: segmentRef, source_event_refs: sourceEventRefs },
      }),
    ])
  }
}

/** The hook definition, ready for `runtime.register`. */
export function runtimeTriggerHook(
  capabilityId: string = CAPABILITY_ID,
  options?: { timeoutMs?: number },
): HookDefinition {
  expectArgs('runtimeTriggerHook', { capabilityId: [capabilityId, 'string'] })
  const kind = triggerEvaluationKind(capabilityId)
  return defineHook({
    kinds: [kind],
    registration: { ...runtimeTriggerRegistration(capabilityId, options), intent_kinds: [kind.intent_kind] },
    provider: runtimeTriggerProvider(kind),
  })
}
