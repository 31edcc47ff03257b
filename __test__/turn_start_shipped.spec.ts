// The shipped dialect's turn-start through the JS API: a LoopX-shaped
// lark-inbox registration v1 whose required read is an absolute-path command,
// results of every status, failures isolated with their codes, required reads
// deduplicated by command, and the validators.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Ajv2020 from 'ajv/dist/2020'
import { describe, expect, it } from 'vitest'

import {
  LoopxHooksError,
  ShippedTurnStart,
  validateShippedTurnStartDispatch,
  validateShippedTurnStartInvocation,
  validateShippedTurnStartRegistration,
  type ShippedTurnStartRegistrationV1,
  type ShippedTurnStartResult,
  type ShippedTurnStartStatus,
} from '../lib/index.js'

/** The JSON Schema codegen wrote for one shipped turn-start document. */
function schemaCheck(name: string) {
  const file = join(__dirname, '..', 'schemas', 'shipped', `${name}.schema.json`)
  return new Ajv2020({ strict: true, allErrors: true }).compile(JSON.parse(readFileSync(file, 'utf8')))
}

const COMMAND = 'loopx --registry /abs/registry.json lark-inbox drain --goal-id G'

function larkInbox(hookId = 'lark_inbox.turn_start', command = COMMAND): ShippedTurnStartRegistrationV1 {
  return {
    schema_version: 'loopx_turn_start_capability_hook_registration_v1',
    hook_id: hookId,
    capability_id: 'lark-inbox',
    phase: 'turn_start',
    budget: { max_invocations_per_dispatch: 1, max_result_bytes: 16384 },
    failure_policy: 'isolate',
    requested_read_scope: ['lark_inbox.messages'],
    requested_write_scope: ['owner_private_inbox', 'owner_private_cursor', 'provider_message_reaction'],
    required_read: {
      kind: 'lark_inbox_drain',
      command: `  ${command}\n`,
      reason: 'Fresh Lark messages arrived before this turn.',
      ordering: 'before_work',
    },
  }
}

const SHAPES: Record<ShippedTurnStartStatus, [number, boolean, string | null]> = {
  not_applicable: [0, false, null],
  observed: [3, true, null],
  empty: [0, false, null],
  partial: [1, true, 'provider_unavailable'],
  unavailable: [0, false, 'provider_unavailable'],
  failed: [0, false, 'provider_contract_error'],
}

function result(hookId: string, status: ShippedTurnStartStatus): ShippedTurnStartResult {
  const [count, read, code] = SHAPES[status]
  const active = status !== 'not_applicable'
  return {
    schema_version: 'loopx_turn_start_capability_hook_result_v0',
    hook_id: hookId,
    capability_id: 'lark-inbox',
    phase: 'turn_start',
    status,
    observation_count: count,
    agent_read_required: read,
    external_reads_performed: active,
    external_writes_performed: status === 'observed',
    local_private_state_mutated: active && status !== 'empty',
    private_content_returned: false,
    provider_payload_returned: false,
    error_code: code,
  }
}

