// The published packages, as a consumer gets them. `npm pack` gives the main
// tarball (JavaScript, declarations, examples, schemas; no binary). A staged
// release copy then goes through napi's own steps for the targets built here:
// `napi artifacts` puts the .node into npm/linux-x64-gnu, `napi pre-publish`
// wires that package into optionalDependencies; both are packed and served by
// a loopback registry (__test__/support/registry.mjs, 404 for anything else),
// and a fresh project runs `npm install loopx-hooks`, as from npmjs.org. It
// type-checks a strict TypeScript file against the declarations (skipLibCheck
// off), compiles it, and runs it with node: it validates the shipped
// examples/registration.json (imported through the `examples/*` subpath) and
// dispatches once on a temp journal. Both module systems are tried: an ES
// module and a CommonJS one (.cts).
//
// The package must be built first (`bash scripts/setup.sh`); packing uses
// --ignore-scripts so this test never starts a build itself. The build's
// layout is checked on a copy of the sources: `tsc -b tsconfig.build.json`
// writes lib/x.ts to dist/x.js and dist/x.d.ts and nothing beside the sources.
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { links, pages } from './support/doc_pages.js'

const root = join(__dirname, '..')
const tmp = mkdtempSync(join(tmpdir(), 'loopx-hooks-pack-'))
let registry: ReturnType<typeof spawn> | undefined
afterAll(() => {
  registry?.kill()
  rmSync(tmp, { recursive: true, force: true })
})
const napi = join(root, 'node_modules', '.bin', 'napi')
const PLATFORM = 'linux-x64-gnu'
const BINARY = `loopx-hooks.${PLATFORM}.node`

function run(command: string, args: string[], cwd: string): SpawnSyncReturns<string> {
  const result = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: 100_000,
    // Keep npm away from the network and from this repo's own config.
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' },
  })
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${result.status}\n${result.stdout}\n${result.stderr}`,
    )
  }
  return result
}

/** What a consumer needs at run time and at type-check time (the binary comes from the platform package). */
const NEEDED = [
  'package.json',
  'LICENSE',
  'CHANGELOG.md',
  'README.md',
  'CONTRIBUTING.md',
  'docs/getting-started.md',
  'docs/api.md',
  'docs/errors.md',
  'docs/upgrade.md',
  'docs/spec/contract-v0.md',
  'docs/spec/loopx-shipped-v0.md',
  'docs/spec/rfc-post-writeback-hooks-v0.en.txt',
  'docs/spec/rfc-turn-start-inbox-hook-v0.en.txt',
  'index.js',
  'index.d.ts',
  'dist/native_error.js',
  'dist/index.js',
  'dist/index.d.ts',
  'dist/runtime.js',
  'dist/runtime.d.ts',
  'dist/hooks.d.ts',
  'dist/payload.d.ts',
  'bindings/index.d.ts',
  'bindings/PostWritebackHookRegistration.d.ts',
  'bindings/DispatchOutcome.d.ts',
  'examples/registration.json',
  'examples/intent_kind.json',
  'schemas/loopx_post_writeback_capability_hook_registration_v0.schema.json',
]

const CONSUMER_ESM = `
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'

import {
  defineHook,
  defineIntentKind,
  HookRuntime,
  IntentKinds,
  intent,
  proposed,
  validateRegistration,
  type DispatchOutcome,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
} from 'loopx-hooks'

const require = createRequire(import.meta.url)
const exampleText = (name: string): string => readFileSync(require.resolve('loopx-hooks/examples/' + name), 'utf8')

// The shipped examples, as JSON text.
const kinds = new IntentKinds([exampleText('intent_kind.json')])
const verdict = validateRegistration(exampleText('registration.json'), kinds)
if (!verdict.ok) throw new Error('registration rejected: ' + JSON.stringify(verdict.violations))
const registration: PostWritebackHookRegistration = verdict.value

