/**
 * What both sides of the benchmark share: the RFC example registration and
 * intent kind, the dispatch requests, and the one provider function (plain
 * JS: node:crypto + canonicalize, so neither side's provider is faster).
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import canonicalize from 'canonicalize'

import type { DispatchRequest, PostWritebackHookRegistration, IntentKindDefinition } from '../bindings/index.js'
import { ROOT } from './pkg.js'

const example = (name: string): any => JSON.parse(readFileSync(join(ROOT, 'examples', name), 'utf8'))

export const registration: PostWritebackHookRegistration = example('registration.json')
export const intentKind: IntentKindDefinition = example('intent_kind.json')
/** The RFC's one-intent result (ids of the example input). */
export const exampleResult: any = example('hook_result.json')
export const exampleInput: any = example('hook_input.json')

export const INTENT_DOMAIN = 'loopx_post_writeback_intent_v0'
export const DISPATCH_DOMAIN = 'loopx_post_writeback_dispatch_v0'

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

export function jcs(value: unknown): string {
  const text = canonicalize(value)
  if (text === undefined) throw new Error('not canonicalizable')
  return text
}

export function intentIdOf(dispatchId: string, intentKind: string, policyVersion: string, payload: unknown): string {
  return (
    'pwi_' +
    sha256Hex(
      jcs({
        domain: INTENT_DOMAIN,
        dispatch_id: dispatchId,
        intent_kind: intentKind,
        policy_version: policyVersion,
        payload,
      }),
    )
  )
}

/**
 * The provider both sides invoke: one `periodic_report.trigger_evaluation`
 * intent per input, its id computed as contract-v0 section 3 says.
 */
export function provider(input: any): any {
  const payload = { segment_ref: 'segment_' + input.source.todo_id, source_event_refs: [input.source.receipt_id] }
  return {
    schema_version: 'loopx_post_writeback_hook_result_v0',
    status: 'proposed',
    intents: [
      {
        schema_version: 'loopx_post_writeback_intent_v0',
        intent_id: intentIdOf(input.dispatch_id, 'periodic_report.trigger_evaluation', 'weekly_v0', payload),
        hook_id: input.hook_id,
        capability_id: input.capability_id,
        source_dispatch_id: input.dispatch_id,
        intent_kind: 'periodic_report.trigger_evaluation',
        operation: 'evaluate_runtime_trigger',
        policy_version: 'weekly_v0',
        payload,
        budget: { max_attempts: 1, max_result_bytes: 16384 },
        requested_write_scope: [],
        failure_policy: 'isolate',
        grants_new_action_authority: false,
        external_write_performed: false,
      },
    ],
  }
}

/** The i-th committed writeback of a run tagged `tag` (distinct identities per tag). */
export function request(tag: string, i: number): DispatchRequest {
  const n = `${tag}_${i}`
  return {
    settlement: {
      goal_id: 'goal_' + tag,
      agent_id: 'agent_bench',
      todo_id: 'todo_' + n,
      turn_instance_id: 'turn_' + n,
      effect_id: 'effect_' + n,
    },
    receipt: {
      receipt_id: 'receipt_' + n,
      effect_id: 'effect_' + n,
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: 'revision_' + n,
      committed_at: '2026-08-26T00:00:00Z',
    },
    event: { event_kind: 'todo_completed', fact_refs: ['fact_' + n] },
  }
}
