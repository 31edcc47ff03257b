// The documentation's TypeScript blocks compile as written: each ```ts block
// of README.md, CONTRIBUTING.md and docs/*.md is written to its own file in a
// fresh strict NodeNext ES-module project whose node_modules/loopx-hooks links
// to this package (resolved through its package.json `exports`, as a
// consumer's would be), and tsc must accept them all. A block that is not
// meant to compile is preceded by the line
// `<!-- readme.spec: not compiled (reason) -->`. The `await using` block is
// checked with lib esnext.disposable, as getting-started.md says. Then each
// compiled block runs with this Node, in a folder of its own (the README's
// executor in the quick start's), and must exit 0 without stderr.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

import { pages } from './support/doc_pages.js'

const root = join(__dirname, '..')
const tmp = mkdtempSync(join(tmpdir(), 'loopx-hooks-readme-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

const SKIP = /<!-- readme\.spec: not compiled \(.+\) -->\s*$/

/** Every fenced block with its language, its first line number, and whether it is marked not to compile. */
export function blocks(markdown: string): { lang: string; line: number; code: string; skip: boolean }[] {
  const out: { lang: string; line: number; code: string; skip: boolean }[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!)
    if (!open) continue
    const start = i
    let end = i + 1
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++
    const before = lines.slice(Math.max(0, start - 2), start).join('\n')
    out.push({ lang: open[1]!, line: start + 1, code: lines.slice(start + 1, end).join('\n'), skip: SKIP.test(before) })
    i = end
  }
  return out
}

describe('documentation code blocks', () => {
  it('every ts block type-checks in a fresh strict NodeNext project, and runs', { timeout: 300_000 }, () => {
    const all = pages().flatMap((page) =>
      blocks(readFileSync(join(root, page), 'utf8'))
        .filter((b) => b.lang === 'ts' || b.lang === 'typescript')
        .map((b) => ({ ...b, page })),
    )
    const inReadme = all.filter((b) => b.page === 'README.md')
    expect(inReadme.length, 'the README has its quick start and executor blocks').toBeGreaterThanOrEqual(2)
    expect(
      inReadme.filter((b) => b.skip),
      'every README block compiles',
    ).toEqual([])
    expect(all.length, 'the docs have TypeScript blocks').toBeGreaterThanOrEqual(10)
    const compiled = all.filter((b) => !b.skip)

    mkdirSync(join(tmp, 'src'), { recursive: true })
    mkdirSync(join(tmp, 'node_modules'), { recursive: true })
    symlinkSync(root, join(tmp, 'node_modules', 'loopx-hooks'), 'dir')
    // The optional peers the OpenTelemetry, orchestrator and scheduler blocks
    // import, installed as a user of those subpaths would.
    mkdirSync(join(tmp, 'node_modules', '@opentelemetry'), { recursive: true })
    symlinkSync(
      join(root, 'node_modules', '@opentelemetry', 'api'),
      join(tmp, 'node_modules', '@opentelemetry', 'api'),
      'dir',
    )
    symlinkSync(join(root, 'node_modules', 'better-sqlite3'), join(tmp, 'node_modules', 'better-sqlite3'), 'dir')
    writeFileSync(join(tmp, 'package.json'), JSON.stringify({ name: 'readme-check', private: true, type: 'module' }))
    const files = compiled.map((b) => {
      const name = `block_${b.page.replace(/[^A-Za-z0-9]/g, '_')}_line_${b.line}.ts`
      // `export {}` makes a block without imports a module too (top-level await).
      writeFileSync(join(tmp, 'src', name), `${b.code}\nexport {}\n`)
      return name
    })
    writeFileSync(join(tmp, 'src', 'control.ts'), "export const planted: number = 'not a number'\n")
    writeFileSync(
      join(tmp, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['es2022', 'esnext.disposable'],
          strict: true,
          resolveJsonModule: true,
          outDir: 'dist',
          rootDir: 'src',
          types: ['node'],
          typeRoots: [join(root, 'node_modules', '@types')],
        },
        include: ['src'],
      }),
    )
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--pretty', 'false'],
      { cwd: tmp, encoding: 'utf8', timeout: 110_000 },
    )
    // Name the page and line of each error.
    const pageOf = new Map(compiled.map((b, i) => [files[i]!, b.page]))
    const output = `${tsc.stdout}${tsc.stderr}`.replace(
      /src\/(block_\w+_line_(\d+)\.ts)\((\d+),/g,
      (_m, file: string, at: string, row: string) =>
        `${pageOf.get(file)}:${Number(at) + Number(row)} (block at line ${at}) (`,
    )
    // The control file's one planted error proves this check can fail; nothing else may.
    const lines = output.split('\n').filter((l) => /error TS\d+/.test(l))
    expect(lines.filter((l) => !l.startsWith('src/control.ts'))).toEqual([])
    expect(lines).toHaveLength(1)
    expect(tsc.status).not.toBe(0)
    expect(files.length).toBe(compiled.length)

    // And they run, as compiled, on this Node (20: `await using` works here
    // only because tsc lowered it), each in a fresh folder of its own, so the
    // files a block creates (hooks.sqlite, ...) are its own.
    // Except the README's executor: it runs where the quick start ran, as the README says, and
    // admits the intent the quick start recorded.
    const inReadmeAt = (text: string) => compiled.findIndex((b) => b.page === 'README.md' && b.code.includes(text))
    const quickStart = inReadmeAt('installPeriodicReport(runtime)')
    const executor = inReadmeAt('journal.consume(')
    expect([quickStart >= 0, executor > quickStart]).toEqual([true, true])
    const outputs: string[] = []
    for (const [i, name] of files.entries()) {
      const js = join(tmp, 'dist', name.replace(/\.ts$/, '.js'))
      const cwd = join(tmp, 'run', String(i === executor ? quickStart : i))
      mkdirSync(cwd, { recursive: true })
      const ran = spawnSync(process.execPath, [js], { cwd, encoding: 'utf8', timeout: 60_000 })
      expect(ran.stderr, `${name}: stderr`).toBe('')
      expect(ran.status, `${name} exited`).toBe(0)
      outputs.push(ran.stdout)
    }
    // What the pages say a block prints, it prints: the quick start recorded
    // its intent, which waits in the outbox; the executor admitted it; the scheduler promoted at the
    // threshold; the shipped dialect invoked its hook; the turn-start hook
    // required its read before work; the seam ran its three steps, then the hook.
    const printed = (page: string, text: string) => {
      const i = compiled.findIndex((b) => b.page === page && b.code.includes(text))
      expect(i, `${page} has a block with ${text}`).toBeGreaterThanOrEqual(0)
      return outputs[i]
    }
    expect(printed('README.md', 'installPeriodicReport(runtime)')).toBe(
      "[ 'periodic_report.runtime_trigger: recorded' ]\n1\n",
    )
    expect(printed('README.md', 'journal.consume(')).toBe(
      'admitted and done: periodic_report.trigger_evaluation from periodic_report.runtime_trigger\n',
    )
    expect(printed('docs/capabilities.md', 'PeriodicReportScheduler.open')).toBe("3 [ 'hold', 'hold', 'promote' ]\n")
    expect(printed('docs/dialects.md', "dialect: 'loopx-shipped-v0'")).toBe('1 1\n')
    expect(printed('docs/turn-start.md', 'new TurnStartKernel')).toBe(
      "[ 'ok' ] notify_keep_selected\nagent: loopx inbox read --pending; cli: loopx inbox read --pending\n",
    )
    // A reader runs an example more than once, and its files stay: the turn-start block, run
    // again in its folder (inbox.sqlite kept), still answers a valid receipt. msg_1 is no
    // longer new, so `empty`, and still pending, so the read stays required.
    const turnStart = compiled.findIndex(
      (b) => b.page === 'docs/turn-start.md' && b.code.includes('new TurnStartKernel'),
    )
    const again = spawnSync(process.execPath, [join(tmp, 'dist', files[turnStart]!.replace(/\.ts$/, '.js'))], {
      cwd: join(tmp, 'run', String(turnStart)),
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect([again.status, again.stderr]).toEqual([0, ''])
    expect(again.stdout).toBe(
      "[ 'empty' ] preempt_material_review\nagent: loopx inbox read --pending; cli: loopx inbox read --pending\n",
    )
    expect(printed('docs/orchestrator.md', 'TurnSettlement.open')).toBe(
      "validate: passed, durable_writeback: committed, quota_spend: spent\n[ 'recorded' ]\n",
    )
  })

  it('the extractor finds each block, its line and its not-compiled marker', () => {
    const found = blocks(
      'text\n```ts\nconst n: number = "x"\n```\n<!-- readme.spec: not compiled (prose) -->\n```ts\nnope(\n```\n',
    )
    expect(found.map((b) => [b.line, b.skip])).toEqual([
      [2, false],
      [6, true],
    ])
  })
})
