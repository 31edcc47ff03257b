// Installing from a clone, as CONTRIBUTING and the README say: the packing
// step of `npm run pack:local` (scripts/pack-local.mjs, over the binary and
// dist/ that scripts/setup.sh built) leaves the main package and this
// platform's package, with its binary, in one folder; an empty strict NodeNext
// project installs both offline in one `npm install`, type-checks the README's
// quick start with the options `tsc --init` writes (verbatimModuleSyntax
// included) and runs it with this Node.js. scripts/node-matrix.sh runs this
// file on Node.js 22 and 24 too. The publish guard refuses without its opt-in.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, sep } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(__dirname, '..')
const PLATFORM = 'linux-x64-gnu'
const BINARY = `loopx-hooks.${PLATFORM}.node`
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
let tmp: string

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' })
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`)
  return result
}

/** The README's quick start, verbatim: its first `ts` block. */
function quickStart(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('\n## Quick start'))
  const block = /\n```ts\n([^]*?)\n```/.exec(section)
  expect(block, 'the README has a quick start').not.toBeNull()
  return block![1]!
}

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'loopx-install-local-'))
})

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true })
})

describe('npm run pack:local', () => {
  it('package.json runs set-up, then the packing step', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    expect(manifest.scripts['pack:local']).toBe('bash scripts/setup.sh && node scripts/pack-local.mjs')
  })

  it(
    'leaves two tarballs that an empty strict NodeNext project installs offline; the quick start type-checks and runs',
    { timeout: 240_000 },
    () => {
      for (const built of [BINARY, 'dist/index.js', 'bindings/index.d.ts'])
        expect(existsSync(join(root, built)), `${built} is missing: run bash scripts/setup.sh`).toBe(true)

      // 1. The packing step.
      const out = join(tmp, 'pack')
      const packed = run(process.execPath, [join(root, 'scripts', 'pack-local.mjs'), '--out', out], root)
      const tarballs = readdirSync(out).sort()
      expect(tarballs).toEqual(['loopx-hooks-0.1.0.tgz', `loopx-hooks-${PLATFORM}-0.1.0.tgz`])
      const [mainTgz, platformTgz] = tarballs.map((t) => join(out, t)) as [string, string]
      expect(run('tar', ['-tzf', platformTgz], root).stdout.split('\n')).toContain(`package/${BINARY}`)
      // It prints the install line the docs give.
      expect(packed.stdout).toContain(`npm install ${mainTgz} ${platformTgz}`)

      // 2. An empty project installs both, offline, from an empty cache: the
      // main package's dependency on the platform package is met by the second
      // tarball, not by a registry.
      const app = join(tmp, 'app')
      mkdirSync(join(app, 'src'), { recursive: true })
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
      )
      run(
        'npm',
        ['install', '--offline', '--no-audit', '--no-fund', '--cache', join(tmp, 'npm-cache'), mainTgz, platformTgz],
        app,
      )
      const installed = join(app, 'node_modules', 'loopx-hooks')
      expect(existsSync(join(app, 'node_modules', `loopx-hooks-${PLATFORM}`, BINARY)), 'the binary is installed').toBe(
        true,
      )
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, any>
      expect(manifest.optionalDependencies).toEqual({ [`loopx-hooks-${PLATFORM}`]: '0.1.0' })
      // What a consumer's compiler is pointed at is declarations only.
      const typeTargets = [manifest.types, ...Object.values(manifest.exports as Record<string, any>)].flatMap((t) =>
        typeof t === 'string' ? [t] : t.types === undefined ? [] : [t.types],
      )
      for (const t of typeTargets.filter((t: string) => t.endsWith('.ts'))) expect(t).toMatch(/\.d\.ts$/)
      expect(existsSync(join(installed, 'lib')), 'lib/ is not installed').toBe(false)

      // 3. The README quick start, under the options `tsc --init` writes (TypeScript 5.9), lib checks on.
      writeFileSync(join(app, 'src', 'main.ts'), quickStart())
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            target: 'esnext',
            rootDir: 'src',
            outDir: 'dist',
            types: ['node'],
            typeRoots: [join(root, 'node_modules', '@types')],
            noUncheckedIndexedAccess: true,
            exactOptionalPropertyTypes: true,
            strict: true,
            verbatimModuleSyntax: true,
            isolatedModules: true,
            noUncheckedSideEffectImports: true,
            moduleDetection: 'force',
            skipLibCheck: false,
          },
          include: ['src'],
        }),
      )
      // One compile (a type error fails it, as under --noEmit) that also emits what node runs.
      const listed = run(process.execPath, [tsc, '-p', '.', '--pretty', 'false', '--listFiles'], app)
      const seen = listed.stdout.split('\n').filter((f) => f.includes(`${sep}node_modules${sep}loopx-hooks${sep}`))
      expect(seen.length, 'the compiler read the package').toBeGreaterThan(10)
      expect(
        seen.filter((f) => !f.endsWith('.d.ts')),
        'no TypeScript source of the package reaches the compiler',
      ).toEqual([])
      const ran = run(process.execPath, [join('dist', 'main.js')], app)
      expect(ran.stdout).toContain("[ 'periodic_report.runtime_trigger: recorded' ]")
      expect(ran.stdout.trim().split('\n').at(-1)).toBe('1')
    },
  )
})

describe('publishing from a clone', () => {
  it('npm publish stops at prepublishOnly without LOOPX_PUBLISH=1', () => {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    expect(manifest.scripts.prepublishOnly).toBe('node scripts/publish-guard.mjs')
    const env = { ...process.env }
    delete env.LOOPX_PUBLISH
    const refused = spawnSync(process.execPath, [join(root, 'scripts', 'publish-guard.mjs')], {
      cwd: root,
      env,
      encoding: 'utf8',
    })
    expect(refused.status).toBe(1)
    expect(refused.stderr).toContain('npm run pack:local')
    expect(refused.stderr).toContain('LOOPX_PUBLISH=1')
    run(process.execPath, [join(root, 'scripts', 'publish-guard.mjs')], root, { ...env, LOOPX_PUBLISH: '1' })
  })
})
