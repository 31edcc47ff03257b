// Drift check: the committed generated files are exactly what the generators
// write today. bindings/, schemas/, examples/ and lib/generated/ come from `src/bin/codegen.rs`;
// index.js and index.d.ts from `napi build`, index.js then patched by
// scripts/loader.mjs (the loader's missing-binary error). Fix a failure with
// `npm run codegen` (and `npm run build:debug` for the napi outputs).
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

const root = join(__dirname, '..')
const tmp = mkdtempSync(join(tmpdir(), 'loopx-hooks-generated-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

/** The generated kinds of file in each directory (tsc's `.js` emit beside bindings is not ours). */
const GENERATED: Record<string, (file: string) => boolean> = {
  bindings: (f) => f.endsWith('.ts') && !f.endsWith('.d.ts'),
  schemas: (f) => f.endsWith('.schema.json'),
  examples: (f) => f.endsWith('.json'),
  'lib/generated': (f) => f.endsWith('.ts') && !f.endsWith('.d.ts'),
}
const GENERATED_DIRS = Object.keys(GENERATED)

/** Files under `dir` that `keep` selects, as sorted `/`-separated paths relative to it. */
function files(dir: string, keep: (file: string) => boolean = () => true): string[] {
  if (!existsSync(dir)) return []
  const out: string[] = []
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name)
      if (statSync(p).isDirectory()) walk(p)
      else out.push(relative(dir, p).split('\\').join('/'))
    }
  }
  walk(dir)
  return out.filter(keep).sort()
}

/** Every difference between `committed` and `fresh` (missing, extra or different files), over `only` or all their files. */
function drift(label: string, committed: string, fresh: string, only?: string[]): string[] {
  const keep = GENERATED[label]
  const names = only ?? [...new Set([...files(committed, keep), ...files(fresh, keep)])].sort()
  const problems: string[] = []
  for (const f of names) {
    const [c, g] = [join(committed, f), join(fresh, f)]
    if (!existsSync(g))
      problems.push(
        `${label}/${f}: ${existsSync(c) ? 'committed but not generated' : 'neither committed nor generated'}`,
      )
    else if (!existsSync(c)) problems.push(`${label}/${f}: generated but not committed`)
    else if (!readFileSync(c).equals(readFileSync(g))) problems.push(`${label}/${f}: differs from the generated file`)
  }
  return problems
}

function run(cmd: string, args: string[]) {
  try {
    execFileSync(cmd, args, { cwd: root, stdio: 'pipe', encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  } catch (e: any) {
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${e.stderr ?? e.message}`, { cause: e })
  }
}

describe('generated files are up to date', () => {
  it('bindings/, schemas/, examples/ and lib/generated/ match `cargo run --bin codegen`', () => {
    const out = join(tmp, 'codegen')
    run('cargo', ['run', '--quiet', '--bin', 'codegen', '--', out])
    for (const dir of GENERATED_DIRS) expect(files(join(out, dir)).length, `${dir}/ generated`).toBeGreaterThan(0)
    const problems = GENERATED_DIRS.flatMap((dir) => drift(dir, join(root, dir), join(out, dir)))
    expect(problems).toEqual([])
  }, 120_000)

  it('index.js and index.d.ts match `napi build`', () => {
    const out = join(tmp, 'napi')
    run('npx', ['napi', 'build', '--platform', '--output-dir', out])
    run(process.execPath, [join(root, 'scripts', 'loader.mjs'), join(out, 'index.js')])
    expect(drift('.', root, out, ['index.js', 'index.d.ts'])).toEqual([])
  }, 120_000)
})
