#!/usr/bin/env node
// `npm run bench`: builds what the benchmark needs, then runs it.
//
// 1. The addon, in release mode. The package's own `loopx-hooks.*.node` is
//    used when it is a release build newer than every Rust source; otherwise
//    a release build is made into `.bench/addon/` (the package's own file is
//    usually the debug build the tests use) and the bench processes load it
//    through NAPI_RS_NATIVE_LIBRARY_PATH (nothing else they load uses napi-rs;
//    do not export that variable to other tools: vitest's rolldown obeys it).
// 2. The TypeScript layer (`tsc -b tsconfig.build.json`, lib/ into dist/) when
//    dist/*.js is missing or older than lib/*.ts.
// 3. The crossing probe (`bench/probe`, one napi function) into `.bench/`;
//    without cargo the validation-vs-crossing rows are left out.
// 4. The bench itself: `tsc -p bench/tsconfig.json` into `.bench/out/` (ESM).
//
// BENCH_QUICK=1 for a smoke run with small sizes.
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const work = join(root, '.bench')
const bin = (name) => join(root, 'node_modules', '.bin', name)
const say = (msg) => process.stderr.write(`[bench] ${msg}\n`)

function newest(dir, accept = () => true) {
  let t = 0
  if (!existsSync(dir)) return t
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) t = Math.max(t, newest(p, accept))
    else if (accept(e.name)) t = Math.max(t, statSync(p).mtimeMs)
  }
  return t
}

const mtime = (p) => (existsSync(p) ? statSync(p).mtimeMs : 0)

function run(cmd, args, cwd = root) {
  say(`${cmd.split('/').pop()} ${args.join(' ')}`)
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] })
}

/** A debug build carries DWARF sections; the release profile strips symbols. */
function isRelease(path) {
  return !readFileSync(path).includes('.debug_info')
}

// 1. the addon
const rustSources = Math.max(
  newest(join(root, 'src')),
  mtime(join(root, 'Cargo.toml')),
  mtime(join(root, 'Cargo.lock')),
  mtime(join(root, 'build.rs')),
)
const nodeFile = 'loopx-hooks.linux-x64-gnu.node'
const own = join(root, nodeFile)
let addon
if (existsSync(own) && mtime(own) >= rustSources && isRelease(own)) {
  addon = own
} else {
  addon = join(work, 'addon', nodeFile)
  if (mtime(addon) < rustSources) {
    mkdirSync(dirname(addon), { recursive: true })
    say('building the addon in release mode (a few minutes)...')
    run(bin('napi'), [
      'build',
      '--platform',
      '--release',
      '--output-dir',
      join(work, 'addon'),
      '--no-js',
      '--dts',
      'index.d.ts',
    ])
  }
}

// 2. the TypeScript layer
const libTs = newest(join(root, 'lib'), (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'))
const distJs = newest(join(root, 'dist'), (n) => n.endsWith('.js'))
if (distJs < libTs || !existsSync(join(root, 'dist', 'index.js'))) {
  // tsc emits even when work in progress elsewhere in lib/ does not type-check.
  say('tsc -b tsconfig.build.json')
  const built = spawnSync(bin('tsc'), ['-b', 'tsconfig.build.json'], {
    cwd: root,
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  if (built.status !== 0) say('tsc reported errors in lib/ (above); benchmarking the emitted JavaScript anyway')
}

// 3. the crossing probe
const probeDir = join(root, 'bench', 'probe')
const probe = join(work, 'probe.node')
if (mtime(probe) < newest(probeDir, (n) => n !== 'Cargo.lock')) {
  const target = join(work, 'probe-target')
  const built = spawnSync(
    'cargo',
    ['build', '--release', '--manifest-path', join(probeDir, 'Cargo.toml'), '--target-dir', target],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
  if (built.status === 0) {
    const found = ['x86_64-unknown-linux-gnu/release', 'release']
      .map((d) => join(target, d, 'libloopx_bench_probe.so'))
      .filter(existsSync)
      .sort((a, b) => mtime(b) - mtime(a))[0]
    if (found) copyFileSync(found, probe)
  } else {
    say('cargo could not build bench/probe: the validation-vs-crossing rows will be left out')
  }
}

// 4. the bench
const out = join(work, 'out')
run(bin('tsc'), ['-p', join('bench', 'tsconfig.json')])
writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n')

const env = { ...process.env, LOOPX_BENCH_ROOT: root, NAPI_RS_NATIVE_LIBRARY_PATH: addon }
if (existsSync(probe)) env.LOOPX_BENCH_PROBE = probe
say(`addon: ${addon}`)
const bench = spawnSync(process.execPath, [join(out, 'bench', 'run.js')], { stdio: 'inherit', env })
process.exit(bench.status ?? 1)
