// Providers: a correct one compiles; a provider whose registration names kind
// A cannot return an intent of kind B, nor name a kind it was not given.
import { defineHook, intent, notApplicable, proposed, type HookDefinition, type ProviderOf } from '../../lib/index.js'
import type { PostWritebackHookRegistration } from '../../lib/index.js'
import { baseRegistration, kindA, kindB } from './kinds.js'

const baseRegistrationWithout = () => {
  const { capability_id: _capability, ...rest } = baseRegistration()
  return rest
}

// A correct provider, with both kinds.
export const correct: HookDefinition = defineHook({
  kinds: [kindA, kindB],
  registration: {
    ...baseRegistration(),
    intent_kinds: ['periodic_report.trigger_evaluation', 'periodic_report.digest'],
    // A literal scope list types the input: settlement ids and fact refs are there.
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
  },
  provider: (input) => {
    if (input.projection.fact_refs.length === 0) return notApplicable()
    return proposed([
      intent(input, kindA, {
        operation: 'evaluate_runtime_trigger',
        policyVersion: 'weekly_v0',
        payload: { segment_ref: input.source.todo_id, source_event_refs: [] },
      }),
      intent(input, kindB, {
        operation: 'skip_digest',
        policyVersion: 'weekly_v0',
        payload: { window: 'daily', count: 3, urgent: false, scope: { goal_ref: input.source.goal_id } },
      }),
    ])
  },
})

// An async provider compiles too.
export const asyncProvider: ProviderOf<typeof kindA> = async (_input) => notApplicable()

// A registration naming A whose provider returns an intent of kind B.
export const wrongKind = defineHook({
  kinds: [kindA],
  registration: { ...baseRegistration(), intent_kinds: ['periodic_report.trigger_evaluation'] },
  provider: (input) =>
    // @ts-expect-error the registration names kind A only; an intent of kind B is not allowed
    proposed([
      intent(input, kindB, {
        operation: 'compose_digest',
        policyVersion: 'v0',
        payload: { window: 'daily', count: 1, urgent: true, scope: { goal_ref: 'g' } },
      }),
    ]),
})

// The same through the provider type alone.
export const wrongKindTyped: ProviderOf<typeof kindA> = (input) =>
  // @ts-expect-error a ProviderOf<kind A> cannot return an intent of kind B
  proposed([
    intent(input, kindB, {
      operation: 'compose_digest',
      policyVersion: 'v0',
      payload: { window: 'daily', count: 1, urgent: true, scope: { goal_ref: 'g' } },
    }),
  ])

// The registration cannot name a kind the hook was not given.
export const unlistedKind = defineHook({
  kinds: [kindA],
  // @ts-expect-error periodic_report.digest is not among the hook's kinds
  registration: { ...baseRegistration(), intent_kinds: ['periodic_report.digest'] },
  provider: () => notApplicable(),
})

// A not_applicable result carries no intents.
// @ts-expect-error not_applicable with an intent
export const naWithIntents: ProviderOf<typeof kindA> = (input) => ({
  schema_version: 'loopx_post_writeback_hook_result_v0',
  status: 'not_applicable',
  intents: [
    intent(input, kindA, {
      operation: 'evaluate_runtime_trigger',
      policyVersion: 'v0',
      payload: { segment_ref: 's', source_event_refs: [] },
    }),
  ],
})

// capability_id and intent_kinds come from the kinds when left out.
export const fromKinds: HookDefinition = defineHook({
  kinds: [kindA],
  registration: baseRegistrationWithout(),
  provider: () => notApplicable(),
})

// A registration typed with the exported type is accepted (its intent_kinds are checked at run time).
declare const exported: PostWritebackHookRegistration
export const typedRegistration: HookDefinition = defineHook({
  kinds: [kindA],
  registration: exported,
  provider: () => notApplicable(),
})

// A hook needs at least one kind.
export const noKinds = defineHook({
  // @ts-expect-error an empty kinds list
  kinds: [],
  registration: baseRegistrationWithout(),
  provider: () => notApplicable(),
})
