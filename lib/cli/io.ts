/**
 * What the CLI touches outside itself: the standard streams, the
 * environment, files, and (loaded lazily, so `--help` works without the
 * native addon and a missing addon is one line, not a stack) the library.
 */
import { readFileSync } from 'node:fs'
import type * as LibraryModule from '../index.js'
import type * as AddonModule from '../addon.js'
import { CliError } from './errors.js'

export interface Io {
  stdout: { write(chunk: string): unknown; isTTY?: boolean }
  stderr: { write(chunk: string): unknown }
  stdin: AsyncIterable<Buffer | string>
  env: Record<string, string | undefined>
}

/** The package's public API, as `lib/index.js` exports it. */
export type Library = typeof LibraryModule

let loaded: Library | undefined

/** The package's public API (`lib/index.js`), loaded on first use. */
export function library(): Library {
  if (loaded === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily so a missing addon is a CLI error, not a crash
      loaded = require('../index.js') as Library
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      throw new CliError(`cannot load the loopx-hooks addon: ${message}`)
    }
  }
  return loaded
}

/** The native addon (`index.js`) behind its coded-error boundary (`addon.ts`), for serve's dispatch steps. */
export type Addon = typeof AddonModule

let addonLoaded: Addon | undefined

/** The native addon, loaded on first use (like `library()`). */
export function addon(): Addon {
  if (addonLoaded === undefined) {
    library()
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, after library() reported a missing addon
    addonLoaded = require('../addon.js') as Addon
  }
  return addonLoaded
}

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EISDIR: 'is a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a parent is not a directory',
}

/** The bytes of `path`, or a one-line `CliError` naming it. */
export function readBytes(path: string, label = path): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    const code = (error as { code?: string }).code
    throw new CliError(`cannot read ${label}: ${(code && REASONS[code]) ?? (error as Error).message}`)
  }
}

/** All of standard input. */
export async function readStdin(stdin: AsyncIterable<Buffer | string>): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk)
  return Buffer.concat(chunks)
}

/**
 * `bytes` as text exactly: undefined when they are not UTF-8. A byte order
 * mark is kept (not silently dropped), so the validator judges the very text
 * the caller wrote.
 */
export function utf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return undefined
  }
}

/** Colour only for a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function colourWanted(io: Io): boolean {
  const noColor = io.env['NO_COLOR']
  return io.stdout.isTTY === true && (noColor === undefined || noColor === '')
}
