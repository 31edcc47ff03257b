// What the misuse walk needs to know about a callable without a list of
// them: its parameter names (from its JavaScript source, or for an addon
// function from the generated index.d.ts), whether it is a class, and the
// wrong kinds of value to give it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export type Callable = (...args: unknown[]) => unknown

/** The kind of a value as the walk tells them apart. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

/** Each wrong kind, labelled by kindOf. */
export function wrongKinds(): [string, unknown][] {
  return [
    ['undefined', undefined],
    ['null', null],
    ['number', 42],
    ['string', 'not_it'],
    ['array', []],
    ['object', {}],
  ]
}

const declarations = readFileSync(join(__dirname, '..', '..', 'index.d.ts'), 'utf8')

/** A class (source `class ...`, or an addon class with prototype methods). */
export function publicClass(fn: Callable): boolean {
  const source = Function.prototype.toString.call(fn)
  if (/^class\b/.test(source)) return true
  const proto = (fn as { prototype?: object }).prototype
  return proto !== undefined && Object.getOwnPropertyNames(proto).length > 1
}

/** The text between the parenthesis at `open` and its match. */
function inside(source: string, open: number): string {
  let depth = 0
  let quote: string | null = null
  for (let i = open; i < source.length; i++) {
    const c = source[i]!
    if (quote) {
      if (c === '\\') i++
      else if (c === quote) quote = null
      continue
    }
    if (c === '"' || c === "'" || c === '`') quote = c
    else if ('([{'.includes(c)) depth++
    else if (')]}'.includes(c) && --depth === 0) return source.slice(open + 1, i)
  }
  return ''
}

/** Top-level comma-separated parts of a parameter list, each reduced to its name. */
function names(list: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i <= list.length; i++) {
    const c = list[i]
    if (c !== undefined && '([{<'.includes(c)) depth++
    else if (c !== undefined && ')]}>'.includes(c) && !(c === '>' && list[i - 1] === '=')) depth--
    else if ((c === ',' && depth === 0) || c === undefined) {
      const part = list.slice(start, i).trim()
      if (part) parts.push(part)
      start = i + 1
    }
  }
  return parts.map((p) => {
    const name = /^(?:\.\.\.)?([A-Za-z_$][\w$]*)/.exec(p)
    return name ? name[1]! : 'options'
  })
}

/** The parameter names of `fn`, the member `name` of `owner` (or a function of that name). */
export function paramNames(fn: Callable, name: string, owner?: string): string[] {
  const source = Function.prototype.toString.call(fn)
  if (!source.includes('[native code]')) {
    const at = name === 'constructor' ? source.search(/\bconstructor\s*\(/) : source.indexOf('(')
    if (at < 0) return []
    return names(inside(source, source.indexOf('(', at)))
  }
  // An addon function or class: its generated declaration names the parameters.
  const own = owner ?? fn.name
  const fnDecl = owner ? null : new RegExp(`export declare function ${own}\\(`).exec(declarations)
  if (fnDecl) return names(inside(declarations, fnDecl.index + fnDecl[0].length - 1))
  const classDecl = new RegExp(`export declare class ${own} \\{`).exec(declarations)
  if (!classDecl) return []
  const body = inside(declarations, classDecl.index + classDecl[0].length - 1)
  const member = new RegExp(`^\\s*(?:static )?${name === 'constructor' ? 'constructor' : name}\\(`, 'm').exec(body)
  return member ? names(inside(body, member.index + member[0].length - 1)) : []
}
