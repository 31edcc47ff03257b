// RFC sections 6 and 7, contract-v0 section 1: requested_read_scope is
// applied. A hook receives only what its scopes grant (settlement_identity:
// the source's goal, agent, Todo and Turn ids and state revision;
// bounded_event_projection: the fact refs), and the hook-input validator
// holds an input against its registration in both directions.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import {
  dispatchId,
  registrationDigest,
  validateHookInput,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
  type ReadScope,
} from '../lib/index.js'
import { Fixtures, counted, notApplicable, registration, request } from './support/runtime'

const fx = new Fixtures()
afterEach(() => fx.cleanup())

const SETTLEMENT = ['goal_id', 'agent_id', 'todo_id', 'turn_instance_id', 'state_revision'] as const
const example = (name: string) =>
  JSON.parse(readFileSync(join(__dirname, '..', 'examples', `${name}.json`), 'utf8')) as Record<string, unknown>

function scoped(scopes: ReadScope[]): PostWritebackHookRegistration {
  return { ...(example('registration') as unknown as PostWritebackHookRegistration), requested_read_scope: scopes }
}

/** The RFC example input, re-addressed to `reg`'s dispatch id, with `edit` applied. */
function inputFor(reg: PostWritebackHookRegistration, edit: (doc: PostWritebackHookInput) => void = () => {}) {
  const doc = structuredClone(example('hook_input')) as unknown as PostWritebackHookInput
  doc.dispatch_id = dispatchId({
    receiptId: doc.source.receipt_id,
    effectId: doc.source.effect_id,
    hookId: reg.hook_id,
    capabilityId: reg.capability_id,
    registrationDigest: registrationDigest(reg),
    registrationSchemaVersion: reg.schema_version,
    eventKind: doc.source.event_kind,
  })
  edit(doc)
  return doc
}

const dropSettlement = (doc: PostWritebackHookInput) => {
  for (const f of SETTLEMENT) delete doc.source[f]
}

describe('requested_read_scope is applied (validator, both directions)', () => {
  it('a member present without its scope is not_allowed_value', () => {
    const factsOnly = scoped(['bounded_event_projection'])
    const verdict = validateHookInput(inputFor(factsOnly), factsOnly)
    expect(verdict.ok).toBe(false)
    const got = verdict.ok ? [] : verdict.violations.map((v) => `${v.path} ${v.rule}`).sort()
    expect(got).toEqual(SETTLEMENT.map((f) => `/source/${f} not_allowed_value`).sort())

    const idOnly = scoped(['settlement_identity'])
    expect(validateHookInput(inputFor(idOnly), idOnly)).toEqual({
      ok: false,
      violations: [{ path: '/projection/fact_refs', rule: 'not_allowed_value' }],
    })
  })

  it('a granted member missing is missing_field', () => {
    const both = scoped(['settlement_identity', 'bounded_event_projection'])
    const verdict = validateHookInput(inputFor(both, dropSettlement), both)
    expect(verdict.ok ? [] : verdict.violations).toEqual(
      SETTLEMENT.map((f) => ({ path: `/source/${f}`, rule: 'missing_field' })),
    )
  })

  it('an input holding exactly what the scopes grant is accepted', () => {
    const factsOnly = scoped(['bounded_event_projection'])
    expect(validateHookInput(inputFor(factsOnly, dropSettlement), factsOnly).ok).toBe(true)
    const idOnly = scoped(['settlement_identity'])
    const noFacts = inputFor(idOnly, (d) => {
      d.projection.fact_refs = []
    })
    expect(validateHookInput(noFacts, idOnly).ok).toBe(true)
  })
})

describe('requested_read_scope is applied (what a hook receives)', () => {
  it('each hook gets the members its scopes grant, and no others', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['alpha', 'beta', 'gamma'] })
    const providers = {
      alpha: counted(() => notApplicable()),
      beta: counted(() => notApplicable()),
      gamma: counted(() => notApplicable()),
    }
    const scopes: Record<keyof typeof providers, ReadScope[]> = {
      alpha: ['settlement_identity'],
      beta: ['bounded_event_projection'],
      gamma: ['settlement_identity', 'bounded_event_projection'],
    }
    for (const name of ['alpha', 'beta', 'gamma'] as const) {
      const reg = { ...registration(`${name}.one`), requested_read_scope: scopes[name] }
      runtime.register({ registration: reg, provider: providers[name] })
    }
    const outcome = await runtime.dispatch(request({ factRefs: ['fact_0001', 'fact_0002'] }))
    expect(outcome.hooks.map((h) => h.outcome)).toEqual(['not_applicable', 'not_applicable', 'not_applicable'])

    const [alpha] = providers.alpha.inputs
    const [beta] = providers.beta.inputs
    const [gamma] = providers.gamma.inputs
    expect(alpha!.source).toMatchObject({ goal_id: 'goal_0001', todo_id: 'todo_0001', state_revision: 'rev_0001' })
    expect(alpha!.projection.fact_refs).toEqual([])
    for (const f of SETTLEMENT) expect(beta!.source, f).not.toHaveProperty(f)
    expect(beta!.projection.fact_refs).toEqual(['fact_0001', 'fact_0002'])
    expect(gamma!.source).toMatchObject({ agent_id: 'agent_0001', turn_instance_id: 'turn_0001' })
    expect(gamma!.projection.fact_refs).toEqual(['fact_0001', 'fact_0002'])
    // What identity and applicability need is in every input.
    for (const input of [alpha!, beta!, gamma!]) {
      expect(input.source).toMatchObject({
        receipt_id: 'receipt_0001',
        effect_id: 'effect_0001',
        step_kind: 'durable_writeback',
      })
      expect(input.projection.transition).toBe('segment_completed')
    }
  })

  it('a settlement value a hook did not ask for cannot reject its input', async () => {
    const { runtime } = await fx.runtime({ capabilities: ['beta'] })
    const beta = counted(() => notApplicable())
    runtime.register({
      registration: { ...registration('beta.one'), requested_read_scope: ['bounded_event_projection'] },
      provider: beta,
    })
    // A goal id no input may carry (a path) is not projected to this hook at all.
    const outcome = await runtime.dispatch(request({ settlement: { goal_id: 'home/user/goal' } }))
    expect(outcome.hooks.map((h) => h.outcome)).toEqual(['not_applicable'])
    expect(beta.calls).toBe(1)
  })
})
