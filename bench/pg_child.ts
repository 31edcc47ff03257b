/**
 * One "host" of the PostgreSQL multi-process rows (bench/pg.ts): its own
 * runtime on the shared database and schema, its own identities (tag).
 *
 *   pg_child.js <ours|plain> <schema> <tag> <n> <inflight>
 *
 * The connection string comes in LOOPX_BENCH_PG_URL (never on a command
 * line). Opens, warms up, prints `ready`, waits for a line on stdin, then
 * dispatches n fresh receipts and prints one JSON line: the absolute start
 * and end of its run (performance.timeOrigin-based, comparable across
 * processes on one machine).
 */
import { once } from 'node:events'
import { performance } from 'node:perf_hooks'

import { drive, openPg, type SideName } from './sides.js'

const [side, schema, tag, n, inflight] = process.argv.slice(2)
const connectionString = process.env.LOOPX_BENCH_PG_URL
if (!connectionString || !schema || !tag) throw new Error('pg_child: usage: <ours|plain> <schema> <tag> <n> <inflight>')
const runner = await openPg(side as SideName, { connectionString, schema })
await drive(runner, `${tag}w`, 20, 20, 'recorded')
process.stdout.write('ready\n')
process.stdin.resume()
await once(process.stdin, 'data')
const now = () => performance.timeOrigin + performance.now()
const start = now()
await drive(runner, tag, Number(n), Number(inflight), 'recorded')
const end = now()
await runner.close()
process.stdout.write(JSON.stringify({ start, end, n: Number(n) }) + '\n')
process.exit(0)
