// The public surface as a user's editor sees it, through the TypeScript
// checker: each typed entry point of package.json "exports", its exports
// (re-exports resolved) and the members reachable from them. naming.spec
// judges the names and types found here.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import ts from 'typescript'

const root = join(__dirname, '..', '..')

/** The TypeScript source behind each typed entry point's declaration file (dist/x.d.ts: lib/x.ts), by subpath. */
export function entryPoints(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types?: string }>
  }
  const entries = new Map<string, string>()
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target !== 'object' || target.types === undefined) continue
    entries.set(subpath, join(root, target.types.replace(/^\.\/dist\//, 'lib/').replace(/\.d\.ts$/, '.ts')))
  }
  return entries
}

/** One strict program over `files`, as a user's editor checks them. */
export function entryProgram(files: Map<string, string>): ts.Program {
  return ts.createProgram([...files.values()], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    strict: true,
    noEmit: true,
    types: ['node'],
  })
}

/** One export of one entry point, its alias resolved. */
export interface Exported {
  subpath: string
  name: string
  symbol: ts.Symbol
}

/** The program over every entry point's TypeScript source, and its exports. */
export class Surface {
  readonly checker: ts.TypeChecker
  readonly exports: Exported[] = []
  /** Per entry point: names an explicit export takes from an `export *` / `export type *` module. */
  readonly shadowed: string[] = []

  constructor() {
    const files = entryPoints()
    const program = entryProgram(files)
    this.checker = program.getTypeChecker()
    for (const [subpath, file] of files) {
      const source = program.getSourceFile(file)!
      const moduleSymbol = this.checker.getSymbolAtLocation(source)!
      const own = new Map<string, ts.Symbol>()
      for (const exported of this.checker.getExportsOfModule(moduleSymbol)) {
        const symbol = this.resolve(exported)
        own.set(exported.name, symbol)
        this.exports.push({ subpath, name: exported.name, symbol })
      }
      for (const statement of source.statements) {
        if (!ts.isExportDeclaration(statement) || statement.exportClause || !statement.moduleSpecifier) continue
        const starred = this.checker.getSymbolAtLocation(statement.moduleSpecifier)
        for (const member of starred ? this.checker.getExportsOfModule(starred) : []) {
          const winner = own.get(member.name)
          if (winner !== undefined && winner !== this.resolve(member)) this.shadowed.push(`${subpath}: ${member.name}`)
        }
      }
    }
  }

  resolve(symbol: ts.Symbol): ts.Symbol {
    return symbol.flags & ts.SymbolFlags.Alias ? this.checker.getAliasedSymbol(symbol) : symbol
  }

  /** The declared type of an export: a value's type, or the type a type name stands for. */
  typeOf(symbol: ts.Symbol): ts.Type {
    const declaration = symbol.declarations?.[0]
    if (symbol.flags & (ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Interface))
      return this.checker.getDeclaredTypeOfSymbol(symbol)
    if (symbol.flags & ts.SymbolFlags.Class && declaration) return this.checker.getDeclaredTypeOfSymbol(symbol) // the instance side; statics follow below
    return declaration ? this.checker.getTypeOfSymbolAtLocation(symbol, declaration) : this.checker.getAnyType()
  }

  /**
   * Every public property reachable from `exports` (through property types,
   * call signatures' parameters and returns, unions, arrays and type
   * arguments), as `Owner.member` with the member's type.
   */
  members(exports: readonly Exported[]): { path: string; name: string; type: ts.Type }[] {
    const out: { path: string; name: string; type: ts.Type }[] = []
    const seen = new Set<ts.Type>()
    const walk = (type: ts.Type, path: string, depth: number): void => {
      if (depth > 6 || seen.has(type)) return
      seen.add(type)
      if (type.isUnionOrIntersection()) return type.types.forEach((t) => walk(t, path, depth))
      for (const signature of [...type.getCallSignatures(), ...type.getConstructSignatures()]) {
        for (const parameter of signature.getParameters())
          walk(this.checker.getTypeOfSymbol(parameter), `${path}(${parameter.name})`, depth + 1)
        walk(signature.getReturnType(), `${path}()`, depth + 1)
      }
      for (const argument of this.typeArguments(type)) walk(argument, path, depth + 1)
      if (!(type.flags & ts.TypeFlags.Object) || this.foreign(type)) return
      for (const property of type.getProperties()) {
        if (property.name.startsWith('#') || property.name.startsWith('__')) continue
        const flags = property.valueDeclaration ? ts.getCombinedModifierFlags(property.valueDeclaration) : 0
        if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue
        const member = this.checker.getTypeOfSymbol(property)
        out.push({ path: `${path}.${property.name}`, name: property.name, type: member })
        walk(member, `${path}.${property.name}`, depth + 1)
      }
    }
    for (const e of exports) {
      walk(this.typeOf(e.symbol), `${e.subpath}: ${e.name}`, 0)
      if (e.symbol.flags & ts.SymbolFlags.Class && e.symbol.valueDeclaration)
        walk(this.checker.getTypeOfSymbolAtLocation(e.symbol, e.symbol.valueDeclaration), `${e.subpath}: ${e.name}`, 0)
    }
    return out
  }

  typeArguments(type: ts.Type): readonly ts.Type[] {
    const reference = type.flags & ts.TypeFlags.Object && (type as ts.ObjectType).objectFlags & ts.ObjectFlags.Reference
    return reference ? this.checker.getTypeArguments(type as ts.TypeReference) : []
  }

  /** Types declared outside this package (lib.d.ts, node, OpenTelemetry, better-sqlite3; arrays: their items are walked): not ours to name. */
  foreign(type: ts.Type): boolean {
    if (this.checker.isArrayType(type) || this.checker.isTupleType(type)) return true
    const file = (type.aliasSymbol ?? type.getSymbol())?.declarations?.[0]?.getSourceFile().fileName
    return file !== undefined && (file.includes('/node_modules/') || !file.startsWith(root))
  }

  /** Whether `type` is `any`, or a function type, union or array with `any` in it (one level of signatures). */
  mentionsAny(type: ts.Type, depth = 0): boolean {
    if (type.flags & ts.TypeFlags.Any) return true
    if (depth > 3 || this.foreign(type)) return false
    if (type.isUnionOrIntersection()) return type.types.some((t) => this.mentionsAny(t, depth + 1))
    if (this.typeArguments(type).some((argument) => this.mentionsAny(argument, depth + 1))) return true
    return type
      .getCallSignatures()
      .some(
        (s) =>
          s.getParameters().some((p) => this.mentionsAny(this.checker.getTypeOfSymbol(p), depth + 1)) ||
          this.mentionsAny(s.getReturnType(), depth + 1),
      )
  }
}
