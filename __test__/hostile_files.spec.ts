// Hostile files and paths (issue 9, items 1-5): a journal path is only a
// path; a refused file keeps every byte of its main file, -wal and -journal
// (sha256 before and after); inspecting only reads; a damaged journal is a
// failed verdict; special and read-only files are coded errors at open.
// Fixtures are made with better-sqlite3 (a dev dependency) and copied while
// their connection is open, which yields an un-checkpointed WAL or a hot
// rollback journal.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'

import { HookJournal, HookRuntime, InboxStore } from '../lib/index.js'
import { TriggerStore } from '../lib/capabilities/periodic_report/store.js'
import { TurnSettlement } from '../lib/orchestrator/index.js'
import { TurnJournal } from '../lib/orchestrator/turn_journal.js'

const root = join(__dirname, '..')
const BIN = join(root, 'bin', 'loopx-hooks.js')
const CHILD = join(__dirname, 'children', 'path-open.mjs')
const dirs: string[] = []
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-hostile-files-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

/**
 * The package's runtime files copied where any user may read them: the
 * checkout itself may sit in a folder only root can enter (a `mktemp -d`
 * clone is 0700), and the read-only cases run as `nobody`.
 */
function packageForAnyUser(): string {
  const at = tempDir()
  chmodSync(at, 0o755)
  for (const entry of ['bin', 'dist', 'index.js', 'package.json', 'loopx-hooks.linux-x64-gnu.node']) {
    cpSync(join(root, entry), join(at, entry), { recursive: true })
  }
  return at
}

/** sha256 of the main file, its -wal and its -journal (null when absent). */
function hashes(path: string): (string | null)[] {
  return ['', '-wal', '-journal'].map((suffix) =>
    existsSync(path + suffix)
      ? createHash('sha256')
          .update(readFileSync(path + suffix))
          .digest('hex')
      : null,
  )
}

/** Copies `from` with its sidecars to `to` while `db` still holds them open. */
function snapshot(from: string, to: string): void {
  for (const suffix of ['', '-wal', '-journal']) if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix)
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise
    return undefined
  } catch (error) {
    return (error as { code?: string }).code
  }
}

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    timeout: 20_000,
    env: { ...process.env, NO_COLOR: '1' },
  })
  if (r.error) throw r.error
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** A journal with some dispatches, closed (WAL checkpointed away). */
async function journalWithDispatches(path: string, n: number): Promise<void> {
  const runtime = await HookRuntime.open({ journal: path })
  await runtime.close()
  const db = new Database(path)
  // Rows through SQL keep the fixture fast; the readers only need valid rows.
  const insert = db.prepare(
    `INSERT INTO dispatches (dispatch_id, state, attempts, hook_id, capability_id, receipt_id, effect_id, event_kind,
       registration_digest, result_digest, created_at, updated_at)
     VALUES (?, 'not_applicable', 1, 'x.hook', 'x', ?, ?, 'todo_completed', ?, ?, 1, 1)`,
  )
  const digest = (s: string) => createHash('sha256').update(s).digest('hex')
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run(`pwh_${digest(`d${i}`)}`, `r${i}`, `e${i}`, digest('reg'), digest(`r${i}`))
  })()
  db.close()
}

