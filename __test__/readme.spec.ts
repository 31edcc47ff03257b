// The README's TypeScript blocks compile as written: each ```ts block is
// written to its own file in a fresh strict NodeNext ES-module project whose
// node_modules/loopx-hooks links to this package (resolved through its
// package.json `exports`, as a consumer's would be), and tsc must accept them
// all. A block that is not meant to compile is preceded by the line
// `<!-- readme.spec: not compiled (reason) -->`; none is at present. The
// `await using` block is checked with lib esnext.disposable, as the README says.
// Then each compiled block runs with this Node and must exit 0 without stderr.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, describe, expect, it } from 'vitest'

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

describe('README code blocks', () => {
  it('every ts block type-checks in a fresh strict NodeNext project', { timeout: 120_000 }, () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const ts = blocks(readme).filter((b) => b.lang === 'ts' || b.lang === 'typescript')
    expect(ts.length, 'the README has TypeScript blocks').toBeGreaterThanOrEqual(3)
    const compiled = ts.filter((b) => !b.skip)

    mkdirSync(join(tmp, 'src'), { recursive: true })
    mkdirSync(join(tmp, 'node_modules'), { recursive: true })
    symlinkSync(root, join(tmp, 'node_modules', 'loopx-hooks'), 'dir')
    // The optional peer the OpenTelemetry block imports, installed as a user of loopx-hooks/otel would.
    mkdirSync(join(tmp, 'node_modules', '@opentelemetry'), { recursive: true })
    symlinkSync(
      join(root, 'node_modules', '@opentelemetry', 'api'),
      join(tmp, 'node_modules', '@opentelemetry', 'api'),
      'dir',
    )
    writeFileSync(join(tmp, 'package.json'), JSON.stringify({ name: 'readme-check', private: true, type: 'module' }))
    const files = compiled.map((b) => {
      const name = `block_line_${b.line}.ts`
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
    // Name the README line of each error.
    const output = `${tsc.stdout}${tsc.stderr}`.replace(/src\/block_line_(\d+)\.ts\((\d+),/g, (_m, at, row) => {
      return `README.md:${Number(at) + Number(row)} (block at line ${at}) (`
    })
    // The control file's one planted error proves this check can fail; nothing else may.
    const lines = output.split('\n').filter((l) => /error TS\d+/.test(l))
    expect(lines.filter((l) => !l.startsWith('src/control.ts'))).toEqual([])
    expect(lines).toHaveLength(1)
    expect(tsc.status).not.toBe(0)
    expect(files.length).toBe(compiled.length)

    // And they run, as compiled, on this Node (20: `await using` works here
    // only because tsc lowered it), each in the project folder.
    let stdout = ''
    for (const name of files) {
      const js = name.replace(/\.ts$/, '.js')
      const ran = spawnSync(process.execPath, [join('dist', js)], { cwd: tmp, encoding: 'utf8', timeout: 60_000 })
      expect(ran.stderr, `${name}: stderr`).toBe('')
      expect(ran.status, `${name} exited`).toBe(0)
      rmSync(join(tmp, 'hooks.sqlite'), { force: true })
      stdout += ran.stdout
    }
    // "Using it" really dispatched and recorded its intent.
    expect(stdout).toContain('periodic_report.runtime_trigger: recorded')
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
