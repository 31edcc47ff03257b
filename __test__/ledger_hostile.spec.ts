// The attempt ledger against a hostile file system and long runs:
// - SQLite: entries of `<journal>-attempts/` that are not this user's
//   regular files (a FIFO, a symlink to a FIFO, a folder, another user's
//   ledger) neither hang nor fail HookRuntime.open, HookJournal.open,
//   recover() or the CLI's `journal decide`; recover() counts them in
//   `ledgersSkipped`; they are never read, changed or removed.
// - SQLite: a ledger folder that is a symlink, or another user's
//   world-writable folder, is refused (ERR_LOOPX_JOURNAL_IO) or left without
//   a byte of ours.
// - Both backends: 1,000 open/close cycles of HookRuntime and of
//   HookJournal under `ulimit -n 96` leave the descriptor count flat.
// - A journal dropped without close() and collected by the GC does not
//   remove the ledger folder a live journal uses (no open rejects).
// - `serve --stdio` answers every request of an input that has ended
//   (finishes that wait for a commit included), and its descriptors stay
//   flat over 200 open/close requests.
// - PostgreSQL: an attempt of a process killed in its provider is spent for
//   every host and every spelling of the server (not kept in a temp folder
//   of one host); nothing is made in the temp folder, and another user's
//   folder there is neither a hang nor written to.
// Every step that could block runs in a child process killed after a bound,
// so a hang fails its test instead of hanging the run.
import { spawn, spawnSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'

import { HookJournal } from '../lib/index.js'
import { request } from './support/runtime'
import { BACKENDS, POSTGRES, Targets, pgUrl, withPg, type Backend, type PostgresTarget } from './support/backends'

const ROOT = join(__dirname, '..')
const CHILDREN = join(__dirname, 'children')
const BIN = join(ROOT, 'bin', 'loopx-hooks.js')
/** The user whose files are "another user's" (the tests run as root, which may chown). */
const NOBODY = 65534
const UID = process.getuid!()
/** How long a step may take before it counts as hung (a blocked open(2) never returns). */
const HANG_MS = 15_000

type Line = { t: string; [k: string]: unknown }

interface Run {
  lines: Line[]
  code: number | null
  signal: NodeJS.Signals | null
  stderr: string
  /** Killed by the hang guard. */
  hung: boolean
}

interface RunOptions {
  env?: NodeJS.ProcessEnv
  timeoutMs?: number
  /** Called with each JSON line as it arrives; may write to the child's stdin. */
  onLine?: (line: Line, stdin: NodeJS.WritableStream) => void | Promise<void>
  stdin?: 'ignore' | 'pipe' | number
}

/** Runs `cmd args`, collecting the JSON lines it prints; SIGKILLed after `timeoutMs` (then `hung`). */
function run(cmd: string, args: string[], options: RunOptions = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
    })
    let out = ''
    let stderr = ''
    let hung = false
    const lines: Line[] = []
    const guard = setTimeout(() => {
      hung = true
      child.kill('SIGKILL')
    }, options.timeoutMs ?? HANG_MS)
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const text = out.slice(0, nl)
        out = out.slice(nl + 1)
        if (text.trim() === '') continue
        let line: Line
        try {
          line = JSON.parse(text) as Line
        } catch {
          line = { t: 'raw', text }
        }
        lines.push(line)
        if (options.onLine && child.stdin) void options.onLine(line, child.stdin)
      }
    })
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c))
    child.stdin?.on('error', () => {}) // a child that died before reading its stdin
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(guard)
      if (out.trim() !== '') lines.push({ t: 'raw', text: out })
      resolve({ lines, code, signal, stderr, hung })
    })
  })
}

const child = (script: string, args: string[], options?: RunOptions) =>
  run(process.execPath, [join(CHILDREN, script), ...args], options)

/** A child's run, for failure messages. */
const told = (r: Run) =>
  JSON.stringify({ hung: r.hung, code: r.code, signal: r.signal, lines: r.lines, stderr: r.stderr.slice(0, 2000) })

/** A journal target's child argument for an SQLite file (children/target.mjs). */
const sqliteArg = (path: string) => JSON.stringify({ runtime: { journal: path }, journal: path })

