// The loopx-shipped-v0 dialect's TypeScript surface: the validators beside
// the RFC ones (which stay the default), `validate --dialect`, serve's
// `dialect` field and the JSON Schemas, on LoopX's own documents (the
// periodic-report hook, shared with python/tests/test_shipped.py).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Ajv2020 from 'ajv/dist/2020'
import { afterAll, describe, expect, it } from 'vitest'

import {
  IntentKinds,
  LoopxHooksError,
  validateRegistration,
  validateShippedDispatchResult,
  validateShippedHookInput,
  validateShippedReceipt,
  validateShippedRegistration,
  validateShippedResult,
  validateShippedSource,
  type ShippedRegistration,
} from '../lib/index.js'
import { expectDialect } from '../lib/args.js'
import { serveCommand } from '../lib/cli/serve.js'
import type { Io } from '../lib/cli.js'

const root = join(__dirname, '..')
type Doc = Record<string, unknown>
type DocName = 'registration' | 'source' | 'hook_input' | 'hook_result' | 'sidecar_receipt' | 'dispatch_result'
const DOCS = JSON.parse(readFileSync(join(__dirname, 'support', 'shipped_documents.json'), 'utf8')) as Record<
  DocName,
  Doc
> & { event_id: string }
const registration = DOCS.registration as unknown as ShippedRegistration
const SECRET = 'ghp_0123456789abcdefABCDEF'
const clone = (d: Doc): Doc => structuredClone(d)

describe('the shipped validators', () => {
  it("accept LoopX's documents, as objects and as JSON text", () => {
    for (const [verdict, text] of [
      [validateShippedRegistration(DOCS.registration), validateShippedRegistration(JSON.stringify(DOCS.registration))],
      [
        validateShippedHookInput(DOCS.hook_input, registration),
        validateShippedHookInput(JSON.stringify(DOCS.hook_input), JSON.stringify(registration)),
      ],
      [
        validateShippedResult(DOCS.hook_result, registration, DOCS.event_id),
        validateShippedResult(JSON.stringify(DOCS.hook_result), registration, DOCS.event_id),
      ],
      [validateShippedReceipt(DOCS.sidecar_receipt), validateShippedReceipt(JSON.stringify(DOCS.sidecar_receipt))],
      [
        validateShippedDispatchResult(DOCS.dispatch_result),
        validateShippedDispatchResult(JSON.stringify(DOCS.dispatch_result)),
      ],
    ] as const) {
      expect(verdict).toMatchObject({ ok: true })
      expect(text).toMatchObject({ ok: true })
    }
  })

  it('return an accepted source as core reads it, its ids stripped', () => {
    const verdict = validateShippedSource(DOCS.source)
    if (!verdict.ok) throw new Error(JSON.stringify(verdict.violations))
    expect(verdict.value.identity.goal_id).toBe('goal-1')
    expect((DOCS.source.identity as Doc).goal_id).toBe(' goal-1\u0085')
  })

  it('report the rules with JSON Pointers and never echo a credential', () => {
    const bad = clone(DOCS.hook_result)
    ;(bad.intent as Doc).idempotency_key = ' '
    ;((bad.intent as Doc).payload as Doc)[SECRET] = 1
    const verdict = validateShippedResult(bad, registration, DOCS.event_id)
    expect(verdict).toEqual({
      ok: false,
      violations: [
        { path: '/intent/idempotency_key', rule: 'empty_value' },
        { path: '/intent/payload/~0redacted~0', rule: 'credential_like_value' },
      ],
    })
    expect(JSON.stringify(verdict)).not.toContain(SECRET)
    const mismatch = validateShippedResult(DOCS.hook_result, registration, 'pwr_000000000000000000000000')
    expect(mismatch).toEqual({
      ok: false,
      violations: [{ path: '/intent/source_receipt_id', rule: 'source_receipt_mismatch' }],
    })
  })

  it('throw ERR_LOOPX_INVALID_ARGUMENT, with the violations, for a context registration they reject', () => {
    const broken = {
      ...registration,
      budget: { ...registration.budget, max_invocations_per_dispatch: 2 },
    } as unknown as ShippedRegistration
    const thrown = (() => {
      try {
        validateShippedHookInput(DOCS.hook_input, broken)
      } catch (error) {
        return error
      }
      throw new Error('no throw')
    })()
    expect(thrown).toBeInstanceOf(LoopxHooksError)
    expect(thrown).toMatchObject({
      code: 'ERR_LOOPX_INVALID_ARGUMENT',
      violations: [{ path: '/budget/max_invocations_per_dispatch', rule: 'out_of_range' }],
    })
    expect(() => validateShippedResult(DOCS.hook_result, registration, 7 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'ERR_LOOPX_INVALID_ARGUMENT' }),
    )
  })

  it('leave the RFC dialect the default: the same registration is refused there', () => {
    const rfc = validateRegistration(DOCS.registration, new IntentKinds([]))
    expect(rfc.ok).toBe(false)
    if (!rfc.ok) expect(rfc.violations).toContainEqual({ path: '/capability_id', rule: 'bad_token' })
  })

  it('name the dialects, and an unknown one is ERR_LOOPX_UNKNOWN_DIALECT without its value', () => {
    expect(expectDialect('x', 'loopx-shipped-v0')).toBe('loopx-shipped-v0')
    expect(expectDialect('x', 'contract-v0')).toBe('contract-v0')
    for (const bad of ['loopx-shipped-v1', SECRET, 1, undefined]) {
      expect(() => expectDialect('open', bad)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_UNKNOWN_DIALECT' }))
    }
    try {
      expectDialect('open', SECRET)
    } catch (error) {
      expect((error as Error).message).not.toContain(SECRET)
    }
  })
})

