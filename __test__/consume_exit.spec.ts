// A consumer that stops leaves nothing behind: after `consume()` is aborted
// (the journal left open), or its journal closed while the loop waits, the
// process exits on its own, long
// before the loop's `pollMs` (a minute here) would have ended its wait. Each
// case runs in a child process, which must exit within 5 s; both backends.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { describe, expect, inject, it } from 'vitest'

import { withPg } from './support/backends'

const LIB = pathToFileURL(join(__dirname, '..', 'dist', 'index.js')).href

/** The child: opens the journal, consumes with a one-minute poll, then stops it as `how` says. */
const CHILD = `
import { HookJournal } from ${JSON.stringify(LIB)}
const [target, how] = JSON.parse(process.argv[1])
const journal = await HookJournal.open(target)
const stop = new AbortController()
const loop = (async () => {
  for await (const _ of journal.consume({ executorId: 'exit.test', leaseMs: 1000, pollMs: 60000, signal: stop.signal })) {}
})().then(() => 'ended', (e) => e.code)
// Let the loop reach its wait.
await new Promise((r) => setTimeout(r, 300))
if (how === 'abort') stop.abort()
else await journal.close()
const ended = await loop
// Aborted: the journal stays open, and must not hold the process either.
process.stdout.write(ended + '\\n')
`

/** Runs the child; answers its output and how long it took to exit. */
function runChild(target: unknown, how: string): Promise<{ out: string; ms: number; code: number | null }> {
  const from = Date.now()
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, JSON.stringify([target, how])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += String(d)))
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(killer)
      resolve({ out, ms: Date.now() - from, code })
    }),
  )
}

describe.each(['sqlite', 'postgres'] as const)('%s: a stopped consumer lets the process exit', (backend) => {
  for (const how of ['abort', 'close']) {
    it(`after ${how}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'loopx-exit-'))
      const schema = `t_exit_${randomBytes(6).toString('hex')}`
      const target =
        backend === 'sqlite'
          ? { path: join(dir, 'j.sqlite') }
          : { postgres: { connectionString: inject('pgUrl'), schema } }
      try {
        const { out, ms, code } = await runChild(target, how)
        // A closed journal ends the loop with its code.
        expect(out).toBe(how === 'abort' ? 'ended\n' : 'ERR_LOOPX_JOURNAL_CLOSED\n')
        expect(code).toBe(0)
        expect(ms, 'the process exited once the consumer stopped').toBeLessThan(5_000)
      } finally {
        rmSync(dir, { recursive: true, force: true })
        if (backend === 'postgres')
          await withPg(inject('pgUrl'), (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
      }
    }, 30_000)
  }
})
