// scripts/setup.sh keeps its promise that a second run does nothing. It runs
// in a scratch copy of the project layout with a fake `npx` on PATH that
// records each call and, for tsc, writes outputs the way tsc -b does
// (dist/index.js first, declarations after it, and bindings/' declarations
// beside their sources: the order that made an old staleness check rebuild
// every time).
import { spawnSync } from 'node:child_process'
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

const root = join(__dirname, '..')
const tmp = mkdtempSync(join(tmpdir(), 'loopx-hooks-setup-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

const FAKE_NPX = `#!/usr/bin/env bash
echo "$*" >> "$CALLS"
if [ "$1" = tsc ]; then
  mkdir -p dist
  echo js > dist/index.js
  sleep 0.05
  echo dts > dist/index.d.ts
  echo dts > bindings/Doc.d.ts
  echo dts > bindings/index.d.ts
fi
`

function write(path: string, text: string, ageSeconds = 0) {
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, text)
  if (ageSeconds > 0) {
    const t = Date.now() / 1000 - ageSeconds
    utimesSync(path, t, t)
  }
}

/** Runs the copied setup.sh; the npx calls it made. */
function setup(project: string): string[] {
  const calls = join(project, 'calls.log')
  rmSync(calls, { force: true })
  const run = spawnSync('bash', [join(project, 'scripts', 'setup.sh')], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${join(project, 'fakebin')}:${process.env.PATH}`, CALLS: calls },
  })
  expect(run.status, run.stderr).toBe(0)
  return existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : []
}

describe('scripts/setup.sh', () => {
  it('runs tsc when the TypeScript layer is stale, and a second run does nothing', () => {
    const p = join(tmp, 'project')
    // Inputs, all older than the outputs that exist.
    write(join(p, 'package-lock.json'), '{}', 600)
    write(join(p, 'node_modules', '.package-lock.json'), '{}', 500)
    for (const f of ['src/lib.rs', 'Cargo.toml', 'Cargo.lock', 'build.rs']) write(join(p, f), '', 600)
    write(join(p, 'loopx-hooks.linux-x64-gnu.node'), '', 500)
    for (const f of [
      'lib/index.ts',
      'bindings/Doc.ts',
      'index.d.ts',
      'tsconfig.base.json',
      'tsconfig.build.json',
      'tsconfig.bindings.json',
    ])
      write(join(p, f), '', 600)
    for (const dir of ['src', 'lib', 'bindings'])
      utimesSync(join(p, dir), Date.now() / 1000 - 600, Date.now() / 1000 - 600)
    mkdirSync(join(p, 'scripts'))
    copyFileSync(join(root, 'scripts', 'setup.sh'), join(p, 'scripts', 'setup.sh'))
    write(join(p, 'fakebin', 'npx'), FAKE_NPX)
    chmodSync(join(p, 'fakebin', 'npx'), 0o755)

    expect(setup(p)).toEqual(['tsc -b tsconfig.build.json'])
    expect(setup(p), 'the second run is a no-op').toEqual([])
    expect(setup(p)).toEqual([])

    // An edited source makes it stale again; tsc's own outputs never do.
    write(join(p, 'lib', 'index.ts'), 'export {}')
    expect(setup(p)).toEqual(['tsc -b tsconfig.build.json'])
    expect(setup(p)).toEqual([])

    // The outputs of a source removed from lib/ go, without a rebuild; the others stay.
    write(join(p, 'dist', 'gone.js'), 'js')
    write(join(p, 'dist', 'cli', 'gone.d.ts'), 'dts')
    expect(setup(p)).toEqual([])
    expect(
      ['dist/gone.js', 'dist/cli/gone.d.ts', 'dist/index.js', 'dist/index.d.ts'].map((f) => existsSync(join(p, f))),
    ).toEqual([false, false, true, true])

    // A missing output makes it stale: the compiled layer in dist/, or bindings/' declarations.
    for (const output of ['dist/index.js', 'bindings/index.d.ts']) {
      rmSync(join(p, output))
      expect(setup(p), output).toEqual(['tsc -b tsconfig.build.json'])
      expect(setup(p)).toEqual([])
    }
  })
})
