// The LoopxHooksErrorCode union is generated from the Rust enum ErrorCode
// (src/error_code.rs; generated.spec.ts fails on drift). Every code of it is
// raised somewhere (by its ErrorCode variant in src/, or its text in lib/ or
// the loader index.js) and has a row with a cause and what to do in the
// error-code table of docs/errors.md; neither lists a code nothing raises.
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

const enumText = readFileSync(join(root, 'src', 'error_code.rs'), 'utf8')
const enumBlock = /codes! \{([^]*?)\n\}/.exec(enumText)?.[1] ?? ''
const variants = new Map([...enumBlock.matchAll(/(\w+) = "(ERR_LOOPX_[A-Z0-9_]+)",/g)].map((m) => [m[1]!, m[2]!]))

// Raised in Rust: a variant named as `C::X`, `Code::X` or `ErrorCode::X` outside the enum's own list.
const rustFiles = walk(join(root, 'src'), (f) => f.endsWith('.rs'))
const rustText = rustFiles.map((f) => readFileSync(f, 'utf8').replace(enumBlock, '')).join('\n')
const fromRust = [...rustText.matchAll(/\b(?:C|Code|ErrorCode)::([A-Z]\w+)/g)]
  .map((m) => variants.get(m[1]!))
  .filter((c): c is string => c !== undefined)
const jsFiles = [
  ...walk(join(root, 'lib'), (f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('errors.ts')),
  join(root, 'index.js'),
]
const fromJs = jsFiles.flatMap((f) => [...codesIn(readFileSync(f, 'utf8'))])
const fromSource = [...new Set([...fromRust, ...fromJs])].sort()

const generated = readFileSync(join(root, 'bindings', 'LoopxHooksErrorCode.ts'), 'utf8')
const fromUnion = [...generated.matchAll(/"(ERR_LOOPX_[A-Z0-9_]+)"/g)].map((m) => m[1]!).sort()

const errorsPage = readFileSync(join(root, 'docs', 'errors.md'), 'utf8')
// The code table is the page's first table, before its sections.
const table = errorsPage.slice(0, errorsPage.indexOf('\n## '))
const fromDocs = [...table.matchAll(/^\| `(ERR_LOOPX_[A-Z0-9_]+)` \| [^|]+ \| [^|]*\S[^|]* \|$/gm)]
  .map((m) => m[1]!)
  .sort()

describe('ERR_LOOPX_* codes', () => {
  it('the source has codes (the scan works)', () => {
    expect(fromSource).toContain('ERR_LOOPX_REGISTRATION_REJECTED') // lib
    expect(fromSource).toContain('ERR_LOOPX_JOURNAL_SQLITE') // src, by variant
    expect([...variants.values()].sort()).toEqual(fromUnion)
    expect(fromSource).toContain('ERR_LOOPX_UNSUPPORTED_PLATFORM') // lib/native_error.ts
    expect(fromSource.length).toBeGreaterThanOrEqual(29)
  })

  it('LoopxHooksErrorCode is exactly the codes the source raises', () => {
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