const dir = mkdtempSync(join(tmpdir(), 'loopx-consumer-'))
const runtime = await HookRuntime.open({ journal: join(dir, 'journal.sqlite'), profile: { enabled: true } })
let outcome: DispatchOutcome
try {
  // The example kind, typed: the hook carries it and register defines it.
  const kind = defineIntentKind({
    intent_kind: 'periodic_report.trigger_evaluation',
    capability_id: 'periodic_report',
    operations: ['evaluate_runtime_trigger'],
    payload_schema: {
      type: 'object',
      properties: {
        segment_ref: { type: 'string', format: 'opaque_ref' },
        source_event_refs: { type: 'array', items: { type: 'string', format: 'opaque_ref' }, maxItems: 32, uniqueItems: true },
      },
      required: ['segment_ref', 'source_event_refs'],
      additionalProperties: false,
    },
  })
  runtime.register(
    defineHook({
      kinds: [kind],
      registration,
      provider: (input: PostWritebackHookInput) =>
        proposed([
          intent(input, kind, {
            operation: 'evaluate_runtime_trigger',
            policyVersion: 'weekly_v0',
            payload: { segment_ref: input.source.todo_id ?? 'todo_1', source_event_refs: [...input.projection.fact_refs] },
          }),
        ]),
    }),
  )
  outcome = await runtime.dispatch({
    settlement: { goal_id: 'goal_1', agent_id: 'agent_1', todo_id: 'todo_1', turn_instance_id: 'turn_1', effect_id: 'effect_1' },
    receipt: {
      receipt_id: 'receipt_1',
      effect_id: 'effect_1',
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: 'rev_1',
      committed_at: '2026-08-26T00:00:00Z',
    },
    event: { event_kind: 'todo_completed', fact_refs: ['fact_1'] },
  })
} finally {
  await runtime.close()
  rmSync(dir, { recursive: true, force: true })
}
const first = outcome.hooks[0]
console.log(JSON.stringify({ hookId: registration.hook_id, admitted: outcome.admitted, outcome: first?.outcome, status: first?.receipt?.status ?? null }))
`

const CONSUMER_CJS = `
import { canonicalJson, IntentKinds, validateRegistration, type Violation } from 'loopx-hooks'

const rejected = validateRegistration('{}', new IntentKinds([]))
const violations: Violation[] = rejected.ok ? [] : rejected.violations
console.log(JSON.stringify({ canonical: canonicalJson({ b: 1, a: [2] }), rules: violations.length, cjs: typeof require === 'function' }))
`

/** Starts the loopback registry over the tarballs in `dir`; resolves its URL. */
function startRegistry(dir: string): Promise<string> {
  registry = spawn(process.execPath, [join(__dirname, 'support', 'registry.mjs'), dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  return new Promise((resolve, reject) => {
    registry!.stdout!.once('data', (chunk: Buffer) => resolve(`http://127.0.0.1:${chunk.toString().trim()}/`))
    registry!.once('exit', (code) => reject(new Error(`registry exited ${code}`)))
  })
}

