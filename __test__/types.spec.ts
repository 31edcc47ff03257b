// The TypeScript layer's promises, checked by the compiler: the fixtures in
// __test__/types/ compile (correct providers and payloads do), and each
// `// @ts-expect-error` in them marks a line that really is an error (a
// provider returning another kind's intent, a wrong, missing or extra payload
// field, an enum value outside its enum, an unnarrowed verdict). The negative
// control proves the latter: with the directives blanked out, tsc fails on
// exactly the lines they guarded, and nowhere else.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { HookRuntime, validateRegistration, IntentKinds, type WritebackReceipt } from '../lib/index.js'
import { installRuntimeTrigger, runtimeTrigger, triggerEvaluation } from '../examples/typed/provider.js'

const root = join(__dirname, '..')
const fixtureDir = join(__dirname, 'types')
const tscBin = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const tmp = mkdtempSync(join(tmpdir(), 'loopx-hooks-types-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

function tsc(project: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [tscBin, '--noEmit', '--pretty', 'false', '-p', project], {
    cwd: root,
    encoding: 'utf8',
    timeout: 110_000,
  })
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}

const DIRECTIVE = /^\s*\/\/ @ts-expect-error\b/

describe('type-level contract', () => {
  it('the fixtures type-check (tsc exit 0)', { timeout: 120_000 }, () => {
    const { status, output } = tsc(join(fixtureDir, 'tsconfig.json'))
    expect(output).toBe('')
    expect(status).toBe(0)
  })

  it('negative control: without its @ts-expect-error, each guarded line fails tsc', { timeout: 120_000 }, () => {
    const fixtures = readdirSync(fixtureDir).filter((f) => f.endsWith('.ts'))
    const libEntry = JSON.stringify(join(root, 'lib', 'index.js'))
    /** file -> 1-based lines that must now be errors */
    const expected = new Map<string, number[]>()
    for (const file of fixtures) {
      const lines = readFileSync(join(fixtureDir, file), 'utf8').split('\n')
      const guarded: number[] = []
      const neutral = lines.map((line, i) => {
        if (!DIRECTIVE.test(line)) return line
        guarded.push(i + 2) // the line after the directive, 1-based
        return '//' // same line count, so positions stay put
      })
      const text = neutral.join('\n').replaceAll("'../../lib/index.js'", libEntry)
      writeFileSync(join(tmp, file), text)
      if (guarded.length > 0) expected.set(file, guarded)
    }
    // At least the cases the brief names: kind B from a kind-A provider, wrong
    // type, missing field, extra field, enum value, and the narrowing checks.
    const total = [...expected.values()].reduce((n, l) => n + l.length, 0)
    expect(total).toBeGreaterThanOrEqual(15)
    writeFileSync(
      join(tmp, 'tsconfig.json'),
      JSON.stringify({
        extends: join(root, 'tsconfig.base.json'),
        compilerOptions: { noEmit: true, types: ['node'], typeRoots: [join(root, 'node_modules', '@types')] },
        include: ['*.ts'],
      }),
    )

    const { status, output } = tsc(join(tmp, 'tsconfig.json'))
    expect(status).not.toBe(0)
    const found = new Map<string, Set<number>>()
    for (const m of output.matchAll(/^(.+?\.ts)\((\d+),\d+\): error TS\d+/gm)) {
      const file = basename(m[1]!)
      if (!found.has(file)) found.set(file, new Set())
      found.get(file)!.add(Number(m[2]))
    }
    // Every guarded line is an error, and nothing else is.
    for (const [file, lines] of expected) {
      expect(
        [...(found.get(file) ?? [])].sort((a, b) => a - b),
        `${file}\n${output}`,
      ).toEqual(lines)
    }
    for (const file of found.keys()) expect(expected.has(file), `unexpected errors in ${file}:\n${output}`).toBe(true)
  })

  it('a single removed directive is enough to fail tsc (the plain control)', { timeout: 120_000 }, () => {
    const file = 'payloads.ts'
    const lines = readFileSync(join(fixtureDir, file), 'utf8').split('\n')
    const at = lines.findIndex((l) => l.includes("@ts-expect-error 'hourly' is not one of daily, weekly"))
    expect(at).toBeGreaterThan(0)
    const dir = mkdtempSync(join(tmp, 'single-'))
    for (const f of readdirSync(fixtureDir).filter((f) => f.endsWith('.ts'))) {
      const source =
        f === file ? lines.filter((_, i) => i !== at).join('\n') : readFileSync(join(fixtureDir, f), 'utf8')
      writeFileSync(
        join(dir, f),
        source.replaceAll("'../../lib/index.js'", JSON.stringify(join(root, 'lib', 'index.js'))),
      )
    }
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: join(root, 'tsconfig.base.json'),
        compilerOptions: { noEmit: true, types: ['node'], typeRoots: [join(root, 'node_modules', '@types')] },
        include: ['*.ts'],
      }),
    )
    const { status, output } = tsc(join(dir, 'tsconfig.json'))
    expect(status).not.toBe(0)
    expect(output).toMatch(
      new RegExp(`payloads\\.ts\\(${at + 1},\\d+\\): error TS2322: Type '"hourly"' is not assignable`),
    )
  })
})

describe('examples/typed/provider.ts at run time', () => {
  it('its registration is valid and its provider records an intent on dispatch', async () => {
    // `new IntentKinds([triggerEvaluation])` does not compile today (a typed
    // kind has readonly arrays; the constructor wants IntentKindDefinition, see
    // the report), so the kind goes in as JSON text, which it also accepts.
    expect(
      validateRegistration(runtimeTrigger.registration, new IntentKinds([JSON.stringify(triggerEvaluation)])),
    ).toMatchObject({ ok: true })
    const runtime = await HookRuntime.open({ journal: join(tmp, 'example.sqlite'), profile: { enabled: true } })
    try {
      installRuntimeTrigger(runtime)
      const settlement = {
        goal_id: 'goal_1',
        agent_id: 'agent_1',
        todo_id: 'todo_1',
        turn_instance_id: 'turn_1',
        effect_id: 'effect_1',
      }
      const receipt: WritebackReceipt = {
        receipt_id: 'receipt_1',
        effect_id: 'effect_1',
        step_kind: 'durable_writeback',
        status: 'committed',
        checkpointed: true,
        state_revision: 'rev_1',
        committed_at: '2026-08-26T00:00:00Z',
      }
      const done = await runtime.dispatch({
        settlement,
        receipt,
        event: { event_kind: 'todo_completed', fact_refs: ['fact_1'] },
      })
      expect(done.admitted).toBe(true)
      expect(done.hooks.map((h) => [h.hookId, h.outcome])).toEqual([['periodic_report.runtime_trigger', 'recorded']])
      expect(done.hooks[0]?.receipt?.status).toBe('proposed')
      const intents = await runtime.journal.listIntents({ dispatchId: done.hooks[0]!.dispatchId })
      expect(JSON.stringify(intents)).toContain('periodic_report.trigger_evaluation')
      // No facts: the provider answers not_applicable.
      const none = await runtime.dispatch({
        settlement: { ...settlement, effect_id: 'effect_2' },
        receipt: { ...receipt, receipt_id: 'receipt_2', effect_id: 'effect_2' },
        event: { event_kind: 'todo_completed', fact_refs: [] },
      })
      expect(none.hooks[0]?.receipt?.status).toBe('not_applicable')
    } finally {
      await runtime.close()
    }
  })
})
