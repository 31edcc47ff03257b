// better-sqlite3 installed but unloadable, for real: a Node.js 22 child
// (scripts/node-matrix.sh, cached under node_modules/.cache/loopx-node/) runs
// the built orchestrator and periodic_report store against node_modules'
// better-sqlite3, which is built for the Node.js 20 of the main run, as after
// a Node.js upgrade. Both must say the peer failed to load and how to rebuild
// it, with the peer's code, and create no file.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const root = join(__dirname, '..')
let dir: string
let node22: string

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'loopx-peer-'))
  // Fetches and caches Node.js 22 on first use; fails loudly when it cannot.
  const bin = execFileSync('bash', [join(root, 'scripts', 'node-matrix.sh'), 'bin', '22'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim()
  node22 = join(bin, 'node')
}, 600_000)

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('better-sqlite3 built for another Node.js', () => {
  it('the orchestrator and the store say the peer failed to load, how to rebuild it, and create nothing', () => {
    const turnJournal = join(dir, 'turns.sqlite')
    const store = join(dir, 'store.sqlite')
    const env = { ...process.env }
    delete env.NODE_OPTIONS // no redirect to a rebuilt copy: node_modules' Node.js 20 build is the one found
    const out = execFileSync(node22, [join(__dirname, 'children', 'peer-open.mjs'), turnJournal, store], {
      cwd: root,
      env,
      encoding: 'utf8',
    })
    const results = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { code?: string; message?: string; opened?: true })
    expect(results).toHaveLength(2)
    for (const [result, who] of [
      [results[0]!, 'loopx-hooks/orchestrator'],
      [results[1]!, 'the periodic_report store'],
    ] as const) {
      expect(result.code).toBe('ERR_LOOPX_PEER_MISSING')
      expect(result.message).toContain(`${who} needs the optional peer dependency better-sqlite3@12`)
      expect(result.message).toMatch(
        /installed but failed to load in Node\.js v22\.\d+\.\d+ \(NODE_MODULE_VERSION 127\)/,
      )
      expect(result.message).toContain(`it was built for NODE_MODULE_VERSION ${process.versions.modules}`)
      expect(result.message).toContain('`npm rebuild better-sqlite3`')
      expect(result.message).not.toContain('SQLite database')
    }
    expect(existsSync(turnJournal), 'no Turn journal file is created').toBe(false)
    expect(existsSync(store), 'no store file is created').toBe(false)
  })
})
