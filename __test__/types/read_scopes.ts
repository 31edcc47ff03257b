// requested_read_scope applied to types (contract-v0 section 1): where the
// registration is a literal, the provider's input holds exactly what its
// scopes grant; a registration whose scopes are not known at compile time
// gets the contract's input, with the settlement members optional.
import {
  defineHook,
  notApplicable,
  type HookInputFor,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
} from '../../lib/index.js'
import { baseRegistration, kindA } from './kinds.js'

const scoped = (scopes: PostWritebackHookRegistration['requested_read_scope']) => ({
  ...baseRegistration(),
  intent_kinds: ['periodic_report.trigger_evaluation' as const],
  requested_read_scope: scopes,
})

// settlement_identity alone: the ids are strings; fact_refs is the empty tuple.
export const identityOnly = defineHook({
  kinds: [kindA],
  registration: {
    ...baseRegistration(),
    intent_kinds: ['periodic_report.trigger_evaluation'],
    requested_read_scope: ['settlement_identity'],
  },
  provider: (input) => {
    const todo: string = input.source.todo_id
    const revision: string = input.source.state_revision
    const none: [] = input.projection.fact_refs
    // @ts-expect-error without bounded_event_projection there is never a fact ref
    const first: string = input.projection.fact_refs[0]
    return todo && revision && none && first ? notApplicable() : notApplicable()
  },
})

// bounded_event_projection alone: no settlement member exists on the input.
export const factsOnly = defineHook({
  kinds: [kindA],
  registration: {
    ...baseRegistration(),
    intent_kinds: ['periodic_report.trigger_evaluation'],
    requested_read_scope: ['bounded_event_projection'],
  },
  provider: (input) => {
    const refs: string[] = input.projection.fact_refs
    // @ts-expect-error the Todo id is granted only by settlement_identity
    const todo: string = input.source.todo_id
    const receipt: string = input.source.receipt_id
    return refs && todo && receipt ? notApplicable() : notApplicable()
  },
})

// Scopes not known at compile time: the members are optional.
export const unknownScopes = defineHook({
  kinds: [kindA],
  registration: scoped(['settlement_identity']),
  provider: (input) => {
    // @ts-expect-error may be absent: the registration's scopes are not a literal
    const todo: string = input.source.todo_id
    const maybe: string | undefined = input.source.todo_id
    return todo && maybe ? notApplicable() : notApplicable()
  },
})

// The scoped input types are contract inputs.
export const widened: PostWritebackHookInput[] = [
  {} as HookInputFor<['settlement_identity']>,
  {} as HookInputFor<['bounded_event_projection']>,
]