/** The same PostgreSQL journal (one schema) under another connection string. */
const pgArg = (connectionString: string, schema: string) => {
  const postgres = { connectionString, schema }
  return JSON.stringify({ runtime: { journal: { postgres } }, journal: { postgres } })
}

const dirs: string[] = []
/** A fresh folder under the temp folder, removed after the file's tests. */
function freshDir(prefix = 'loopx-ledger-hostile-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function mkfifo(path: string): void {
  const r = spawnSync('mkfifo', ['-m', '0600', path])
  expect(r.status, `mkfifo ${path}: ${String(r.stderr)}`).toBe(0)
  expect(lstatSync(path).isFIFO()).toBe(true)
}

/** What an entry is, byte for byte where it is a file, so "untouched" can be compared. */
function describeEntry(path: string): string {
  const st = lstatSync(path)
  if (st.isFIFO()) return `fifo uid=${st.uid}`
  if (st.isSymbolicLink()) return `symlink -> ${readlinkSync(path)} uid=${st.uid}`
  if (st.isDirectory())
    return `dir uid=${st.uid} mode=${(st.mode & 0o7777).toString(8)} [${readdirSync(path).join(',')}]`
  return `file uid=${st.uid} mode=${(st.mode & 0o7777).toString(8)} ${readFileSync(path).toString('base64')}`
}

/** A dead process's ledger file (one noted attempt), made once by a child killed in its provider. */
let deadLedger: Buffer | undefined
async function aDeadProcessLedger(): Promise<Buffer> {
  if (deadLedger) return deadLedger
  const dir = freshDir()
  const journal = join(dir, 'donor.journal')
  const r = await child('instant-killer.mjs', [sqliteArg(journal), 'dispatch', 'sigkill'])
  expect(r.signal, told(r)).toBe('SIGKILL')
  const ledgers = readdirSync(`${journal}-attempts`).filter((n) => n.endsWith('.ledger'))
  expect(ledgers).toHaveLength(1)
  const bytes = readFileSync(join(`${journal}-attempts`, ledgers[0]!))
  // A noted slot: the file format's magic, then a checkpoint.
  expect(bytes.subarray(0, 4).toString('latin1')).toBe('LXA2')
  deadLedger = bytes
  return bytes
}

interface Planted {
  /** The entries planted in the ledger folder, by name. */
  names: string[]
  /** Each planted entry (and the FIFO the symlink points at) as it is now. */
  snapshot(): Record<string, string>
}

/**
 * Plants in `ledgers` (created 0700 if missing): a FIFO `1-1.ledger`, a
 * symlink `2-2.ledger` to a FIFO outside the folder, a folder `3-3.ledger`,
 * and `4-4.ledger`: a dead process's real ledger owned by nobody (folded, it
 * would add a dispatch to the journal).
 */
async function plant(ledgers: string, outside: string): Promise<Planted> {
  const ledger = await aDeadProcessLedger()
  mkdirSync(ledgers, { recursive: true, mode: 0o700 })
  mkfifo(join(ledgers, '1-1.ledger'))
  const target = join(outside, 'elsewhere.fifo')
  mkfifo(target)
  symlinkSync(target, join(ledgers, '2-2.ledger'))
  mkdirSync(join(ledgers, '3-3.ledger'))
  writeFileSync(join(ledgers, '4-4.ledger'), ledger, { mode: 0o600 })
  chownSync(join(ledgers, '4-4.ledger'), NOBODY, NOBODY)
  const names = ['1-1.ledger', '2-2.ledger', '3-3.ledger', '4-4.ledger']
  const snapshot = () => {
    const out: Record<string, string> = {}
    for (const n of names) out[n] = describeEntry(join(ledgers, n))
    out['elsewhere.fifo'] = describeEntry(target)
    return out
  }
  return { names, snapshot }
}

/** How many dispatches the SQLite journal at `path` holds, read without the addon. */
function dispatchCount(path: string): number {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM dispatches').get() as { n: number }).n
  } finally {
    db.close()
  }
}

/** A fresh SQLite journal (created and closed, so its ledger folder is gone) and a folder beside it. */
async function freshJournal(): Promise<{ journal: string; ledgers: string; outside: string }> {
  const dir = freshDir()
  const journal = join(dir, 'hostile.journal')
  await (await HookJournal.open(journal)).close()
  expect(existsSync(`${journal}-attempts`)).toBe(false)
  const outside = join(dir, 'outside')
  mkdirSync(outside)
  return { journal, ledgers: `${journal}-attempts`, outside }
}