describe('npm pack, install and use', () => {
  it(
    'the main and linux-x64-gnu packages install from a registry into a fresh project, type-check strictly and run',
    { timeout: 240_000 },
    async () => {
      for (const built of [
        'index.js',
        'index.d.ts',
        BINARY,
        'dist/index.js',
        'dist/index.d.ts',
        'bindings/index.d.ts',
      ]) {
        expect(
          existsSync(join(root, built)),
          `${built} is missing: build the package first (bash scripts/setup.sh)`,
        ).toBe(true)
      }

      // 1. Pack (no lifecycle scripts: prepack would start a build).
      const packDir = join(tmp, 'pack')
      mkdirSync(packDir)
      const pack = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], root)
      const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
      const files = info!.files.map((f) => f.path)
      for (const needed of NEEDED) expect(files, `the tarball lacks ${needed}`).toContain(needed)
      // What package.json points a consumer at ships: main, types, bin and every exports target.
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, any>
      const targets = [manifest.main, manifest.types, ...Object.values(manifest.bin as Record<string, string>)]
      for (const target of Object.values(manifest.exports as Record<string, string | Record<string, string>>))
        targets.push(...(typeof target === 'string' ? [target] : Object.values(target)))
      for (const target of targets.filter((t: string) => !t.includes('*')))
        expect(files, `package.json points at ${target}, which the tarball lacks`).toContain(posix.normalize(target))
      // The compiled layer ships from dist/ (its JavaScript and declarations
      // only, no build bookkeeping); lib/ holds the sources and stays out.
      expect(
        files.filter((f) => f.startsWith('lib/')),
        'nothing of lib/ ships',
      ).toEqual([])
      expect(
        files.filter((f) => f.startsWith('dist/') && !/\.(js|d\.ts)$/.test(f)),
        'dist/ ships .js and .d.ts only',
      ).toEqual([])
      expect(
        files.filter(
          (f) =>
            f.startsWith('dist/') &&
            !existsSync(join(root, f.replace(/^dist/, 'lib').replace(/(\.d)?\.ts$|\.js$/, '.ts'))),
        ),
        'every file of dist/ is compiled from a source in lib/ (scripts/setup.sh drops the outputs of a removed one)',
      ).toEqual([])
      // Every page ships, and what it links to ships with it: an npm user's
      // copy of the docs has no dangling relative link.
      for (const page of pages()) {
        expect(files, `the tarball lacks ${page}`).toContain(page)
        for (const target of links(readFileSync(join(root, page), 'utf8'))) {
          if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue
          const path = posix.normalize(posix.join(posix.dirname(page), target.split('#')[0]!))
          const shipped = files.some((f) => f === path || f.startsWith(path.endsWith('/') ? path : `${path}/`))
          // Pages of a branch merged beside this one are checked by docs_links.spec.ts.
          if (!existsSync(join(root, path))) continue
          expect(shipped, `${page} links ${target}, which the tarball lacks`).toBe(true)
        }
      }
      for (const path of files)
        expect(path, 'sources, tests, build dirs and platform packages stay out').not.toMatch(
          /^(src|target|__test__|node_modules|\.cargo|npm)\//,
        )
      expect(
        files.filter((f) => f.endsWith('.node')),
        'binaries ship in the platform packages',
      ).toEqual([])
      // No TypeScript sources beside the declarations: tsc prefers a .ts over its
      // .d.ts, so shipped sources would be type-checked under the consumer's
      // options (see the exactOptionalPropertyTypes check below).
      for (const path of files)
        expect(path, 'only declarations of the TS layer ship').not.toMatch(/^(dist|bindings)\/.*(?<!\.d)\.ts$/)
      const tarball = join(packDir, info!.filename)
      expect(existsSync(tarball)).toBe(true)

      // 2. The release steps over a copy, for the target built here: the binary
      // into npm/linux-x64-gnu (napi artifacts), the platform package into
      // optionalDependencies (napi pre-publish, which reads the commit message
      // through git, hence a throwaway repository).
      const stage = join(tmp, 'stage')
      mkdirSync(stage)
      run('tar', ['-xzf', tarball, '-C', stage], root)
      const staged = join(stage, 'package')
      cpSync(join(root, 'npm'), join(staged, 'npm'), { recursive: true })
      const artifacts = join(tmp, 'artifacts')
      mkdirSync(artifacts)
      cpSync(join(root, BINARY), join(artifacts, BINARY))
      const stagedJson = JSON.parse(readFileSync(join(staged, 'package.json'), 'utf8')) as Record<string, any>
      stagedJson.napi.targets = ['x86_64-unknown-linux-gnu']
      writeFileSync(join(staged, 'package.json'), JSON.stringify(stagedJson, null, 2))
      run(napi, ['artifacts', '--output-dir', artifacts, '--npm-dir', 'npm'], staged)
      run('git', ['init', '-q'], staged)
      run(
        'git',
        ['-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '--allow-empty', '-m', 'stage'],
        staged,
      )
      run(napi, ['pre-publish', '-t', 'npm', '--skip-optional-publish'], staged)
      const wired = JSON.parse(readFileSync(join(staged, 'package.json'), 'utf8')) as Record<string, any>
      expect(wired.optionalDependencies).toEqual({ [`loopx-hooks-${PLATFORM}`]: wired.version })
      const platformDir = join(staged, 'npm', PLATFORM)
      const platformJson = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8')) as Record<string, any>
      expect([platformJson.os, platformJson.cpu, platformJson.libc]).toEqual([['linux'], ['x64'], ['glibc']])
      const registryDir = join(tmp, 'registry')
      mkdirSync(registryDir)
      run('npm', ['pack', '--ignore-scripts', '--pack-destination', registryDir], staged)
      const platformPack = run(
        'npm',
        ['pack', '--ignore-scripts', '--json', '--pack-destination', registryDir],
        platformDir,
      )
      const [platformInfo] = JSON.parse(platformPack.stdout) as Array<{ files: Array<{ path: string }> }>
      expect(platformInfo!.files.map((f) => f.path).sort()).toEqual(['README.md', BINARY, 'package.json'])

      // 3. A fresh ES-module project installs `loopx-hooks` from the registry,
      // with an empty cache; npm picks the platform package by os/cpu/libc.
      const url = await startRegistry(registryDir)
      const app = join(tmp, 'app')
      mkdirSync(join(app, 'src'), { recursive: true })
      writeFileSync(
        join(app, 'package.json'),
        JSON.stringify({ name: 'loopx-consumer', version: '1.0.0', private: true, type: 'module' }),
      )
      run(
        'npm',
        [
          'install',
          'loopx-hooks',
          '--registry',
          url,
          '--cache',
          join(tmp, 'npm-cache'),
          '--no-audit',
          '--no-fund',
          '--ignore-scripts',
        ],
        app,
      )
      expect(existsSync(join(app, 'node_modules', `loopx-hooks-${PLATFORM}`, BINARY))).toBe(true)
      expect(existsSync(join(app, 'node_modules', 'loopx-hooks', BINARY))).toBe(false)

      // 4. Strict type-check and compile with this repo's TypeScript and @types/node.
      writeFileSync(join(app, 'src', 'main.ts'), CONSUMER_ESM)
      writeFileSync(join(app, 'src', 'check.cts'), CONSUMER_CJS)
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'node16',
            moduleResolution: 'node16',
            strict: true,
            skipLibCheck: false,
            outDir: 'dist',
            rootDir: 'src',
            types: ['node'],
            typeRoots: [join(root, 'node_modules', '@types')],
          },
          include: ['src'],
        }),
      )
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
      run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], app)
      expect(existsSync(join(app, 'dist', 'main.js'))).toBe(true)
      expect(existsSync(join(app, 'dist', 'check.cjs'))).toBe(true)
      // A stricter consumer compiles too: the package's declarations hold under
      // options this repo does not use itself.
      const stricter = [
        '--noEmit',
        '--exactOptionalPropertyTypes',
        '--noPropertyAccessFromIndexSignature',
        '--noImplicitOverride',
        '--noUncheckedIndexedAccess',
      ]
      run(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false', ...stricter], app)

      // 5. Run both.
      const esm = JSON.parse(run(process.execPath, ['dist/main.js'], app).stdout.trim())
      expect(esm).toEqual({
        hookId: 'periodic_report.runtime_trigger',
        admitted: true,
        outcome: 'recorded',
        status: 'proposed',
      })
      const cjs = JSON.parse(run(process.execPath, ['dist/check.cjs'], app).stdout.trim())
      expect(cjs).toEqual({ canonical: '{"a":[2],"b":1}', rules: 9, cjs: true })
    },
  )
})

