// The packing step of `npm run pack:local` (which runs scripts/setup.sh first):
// from the built addon and TypeScript layer, leaves two installable tarballs
// in one folder (default `pack/`, or `--out DIR`):
//
//   loopx-hooks-<version>.tgz            the main package, as `npm pack` makes it, plus
//                                        `optionalDependencies` on this platform's package
//                                        (what `napi pre-publish` adds at release time)
//   loopx-hooks-<platform>-<version>.tgz npm/<platform>/ with the binary in it
//                                        (what `napi artifacts` does at release time)
//
// Installing both in one `npm install` (it prints the line) satisfies the
// main package's dependency from the second tarball, with no registry. Nothing
// in the checkout changes: both are staged in a temporary folder. Publishes
// nothing.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const outArg = process.argv.indexOf('--out')
const out = resolve(outArg === -1 ? join(root, 'pack') : process.argv[outArg + 1])

/** npm's name for this platform's package (napi's), e.g. linux-x64-gnu. */
function platform() {
  const { platform: os, arch } = process
  if (os !== 'linux') return `${os}-${arch}${os === 'win32' ? '-msvc' : ''}`
  const glibc = process.report?.getReport()?.header?.glibcVersionRuntime
  return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`
}

function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' })
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${result.status}:\n${result.stderr}${result.stdout}`,
    )
  return result.stdout
}

const target = platform()
const binary = `loopx-hooks.${target}.node`
const platformDir = join(root, 'npm', target)
for (const needed of [binary, 'dist/index.js', 'bindings/index.d.ts', `npm/${target}/package.json`]) {
  if (!existsSync(join(root, needed))) {
    console.error(`pack-local: ${needed} is missing; \`npm run pack:local\` builds it first (bash scripts/setup.sh)`)
    process.exit(1)
  }
}

mkdirSync(out, { recursive: true })
for (const old of readdirSync(out)) if (/^loopx-hooks-.*\.tgz$/.test(old)) rmSync(join(out, old))
const stage = mkdtempSync(join(tmpdir(), 'loopx-pack-'))
try {
  // The platform package with its binary.
  const staged = join(stage, target)
  cpSync(platformDir, staged, { recursive: true })
  cpSync(join(root, binary), join(staged, binary))
  const [platformInfo] = JSON.parse(
    run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], staged),
  )
  if (!platformInfo.files.some((f) => f.path === binary)) throw new Error(`${platformInfo.filename} lacks ${binary}`)

  // The main package: packed as it is (no lifecycle scripts: prepack would
  // run set-up again), then given its dependency on the platform package.
  const [info] = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', stage], root))
  run('tar', ['-xzf', join(stage, info.filename), '-C', stage], root)
  const main = join(stage, 'package')
  const manifest = JSON.parse(readFileSync(join(main, 'package.json'), 'utf8'))
  const platformName = JSON.parse(readFileSync(join(platformDir, 'package.json'), 'utf8')).name
  manifest.optionalDependencies = { ...manifest.optionalDependencies, [platformName]: manifest.version }
  writeFileSync(join(main, 'package.json'), JSON.stringify(manifest, null, 2) + '\n')
  run('npm', ['pack', '--ignore-scripts', '--pack-destination', out], main)

  const rel = relative(process.cwd(), out)
  const shown = rel === '' ? '.' : rel.startsWith('..') ? out : rel
  console.log(`pack-local: in ${out}:`)
  console.log(`  ${info.filename}\n  ${platformInfo.filename}`)
  console.log('Install both into a project, in one command:')
  console.log(`  npm install ${join(shown, info.filename)} ${join(shown, platformInfo.filename)}`)
} finally {
  rmSync(stage, { recursive: true, force: true })
}