describe('a journal path is only a path', () => {
  it('opens file:x.db and a folder named file: as files in the working directory, writer and readers alike', () => {
    for (const journalPath of ['file:x.db', 'file:/j.db', 'file:y.db?mode=memory']) {
      const cwd = tempDir()
      mkdirSync(join(cwd, 'file:'))
      const r = spawnSync(process.execPath, [CHILD, journalPath], { cwd, encoding: 'utf8', timeout: 30_000 })
      expect(r.status, r.stderr + r.stdout).toBe(0)
      expect(JSON.parse(r.stdout)).toEqual({ admitted: true, state: 'proposed', pending: 1 })
      expect(existsSync(join(cwd, journalPath))).toBe(true)
      // Nothing was created anywhere a URI reading would have put it.
      expect(existsSync(join(cwd, 'x.db'))).toBe(false)
      expect(existsSync(join(cwd, 'y.db'))).toBe(false)
      expect(existsSync('/j.db')).toBe(false)
    }
  })

  it('the CLI reads the journal named file:x.db in its working directory and creates nothing else', async () => {
    const cwd = tempDir()
    await journalWithDispatches(join(cwd, 'file:x.db'), 3)
    const r = spawnSync(process.execPath, [BIN, 'journal', 'dispatches', '--db', 'file:x.db', '--json'], {
      cwd,
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(r.status, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout).items).toHaveLength(3)
    expect(readdirSync(cwd).filter((f) => !f.startsWith('file:x.db'))).toEqual([])
  })
})

describe('refusing leaves the file byte-identical', () => {
  it('a foreign WAL database with an un-checkpointed WAL', async () => {
    const dir = tempDir()
    const live = join(dir, 'live.db')
    const db = new Database(live)
    db.pragma('journal_mode = WAL')
    db.pragma('wal_autocheckpoint = 0')
    db.exec('CREATE TABLE notes (x); INSERT INTO notes VALUES (1)')
    const copy = join(dir, 'copy.db')
    snapshot(live, copy)
    db.close()
    const before = hashes(copy)
    expect(before[1]).not.toBeNull()
    expect(await codeOf(HookRuntime.open({ journal: copy }))).toBe('ERR_LOOPX_NOT_A_JOURNAL')
    expect(await codeOf(HookJournal.open(copy))).toBe('ERR_LOOPX_NOT_A_JOURNAL')
    expect(await codeOf(HookJournal.openReadOnly(copy))).toBe('ERR_LOOPX_NOT_A_JOURNAL')
    expect(() => TurnJournal.open(copy)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_NOT_A_TURN_JOURNAL' }))
    expect(() => TriggerStore.open(copy)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_NOT_A_TRIGGER_STORE' }))
    expect(hashes(copy)).toEqual(before)
  })

  it('a too-new journal with a WAL, and with a hot rollback journal', async () => {
    const dir = tempDir()
    const live = join(dir, 'live.sqlite')
    await journalWithDispatches(live, 1)
    const wal = new Database(live)
    wal.pragma('wal_autocheckpoint = 0')
    wal.pragma('user_version = 99')
    const walCopy = join(dir, 'wal-copy.sqlite')
    snapshot(live, walCopy)
    wal.close()

    const hot = new Database(live)
    hot.pragma('journal_mode = DELETE')
    hot.pragma('cache_size = 1')
    hot.exec('BEGIN; CREATE TABLE filler (x)')
    const fill = hot.prepare('INSERT INTO filler VALUES (zeroblob(2000))')
    for (let i = 0; i < 200; i++) fill.run()
    const hotCopy = join(dir, 'hot-copy.sqlite')
    snapshot(live, hotCopy)
    hot.exec('ROLLBACK')
    hot.close()

    for (const [copy, sidecar] of [
      [walCopy, 1],
      [hotCopy, 2],
    ] as const) {
      const before = hashes(copy)
      expect(before[sidecar]).not.toBeNull()
      expect(await codeOf(HookRuntime.open({ journal: copy }))).toBe('ERR_LOOPX_JOURNAL_TOO_NEW')
      expect(await codeOf(HookJournal.openReadOnly(copy))).toBe('ERR_LOOPX_JOURNAL_TOO_NEW')
      expect(cli(['journal', 'show', '--db', copy]).status).toBe(1)
      expect(() => TurnJournal.open(copy)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_NOT_A_TURN_JOURNAL' }))
      expect(hashes(copy)).toEqual(before)
    }
  })

  it('TurnSettlement.open refuses a foreign DELETE-mode database and a hook journal without switching them to WAL', async () => {
    const dir = tempDir()
    const foreign = join(dir, 'foreign.db')
    const db = new Database(foreign)
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)')
    db.close()
    const journal = join(dir, 'journal.sqlite')
    await journalWithDispatches(journal, 2)
    const plain = new Database(journal)
    plain.pragma('journal_mode = DELETE')
    plain.close()
    for (const path of [foreign, journal]) {
      const before = hashes(path)
      await expect(TurnSettlement.open({ turnJournalPath: path })).rejects.toMatchObject({
        code: 'ERR_LOOPX_NOT_A_TURN_JOURNAL',
      })
      expect(() => TriggerStore.open(path)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_NOT_A_TRIGGER_STORE' }))
      expect(hashes(path)).toEqual(before)
      // Byte 18 of the header is 1 for DELETE mode, 2 for WAL.
      expect(readFileSync(path)[18]).toBe(1)
    }
  })
})

describe('inspecting only reads', () => {
  it('journal show|dispatches|intents create nothing in an empty SQLite file and keep a DELETE-mode journal as it is', async () => {
    const dir = tempDir()
    const blank = join(dir, 'blank.db')
    new Database(blank).exec('VACUUM')
    const journal = join(dir, 'journal.sqlite')
    await journalWithDispatches(journal, 4)
    const plain = new Database(journal)
    plain.pragma('journal_mode = DELETE')
    plain.close()
    for (const command of ['show', 'dispatches', 'intents']) {
      const blankBefore = hashes(blank)
      const r = cli(['journal', command, '--db', blank])
      expect(r.status).toBe(1)
      expect(r.stderr).toMatch(/ERR_LOOPX_NOT_A_JOURNAL/)
      expect(hashes(blank)).toEqual(blankBefore)

      const before = hashes(journal)
      expect(cli(['journal', command, '--db', journal]).status).toBe(0)
      expect(hashes(journal)).toEqual(before)
    }
    expect(readFileSync(journal)[18]).toBe(1)
  })

  it('HookJournal.openReadOnly reads, refuses writes, and works on a file it may only read', async () => {
    const dir = tempDir()
    const path = join(dir, 'journal.sqlite')
    await journalWithDispatches(path, 2)
    const before = hashes(path)
    const reader = await HookJournal.openReadOnly(path)
    expect((await reader.listDispatches()).items).toHaveLength(2)
    expect(await reader.integrity()).toEqual({ ok: true, messages: [] })
    expect(
      await codeOf(
        reader.decide({ intentId: `pwi_${'0'.repeat(64)}`, executorId: 'x.exec', decision: 'admit', reasonCode: 'ok' }),
      ),
    ).toBe('ERR_LOOPX_JOURNAL_READONLY')
    await reader.close()
    // A WAL reader may leave an empty -wal (and -shm) beside a cleanly closed
    // journal, as any SQLite reader does; it writes no frame and no byte of the main file.
    const EMPTY = createHash('sha256').digest('hex')
    const after = hashes(path)
    expect([after[0], after[2]]).toEqual([before[0], before[2]])
    expect([before[1], EMPTY]).toContain(after[1])

    // A user who may only read the file (not root: root may write anything).
    chmodSync(dir, 0o777)
    chmodSync(path, 0o444)
    const asNobody = {
      uid: 65534,
      gid: 65534,
      encoding: 'utf8' as const,
      timeout: 20_000,
      env: { ...process.env, NO_COLOR: '1' },
    }
    const pkg = packageForAnyUser()
    const bin = join(pkg, 'bin', 'loopx-hooks.js')
    const shown = spawnSync(process.execPath, [bin, 'journal', 'dispatches', '--db', path, '--json'], asNobody)
    expect(shown.status, shown.stderr).toBe(0)
    expect(JSON.parse(shown.stdout).items).toHaveLength(2)
    // The writer refuses it at open with a code, not at the first dispatch.
    const script = `import('${join(pkg, 'dist', 'index.js')}').then(({ HookRuntime }) => HookRuntime.open({ journal: ${JSON.stringify(path)} })).then(() => console.log('opened'), (e) => console.log(e.code))`
    const opened = spawnSync(process.execPath, ['-e', script], asNobody)
    expect(opened.stdout.trim(), opened.stderr).toBe('ERR_LOOPX_JOURNAL_READONLY')
    // The turn-start inbox likewise, for a read-only inbox file.
    const inboxPath = join(dir, 'inbox.sqlite')
    await (await InboxStore.open(inboxPath)).close()
    chmodSync(inboxPath, 0o444)
    const inboxScript = `import('${join(pkg, 'dist', 'index.js')}').then(({ InboxStore }) => InboxStore.open(${JSON.stringify(inboxPath)})).then(() => console.log('opened'), (e) => console.log(e.code))`
    const inbox = spawnSync(process.execPath, ['-e', inboxScript], asNobody)
    expect(inbox.stdout.trim(), inbox.stderr).toBe('ERR_LOOPX_INBOX_READONLY')
    expect(hashes(path)[0]).toEqual(before[0])
  })
})

describe('a damaged journal is a failed check', () => {
  it('integrity() returns the failed verdict with SQLite messages and journal show exits 1', async () => {
    const dir = tempDir()
    const path = join(dir, 'journal.sqlite')
    await journalWithDispatches(path, 400)
    const bytes = readFileSync(path)
    const pages = bytes.length / 4096
    expect(pages).toBeGreaterThan(8)
    const middle = Math.floor(pages / 2) * 4096
    for (let i = 0; i < 4096; i++) bytes[middle + i] = ((i * 2654435761) >>> 13) & 0xff
    writeFileSync(path, bytes)

    const reader = await HookJournal.openReadOnly(path)
    const verdict = await reader.integrity()
    expect(verdict.ok).toBe(false)
    expect(verdict.messages.length).toBeGreaterThan(0)
    expect((await reader.integrity()).ok).toBe(false)
    await reader.close()

    const r = cli(['journal', 'show', '--db', path])
    expect(r.status, r.stderr).toBe(1)
    expect(r.stdout).toMatch(/integrity\s+FAILED/)
    const json = cli(['journal', 'show', '--db', path, '--json'])
    expect(json.status).toBe(1)
    expect(JSON.parse(json.stdout)).toMatchObject({ integrity: verdict })
  })
})

describe('special files', () => {
  it('a FIFO is refused at open without hanging; so is a folder', async () => {
    const dir = tempDir()
    const fifo = join(dir, 'fifo')
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0)
    expect(await codeOf(HookRuntime.open({ journal: fifo }))).toBe('ERR_LOOPX_NOT_A_FILE')
    expect(await codeOf(HookJournal.openReadOnly(fifo))).toBe('ERR_LOOPX_NOT_A_FILE')
    expect(await codeOf(HookRuntime.open({ journal: dir }))).toBe('ERR_LOOPX_NOT_A_FILE')
    expect(() => TurnJournal.open(fifo)).toThrow(expect.objectContaining({ code: 'ERR_LOOPX_NOT_A_FILE' }))
    expect(await codeOf(InboxStore.open(fifo))).toBe('ERR_LOOPX_NOT_A_FILE')
    const r = cli(['journal', 'show', '--db', fifo])
    expect(r.status).toBe(1)
  })
})