/** Files under `dir`, recursively, as sorted `/`-separated paths relative to it. */
function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[])
    .filter((f) => statSync(join(dir, f)).isFile())
    .map((f) => f.split('\\').join('/'))
    .sort()
}

describe('the build', () => {
  it(
    'tsc -b tsconfig.build.json compiles lib/x.ts to dist/x.js and dist/x.d.ts, writes nothing into lib/, and dist/ loads',
    { timeout: 120_000 },
    () => {
      // A copy of what the build reads: the sources, napi's loader and declarations, the configs.
      const copy = join(tmp, 'build')
      const sources = (dir: string) =>
        filesUnder(join(root, dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      const libSources = sources('lib')
      for (const dir of ['lib', 'bindings'])
        for (const f of sources(dir)) {
          mkdirSync(dirname(join(copy, dir, f)), { recursive: true })
          cpSync(join(root, dir, f), join(copy, dir, f))
        }
      for (const f of [
        'package.json',
        'index.js',
        'index.d.ts',
        'tsconfig.base.json',
        'tsconfig.build.json',
        'tsconfig.bindings.json',
      ])
        cpSync(join(root, f), join(copy, f))
      for (const f of ['node_modules', BINARY]) symlinkSync(join(root, f), join(copy, f))

      run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', 'tsconfig.build.json'], copy)

      expect(libSources.length).toBeGreaterThan(20)
      expect(filesUnder(join(copy, 'lib')), 'lib/ holds its sources only').toEqual(libSources)
      const emitted = filesUnder(join(copy, 'dist')).filter((f) => !f.startsWith('.tsbuildinfo/'))
      expect(emitted, 'dist/ mirrors lib/').toEqual(
        libSources.flatMap((f) => [f.replace(/\.ts$/, '.d.ts'), f.replace(/\.ts$/, '.js')]).sort(),
      )
      expect(existsSync(join(copy, 'bindings', 'index.d.ts')), 'what dist/*.d.ts import').toBe(true)
      // The relative imports out of lib/ hold from dist/ (../index.js is the addon's loader).
      const loaded = run(
        process.execPath,
        [
          '-e',
          "process.stdout.write([require('./dist/index.js').HookRuntime, require('./dist/orchestrator/index.js').TurnSettlement, require('./dist/cli.js').run].map((f) => typeof f).join(' '))",
        ],
        copy,
      )
      expect(loaded.stdout).toBe('function function function')
    },
  )
})