describe('SQLite: entries of the ledger folder that are not our regular files', () => {
  it('a FIFO, a symlink to a FIFO, a folder and another user’s ledger do not hang or fail HookRuntime.open, and are left untouched', async () => {
    const { journal, ledgers, outside } = await freshJournal()
    const planted = await plant(ledgers, outside)
    const before = planted.snapshot()
    const r = await child('ledger-steps.mjs', [sqliteArg(journal), 'runtime-open'])
    expect(r.hung, `HookRuntime.open did not settle within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    expect(r.code, told(r)).toBe(0)
    expect(
      r.lines.map((l) => l.t),
      told(r),
    ).toStrictEqual(['opened', 'closed'])
    expect(planted.snapshot()).toStrictEqual(before)
    // The other user's ledger was not folded into the journal.
    expect(dispatchCount(journal)).toBe(0)
  })

  it('a FIFO, a symlink to a FIFO, a folder and another user’s ledger do not hang or fail HookJournal.open, and are left untouched', async () => {
    const { journal, ledgers, outside } = await freshJournal()
    const planted = await plant(ledgers, outside)
    const before = planted.snapshot()
    const r = await child('ledger-steps.mjs', [sqliteArg(journal), 'journal-open'])
    expect(r.hung, `HookJournal.open did not settle within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    expect(r.code, told(r)).toBe(0)
    expect(
      r.lines.map((l) => l.t),
      told(r),
    ).toStrictEqual(['opened', 'closed'])
    expect(planted.snapshot()).toStrictEqual(before)
    expect(dispatchCount(journal)).toBe(0)
  })

  it('recover() with them planted after open settles, reports each in ledgersSkipped and leaves them untouched', async () => {
    const { journal, ledgers, outside } = await freshJournal()
    let planted: Planted | undefined
    let before: Record<string, string> = {}
    const r = await child('ledger-steps.mjs', [sqliteArg(journal), 'recover'], {
      stdin: 'pipe',
      onLine: async (line, stdin) => {
        if (line.t !== 'opened') return
        // The runtime is open (its own ledger is in the folder): plant, then recover.
        planted = await plant(ledgers, outside)
        before = planted.snapshot()
        stdin.end('go\n')
      },
    })
    expect(planted, told(r)).toBeDefined()
    expect(r.hung, `recover() did not settle within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    expect(r.code, told(r)).toBe(0)
    expect(
      r.lines.map((l) => l.t),
      told(r),
    ).toStrictEqual(['opened', 'recovered', 'closed'])
    const report = r.lines[1]!
    expect(report['outcomes'], told(r)).toBe(0)
    expect(typeof report['ledgersSkipped'], `recover()'s report has no numeric ledgersSkipped: ${told(r)}`).toBe(
      'number',
    )
    expect(report['ledgersSkipped'] as number).toBeGreaterThanOrEqual(planted!.names.length)
    expect(planted!.snapshot()).toStrictEqual(before)
    expect(dispatchCount(journal)).toBe(0)
  })

  it('`journal decide` from the CLI returns its coded answer with them planted, leaving them untouched', async () => {
    const { journal, ledgers, outside } = await freshJournal()
    const planted = await plant(ledgers, outside)
    const before = planted.snapshot()
    const unknown = `pwi_${'0'.repeat(64)}`
    const args = ['journal', 'decide', '--db', journal, '--intent', unknown, '--executor', 'x.exec']
    const r = await run(process.execPath, [BIN, ...args, '--decision', 'admit', '--reason', 'ok', '--json'])
    expect(r.hung, `journal decide did not return within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    // An unknown intent: exit 1 with the library's DecideOutcome.
    expect(r.code, told(r)).toBe(1)
    expect(r.lines, told(r)).toStrictEqual([{ outcome: 'unknown_intent' }])
    expect(planted.snapshot()).toStrictEqual(before)
    expect(dispatchCount(journal)).toBe(0)
  })
})

/** Every entry under `dir` (recursively) that this process's user owns. */
function ownedByUs(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter(
    (n) => lstatSync(join(dir, n)).uid === UID,
  )
}

describe('SQLite: a ledger folder that is not our own folder', () => {
  /** Opens a runtime on `journal` in a child; `peek` runs while it would be open. */
  async function openRefused(journal: string, peek: () => string[]): Promise<void> {
    let whileOpen: string[] | undefined
    const r = await child('ledger-steps.mjs', [sqliteArg(journal), 'runtime-open', 'hold'], {
      stdin: 'pipe',
      onLine: (line, stdin) => {
        if (line.t !== 'opened') return
        whileOpen = peek()
        stdin.end('go\n')
      },
    })
    expect(r.hung, `HookRuntime.open did not settle within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    expect(whileOpen, 'the runtime opened').toBeUndefined()
    expect(r.lines.find((l) => l.t === 'error')?.['code'], told(r)).toBe('ERR_LOOPX_JOURNAL_IO')
  }

  it('a ledger folder that is a symlink to another folder: the runtime refuses with ERR_LOOPX_JOURNAL_IO and writes nothing into its target', async () => {
    const { journal, ledgers, outside } = await freshJournal()
    const target = join(outside, 'target')
    mkdirSync(target, { mode: 0o700 })
    symlinkSync(target, ledgers)
    await openRefused(journal, () => readdirSync(target))
    expect(readdirSync(target)).toStrictEqual([])
    expect(lstatSync(ledgers).isSymbolicLink()).toBe(true)
    expect(readlinkSync(ledgers)).toBe(target)
  })

  it('a ledger folder another user owns, mode 0777: the runtime refuses with ERR_LOOPX_JOURNAL_IO and creates nothing of ours in it', async () => {
    const { journal, ledgers } = await freshJournal()
    mkdirSync(ledgers)
    chmodSync(ledgers, 0o777)
    chownSync(ledgers, NOBODY, NOBODY)
    await openRefused(journal, () => ownedByUs(ledgers))
    // The other user's folder is still there, theirs, and holds nothing of ours.
    const st = lstatSync(ledgers)
    expect([st.isDirectory(), st.uid, st.mode & 0o777]).toStrictEqual([true, NOBODY, 0o777])
    expect(ownedByUs(ledgers)).toStrictEqual([])
  })
})

describe.each(BACKENDS.map((b): [string, Backend] => [b.name, b]))('descriptors on %s', (_, backend) => {
  const targets = new Targets(backend)
  afterAll(() => targets.cleanup())
  const cycles = 1000

  it(`${cycles} open/close cycles of HookRuntime and of HookJournal under ulimit -n 96 leave the descriptor count flat`, async () => {
    const target = targets.fresh('fds')
    const r = await run(
      'bash',
      [
        '-c',
        'ulimit -n 96 && exec "$0" "$@"',
        process.execPath,
        join(CHILDREN, 'fd-cycles.mjs'),
        target.childArg(),
        String(cycles),
        String(cycles),
      ],
      // A PostgreSQL open is a handshake, a schema check and a reader pool: about 40 s for both loops.
      { timeoutMs: 170_000 },
    )
    expect(r.hung, `the cycles did not finish within 170 s: ${told(r)}`).toBe(false)
    expect(
      r.lines.filter((l) => l.t === 'error'),
      told(r),
    ).toStrictEqual([])
    expect(r.code, told(r)).toBe(0)
    const fds = r.lines.find((l) => l.t === 'fds') as { start: number; afterRuntime: number; end: number } | undefined
    expect(fds, told(r)).toBeDefined()
    expect(fds!.afterRuntime, told(r)).toBeLessThanOrEqual(fds!.start + 5)
    expect(fds!.end, told(r)).toBeLessThanOrEqual(fds!.start + 5)
  }, 180_000)
})

describe('SQLite: journals collected by the GC', () => {
  const finalizer = (journal: string, mode: 'race' | 'reclose', rounds: number) =>
    run(process.execPath, ['--expose-gc', join(CHILDREN, 'finalizer-opens.mjs'), journal, mode, String(rounds)], {
      timeoutMs: 100_000,
    })

  it('600 opens interleaved with the collection of journals dropped without close(): none rejects, and reads of a used journal answer', async () => {
    const r = await finalizer(join(freshDir(), 'finalized.journal'), 'race', 600)
    expect(r.hung, `the opens did not finish within 100 s: ${told(r)}`).toBe(false)
    expect(r.code, told(r)).toBe(0)
    const done = r.lines.find((l) => l.t === 'done')
    expect(done, told(r)).toBeDefined()
    expect(done!['rejections'], told(r)).toStrictEqual([])
    expect(done!['opens']).toBe(600)
    expect(done!['used']).toBe(200)
  }, 120_000)

  it('a journal closed and then collected does not close again: the ledger folder a new open makes survives the collection', async () => {
    // Deterministic form of the race above: after close(), an empty ledger
    // folder (what an open makes before its file) must outlive the old
    // journal's finalizer.
    const rounds = 20
    const r = await finalizer(join(freshDir(), 'reclosed.journal'), 'reclose', rounds)
    expect(r.hung, `the rounds did not finish within 100 s: ${told(r)}`).toBe(false)
    expect(r.code, told(r)).toBe(0)
    const done = r.lines.find((l) => l.t === 'done')
    expect(done, told(r)).toBeDefined()
    // Every closed journal was collected (so its finalizer had its chance) ...
    expect(done!['collected'], told(r)).toBe(rounds)
    // ... and none removed the folder.
    expect(done!['removed'], told(r)).toBe(0)
  }, 120_000)
})

// ---------------------------------------------------------------- serve --stdio

const exampleText = (name: string) => readFileSync(join(ROOT, 'examples', `${name}.json`), 'utf8')
const NOT_APPLICABLE = { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'not_applicable', intents: [] }

const openRequest = (id: number, journal: string) => ({
  id,
  op: 'open',
  journal,
  profile: { enabled: true },
  kinds: [exampleText('intent_kind')],
  registrations: [exampleText('registration')],
})

/** A serve --stdio process answered request by request through a pipe. */
class ServeProcess {
  readonly child = spawn(process.execPath, [BIN, 'serve', '--stdio'], { stdio: ['pipe', 'pipe', 'pipe'] })
  readonly #waiting: { resolve: (line: string) => void; reject: (e: Error) => void }[] = []
  #out = ''
  #stderr = ''
  readonly exited: Promise<number | null>

  constructor() {
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.#out += chunk
      for (let nl = this.#out.indexOf('\n'); nl >= 0; nl = this.#out.indexOf('\n')) {
        const line = this.#out.slice(0, nl)
        this.#out = this.#out.slice(nl + 1)
        this.#waiting.shift()?.resolve(line)
      }
    })
    this.child.stderr.setEncoding('utf8').on('data', (c: string) => (this.#stderr += c))
    this.child.stdin.on('error', () => {})
    this.exited = new Promise((resolve) =>
      this.child.on('close', (code) => {
        for (const w of this.#waiting.splice(0)) w.reject(new Error(`serve exited (${code}): ${this.#stderr}`))
        resolve(code)
      }),
    )
  }

  /** Sends one request; its response, or a rejection after `HANG_MS` (the process is then killed). */
  send(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const answer = new Promise<string>((resolve, reject) => this.#waiting.push({ resolve, reject }))
    this.child.stdin.write(`${JSON.stringify(request)}\n`)
    let timer: NodeJS.Timeout | undefined
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.child.kill('SIGKILL')
        reject(new Error(`serve did not answer ${JSON.stringify(request).slice(0, 80)} within ${HANG_MS} ms`))
      }, HANG_MS)
    })
    return Promise.race([answer, hang])
      .then((line) => JSON.parse(line) as Record<string, unknown>)
      .finally(() => clearTimeout(timer))
  }

  fds(): number {
    return readdirSync(`/proc/${this.child.pid}/fd`).length
  }
}

describe('serve --stdio', () => {
  it('answers every request of an input that has already ended, finishes waiting for their commits included, then exits 0', async () => {
    const dir = freshDir()
    const journal = join(dir, 'serve.journal')
    const rounds = 6
    const requests: Record<string, unknown>[] = [openRequest(1, journal)]
    let id = 1
    for (let round = 1; round <= rounds; round++) {
      // Tickets are numbered from 1 per open journal, one per prepared dispatch.
      requests.push({
        id: ++id,
        op: 'prepare',
        request: JSON.stringify(request({ receipt: { receipt_id: `receipt_eof${round}` } })),
      })
      requests.push({ id: ++id, op: 'begin', ticket: round, slot: 0 })
      requests.push({
        id: ++id,
        op: 'finish',
        ticket: round,
        outcomes: [{ status: 'returned', result: JSON.stringify(NOT_APPLICABLE) }],
      })
    }
    requests.push({ id: id + 1, op: 'close' })
    const file = join(dir, 'requests.jsonl')
    writeFileSync(file, requests.map((r) => `${JSON.stringify(r)}\n`).join(''))
    const input = openSync(file, 'r')
    let r: Run
    try {
      r = await run(process.execPath, [BIN, 'serve', '--stdio'], { stdin: input })
    } finally {
      closeSync(input)
    }
    expect(r.hung, `serve did not end within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    expect(
      r.lines.map((l) => l['id']),
      `one response per request, in order: ${told(r)}`,
    ).toStrictEqual(requests.map((q) => q['id']))
    for (const [i, q] of requests.entries()) {
      const answer = r.lines[i]!
      expect(answer['error'], `${String(q['op'])} #${String(q['id'])}: ${JSON.stringify(answer)}`).toBeUndefined()
      const result = answer['result'] as Record<string, unknown>
      if (q['op'] === 'finish') {
        expect(result['done'], JSON.stringify(answer)).toMatchObject({
          admitted: true,
          hooks: [{ outcome: 'not_applicable' }],
        })
      }
    }
    // Every prepare planned the ticket its begin and finish name.
    const tickets = requests.flatMap((q, i) =>
      q['op'] === 'prepare' ? [(r.lines[i]!['result'] as { ticket: number }).ticket] : [],
    )
    expect(tickets).toStrictEqual(Array.from({ length: rounds }, (_, i) => i + 1))
    expect(r.lines.at(-1)!['result']).toStrictEqual({ closed: true })
    expect(r.code, told(r)).toBe(0)
  })

  it('keeps its descriptor count flat over 200 open/close request pairs', async () => {
    const dir = freshDir()
    const journal = join(dir, 'serve-fds.journal')
    const serve = new ServeProcess()
    try {
      let id = 0
      const pair = async () => {
        const opened = await serve.send(openRequest(++id, journal))
        expect(opened['result'], JSON.stringify(opened)).toMatchObject({ open: true })
        const closed = await serve.send({ id: ++id, op: 'close' })
        expect(closed['result'], JSON.stringify(closed)).toStrictEqual({ closed: true })
      }
      await pair()
      const first = serve.fds()
      for (let n = 1; n < 200; n++) await pair()
      const last = serve.fds()
      expect(last - first, `descriptors after the first pair ${first}, after the last ${last}`).toBeLessThanOrEqual(5)
    } finally {
      serve.child.stdin.end()
      const guard = setTimeout(() => serve.child.kill('SIGKILL'), HANG_MS)
      const code = await serve.exited
      clearTimeout(guard)
      expect(code).toBe(0)
    }
  }, 60_000)
})

// ---------------------------------------------------------------- PostgreSQL

/** The test server's URL with its database spelt out: `<scheme>://<user>@<host>:<port>/<db>?<params>`. */
function spellings(): { a: string; b: string; database: string } {
  const base = new URL(pgUrl())
  const user = decodeURIComponent(base.username)
  const database = decodeURIComponent(base.pathname.slice(1)) || user
  const a = new URL(base.href)
  a.pathname = `/${encodeURIComponent(database)}`
  const b = new URL(base.href)
  if (database === user) {
    // No database path: the server's default, the user's own name.
    b.pathname = ''
  } else if (b.hostname === '127.0.0.1' || b.hostname === 'localhost') {
    b.hostname = b.hostname === 'localhost' ? '127.0.0.1' : 'localhost'
  }
  return { a: a.href, b: b.href, database }
}

const attemptFolders = (dir: string) => readdirSync(dir).filter((n) => n.startsWith('loopx-hooks-attempts-'))

describe('PostgreSQL: attempts are the server’s, not a temp folder’s', () => {
  const targets = new Targets(POSTGRES)
  afterAll(() => targets.cleanup())

  it('a provider that SIGKILLs its process spends the one invocation for a host with another temp folder spelling the server differently', async () => {
    const target = targets.fresh('spelt') as PostgresTarget
    const { a, b, database } = spellings()
    expect(a).not.toBe(b)
    // Both spellings name one database.
    const dbOf = (url: string) => withPg(url, async (c) => (await c.query('SELECT current_database() AS d')).rows[0].d)
    expect([await dbOf(a), await dbOf(b)]).toStrictEqual([database, database])

    const killed = await child('one-invocation.mjs', [pgArg(a, target.schema), 'kill'], {
      env: { ...process.env, TMPDIR: freshDir('loopx-host-a-') },
    })
    expect(killed.signal, told(killed)).toBe('SIGKILL')
    expect(
      killed.lines.map((l) => l.t),
      told(killed),
    ).toStrictEqual(['opened', 'invoked'])

    // At once, well inside timeout_ms + 250 ms: the server saw the killed
    // process's session (and the lock it held while open) end, so its
    // attempt is not presumed to be still running.
    const other = await child('one-invocation.mjs', [pgArg(b, target.schema), 'answer'], {
      env: { ...process.env, TMPDIR: freshDir('loopx-host-b-') },
    })
    expect(other.hung, told(other)).toBe(false)
    expect(
      other.lines.filter((l) => l.t === 'invoked'),
      `the spent invocation ran again: ${told(other)}`,
    ).toStrictEqual([])
    expect(other.lines.at(-1), told(other)).toStrictEqual({
      t: 'done',
      hooks: [{ outcome: 'exhausted', attempt: 1, code: 'dispatch_budget_exhausted' }],
    })
    expect(other.code, told(other)).toBe(0)
  })

  it('opening a PostgreSQL runtime makes nothing named loopx-hooks-attempts-* in its temp folder', async () => {
    const target = targets.fresh('notmp')
    const tmp = freshDir('loopx-host-tmp-')
    let whileOpen: string[] | undefined
    const r = await child('ledger-steps.mjs', [target.childArg(), 'runtime-open', 'hold'], {
      env: { ...process.env, TMPDIR: tmp },
      stdin: 'pipe',
      onLine: (line, stdin) => {
        if (line.t !== 'opened') return
        whileOpen = attemptFolders(tmp)
        stdin.end('go\n')
      },
    })
    expect(r.hung, told(r)).toBe(false)
    expect(r.code, told(r)).toBe(0)
    expect(
      r.lines.map((l) => l.t),
      told(r),
    ).toStrictEqual(['opened', 'closed'])
    expect(whileOpen).toStrictEqual([])
    expect(attemptFolders(tmp)).toStrictEqual([])
  })

  it('another user’s world-writable loopx-hooks-attempts folder holding a FIFO in the temp folder: the open settles, succeeds and writes nothing there', async () => {
    const target = targets.fresh('foreigntmp')
    const tmp = freshDir('loopx-host-foreign-')
    const foreign = join(tmp, `loopx-hooks-attempts-${UID}`)
    mkdirSync(foreign)
    chmodSync(foreign, 0o777)
    mkfifo(join(foreign, '1-1.ledger'))
    chownSync(join(foreign, '1-1.ledger'), NOBODY, NOBODY)
    chownSync(foreign, NOBODY, NOBODY)
    const before = describeEntry(foreign)
    let whileOpen: string | undefined
    const r = await child('ledger-steps.mjs', [target.childArg(), 'runtime-open', 'hold'], {
      env: { ...process.env, TMPDIR: tmp },
      stdin: 'pipe',
      onLine: (line, stdin) => {
        if (line.t !== 'opened') return
        whileOpen = describeEntry(foreign)
        stdin.end('go\n')
      },
    })
    expect(r.hung, `the open did not settle within ${HANG_MS} ms: ${told(r)}`).toBe(false)
    expect(r.code, told(r)).toBe(0)
    expect(
      r.lines.map((l) => l.t),
      told(r),
    ).toStrictEqual(['opened', 'closed'])
    expect(whileOpen, 'the other user’s folder while the runtime was open').toBe(before)
    expect(describeEntry(foreign)).toBe(before)
    expect(describeEntry(join(foreign, '1-1.ledger'))).toBe(`fifo uid=${NOBODY}`)
  })
})
