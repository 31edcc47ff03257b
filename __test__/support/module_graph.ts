// The module graphs of the Rust crate (src/, from lib.rs down its `mod`
// tree) and of the TypeScript layer (lib/), at file granularity: a file
// imports another when it names an item defined there (in a `use`, or as a
// `crate::`/`super::` path in code or an attribute). A module's `mod`
// children are its parts, not its imports: a file naming items of its own
// submodules adds no edge, a child naming its parent's items does. A name
// reached through a re-export (`pub use child::Y`, a glob, a private `use` a
// child sees) is followed to the file that defines it, so a sibling that
// takes `super::Y` depends on Y's file, not on the parent. Test modules
// (`#[cfg(test)]` items) are left out. Generated files (index.js, bindings/)
// are never read: imports leaving lib/ are ignored.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, posix } from 'node:path'

/** One file importing another, with the names it takes from it. */
export interface Edge {
  from: string
  to: string
  names: string[]
}

/** A strongly connected set of files (a circle) and the edges inside it. */
export interface Cycle {
  files: string[]
  edges: Edge[]
}

function group(m: RegExpMatchArray, i: number): string {
  return m[i] ?? ''
}

function at(list: number[], i: number): number {
  return list[i] ?? 0
}

/** Reads a file by its path relative to the tree's root; undefined when it does not exist. */
export type Read = (path: string) => string | undefined

export function diskReader(root: string): Read {
  return (path) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined)
}

