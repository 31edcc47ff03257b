// The CLI's read-only journal commands (every journal command but the writing
// ones) inspect a journal its user may read but not write, and change
// nothing. The tests run as root, which file modes do not stop, so the CLI
// runs as `nobody` on a journal whose file is 0444 and folder 0555: a cleanly
// closed journal answers in full with no byte, mtime or file of its folder
// changed; a journal whose -wal still holds frames answers with them, or (no
// -shm to read the frames with) fails with a coded error, never an answer
// without them.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { HookJournal } from '../lib/index.js'
import { JOURNAL_COMMANDS, WRITING_COMMANDS } from '../lib/cli/journal.js'
import { HookRuntime, TempDir, goodProvider, registration, request, signalKind } from './support/runtime.js'

const ROOT = join(__dirname, '..')
const READING = JOURNAL_COMMANDS.filter((c) => !WRITING_COMMANDS.includes(c))
const DISPATCHES = 3

interface Run {
  status: number | null
  stdout: string
  stderr: string
}

/**
 * The package's runtime files (the CLI, the compiled layer in dist/, the
 * loader, the addon) copied under `dir`, opened to all: the checkout itself may
 * sit in a folder `nobody` cannot enter (a `mktemp -d` clone is 0700).
 */
function reachableCopy(dir: string): string {
  const wanted = (rel: string) =>
    rel === 'package.json' ||
    rel === 'index.js' ||
    /^loopx-hooks\.[a-z0-9-]+\.node$/.test(rel) ||
    /^(bin|dist|bindings)\/.*\.js$/.test(rel)
  for (const top of [
    'package.json',
    'index.js',
    ...readdirSync(ROOT).filter((f) => f.endsWith('.node')),
    'bin',
    'dist',
    'bindings',
  ]) {
    const from = join(ROOT, top)
    const rels = statSync(from).isDirectory()
      ? (readdirSync(from, { recursive: true, encoding: 'utf8' }) as string[]).map((r) => join(top, r))
      : [top]
    for (const rel of rels.filter(wanted)) {
      mkdirSync(dirname(join(dir, rel)), { recursive: true, mode: 0o755 })
      copyFileSync(join(ROOT, rel), join(dir, rel))
    }
  }
  return join(dir, 'bin', 'loopx-hooks.js')
}

let BIN = ''

function asNobody(args: string[]): Run {
  const r = spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '' },
    timeout: 20_000,
  })
  if (r.error) throw r.error
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Every file of `dir` with its bytes' hash, size and mtime. */
function state(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    const st = statSync(path)
    out[name] = `${createHash('sha256').update(readFileSync(path)).digest('hex')} ${st.size} ${st.mtimeMs}`
  }
  return out
}

/** Files 0444 and the folder 0555: readable by `nobody`, writable only by root. */
function lockDown(dir: string): void {
  for (const name of readdirSync(dir)) chmodSync(join(dir, name), 0o444)
  chmodSync(dir, 0o555)
}

async function dispatchSome(runtime: HookRuntime, from: number): Promise<void> {
  for (let n = from; n < from + DISPATCHES; n++) {
    const receipt = { receipt_id: `receipt_${n}`, effect_id: `effect_${n}` }
    const outcome = await runtime.dispatch(request({ receipt, settlement: { effect_id: `effect_${n}` } }))
    expect(outcome.hooks.map((h) => h.outcome)).toEqual(['recorded'])
  }
}

