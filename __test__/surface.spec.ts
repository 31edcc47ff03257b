// The public surface: the root export is the API a user needs (no napi
// classes), every export of every subpath is named in the README or a page of
// docs/, `defineHook`
// fills capability_id and intent_kinds from its kinds, and the package's
// `exports` make examples/* and schemas/* importable.
import { createRequire } from 'node:module'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import * as root from '../lib/index.js'
import * as orchestrator from '../lib/orchestrator/index.js'
import * as periodicReport from '../lib/capabilities/periodic_report/index.js'
import * as otel from '../lib/otel.js'
import { pages } from './support/doc_pages.js'
import {
  defineHook,
  defineIntentKind,
  HookRuntime,
  LoopxHooksError,
  notApplicable,
  type PostWritebackHookRegistration,
} from '../lib/index.js'

const repo = join(__dirname, '..')
const tmp = mkdtempSync(join(tmpdir(), 'loopx-hooks-surface-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

const kind = defineIntentKind({
  intent_kind: 'periodic_report.trigger_evaluation',
  capability_id: 'periodic_report',
  operations: ['evaluate_runtime_trigger'],
  payload_schema: { type: 'object', properties: {}, required: [], additionalProperties: false },
})
const base = {
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: 'periodic_report.runtime_trigger',
  phase: 'post_writeback',
  event_kinds: ['todo_completed'],
  requested_read_scope: ['settlement_identity'],
  budget: { max_invocations_per_dispatch: 1, max_intents_per_dispatch: 1, max_result_bytes: 16384, timeout_ms: 1000 },
  failure_policy: 'isolate',
} as const satisfies Partial<PostWritebackHookRegistration>

describe('the root export', () => {
  it('hides the napi classes and the loader marker', () => {
    const hidden = Object.keys(root).filter((k) => /^(Native|openNative|__napi)/.test(k))
    expect(hidden).toEqual([])
    // ...which the addon does have (so the check is not vacuous).
    const addon = createRequire(__filename)('../index.js') as Record<string, unknown>
    expect(Object.keys(addon).filter((k) => /^(Native|openNative|__napi)/.test(k)).length).toBeGreaterThan(5)
  })

  it('every export of every subpath is named in the README or docs/', () => {
    const readme = pages()
      .filter((page) => page !== 'CONTRIBUTING.md')
      .map((page) => readFileSync(join(repo, page), 'utf8'))
      .join('\n')
    const missing = Object.entries({ root, orchestrator, periodicReport, otel }).flatMap(([where, mod]) =>
      Object.keys(mod)
        .filter((name) => name !== 'default') // the CommonJS interop's module object
        .filter((name) => !new RegExp('`(new )?' + name + '[`(.]').test(readme))
        .map((name) => `${where}: ${name}`),
    )
    expect(missing).toEqual([])
  })
})

describe('defineHook', () => {
  it('takes capability_id and intent_kinds from its kinds, and the runtime accepts the result', async () => {
    const hook = defineHook({ kinds: [kind], registration: base, provider: () => notApplicable() })
    expect(hook.registration.capability_id).toBe('periodic_report')
    expect(hook.registration.intent_kinds).toEqual(['periodic_report.trigger_evaluation'])
    const runtime = await HookRuntime.open({ journal: join(tmp, 'a.sqlite') })
    try {
      runtime.defineIntentKind(kind)
      runtime.register(hook)
    } finally {
      await runtime.close()
    }
  })

  it('accepts a registration typed as PostWritebackHookRegistration naming exactly its kinds', () => {
    const full: PostWritebackHookRegistration = {
      ...base,
      event_kinds: [...base.event_kinds],
      requested_read_scope: [...base.requested_read_scope],
      capability_id: 'periodic_report',
      intent_kinds: ['periodic_report.trigger_evaluation'],
    }
    expect(defineHook({ kinds: [kind], registration: full, provider: () => notApplicable() }).registration).toEqual(
      full,
    )
  })

  it('throws ERR_LOOPX_INVALID_ARGUMENT when the registration names other kinds than it was given', () => {
    const other: PostWritebackHookRegistration = {
      ...base,
      event_kinds: [...base.event_kinds],
      requested_read_scope: [...base.requested_read_scope],
      capability_id: 'periodic_report',
      intent_kinds: ['periodic_report.digest'],
    }
    let thrown: unknown
    try {
      defineHook({ kinds: [kind], registration: other, provider: () => notApplicable() })
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(LoopxHooksError)
    expect((thrown as LoopxHooksError).code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
  })
})

describe('package.json exports', () => {
  // A package can import itself by name through its own `exports`.
  const req = createRequire(join(repo, 'package.json'))

  it('examples/* and schemas/* resolve and hold the shipped files', () => {
    const registration = req('loopx-hooks/examples/registration.json') as { schema_version: string }
    expect(registration.schema_version).toBe('loopx_post_writeback_capability_hook_registration_v0')
    const schemaPath = req.resolve(
      'loopx-hooks/schemas/loopx_post_writeback_capability_hook_registration_v0.schema.json',
    )
    expect(schemaPath).toBe(join(repo, 'schemas', 'loopx_post_writeback_capability_hook_registration_v0.schema.json'))
  })

  it('every exports entry resolves to a file', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }
    for (const key of Object.keys(pkg.exports)) {
      const sample = key.replace(
        '*',
        key.startsWith('./examples')
          ? 'intent_kind.json'
          : 'loopx_post_writeback_capability_hook_registration_v0.schema.json',
      )
      expect(() => req.resolve(`loopx-hooks${sample.slice(1)}`), key).not.toThrow()
    }
  })
})
