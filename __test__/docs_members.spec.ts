// The documentation names only what the package publishes. Across README.md
// and docs/*.md (docs/spec/ holds cited texts), each of these must resolve to
// a declaration the package ships (the .d.ts files of package.json
// "exports", index.d.ts, bindings/, and the Python adapter's `def`s and
// `class`es), or be on the short allowlist of Node, SQL, OpenTelemetry,
// Python and LoopX names below:
// - a member call or access in inline code on a receiver the docs use for one
//   class (`journal.pending()`, `runtime.journal.claim(`, `HookJournal.open(`)
//   is a member of that class; a bare call in a table under a heading that
//   names a class (`pending(query?)` under "`HookJournal`") is one of its
//   members; any other call is a callable declaration;
// - an option in an options table (a table with an "option" column) is a
//   member of a parameter type of the call its row, its header or the line
//   before the table names (`claim(options)`), or of any published call's
//   parameter when none is named;
// - a camelCase name alone in inline code, a `.name`, a key of an object
//   literal in inline code, and a member call in a ts block marked not
//   compiled, is a name declared anywhere in the package.
//
// Chosen approach: the TypeScript compiler API over the published .d.ts (a
// program and its checker, as a consumer's editor sees them), because prose
// has no types to check: the checker gives each class's members and each
// call's parameter types, so a name is judged against what its receiver or
// call really has, not against every name in the package (`pending` and
// `kind` exist elsewhere, so a flat name list would let the stale
// `journal.pending()` and the outbox's `kind` option through). The ts blocks
// that compile are readme.spec.ts's, which type-checks them in a fresh strict
// NodeNext project; this covers what that cannot see: inline code, tables
// and blocks marked not compiled.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import ts from 'typescript'
import { describe, expect, it } from 'vitest'

import { pages } from './support/doc_pages.js'

const root = join(__dirname, '..')

/** Names a page may use that the package does not declare. */
const ALLOWED = new Set([
  // Node.js and the language
  ...['AbortSignal', 'Date', 'Symbol', 'asyncDispose', 'dispose', 'require', 'import', 'setImmediate', 'disposable'],
  ...['exit', 'kill', 'toJSON', 'stringify', 'parse', 'mkdtempSync'],
  ...['eventLoopUtilization', 'resourceUsage', 'maxRSS', 'cpuUsage', 'monitorEventLoopDelay', 'hasSubscribers'],
  // OpenTelemetry's API (the optional peer)
  ...['getTracer', 'getMeter'],
  // JSON Schema, Rust and SQL
  ...['oneOf', 'minItems', 'serde', 'min', 'meta', 'IN'],
  // Python's standard library and LoopX's side of the seam
  ...['dumps', 'strip', 'pyjson', 'monotonic', 'PathLike', 'subscribed', 'post_writeback_transaction'],
  ...['registration_schema', 'pid'],
  // the serve protocol's words (`loopx-hooks serve --help`)
  'only_hook_id',
  // a name of earlier versions, said as such
  'journalPath',
])

/** A receiver the docs always use for one class. */
const RECEIVERS: Record<string, string[]> = {
  journal: ['HookJournal'],
  'runtime.journal': ['HookJournal'],
  runtime: ['HookRuntime', 'ShippedHookRuntime'],
  kernel: ['TurnStartKernel'],
  inbox: ['InboxStore'],
  session: ['TurnStartSession'],
  'context.session': ['TurnStartSession'],
  settlement: ['TurnSettlement'],
  seam: ['TurnSettlement'],
}

/** Pages about one class: a bare call there (`pending(query?)`) is one of its members, or an exported function. */
const PAGE_CLASSES: Record<string, string[]> = {
  'docs/outbox.md': ['HookJournal'],
}

/** What the package publishes, read through the checker from its declaration files. */
export class Published {
  /** Every declared name and string literal type of the shipped .d.ts files and the Python adapter. */
  readonly names = new Set<string>()
  /** Names declared as something callable: a function, method, class or function-typed member. */
  readonly callables = new Set<string>()
  /** The exported functions, classes and values of every entry point, by name. */
  readonly functions = new Set<string>()
  /** The members (instance and static) of each exported class or interface. */
  readonly members = new Map<string, Set<string>>()
  /** Per call name (`claim`, `open`, `TurnStartKernel` for its constructor): its parameters' members. */
  readonly options = new Map<string, Set<string>>()
  readonly #checker: ts.TypeChecker

