/**
 * The error the napi loader (`index.js`) throws when no native binary loads.
 * napi's own text blames an npm bug and says to reinstall, which sends a user
 * on an unsupported platform the wrong way; this one names the platform, lists
 * the ones a binary is published for (package.json `napi.targets`) and says
 * what to do. `scripts/loader.mjs` wires it into the generated loader.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { LoopxHooksError } from './errors.js'

export type MissingBindingCode = 'ERR_LOOPX_UNSUPPORTED_PLATFORM' | 'ERR_LOOPX_NATIVE_BINDING_MISSING'

const ARCH: Record<string, string> = {
  x86_64: 'x64',
  aarch64: 'arm64',
  i686: 'ia32',
  armv7: 'arm',
  riscv64gc: 'riscv64',
  powerpc64le: 'ppc64',
  s390x: 's390x',
}

/** napi's platform name (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, `android-arm-eabi`) of a Rust target triple. */
export function platformOfTriple(triple: string): string {
  const parts = triple.split('.')[0]!.split('-')
  const arch = ARCH[parts[0]!] ?? parts[0]!
  const rest = parts.slice(1).filter((p) => p !== 'unknown' && p !== 'pc' && p !== 'apple')
  const sys = rest[0] ?? ''
  const abi = rest[1]
  if (sys === 'darwin') return `darwin-${arch}`
  if (sys === 'windows') return `win32-${arch}-${abi ?? 'msvc'}`
  if (sys === 'freebsd') return `freebsd-${arch}`
  if (sys === 'linux' && (abi === 'androideabi' || abi === 'android'))
    return `android-${arch}${abi === 'androideabi' ? '-eabi' : ''}`
  return abi ? `${sys}-${arch}-${abi}` : `${sys}-${arch}`
}

/** This process's platform name, as napi spells it. */
export function currentPlatform(platform: string, arch: string, musl: boolean): string {
  if (platform === 'linux')
    return `linux-${arch}-${arch === 'arm' ? (musl ? 'musleabihf' : 'gnueabihf') : musl ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'android' && arch === 'arm') return 'android-arm-eabi'
  return `${platform}-${arch}`
}

interface PackageJson {
  name: string
  version: string
  napi: { targets: string[] }
}

/** The loader's error: which code, and a message that says what to do. */
export function missingBinding(
  packageDir: string,
  platform: string,
  arch: string,
  musl: boolean,
): LoopxHooksError & { code: MissingBindingCode } {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as PackageJson
  const supported = pkg.napi.targets.map(platformOfTriple)
  const here = currentPlatform(platform, arch, musl)
  const platformPackage = `${pkg.name}-${here}`
  let code: MissingBindingCode
  let message: string
  if (supported.includes(here)) {
    code = 'ERR_LOOPX_NATIVE_BINDING_MISSING'
    message =
      `${pkg.name} could not load its native binary for ${here}: the platform package ${platformPackage} ` +
      `is missing or failed to load. npm installs it as an optional dependency; it is skipped by ` +
      `--omit=optional, --no-optional, or a lockfile written on another platform. ` +
      `Install it with \`npm install ${platformPackage}@${pkg.version}\`` +
      (here === 'linux-x64-gnu' ? ' (it needs glibc 2.17 or newer)' : '') +
      `, or remove node_modules and package-lock.json and run \`npm install\` again. The load errors are in error.cause.`
  } else {
    code = 'ERR_LOOPX_UNSUPPORTED_PLATFORM'
    message =
      `${pkg.name} has no native binary for ${here}. Binaries are published for: ${supported.join(', ')}. ` +
      `Run it on one of those, or build the addon from a clone of the repository with Rust installed ` +
      `(\`npx napi build --platform --release\`) and point NAPI_RS_NATIVE_LIBRARY_PATH at the .node it writes.`
  }
  return new LoopxHooksError(code, message) as LoopxHooksError & { code: MissingBindingCode }
}
