// The turn-start invocation cases of LoopX's capability_hooks.test.ts, as
// LoopX states them: validateShippedTurnStartInvocation, like LoopX's
// validateTurnStartHookInvocation, answers the admitted result itself (its
// `value` is the document's `result`), and the test reads its fields.
import { describe, expect, it } from 'vitest'

import { validateShippedTurnStartInvocation, type ValidationResult } from '../lib/index.js'
import { turnStartRegistration, turnStartResult } from './support/loopx_turn_start.js'

function admitted<T>(verdict: ValidationResult<T>): T {
  if (!verdict.ok) throw new Error(`refused: ${JSON.stringify(verdict.violations)}`)
  return verdict.value
}

const invocation = (registration: unknown, result: unknown) =>
  validateShippedTurnStartInvocation({ registration, result })

describe("LoopX's capability-hook cases where this package disagrees", () => {
  it('follows "turn-start observations require Agent reading without returning private content"', () => {
    const observed = admitted(invocation(turnStartRegistration(), turnStartResult()))
    expect(observed.status).toBe('observed')
    expect(observed.agent_read_required).toBe(true)
    expect(observed.observation_count).toBe(2)

    expect(invocation(turnStartRegistration(), turnStartResult({ agent_read_required: false }))).toEqual({
      ok: false,
      violations: [{ path: '/result/agent_read_required', rule: 'not_allowed_value' }],
    })
    expect(invocation(turnStartRegistration(), turnStartResult({ private_content_returned: true }))).toEqual({
      ok: false,
      violations: [{ path: '/result/private_content_returned', rule: 'not_allowed_value' }],
    })
    expect(invocation(turnStartRegistration({ required_read: null }), turnStartResult())).toEqual({
      ok: false,
      violations: [{ path: '/result/agent_read_required', rule: 'not_allowed_value' }],
    })
    const leaky = turnStartRegistration({
      required_read: {
        kind: 'operator_inbox',
        command: 'loopx inbox drain --goal-id fixture',
        reason: 'read newly synchronized operator evidence',
        ordering: 'before_work',
        private_message_text: 'must-not-enter-the-contract',
      },
    })
    expect(invocation(leaky, turnStartResult())).toEqual({
      ok: false,
      violations: [{ path: '/registration/required_read/private_message_text', rule: 'unknown_field' }],
    })
  })

  it('follows "turn-start empty, provider failure, and owner-private write scopes stay distinct"', () => {
    const empty = admitted(
      invocation(
        turnStartRegistration(),
        turnStartResult({
          status: 'empty',
          observation_count: 0,
          agent_read_required: false,
          local_private_state_mutated: true,
        }),
      ),
    )
    expect(empty.status).toBe('empty')

    const failed = admitted(
      invocation(
        turnStartRegistration(),
        turnStartResult({
          status: 'failed',
          observation_count: 0,
          agent_read_required: false,
          local_private_state_mutated: false,
          error_code: 'provider_contract_error',
        }),
      ),
    )
    expect(failed.error_code).toBe('provider_contract_error')

    expect(
      invocation(turnStartRegistration({ requested_write_scope: ['repository_write'] }), turnStartResult()),
    ).toEqual({ ok: false, violations: [{ path: '/registration/requested_write_scope/0', rule: 'not_allowed_value' }] })
    expect(invocation(turnStartRegistration(), turnStartResult({ external_writes_performed: true }))).toEqual({
      ok: false,
      violations: [{ path: '/result/external_writes_performed', rule: 'authority_claimed' }],
    })

    const reacted = admitted(
      invocation(
        turnStartRegistration({
          requested_write_scope: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
        }),
        turnStartResult({ external_writes_performed: true }),
      ),
    )
    expect(reacted.external_writes_performed).toBe(true)
  })
})