  constructor() {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, string | { types?: string }>
    }
    const entries = Object.values(pkg.exports).flatMap((t) =>
      typeof t === 'object' && t.types ? [join(root, t.types)] : [],
    )
    const program = ts.createProgram(entries, {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.Node16,
      moduleResolution: ts.ModuleResolutionKind.Node16,
      strict: true,
      noEmit: true,
      types: ['node'],
    })
    const checker = (this.#checker = program.getTypeChecker())
    for (const entry of entries) {
      const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!
      for (const exported of checker.getExportsOfModule(moduleSymbol)) {
        const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
        const declaration = symbol.declarations?.[0]
        if (declaration === undefined) continue
        if (symbol.flags & ts.SymbolFlags.Value) this.functions.add(exported.name)
        const sides: ts.Type[] = []
        if (symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))
          sides.push(checker.getDeclaredTypeOfSymbol(symbol))
        if (symbol.flags & ts.SymbolFlags.Value) sides.push(checker.getTypeOfSymbolAtLocation(symbol, declaration))
        const own = this.members.get(exported.name) ?? new Set<string>()
        for (const side of sides) {
          this.addOptions(exported.name, side.getConstructSignatures())
          this.addOptions(exported.name, side.getCallSignatures())
          for (const property of checker.getPropertiesOfType(side)) {
            const name = property.name.replace(/^__@(\w+)@\d+$/, '$1')
            own.add(name)
            const type = checker.getTypeOfSymbol(property)
            this.addOptions(name, type.getCallSignatures())
          }
        }
        if (symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface)) this.members.set(exported.name, own)
      }
    }
    // Every name the shipped declaration files and the Python adapter declare.
    const files = [
      join(root, 'index.d.ts'),
      ...declarationFiles(join(root, 'dist')),
      ...declarationFiles(join(root, 'bindings')),
    ]
    for (const file of files) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false)
      const visit = (node: ts.Node): void => {
        const name = (node as { name?: ts.Node }).name
        // Parameter names count: a hover shows them, and the docs name arguments as the caller spells them.
        if (name !== undefined && (ts.isIdentifier(name) || ts.isStringLiteral(name))) {
          this.names.add(name.text)
          const typeNode = (node as { type?: ts.Node }).type
          if (
            (ts.isFunctionLike(node) && !ts.isParameter(node)) ||
            ts.isClassDeclaration(node) ||
            (ts.isVariableDeclaration(node) && node.initializer !== undefined) ||
            (typeNode !== undefined && ts.isFunctionTypeNode(typeNode))
          )
            this.callables.add(name.text)
        }
        if (ts.isLiteralTypeNode(node) && ts.isStringLiteral(node.literal)) this.names.add(node.literal.text)
        ts.forEachChild(node, visit)
      }
      visit(source)
    }
    const python = join(root, 'python', 'loopx_hooks')
    for (const file of readdirSync(python).filter((f) => f.endsWith('.py'))) {
      const text = readFileSync(join(python, file), 'utf8')
      for (const m of text.matchAll(/^\s*(?:async\s+)?(?:def|class)\s+(\w+)/gm)) {
        this.names.add(m[1]!)
        this.callables.add(m[1]!)
      }
      // The words of the serve protocol the adapter speaks (`"only_hook_id"`) are names it publishes too.
      for (const m of text.matchAll(/["']([A-Za-z_]\w*)["']/g)) this.names.add(m[1]!)
    }
    for (const set of this.members.values()) for (const name of set) this.names.add(name)
  }

  /** Each parameter's members (of every object type in its union), under the call's name. */
  addOptions(call: string, signatures: readonly ts.Signature[]): void {
    const set = this.options.get(call) ?? new Set<string>()
    for (const signature of signatures)
      for (const parameter of signature.getParameters()) {
        let type = this.#checker.getNonNullableType(this.#checker.getTypeOfSymbol(parameter))
        // A generic parameter (`open<O extends HookRuntimeOptions>(options: O)`) takes its constraint's members.
        if (type.flags & ts.TypeFlags.TypeParameter) type = this.#checker.getBaseConstraintOfType(type) ?? type
        for (const part of type.isUnion() ? type.types : [type])
          if (part.flags & (ts.TypeFlags.Object | ts.TypeFlags.Intersection))
            for (const property of this.#checker.getPropertiesOfType(part)) set.add(property.name)
      }
    if (signatures.length > 0) this.options.set(call, set)
  }

  /** Whether `name` is a member of one of `classes`. */
  memberOf(classes: readonly string[], name: string): boolean {
    return classes.some((c) => this.members.get(c)?.has(name))
  }

  /** Whether `name` is an option of one of `calls` (every published call's, when none of them is known). */
  optionOf(calls: readonly string[], name: string): boolean {
    const known = calls.filter((c) => this.options.has(c))
    if (known.length === 0) return [...this.options.values()].some((set) => set.has(name))
    return known.some((c) => this.options.get(c)!.has(name))
  }
}

function declarationFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.d.ts'))
    .map((f) => join(dir, f))
}

/** One name a page uses: where, how it was found, and what it must resolve to. */
export interface Use {
  name: string
  at: string
  how: 'member of' | 'callable' | 'option of' | 'name'
  /** The classes (`member of`) or calls (`option of`) it is judged against. */
  scope: string[]
}

const IDENT = /^[A-Za-z_$][\w$]*$/
/** Words before a parenthesis that call nothing. */
const KEYWORDS = new Set(['if', 'for', 'while', 'function', 'await', 'typeof', 'async', 'return', 'new', 'switch'])

/** The calls a text names in code: `claim(options)` is `claim`, `new X(` and `X.open(` are `X` and `open`. */
function callsIn(text: string): string[] {
  return spans(text).flatMap((span) =>
    [...span.matchAll(/(?:new\s+([A-Z][\w$]*)\s*\(|([A-Za-z_$][\w$]*)\s*\()/g)].map((m) => m[1] ?? m[2]!),
  )
}

/** The names a page's inline code, options tables and not-compiled ts blocks use. */
export function namesUsed(
  page: string,
  markdown: string,
  classes: ReadonlySet<string>,
  functions: ReadonlySet<string> = new Set(),
): Use[] {
  const out: Use[] = []
  const pageClasses = PAGE_CLASSES[page] ?? []
  const lines = joinSpans(markdown.split('\n'))
  let fence: 'skipped-ts' | 'other' | null = null
  let skipNext = false
  let optionColumn = -1
  let callColumn = -1
  let tableCalls: string[] = []
  let rowCalls: string[] = []
  let lastCalls: string[] = []
  let headingClass: string[] = []
  for (const [i, line] of lines.entries()) {
    const at = `${page}:${i + 1}`
    const open = /^```(\w*)\s*$/.exec(line)
    if (fence === null && open) {
      fence = skipNext && (open[1] === 'ts' || open[1] === 'typescript') ? 'skipped-ts' : 'other'
      continue
    }
    if (fence !== null) {
      if (/^```\s*$/.test(line)) fence = null
      // Compiled blocks are readme.spec's; a block marked not compiled is checked for its member calls here.
      else if (fence === 'skipped-ts')
        for (const m of line.matchAll(/\.([A-Za-z_$][\w$]*)\s*\(/g))
          out.push({ name: m[1]!, at, how: 'name', scope: [] })
      continue
    }
    skipNext = /<!-- readme\.spec: not compiled \(.+\) -->/.test(line) || (skipNext && line.trim() === '')
    const heading = /^#{1,6} (.+)$/.exec(line)
    if (heading) headingClass = spans(heading[1]!).filter((s) => classes.has(s))

    const cells = /^\s*\|/.test(line) ? splitRow(line) : null
    const isRule = /^\s*\|\s*:?-/.test(line)
    if (cells === null) {
      optionColumn = callColumn = -1
      // The calls a table's options belong to: the last ones named before it (its heading's, or the line before).
      const calls = callsIn(line)
      if (calls.length > 0) lastCalls = calls
    } else if (optionColumn === -1 && callColumn === -1 && /^\s*\|\s*:?-/.test(lines[i + 1] ?? '')) {
      // A table's header: an "option" column makes it an options table; its calls are the header's or the line before's.
      optionColumn = cells.findIndex((c) => /^\s*option\b/i.test(c))
      callColumn = cells.findIndex((c) => /^\s*call\s*$/i.test(c))
      tableCalls = optionColumn >= 0 && callsIn(cells[optionColumn]!).length === 0 ? lastCalls : []
      if (optionColumn >= 0) tableCalls = [...tableCalls, ...spans(cells[optionColumn]!).filter((s) => IDENT.test(s))]
      rowCalls = []
    } else if (!isRule && optionColumn >= 0) {
      if (callColumn >= 0 && (cells[callColumn] ?? '').trim() !== '') rowCalls = callsIn(cells[callColumn]!)
      const calls = callColumn >= 0 ? rowCalls : tableCalls
      for (const span of spans(cells[optionColumn] ?? ''))
        if (IDENT.test(span)) out.push({ name: span, at, how: 'option of', scope: calls })
    }

    const inFirstCell = cells !== null && !isRule ? spans(cells[0] ?? '') : []
    for (const span of spans(line)) {
      for (const m of span.matchAll(/(?:((?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*)\.)?([A-Za-z_$][\w$]*)\s*\(/g)) {
        const [, receiver, name] = m as unknown as [string, string | undefined, string]
        if (KEYWORDS.has(name)) continue
        const scope = receiver === undefined ? [] : (RECEIVERS[receiver] ?? (classes.has(receiver) ? [receiver] : []))
        if (scope.length > 0) out.push({ name, at, how: 'member of', scope })
        else if (receiver === undefined && headingClass.length > 0 && inFirstCell.includes(span))
          out.push({ name, at, how: 'member of', scope: headingClass })
        else if (receiver === undefined && pageClasses.length > 0 && !functions.has(name))
          out.push({ name, at, how: 'member of', scope: pageClasses })
        else out.push({ name, at, how: 'callable', scope: [] })
      }
      // `.name` not called: a name, unless its token is a file name, a path, a version or a dotted snake_case name.
      for (const m of span.matchAll(/\.([A-Za-z_$][\w$]*)(?![\w$])(?!\s*\()/g)) {
        const token = /[\w$.@/<>-]*$/.exec(span.slice(0, m.index))![0] + /^[\w$.@/<>-]*/.exec(span.slice(m.index))![0]
        if (isFileName(token) || /[/<>]/.test(token) || /^\d/.test(token) || /^[a-z0-9_.]+$/.test(token)) continue
        const receiver = span.slice(0, m.index).match(/([A-Za-z_$][\w$.]*)$/)?.[1]
        const scope = receiver === undefined ? [] : (RECEIVERS[receiver] ?? (classes.has(receiver) ? [receiver] : []))
        out.push({ name: m[1]!, at, how: scope.length > 0 ? 'member of' : 'name', scope })
      }
      if (/^[a-z]+[A-Z][\w$]*$/.test(span)) out.push({ name: span, at, how: 'name', scope: [] })
      if (span.includes('{'))
        for (const m of span.matchAll(/(?:^|[{,])\s*([A-Za-z_$][\w$]*)\??\s*(?=[:,}])/g))
          out.push({ name: m[1]!, at, how: 'name', scope: [] })
    }
  }
  return out
}

/**
 * The lines, each prose line whose code span runs on into the next joined
 * with it (and the lines it took left empty), so that spans pair up and
 * line numbers stay.
 */
function joinSpans(lines: string[]): string[] {
  const out = [...lines]
  let fenced = false
  for (let i = 0; i < out.length; i++) {
    if (/^```/.test(out[i]!)) fenced = !fenced
    if (fenced || /^\s*\|/.test(out[i]!)) continue
    for (let j = i + 1; (out[i]!.match(/`/g) ?? []).length % 2 === 1 && j < out.length && out[j]!.trim() !== ''; j++) {
      out[i] = `${out[i]} ${out[j]!.trim()}`
      out[j] = ''
    }
  }
  return out
}

/** `hooks.sqlite`, `index.d.ts`, `mod.rs`: a file name, not a member. */
function isFileName(text: string): boolean {
  return /\.(sqlite|db|ts|cts|mts|js|mjs|cjs|json|jsonl|md|py|rs|toml|txt|wal|node|log|sh|tgz|yml|yaml|lock)$/.test(
    text,
  )
}

/** The cells of a table row (an escaped `\|` stays in its cell). */
function splitRow(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
}

/** The text of each inline code span of a line. */
function spans(line: string): string[] {
  return [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.trim())
}

/** Whether a use resolves to what the package publishes. */
function resolves(published: Published, use: Use): boolean {
  if (ALLOWED.has(use.name)) return true
  switch (use.how) {
    case 'member of':
      return published.memberOf(use.scope, use.name)
    case 'option of':
      return published.optionOf(use.scope, use.name)
    case 'callable':
      return published.callables.has(use.name)
    case 'name':
      return published.names.has(use.name)
  }
}

/** The uses on README.md and docs/*.md that name nothing published. */
function unpublished(published: Published): string[] {
  const classes = new Set(published.members.keys())
  return pages()
    .filter((page) => page !== 'CONTRIBUTING.md')
    .flatMap((page) => namesUsed(page, readFileSync(join(root, page), 'utf8'), classes, published.functions))
    .filter((use) => !resolves(published, use))
    .map((use) => `${use.at}: \`${use.name}\` (${use.how}${use.scope.length > 0 ? ` ${use.scope.join(' | ')}` : ''})`)
}

describe('the documentation names what the package publishes', () => {
  const published = new Published()

  it('the published declarations give each class its members and each call its options', () => {
    expect(published.memberOf(['HookJournal'], 'listIntents')).toBe(true)
    expect(published.memberOf(['HookJournal'], 'asyncDispose')).toBe(true)
    expect(published.memberOf(['HookJournal'], 'pending')).toBe(false)
    expect(published.memberOf(['InboxStore'], 'pending')).toBe(true)
    expect(published.optionOf(['claim'], 'capabilityId')).toBe(true)
    expect(published.optionOf(['claim'], 'capability')).toBe(false)
    expect(published.optionOf(['TurnStartKernel'], 'profile')).toBe(true)
    expect(published.names.has('integrityCheck')).toBe(false)
  })

  it('every member call, option and object key in README.md and docs/*.md is declared by the package', () => {
    expect(unpublished(published)).toEqual([])
  })

  it('the extractor scopes calls by receiver, heading and table, and skips file names', () => {
    const page = [
      '## `HookJournal`',
      'Call `journal.pending()` or `HookJournal.open(path)`; see `integrityCheck`, `hooks.sqlite` and `0.1.0`.',
      '',
      '| reader | what |',
      '| --- | --- |',
      '| `pending(query?)` | intents |',
      '',
      '| call | option | default |',
      '| --- | --- | --- |',
      '| `claim(options)` | `capability` | all |',
      '',
      'Open it with `profile: { enable: true }`.',
      '<!-- readme.spec: not compiled (an excerpt) -->',
      '```ts',
      'await journal.gone()',
      '```',
    ].join('\n')
    const uses = namesUsed('p.md', page, new Set(['HookJournal']))
    expect(uses.map((u) => `${u.at} ${u.name} ${u.how} ${u.scope.join('|')}`.trim())).toEqual([
      'p.md:2 pending member of HookJournal',
      'p.md:2 open member of HookJournal',
      'p.md:2 integrityCheck name',
      'p.md:6 pending member of HookJournal',
      'p.md:10 capability option of claim',
      'p.md:10 claim member of HookJournal',
      'p.md:12 profile name',
      'p.md:12 enable name',
      'p.md:15 gone name',
    ])
  })
})