describe('ShippedTurnStart', () => {
  it.each(Object.keys(SHAPES) as ShippedTurnStartStatus[])(
    'a %s result is kept, its read projected when required',
    async (status) => {
      const turnStart = new ShippedTurnStart()
      let seen: unknown
      turnStart.register({
        registration: larkInbox(),
        provider: (registration) => {
          seen = registration
          return result('lark_inbox.turn_start', status)
        },
      })
      const dispatch = (await turnStart.dispatch()).document
      expect(validateShippedTurnStartDispatch(dispatch).ok).toBe(true)
      expect(schemaCheck('loopx_turn_start_capability_hook_dispatch_v1')(dispatch)).toBe(true)
      expect(dispatch).toMatchObject({
        schema_version: 'loopx_turn_start_capability_hook_dispatch_v1',
        phase: 'turn_start',
        registered_count: 1,
        invoked_count: 1,
        failures: [],
      })
      expect(dispatch.results).toEqual([result('lark_inbox.turn_start', status)])
      expect(Object.isFrozen(seen)).toBe(true)
      expect((seen as ShippedTurnStartRegistrationV1).required_read?.command).toBe(COMMAND)
      const reads = SHAPES[status][1]
        ? [
            {
              kind: 'lark_inbox_drain',
              command: COMMAND,
              reason: 'Fresh Lark messages arrived before this turn.',
              ordering: 'before_work',
              source: 'turn_start_capability_hook',
              hook_id: 'lark_inbox.turn_start',
              capability_id: 'lark-inbox',
            },
          ]
        : []
      expect(dispatch.required_reads).toEqual(reads)
    },
  )

  it('runs hooks in hook_id order, isolates each failure with its code and dedupes reads by command', async () => {
    const turnStart = new ShippedTurnStart()
    const calls: string[] = []
    const provide = (hookId: string, answer: () => unknown) => ({
      registration: larkInbox(hookId),
      provider: () => {
        calls.push(hookId)
        return answer() as ShippedTurnStartResult
      },
    })
    turnStart.register(provide('lark_inbox.zz_second_read', () => result('lark_inbox.zz_second_read', 'observed')))
    turnStart.register(provide('lark_inbox.aa_first_read', () => result('lark_inbox.aa_first_read', 'observed')))
    turnStart.register(
      provide('lark_inbox.bb_throws', () => {
        throw new Error('private provider detail /home/secret')
      }),
    )
    turnStart.register(
      provide('lark_inbox.cc_lies', () => ({ ...result('lark_inbox.cc_lies', 'empty'), observation_count: 2 })),
    )
    turnStart.register(provide('lark_inbox.aa_first_read', () => result('lark_inbox.aa_first_read', 'observed')))
    const bad = larkInbox('lark_inbox.dd_bad')
    bad.budget.max_result_bytes = 10
    turnStart.register({ registration: bad, provider: () => result('lark_inbox.dd_bad', 'observed') })

    const dispatch = (await turnStart.dispatch()).document
    expect(calls).toEqual([
      'lark_inbox.aa_first_read',
      'lark_inbox.bb_throws',
      'lark_inbox.cc_lies',
      'lark_inbox.zz_second_read',
    ])
    expect(dispatch.results.map((r) => r.hook_id)).toEqual(['lark_inbox.aa_first_read', 'lark_inbox.zz_second_read'])
    expect(dispatch.failures).toEqual([
      { hook_id: 'lark_inbox.aa_first_read', capability_id: 'lark-inbox', error_code: 'duplicate_hook_id' },
      { hook_id: 'lark_inbox.bb_throws', capability_id: 'lark-inbox', error_code: 'producer_failed' },
      { hook_id: 'lark_inbox.cc_lies', capability_id: 'lark-inbox', error_code: 'contract_rejected' },
      { hook_id: 'lark_inbox.dd_bad', capability_id: 'lark-inbox', error_code: 'registration_rejected' },
    ])
    expect(dispatch.required_reads.map((r) => [r.hook_id, r.command])).toEqual([['lark_inbox.aa_first_read', COMMAND]])
    expect([dispatch.registered_count, dispatch.invoked_count]).toEqual([6, 2])
    expect(JSON.stringify(dispatch)).not.toMatch(/secret|private provider/)
  })

  it('refuses a dispatch from inside a provider and a hook without a provider', async () => {
    const turnStart = new ShippedTurnStart()
    let inner: unknown
    turnStart.register({
      registration: larkInbox(),
      provider: async () => {
        inner = await turnStart.dispatch().catch((e: unknown) => e)
        return result('lark_inbox.turn_start', 'empty')
      },
    })
    await turnStart.dispatch()
    expect((inner as LoopxHooksError).code).toBe('ERR_LOOPX_REENTRANT_DISPATCH')
    expect(() => turnStart.register({ registration: larkInbox() } as never)).toThrow(LoopxHooksError)
  })
})

describe('shipped turn-start validators', () => {
  it('admit the LoopX registration and refuse with pointers and rule codes', () => {
    expect(validateShippedTurnStartRegistration(larkInbox()).ok).toBe(true)
    expect(schemaCheck('loopx_turn_start_capability_hook_registration_v1')(larkInbox())).toBe(true)
    const long = larkInbox('lark_inbox.turn_start', `loopx ${'/abs'.repeat(400)}`)
    expect(validateShippedTurnStartRegistration(long)).toEqual({
      ok: false,
      violations: [{ path: '/required_read/command', rule: 'too_long' }],
    })
  })

  it('hold a result against its registration', () => {
    const verdict = validateShippedTurnStartInvocation({
      registration: larkInbox(),
      result: { ...result('lark_inbox.turn_start', 'observed'), agent_read_required: false },
    })
    expect(verdict).toEqual({
      ok: false,
      violations: [{ path: '/result/agent_read_required', rule: 'not_allowed_value' }],
    })
  })
})

describe('validate --dialect loopx-shipped-v0, turn-start documents', () => {
  it('judges a shipped turn-start registration and invocation from the CLI', () => {
    const dir = mkdtempSync(join(tmpdir(), 'loopx-ts-shipped-cli-'))
    try {
      const file = (name: string, doc: unknown) => {
        const path = join(dir, `${name}.json`)
        writeFileSync(path, JSON.stringify(doc))
        return path
      }
      const cli = (args: string[]) =>
        spawnSync(process.execPath, [join(__dirname, '..', 'bin', 'loopx-hooks.js'), ...args], {
          encoding: 'utf8',
          timeout: 20_000,
        })
      const shipped = ['--dialect', 'loopx-shipped-v0', '--json']
      expect(cli(['validate', 'turn-start-registration', file('reg', larkInbox()), ...shipped]).status).toBe(0)
      const bad = {
        registration: larkInbox(),
        result: { ...result('lark_inbox.turn_start', 'observed'), agent_read_required: false },
      }
      const r = cli(['validate', 'turn-start-invocation', file('inv', bad), ...shipped])
      expect(r.status).toBe(1)
      expect(JSON.parse(r.stdout)).toEqual({
        ok: false,
        violations: [{ path: '/result/agent_read_required', rule: 'not_allowed_value' }],
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
