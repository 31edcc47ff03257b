// Editor help is a promise of the public surface: every export of every
// public entry point (package.json "exports" with a `types` condition) and
// every public member of an exported class or interface carries a doc
// comment, so a hover never comes up empty; members named by a well-known
// symbol (`[Symbol.asyncDispose]`) count too. The walk goes through the
// TypeScript checker, so re-exports (`export *`, `export type *`, renamed
// exports) resolve to the declaration a user's editor shows.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import ts from 'typescript'
import { describe, expect, it } from 'vitest'

import { entryPoints, entryProgram } from './support/surface_names.js'

function hasDoc(declaration: ts.Declaration): boolean {
  // Only a block with text of its own counts: bare tags (`@internal`, `@param x`) describe nothing on hover.
  return ts.getJSDocCommentsAndTags(declaration).some((doc) => {
    if (!ts.isJSDoc(doc)) return false
    const text = ts.getTextOfJSDocComment(doc.comment)
    return text !== undefined && text.trim() !== ''
  })
}

function isPublicMember(member: ts.Symbol): boolean {
  // A well-known-symbol member (`[Symbol.asyncDispose]`) is named `__@asyncDispose@<id>`:
  // it is public and hovered like any other, so only other `__` names are skipped.
  if (member.name.startsWith('#') || (member.name.startsWith('__') && !member.name.startsWith('__@'))) return false
  return (member.declarations ?? []).every((declaration) => {
    if (ts.isConstructorDeclaration(declaration)) return false
    if (!ts.canHaveModifiers(declaration)) return true
    const flags = ts.getCombinedModifierFlags(declaration)
    return (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0
  })
}

/** A symbol is documented when any of its declarations (an overload, a merged declaration) has a doc comment. */
function documented(symbol: ts.Symbol): boolean {
  return (symbol.declarations ?? []).some(hasDoc)
}

/** `__@asyncDispose@123` as a reader writes it: `[Symbol.asyncDispose]`. */
function shown(name: string): string {
  const symbol = /^__@(\w+)@\d+$/.exec(name)
  return symbol ? `[Symbol.${symbol[1]}]` : name
}

/** Names, `subpath: Export` or `subpath: Export.member`, of everything public that has no doc comment. */
function undocumented(files: Map<string, string>): string[] {
  const program = entryProgram(files)
  const checker = program.getTypeChecker()
  const missing: string[] = []
  for (const [subpath, file] of files) {
    const source = program.getSourceFile(file)
    if (source === undefined) throw new Error(`${subpath}: ${file} is not in the program`)
    const moduleSymbol = checker.getSymbolAtLocation(source)
    if (moduleSymbol === undefined) throw new Error(`${subpath}: ${file} is not a module`)
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      const name = `${subpath}: ${exported.name}`
      if (!documented(symbol)) missing.push(name)
      if (!(symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))) continue
      // `symbol.members` leaves out members with a computed name (`[Symbol.asyncDispose]`): they
      // are bound late, so the declared type's own properties are walked as well.
      const own = new Set<ts.Node>(symbol.declarations ?? [])
      const lateBound = checker
        .getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))
        .filter((p) => (p.declarations ?? []).some((d) => own.has(d.parent)))
      const members = new Set([...(symbol.members?.values() ?? []), ...lateBound, ...(symbol.exports?.values() ?? [])])
      for (const member of members) {
        if (member.flags & (ts.SymbolFlags.Prototype | ts.SymbolFlags.TypeParameter) || !isPublicMember(member))
          continue
        if (!documented(member)) missing.push(`${name}.${shown(member.name)}`)
      }
    }
  }
  return missing
}

describe('TSDoc on the public surface', () => {
  const entries = entryPoints()

  it('walks every typed entry point of package.json "exports"', () => {
    expect([...entries.keys()]).toEqual(
      expect.arrayContaining(['.', './orchestrator', './otel', './capabilities/periodic_report']),
    )
  })

  it('every export and every public class/interface member has a doc comment', { timeout: 60_000 }, () => {
    expect(undocumented(entries)).toEqual([])
  })

  it('the emitted declarations (stripInternal) hold nothing @internal, and the classes lib/ makes have private constructors there', () => {
    const lib = fileURLToPath(new URL('../lib/', import.meta.url))
    const dist = fileURLToPath(new URL('../dist/', import.meta.url))
    const emitted = readdirSync(lib, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
      .map((file) => [file, readFileSync(join(dist, file.replace(/\.ts$/, '.d.ts')), 'utf8')] as const)
    expect(emitted.length).toBeGreaterThan(20)
    const leaks = emitted.filter(([, dts]) => /@internal|\b(journalOf|sessionOf|shippedRuntimeOf)\b/.test(dts))
    expect(leaks.map(([file]) => file)).toEqual([])
    const made = ['journal', 'runtime', 'shipped/runtime', 'turn_start_session']
    for (const file of made) {
      const dts = emitted.find(([f]) => f === `${file}.ts`)?.[1] ?? ''
      expect([file, /^\s*private constructor\(\);$/m.test(dts)]).toEqual([file, true])
    }
  })
})
