// Every ERR_LOOPX_* code the source can throw is a member of the
// LoopxHooksErrorCode union (lib/errors.ts) and has a row with a cause and
// what to do in the error-code table of docs/errors.md, and neither lists a
// code the source no longer has. The list is read from the source
// (src/**/*.rs, lib/**/*.ts, the loader index.js), so a new code only needs
// its union member and its docs/errors.md row.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, expectTypeOf, it } from 'vitest'

import { LoopxHooksError, type LoopxHooksErrorCode } from '../lib/index.js'

const root = join(__dirname, '..')
const CODE = /\bERR_LOOPX_[A-Z0-9_]*[A-Z0-9]\b/g

function walk(dir: string, keep: (file: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? walk(p, keep) : keep(p) ? [p] : []
  })
}

function codesIn(text: string): Set<string> {
  return new Set(text.match(CODE) ?? [])
}

const sourceFiles = [
  ...walk(join(root, 'src'), (f) => f.endsWith('.rs')),
  ...walk(join(root, 'lib'), (f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('errors.ts')),
  join(root, 'index.js'),
]
const fromSource = [...new Set(sourceFiles.flatMap((f) => [...codesIn(readFileSync(f, 'utf8'))]))].sort()

const errorsTs = readFileSync(join(root, 'lib', 'errors.ts'), 'utf8')
const unionBlock = /export type LoopxHooksErrorCode =([^]*?)\n\n/.exec(errorsTs)
const fromUnion = [...(unionBlock?.[1] ?? '').matchAll(/'(ERR_LOOPX_[A-Z0-9_]+)'/g)].map((m) => m[1]!).sort()

const errorsPage = readFileSync(join(root, 'docs', 'errors.md'), 'utf8')
// The code table is the page's first table, before its sections.
const table = errorsPage.slice(0, errorsPage.indexOf('\n## '))
const fromDocs = [...table.matchAll(/^\| `(ERR_LOOPX_[A-Z0-9_]+)` \| [^|]+ \| [^|]*\S[^|]* \|$/gm)]
  .map((m) => m[1]!)
  .sort()

describe('ERR_LOOPX_* codes', () => {
  it('the source has codes (the scan works)', () => {
    expect(fromSource).toContain('ERR_LOOPX_REGISTRATION_REJECTED') // lib
    expect(fromSource).toContain('ERR_LOOPX_JOURNAL_SQLITE') // src
    expect(fromSource).toContain('ERR_LOOPX_UNSUPPORTED_PLATFORM') // lib/native_error.ts
    expect(fromSource.length).toBeGreaterThanOrEqual(29)
  })

  it('LoopxHooksErrorCode is exactly the codes in the source', () => {
    expect(fromUnion).toEqual(fromSource)
  })

  it("docs/errors.md's table has a row with a cause and what to do for exactly those codes", () => {
    expect(fromDocs).toEqual(fromSource)
  })

  it("LoopxHooksError['code'] is the union, not string", () => {
    expectTypeOf<LoopxHooksError['code']>().toEqualTypeOf<LoopxHooksErrorCode>()
    expectTypeOf<string>().not.toMatchTypeOf<LoopxHooksError['code']>()
    const e = new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'x')
    expect(e.code).toBe('ERR_LOOPX_INVALID_ARGUMENT')
    // @ts-expect-error a code outside the union does not compile
    expect(new LoopxHooksError('ERR_LOOPX_MADE_UP', 'x').code).toBe('ERR_LOOPX_MADE_UP')
  })
})