describe('read-only journal commands in a folder the user cannot write', () => {
  const tmp = new TempDir('loopx-cli-read-only-')
  const clean = join(tmp.dir, 'clean')
  const unclean = join(tmp.dir, 'unclean')
  const noShm = join(tmp.dir, 'no-shm')

  beforeAll(async () => {
    chmodSync(tmp.dir, 0o755)
    BIN = reachableCopy(join(tmp.dir, 'package'))
    for (const dir of [clean, unclean, noShm]) mkdirSync(dir)
    const kind = signalKind('readonly')
    const open = async (path: string) => {
      const runtime = await HookRuntime.open({ journal: path, profile: { enabled: true } })
      runtime.defineIntentKind(kind)
      runtime.register({ registration: registration('readonly.hook'), provider: goodProvider() })
      return runtime
    }
    const a = await open(join(clean, 'j.db'))
    await dispatchSome(a, 0)
    await a.close()
    expect(readdirSync(clean)).toEqual(['j.db'])

    // A copy taken while the writer is open: the dispatches are frames of the -wal only.
    const b = await open(join(tmp.dir, 'live.db'))
    await dispatchSome(b, 0)
    for (const suffix of ['', '-wal', '-shm']) {
      copyFileSync(join(tmp.dir, `live.db${suffix}`), join(unclean, `j.db${suffix}`))
      if (suffix !== '-shm') copyFileSync(join(tmp.dir, `live.db${suffix}`), join(noShm, `j.db${suffix}`))
    }
    await b.close()
    expect(statSync(join(unclean, 'j.db-wal')).size).toBeGreaterThan(0)
    for (const dir of [clean, unclean, noShm]) lockDown(dir)
  })
  afterAll(() => {
    for (const dir of [clean, unclean, noShm]) chmodSync(dir, 0o755)
    tmp.cleanup()
  })

  it('every read-only command answers in full on a cleanly closed journal and changes nothing', () => {
    expect(READING.length).toBeGreaterThanOrEqual(4)
    // nobody may read but not write there (so the modes are what is tested)
    const sh = ['sh', '-c', 'cat "$1" >/dev/null && ! touch "$2"', 'sh', join(clean, 'j.db'), join(clean, 'new')]
    const probe = spawnSync('runuser', ['-u', 'nobody', '--', ...sh])
    expect(probe.status).toBe(0)
    const before = state(clean)
    for (const command of READING) {
      const r = asNobody(['journal', command, '--db', join(clean, 'j.db'), '--json'])
      expect(r.stderr, command).toBe('')
      expect(r.status, command).toBe(0)
      const out = JSON.parse(r.stdout) as {
        stats?: { proposed: number; intents: number }
        items?: unknown[]
        owed?: unknown[]
      }
      if (command === 'show') expect([out.stats?.proposed, out.stats?.intents]).toEqual([DISPATCHES, DISPATCHES])
      if (command === 'dispatches' || command === 'intents') expect(out.items).toHaveLength(DISPATCHES)
      if (command === 'owed') expect(out.owed).toEqual([])
    }
    // The human rendering too.
    const r = asNobody(['journal', 'show', '--db', join(clean, 'j.db')])
    expect(r.stderr).toBe('')
    expect(r.stdout).toMatch(/integrity\s+ok/)
    expect(state(clean)).toEqual(before)
  })

  it('a -wal with frames is read with them (its -shm beside it) or is a coded error (none), never an answer without them', () => {
    const withShm = state(unclean)
    const r = asNobody(['journal', 'show', '--db', join(unclean, 'j.db'), '--json'])
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
    const out = JSON.parse(r.stdout) as { stats: { proposed: number; intents: number } }
    expect([out.stats.proposed, out.stats.intents]).toEqual([DISPATCHES, DISPATCHES])
    expect(state(unclean)).toEqual(withShm)

    const before = state(noShm)
    expect(existsSync(join(noShm, 'j.db-shm'))).toBe(false)
    for (const command of READING) {
      const r = asNobody(['journal', command, '--db', join(noShm, 'j.db'), '--json'])
      // An operational failure, not a usage error.
      expect(r.status, command).toBe(1)
      expect(r.stdout, command).toBe('')
      expect(r.stderr, command).toMatch(/^loopx-hooks: [^\n]*ERR_LOOPX_JOURNAL_NEEDS_RECOVERY[^\n]*\n$/)
    }
    expect(state(noShm)).toEqual(before)
  })

  it("the library's read-only open creates nothing beside a quiet journal, and reads a writer's commits once one opens it", async () => {
    const dir = join(tmp.dir, 'library')
    mkdirSync(dir)
    const path = join(dir, 'j.db')
    const kind = signalKind('readonly')
    const writer = async () => {
      const runtime = await HookRuntime.open({ journal: path, profile: { enabled: true } })
      runtime.defineIntentKind(kind)
      runtime.register({ registration: registration('readonly.hook'), provider: goodProvider() })
      return runtime
    }
    const first = await writer()
    await dispatchSome(first, 0)
    await first.close()
    const before = state(dir)
    const reader = await HookJournal.openReadOnly(path)
    try {
      expect((await reader.stats()).proposed).toBe(DISPATCHES)
      expect((await reader.listDispatches()).items).toHaveLength(DISPATCHES)
      expect(state(dir)).toEqual(before)
      // A writer opens the file: the reader sees its commits from then on.
      const second = await writer()
      try {
        await dispatchSome(second, DISPATCHES)
        expect((await reader.stats()).proposed).toBe(2 * DISPATCHES)
      } finally {
        await second.close()
      }
      expect((await reader.stats()).proposed).toBe(2 * DISPATCHES)
    } finally {
      await reader.close()
    }
  })
})