describe('validate --dialect loopx-shipped-v0', () => {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-shipped-cli-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string, doc: unknown) => {
    const path = join(dir, `${name}.json`)
    writeFileSync(path, JSON.stringify(doc))
    return path
  }
  const cli = (args: string[]) => {
    const r = spawnSync(process.execPath, [join(root, 'bin', 'loopx-hooks.js'), ...args], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '' },
      timeout: 20_000,
    })
    return { status: r.status, stdout: r.stdout, stderr: r.stderr }
  }
  const reg = file('registration', DOCS.registration)

  it('judges each shipped contract, its context given by flags', () => {
    const shipped = ['--dialect', 'loopx-shipped-v0', '--json']
    expect(cli(['validate', 'registration', reg, ...shipped])).toMatchObject({ status: 0, stdout: '{"ok":true}\n' })
    expect(cli(['validate', 'source', file('source', DOCS.source), ...shipped]).status).toBe(0)
    expect(
      cli(['validate', 'hook-input', file('input', DOCS.hook_input), '--registration', reg, ...shipped]).status,
    ).toBe(0)
    const result = file('result', DOCS.hook_result)
    expect(
      cli(['validate', 'hook-result', result, '--registration', reg, '--event-id', DOCS.event_id, ...shipped]).status,
    ).toBe(0)
    expect(cli(['validate', 'sidecar-receipt', file('receipt', DOCS.sidecar_receipt), ...shipped]).status).toBe(0)
    expect(cli(['validate', 'dispatch-result', file('dispatch', DOCS.dispatch_result), ...shipped]).status).toBe(0)
    const wrong = cli(['validate', 'hook-result', result, '--registration', reg, '--event-id', 'pwr_x', ...shipped])
    expect(wrong).toMatchObject({ status: 1 })
    expect(JSON.parse(wrong.stdout)).toEqual({
      ok: false,
      violations: [{ path: '/intent/source_receipt_id', rule: 'source_receipt_mismatch' }],
    })
    expect(cli(['validate', 'hook-result', result, '--registration', reg, ...shipped]).stderr).toContain(
      'needs --event-id',
    )
  })

  it('keeps the RFC dialect the default, and refuses an unknown dialect with its code', () => {
    expect(cli(['validate', 'registration', reg, '--json']).stderr).toContain('needs --kinds')
    expect(cli(['validate', 'source', reg]).stderr).toContain("unknown contract 'source'")
    const unknown = cli(['validate', 'registration', reg, '--dialect', 'loopx-shipped-v9'])
    expect(unknown.status).toBe(2)
    expect(unknown.stderr).toContain('ERR_LOOPX_UNKNOWN_DIALECT')
  })
})