/** The text with comments, string and char literals and lifetimes blanked (same offsets), so only code matches. */
export function blankRust(src: string): string {
  const out = src.split('')
  const blank = (from: number, to: number): void => {
    for (let k = from; k < Math.min(to, src.length); k++) if (out[k] !== '\n') out[k] = ' '
  }
  const word = (c: string | undefined): boolean => c !== undefined && /\w/.test(c)
  let i = 0
  while (i < src.length) {
    const c = src[i]
    const next = src[i + 1]
    let end = -1
    const raw = word(src[i - 1]) ? null : /^b?r(#*)"/.exec(src.slice(i, i + 260))
    if (c === '/' && next === '/') {
      end = src.indexOf('\n', i)
      if (end < 0) end = src.length
    } else if (c === '/' && next === '*') {
      let depth = 1
      end = i + 2
      while (end < src.length && depth > 0) {
        if (src.startsWith('/*', end)) depth++
        if (src.startsWith('*/', end)) depth--
        end += src.startsWith('/*', end) || src.startsWith('*/', end) ? 2 : 1
      }
    } else if (raw) {
      const close = src.indexOf(`"${raw[1] ?? ''}`, i + raw[0].length)
      end = close < 0 ? src.length : close + 1 + (raw[1] ?? '').length
    } else if (c === '"' || (c === 'b' && next === '"' && !word(src[i - 1]))) {
      end = c === 'b' ? i + 2 : i + 1
      while (end < src.length && src[end] !== '"') end += src[end] === '\\' ? 2 : 1
      end++
    } else if (c === "'") {
      if (next === '\\') end = src.indexOf("'", i + 3) + 1
      else if (src[i + 2] === "'") end = i + 3
      else if (word(next)) for (end = i + 1; word(src[end]);) end++
      else end = src.indexOf("'", i + 1) + 1
      if (end <= i) end = i + 1
    }
    if (end < 0) {
      i++
    } else {
      blank(i, end)
      i = end
    }
  }
  return out.join('')
}

/** Blanks every item under `#[cfg(test)]`: up to its `;` or the `}` that closes its body. */
function withoutTests(text: string): string {
  const out = text.split('')
  for (const m of text.matchAll(/#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]/g)) {
    const start = m.index
    let j = start + m[0].length
    const isUse = /^\s*(?:#\s*\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?use\b/.test(text.slice(j, j + 300))
    let depth = 0
    for (; j < text.length; j++) {
      if (text[j] === '{' || text[j] === '[' || text[j] === '(') depth++
      if (text[j] === '}' || text[j] === ']' || text[j] === ')') {
        depth--
        if (depth === 0 && text[j] === '}' && !isUse) break
      }
      if (text[j] === ';' && depth === 0) break
    }
    for (let k = start; k <= j && k < text.length; k++) if (out[k] !== '\n') out[k] = ' '
  }
  return out.join('')
}

interface Mod {
  path: string
  file: string
  parent?: Mod
  /** The folder its `mod x;` children live in. */
  dir: string
  children: Map<string, Mod>
  defs: Set<string>
  /** `use` bindings by the name they bind, as written (resolved from this module). */
  bindings: Map<string, string[]>
  globs: string[][]
}

interface Ref {
  scope: Mod
  segs: string[]
}

function newMod(path: string, file: string, dir: string, parent: Mod | undefined): Mod {
  return { path, file, parent, dir, children: new Map(), defs: new Set(), bindings: new Map(), globs: [] }
}

/** Where a name leads: the module that defines it (or the module itself), or outside the crate. */
type Target = { mod: Mod; name: string; isModule: boolean } | 'extern'

/** Splits a use tree (`a::{b, c::d as e, f::*}`) into its paths; `*` marks a glob, `as` an alias. */
function useTree(tree: string, prefix: string[] = []): { segs: string[]; alias?: string }[] {
  tree = tree.trim()
  const open = tree.indexOf('{')
  if (open < 0) {
    const [path = '', alias] = tree.split(/\s+as\s+/)
    const segs = [...prefix, ...path.split('::').map((s) => s.trim())]
    if (segs[segs.length - 1] === 'self') segs.pop()
    return [{ segs, alias: alias?.trim() }]
  }
  const head = tree
    .slice(0, open)
    .split('::')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  const parts: string[] = []
  let depth = 0
  let from = open + 1
  for (let k = from; k < tree.lastIndexOf('}'); k++) {
    if (tree[k] === '{') depth++
    if (tree[k] === '}') depth--
    if (tree[k] === ',' && depth === 0) {
      parts.push(tree.slice(from, k))
      from = k + 1
    }
  }
  parts.push(tree.slice(from, tree.lastIndexOf('}')))
  return parts.filter((p) => p.trim() !== '').flatMap((p) => useTree(p, [...prefix, ...head]))
}

/** The Rust crate's import edges, from `root` (its lib.rs) down the `mod` tree. */
export function rustEdges(read: Read, root = 'src/lib.rs'): Edge[] {
  const refs: (Ref & { file: string; top: Mod })[] = []
  const crate = load(root, 'crate', dirname(root), undefined)

  function load(file: string, path: string, dir: string, parent: Mod | undefined): Mod {
    const src = read(file)
    if (src === undefined) throw new Error(`module ${path}: no file ${file}`)
    const text = withoutTests(blankRust(src))
    // depth[k]: how many braces are open before offset k.
    const depth: number[] = [0]
    for (let k = 0; k < text.length; k++) depth.push(at(depth, k) + (text[k] === '{' ? 1 : text[k] === '}' ? -1 : 0))
    const top = newMod(path, file, dir, parent)
    // Inline modules: their body's range and depth.
    const scopes: { mod: Mod; from: number; to: number; depth: number }[] = []
    for (const m of text.matchAll(/\bmod\s+([A-Za-z_]\w*)\s*\{/g)) {
      const from = m.index + m[0].length
      let to = from
      while (to < text.length && at(depth, to + 1) >= at(depth, from)) to++
      const outer = scopeAt(m.index)
      const name = group(m, 1)
      const mod = newMod(`${outer.path}::${name}`, file, join(outer.dir, name), outer)
      outer.children.set(name, mod)
      scopes.push({ mod, from, to, depth: at(depth, from) })
    }
    function scopeAt(pos: number): Mod {
      return scopes.filter((s) => s.from <= pos && pos < s.to).pop()?.mod ?? top
    }
    const bodyDepth = (mod: Mod): number => scopes.find((s) => s.mod === mod)?.depth ?? 0
    const atTop = (pos: number, mod: Mod): boolean => at(depth, pos) === bodyDepth(mod)

    for (const m of text.matchAll(/\bmod\s+([A-Za-z_]\w*)\s*;/g)) {
      const outer = scopeAt(m.index)
      const name = group(m, 1)
      const flat = join(outer.dir, `${name}.rs`)
      const file = read(flat) !== undefined ? flat : join(outer.dir, name, 'mod.rs')
      outer.children.set(name, load(file, `${outer.path}::${name}`, join(outer.dir, name), outer))
    }
    const define = /\b(?:fn|struct|enum|trait|type|union|static|const)\s+(?!fn\b)([A-Za-z_]\w*)|\bmacro_rules!\s*(\w+)/g
    for (const m of text.matchAll(define)) {
      const scope = scopeAt(m.index)
      if (atTop(m.index, scope)) scope.defs.add(m[1] ?? group(m, 2))
    }
    // Items a macro declares (`closed_set! { Name { .. } }`): the first name in its body.
    for (const m of text.matchAll(/\b(\w+)!\s*[{(]\s*(?:#\s*\[[^\]]*\]\s*)*([A-Za-z_]\w*)/g)) {
      const scope = scopeAt(m.index)
      if (m[1] !== 'macro_rules' && atTop(m.index, scope)) scope.defs.add(group(m, 2))
    }
    const uses: [number, number][] = []
    for (const m of text.matchAll(/\buse\s+([^;]*);/g)) {
      uses.push([m.index, m.index + m[0].length])
      const scope = scopeAt(m.index)
      for (const { segs, alias } of useTree(group(m, 1))) {
        const name = alias ?? segs[segs.length - 1] ?? ''
        if (name === '*') scope.globs.push(segs.slice(0, -1))
        else if (name !== '_') scope.bindings.set(name, segs)
        refs.push({ scope, segs: name === '*' ? segs.slice(0, -1) : segs, file, top })
      }
    }
    for (const m of text.matchAll(/(?<![\w:])(?:crate|super|self)(?:\s*::\s*[A-Za-z_]\w*)+/g)) {
      if (uses.some(([a, b]) => a <= m.index && m.index < b)) continue
      refs.push({ scope: scopeAt(m.index), segs: m[0].split('::').map((s) => s.trim()), file, top })
    }
    return top
  }

  function lookup(mod: Mod, name: string, hops: number): Target | undefined {
    if (hops > 32) return undefined
    const child = mod.children.get(name)
    if (child) return { mod: child, name, isModule: true }
    if (mod.defs.has(name)) return { mod, name, isModule: false }
    const bound = mod.bindings.get(name)
    if (bound) return walk(mod, bound, hops + 1)
    for (const glob of mod.globs) {
      const through = walk(mod, glob, hops + 1)
      const found = through === 'extern' ? undefined : lookup(through.mod, name, hops + 1)
      if (found) return found
    }
    return undefined
  }

  function walk(scope: Mod, segs: string[], hops: number): Target {
    let mod = scope
    let k = 0
    if (segs[0] === 'crate') [mod, k] = [crate, 1]
    else if (segs[0] === 'self') k = 1
    else if (segs[0] === 'super') {
      for (; segs[k] === 'super'; k++) mod = mod.parent ?? mod
    } else if (!segs[0] || lookup(scope, segs[0], hops) === undefined) return 'extern'
    for (const seg of segs.slice(k)) {
      const found = lookup(mod, seg, hops)
      // Not found (a name a macro makes that the scan missed): the module it was looked up in.
      if (found === undefined) return { mod, name: seg, isModule: false }
      if (found === 'extern' || !found.isModule) return found
      mod = found.mod
    }
    return { mod, name: segs[segs.length - 1] ?? mod.path, isModule: true }
  }

  const edges = new Map<string, Edge>()
  for (const ref of refs) {
    const target = walk(ref.scope, ref.segs, 0)
    if (target === 'extern') continue
    const to = target.mod.file
    // A module's own submodules are its parts, not its imports.
    if (to === ref.file || target.mod.path.startsWith(`${ref.top.path}::`)) continue
    const key = `${ref.file}\n${to}`
    const edge = edges.get(key) ?? { from: ref.file, to, names: [] }
    if (!edge.names.includes(target.name)) edge.names.push(target.name)
    edges.set(key, edge)
  }
  return [...edges.values()]
}

/** Every `.ts` file (not `.d.ts`) under `dir`, relative to `root`. */
export function tsFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = posix.join(dir, e.name)
    if (e.isDirectory()) return tsFiles(root, path)
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : []
  })
}

const CLAUSE = String.raw`(?:type\s+)?(\*(?:\s+as\s+[\w$]+)?|[\w$]+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+[\w$]+))?|\{[^}]*\})`
const STATIC_IMPORT = new RegExp(String.raw`^[ \t]*(?:import|export)\s+${CLAUSE}\s*from\s*['"]([^'"]+)['"]`, 'gm')
const BARE_IMPORT = /^[ \t]*import\s*['"]([^'"]+)['"]/gm

/** The names an import or export clause takes: `default`, `*`, or each `{ a, type b, c as d }` as exported. */
function clauseNames(clause: string): string[] {
  const names: string[] = []
  const braces = /\{([^}]*)\}/.exec(clause)
  const outside = clause.replace(/\{[^}]*\}/, '').trim()
  if (outside.startsWith('*')) names.push('*')
  else if (/^[\w$]+/.test(outside)) names.push('default')
  for (const part of braces?.[1]?.split(',') ?? []) {
    const [name = ''] = part
      .trim()
      .replace(/^type\s+/, '')
      .split(/\s+as\s+/)
    if (name.trim() !== '') names.push(name.trim())
  }
  return names
}

/** The TypeScript import edges among `files` (static `import`/`export … from`, type-only included). */
export function tsEdges(read: Read, files: string[]): Edge[] {
  const known = new Set(files)
  const edges: Edge[] = []
  for (const from of files) {
    const src = (read(from) ?? '').replace(/\/\*[\s\S]*?\*\//g, '')
    const found = [
      ...[...src.matchAll(STATIC_IMPORT)].map((m) => ({ spec: group(m, 2), names: clauseNames(group(m, 1)) })),
      ...[...src.matchAll(BARE_IMPORT)].map((m) => ({ spec: group(m, 1), names: [] as string[] })),
    ]
    for (const { spec, names } of found) {
      if (!spec.startsWith('.')) continue
      const base = posix.join(posix.dirname(from), spec).replace(/\.js$/, '')
      const to = [`${base}.ts`, `${base}/index.ts`].find((f) => known.has(f))
      if (to === undefined) {
        // Leaving the tree (generated index.js, bindings/) is out of scope; a miss inside it is a parser bug.
        if (base.startsWith(`${from.split('/')[0]}/`)) throw new Error(`${from}: cannot resolve ${spec}`)
        continue
      }
      const edge = edges.find((e) => e.from === from && e.to === to)
      if (edge) edge.names.push(...names.filter((n) => !edge.names.includes(n)))
      else edges.push({ from, to, names })
    }
  }
  return edges
}

/** The circles of a graph: each strongly connected set of two or more files (Tarjan), sorted. */
export function cycles(edges: Edge[]): Cycle[] {
  const out = new Map<string, string[]>()
  for (const e of edges) out.set(e.from, [...(out.get(e.from) ?? []), e.to])
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))].sort()
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: Cycle[] = []
  const visit = (v: string): void => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of out.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const files: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      files.push(w)
    } while (w !== v)
    if (files.length < 2) return
    const inside = new Set(files)
    const tie = edges.filter((e) => inside.has(e.from) && inside.has(e.to))
    found.push({ files: files.sort(), edges: tie.sort((a, b) => (a.from + a.to < b.from + b.to ? -1 : 1)) })
  }
  for (const v of nodes) if (!index.has(v)) visit(v)
  return found.sort((a, b) => (a.files.join() < b.files.join() ? -1 : 1))
}

/** One line per circle and one per edge inside it: the files and the names that tie them. */
export function cycleLines(found: Cycle[]): string[] {
  return found.flatMap((c) => [
    `circle: ${c.files.join(' , ')}`,
    ...c.edges.map((e) => `  ${e.from} -> ${e.to}: ${e.names.join(', ')}`),
  ])
}
