// Copies the latest benchmark table (bench/RESULTS.md) into docs/benchmark.md
// between the BENCH markers, so the benchmark page shows the figures of the
// last full run.
import { readFileSync, writeFileSync } from 'node:fs'

const PAGE = 'docs/benchmark.md'
const results = readFileSync('bench/RESULTS.md', 'utf8')
const table = results.slice(results.indexOf('loopx-hooks benchmark,')).trim()
const page = readFileSync(PAGE, 'utf8')
const start = '<!-- BENCH:START -->'
const end = '<!-- BENCH:END -->'
const a = page.indexOf(start)
const b = page.indexOf(end)
if (a < 0 || b < a) throw new Error(`${PAGE} has no BENCH markers`)
writeFileSync(PAGE, `${page.slice(0, a + start.length)}\n${table}\n${page.slice(b)}`)