describe("serve's validate op with a dialect", () => {
  async function serve(requests: Doc[]): Promise<Doc[]> {
    let out = ''
    const io: Io = {
      stdout: { write: (s: string) => ((out += s), true) },
      stderr: { write: () => true },
      stdin: (async function* () {
        yield requests.map((r) => JSON.stringify(r)).join('\n') + '\n'
      })(),
      env: {},
    }
    await serveCommand(io, '0.0.0-test')
    return out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Doc)
  }

  it('answers with the shipped validators, and an unknown dialect with its code', async () => {
    const text = (d: Doc) => JSON.stringify(d)
    const answers = await serve([
      {
        id: 1,
        op: 'validate',
        dialect: 'loopx-shipped-v0',
        contract: 'registration',
        document: text(DOCS.registration),
      },
      {
        id: 2,
        op: 'validate',
        dialect: 'loopx-shipped-v0',
        contract: 'hook-result',
        document: text(DOCS.hook_result),
        registration: text(DOCS.registration),
        event_id: DOCS.event_id,
      },
      { id: 3, op: 'validate', dialect: 'contract-v9', contract: 'registration', document: text(DOCS.registration) },
      {
        id: 4,
        op: 'validate',
        dialect: 'loopx-shipped-v0',
        contract: 'hook-result',
        document: '{}',
        registration: '{}',
      },
      { id: 5, op: 'hello' },
    ])
    expect(answers[0]).toEqual({ id: 1, result: { ok: true } })
    expect(answers[1]).toEqual({ id: 2, result: { ok: true } })
    expect((answers[2]!.error as Doc).code).toBe('ERR_LOOPX_UNKNOWN_DIALECT')
    expect((answers[3]!.error as Doc).code).toBe('ERR_LOOPX_SERVE_BAD_REQUEST')
    expect(((answers[4]!.result as Doc).dialects as Doc)['loopx-shipped-v0']).toContain('sidecar-receipt')
  })
})

describe('schemas/shipped', () => {
  const dir = join(root, 'schemas', 'shipped')
  const ajv = new Ajv2020({ strict: true, allErrors: true })
  const schemas = Object.fromEntries(
    readdirSync(dir).map((f) => [
      f.slice(0, -'.schema.json'.length),
      JSON.parse(readFileSync(join(dir, f), 'utf8')) as Doc,
    ]),
  )
  const check = (name: string, doc: unknown) => ajv.compile(schemas[name]!)(doc)

  it("compile in strict mode and accept LoopX's documents", () => {
    // Seven post-writeback documents and four turn-start ones.
    expect(Object.keys(schemas).length).toBe(11)
    expect(check('loopx_post_writeback_capability_hook_registration_v0', DOCS.registration)).toBe(true)
    expect(check('loopx_post_writeback_capability_hook_input_v0', DOCS.hook_input)).toBe(true)
    expect(check('loopx_post_writeback_capability_hook_result_v0', DOCS.hook_result)).toBe(true)
    expect(check('loopx_capability_intent_v0', DOCS.hook_result.intent)).toBe(true)
    expect(check('loopx_post_writeback_capability_hook_receipt_v0', DOCS.sidecar_receipt)).toBe(true)
    expect(check('loopx_post_writeback_capability_hook_dispatch_v0', DOCS.dispatch_result)).toBe(true)
    const source = validateShippedSource(DOCS.source)
    expect(source.ok && check('loopx_post_writeback_hook_source_v0', source.value)).toBe(true)
  })

  it('carry the shipped bounds', () => {
    const reg = clone(DOCS.registration)
    ;(reg.budget as Doc).max_input_bytes = 262_145
    expect(check('loopx_post_writeback_capability_hook_registration_v0', reg)).toBe(false)
    expect(
      check('loopx_post_writeback_capability_hook_registration_v0', {
        ...DOCS.registration,
        requested_write_scope: ['x_y_z'],
      }),
    ).toBe(false)
    expect(
      check('loopx_post_writeback_capability_hook_receipt_v0', { ...DOCS.sidecar_receipt, attempt_count: 10_001 }),
    ).toBe(false)
  })
})
