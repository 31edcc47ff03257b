// Copies the latest benchmark table (bench/RESULTS.md) into README.md between
// the BENCH markers, so the README shows the figures of the last full run.
import { readFileSync, writeFileSync } from 'node:fs'

const results = readFileSync('bench/RESULTS.md', 'utf8')
const table = results.slice(results.indexOf('loopx-hooks benchmark,')).trim()
const readme = readFileSync('README.md', 'utf8')
const start = '<!-- BENCH:START -->'
const end = '<!-- BENCH:END -->'
const a = readme.indexOf(start)
const b = readme.indexOf(end)
if (a < 0 || b < a) throw new Error('README.md has no BENCH markers')
writeFileSync('README.md', `${readme.slice(0, a + start.length)}\n${table}\n${readme.slice(b)}`)
