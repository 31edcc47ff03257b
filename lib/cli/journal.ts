/**
 * `loopx-hooks journal show|dispatches|intents|owed --db PATH|URL`: reads a
 * journal (a file, or a PostgreSQL schema) through `HookJournal.openReadOnly` (the
 * same readers an executor uses): it never creates, migrates, switches or
 * checkpoints a journal, and works on a read-only file. A missing or empty
 * file is an error.
 */
import { statSync } from 'node:fs'
import type { DispatchRow, DispatchState, FailureRow, JournalStats, StoredIntent } from '../../bindings/index'
import type { OwedJson, ShowJson } from './json.js'
import { isPostgresUrl } from '../args.js'
import type { HookJournal } from '../journal.js'
import { CliError, UsageError, codeOf, inContext, printable } from './errors.js'
import { plural, style, table, time, type Cell, type Style } from './format.js'
import { resolveId } from './ids.js'
import { colourWanted, library, type Io } from './io.js'
import { decide, done } from './outbox.js'
import { pruneCommand } from './prune.js'
import { importSidecars } from './sidecar.js'

export const JOURNAL_COMMANDS = [
  'show',
  'dispatches',
  'intents',
  'owed',
  'decide',
  'done',
  'import',
  'prune',
  'export',
] as const
/** The only journal commands that open the journal for writing. */
export const WRITING_COMMANDS: readonly JournalCommand[] = ['decide', 'done', 'import', 'prune', 'export']
export type JournalCommand = (typeof JOURNAL_COMMANDS)[number]

export const STATES: readonly DispatchState[] = ['checkpointed', 'failed', 'proposed', 'not_applicable', 'exhausted']

/** The `JournalStats` count of each state (states are stored values, stats fields camelCase). */
const COUNT_OF: Record<DispatchState, keyof JournalStats> = {
  checkpointed: 'checkpointed',
  failed: 'failed',
  proposed: 'proposed',
  not_applicable: 'notApplicable',
  exhausted: 'exhausted',
}

export interface JournalOptions {
  /** A journal file, or a postgres:// URL (never printed: it may hold a password). */
  db: string
  /** The PostgreSQL schema; default loopx_hooks. */
  schema?: string
  json: boolean
  state?: DispatchState
  hook?: string
  pending: boolean
  dispatchId?: string
  capability?: string
  kind?: string
  /** Rows to show; `show` defaults to 10, `dispatches` and `intents` to 50. */
  limit?: number
  /** Start after this seq (a `nextCursor` of an earlier run). */
  after?: number
  /** decide and done: the intent, the executor, the decision and its reason. */
  intent?: string
  executor?: string
  decision?: string
  reason?: string
  /** import: the LoopX runtime root whose sidecar receipts are read. */
  fromSidecars?: string
  /** prune and export: the window, the batch size, whether to archive, where to export. */
  olderThan?: string
  batchSize?: number
  archive?: boolean
  out?: string
}

/** The journal's largest page. */
const PAGE = 1000

/** How output and errors name the journal: a path, or the schema of a PostgreSQL journal, never its URL. */
export function journalLabel(o: Pick<JournalOptions, 'db' | 'schema'>): string {
  return isPostgresUrl(o.db) ? `postgres schema ${o.schema ?? 'loopx_hooks'}` : o.db
}

async function openJournal(o: JournalOptions, forWriting: boolean): Promise<HookJournal> {
  const db = o.db
  if (isPostgresUrl(db)) {
    const target = { postgres: { connectionString: db, ...(o.schema !== undefined ? { schema: o.schema } : {}) } }
    const label = journalLabel(o)
    const { HookJournal } = library()
    // No command creates a journal: a writer opens only a schema a reader finds.
    let reader: HookJournal
    try {
      reader = await HookJournal.openReadOnly(target)
    } catch (error) {
      if (codeOf(error) === 'ERR_LOOPX_NOT_A_JOURNAL') throw new CliError(`no journal in ${label}`)
      inContext(label, error)
    }
    if (!forWriting) return reader
    await reader.close()
    try {
      return await HookJournal.open(target)
    } catch (error) {
      inContext(label, error)
    }
  }
  if (o.schema !== undefined) throw new UsageError('--schema applies to a postgres:// journal only')
  let size: number
  try {
    const stat = statSync(db)
    if (!stat.isFile()) throw new CliError(`no journal at ${db} (not a file)`)
    size = stat.size
  } catch (error) {
    if (error instanceof CliError) throw error
    const code = (error as { code?: string }).code
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new CliError(`no journal at ${db}`)
    throw new CliError(`cannot read ${db}: ${(error as Error).message}`)
  }
  // SQLite would turn an empty file into a fresh journal; a reader must not.
  if (size === 0) throw new CliError(`no journal at ${db} (empty file)`)
  try {
    const { HookJournal } = library()
    return await (forWriting ? HookJournal.open(db) : HookJournal.openReadOnly(db))
  } catch (error) {
    inContext(db, error)
  }
}

/** Every row matching `query`, oldest first, from `after` on, through all pages. */
async function* allDispatches(journal: HookJournal, query: { state?: DispatchState; hookId?: string }, after?: number) {
  let cursor = after
  for (;;) {
    const page = await journal.listDispatches({
      ...query,
      limit: PAGE,
      ...(cursor !== undefined ? { after: cursor } : {}),
    })
    yield* page.items
    if (page.nextCursor === null) return
    cursor = page.nextCursor
  }
}

async function* allIntents(journal: HookJournal, o: JournalOptions) {
  let cursor = o.after
  for (;;) {
    const page = await journal.listIntents({
      limit: PAGE,
      ...(cursor !== undefined ? { after: cursor } : {}),
      ...(o.dispatchId !== undefined ? { dispatchId: o.dispatchId } : {}),
      ...(o.capability !== undefined ? { capabilityId: o.capability } : {}),
      ...(o.kind !== undefined ? { intentKind: o.kind } : {}),
      ...(o.pending ? { pendingOnly: true } : {}),
    })
    // Intents carry their hook_id in the document; the journal filters by capability, not hook.
    yield* o.hook === undefined ? page.items : page.items.filter((i) => i.hookId === o.hook)
    if (page.nextCursor === null) return
    cursor = page.nextCursor
  }
}

/**
 * Up to `limit` rows of `rows`, and the cursor to continue from: the last
 * row's seq when at least one more row follows, otherwise null.
 */
async function take<T extends { seq: number }>(
  rows: AsyncGenerator<T>,
  limit: number,
): Promise<{ items: T[]; nextCursor: number | null }> {
  const items: T[] = []
  for await (const row of rows) {
    if (items.length === limit) {
      await rows.return(undefined)
      return { items, nextCursor: items[items.length - 1]!.seq }
    }
    items.push(row)
  }
  return { items, nextCursor: null }
}

function lastFailure(failures: readonly FailureRow[]): FailureRow | undefined {
  return [...failures].sort((a, b) => a.attempt - b.attempt).at(-1)
}

function failureText(f: { code: string; rule: string | null } | null | undefined): string {
  if (!f) return '-'
  return f.rule ? `${f.code}/${f.rule}` : f.code
}

function paintState(state: string, s: Style): Cell {
  const paint = { proposed: s.green, not_applicable: s.dim, checkpointed: s.yellow, failed: s.red, exhausted: s.red }[
    state
  ]
  return paint ? { text: state, paint } : state
}

/** How many intents a receipt of either dialect records. */
function intentCount(receipt: DispatchRow['receipt']): number {
  if (!receipt) return 0
  return 'intent_ids' in receipt ? receipt.intent_ids.length : receipt.intent ? 1 : 0
}

/** What a human wants to know next about a row: intents, or why it failed. */
async function detail(journal: HookJournal, row: DispatchRow): Promise<string> {
  switch (row.state) {
    case 'proposed':
      return plural(intentCount(row.receipt), 'intent')
    case 'exhausted':
      return failureText(row.receipt && 'failure' in row.receipt ? row.receipt.failure : null)
    case 'failed':
      return failureText(lastFailure(await journal.listFailures(row.dispatchId)))
    default:
      return '-'
  }
}

async function dispatchTable(journal: HookJournal, rows: readonly DispatchRow[], s: Style): Promise<string[]> {
  const cells: Cell[][] = []
  for (const row of rows) {
    cells.push([
      row.seq,
      s.id(row.dispatchId),
      paintState(row.state, s),
      row.attempts,
      row.hookId,
      row.eventKind,
      await detail(journal, row),
      time(row.updatedAt),
    ])
  }
  return table(
    [
      { header: 'SEQ', align: 'right' },
      { header: 'DISPATCH' },
      { header: 'STATE' },
      { header: 'ATTEMPTS', align: 'right' },
      { header: 'HOOK' },
      { header: 'EVENT' },
      { header: 'DETAIL' },
      { header: 'UPDATED' },
    ],
    cells,
    s,
  )
}

function intentStatus(i: StoredIntent, s: Style): Cell {
  if (i.decision === 'reject') return { text: 'rejected', paint: s.red }
  if (i.decision === 'admit')
    return i.doneAt !== null ? { text: 'done', paint: s.green } : { text: 'admitted', paint: s.yellow }
  return 'undecided'
}

function intentTable(rows: readonly StoredIntent[], s: Style): string[] {
  return table(
    [
      { header: 'SEQ', align: 'right' },
      { header: 'INTENT' },
      { header: 'DISPATCH' },
      { header: 'HOOK' },
      { header: 'KIND' },
      { header: 'OPERATION' },
      { header: 'STATUS' },
      { header: 'EXECUTOR' },
      { header: 'REASON' },
    ],
    rows.map((i) => [
      i.seq,
      s.id(i.intentId),
      s.id(i.dispatchId),
      i.hookId,
      i.intentKind,
      // A shipped intent has no operation: its idempotency key says what it is.
      'operation' in i.intent ? i.intent.operation : i.intent.idempotency_key,
      intentStatus(i, s),
      i.executorId ?? '-',
      i.reasonCode ?? '-',
    ]),
    s,
  )
}

function more(next: number | null, s: Style): string[] {
  return next === null ? [] : [s.dim(`more rows follow: continue with --after ${next}`)]
}

async function show(journal: HookJournal, o: JournalOptions, io: Io, s: Style): Promise<number> {
  const integrity = await journal.integrity()
  const integrityOk = integrity.ok
  const limit = o.limit ?? 10
  let stats: JournalStats | null = null
  const latest: DispatchRow[] = []
  try {
    stats = await journal.stats()
    for await (const row of allDispatches(journal, {})) {
      latest.push(row)
      if (latest.length > limit) latest.shift()
    }
  } catch (error) {
    // A damaged file may fail any read: the failed verdict is the report.
    if (integrityOk) throw error
  }
  latest.reverse()
  if (o.json) {
    const shown: ShowJson = { stats, integrity, latestDispatches: latest }
    io.stdout.write(`${JSON.stringify(shown)}\n`)
  } else {
    const lines = [
      `journal     ${journalLabel(o)}`,
      `integrity   ${integrityOk ? s.green('ok') : s.red('FAILED')}`,
      ...integrity.messages.map((m) => `            ${printable(m)}`),
    ]
    if (stats !== null) {
      const total = STATES.reduce((n, state) => n + stats[COUNT_OF[state]], 0)
      lines.push(
        `dispatches  ${total}  (${STATES.map((state) => `${state} ${stats[COUNT_OF[state]]}`).join(', ')})`,
        `intents     ${stats.intents}  (open ${stats.intentsOpen})`,
      )
    }
    lines.push('')
    if (latest.length === 0) lines.push(stats === null ? 'dispatches unreadable' : 'no dispatches')
    else
      lines.push(
        `latest ${plural(latest.length, 'dispatch', 'dispatches')}, newest first`,
        ...(await dispatchTable(journal, latest, s)),
      )
    io.stdout.write(`${lines.join('\n')}\n`)
  }
  return integrityOk ? 0 : 1
}

async function dispatches(journal: HookJournal, o: JournalOptions, io: Io, s: Style): Promise<number> {
  const query = {
    ...(o.state !== undefined ? { state: o.state } : {}),
    ...(o.hook !== undefined ? { hookId: o.hook } : {}),
  }
  const page = await take(allDispatches(journal, query, o.after), o.limit ?? 50)
  if (o.json) {
    io.stdout.write(`${JSON.stringify(page)}\n`)
  } else {
    const lines = page.items.length === 0 ? ['no dispatches'] : await dispatchTable(journal, page.items, s)
    io.stdout.write(`${[...lines, ...more(page.nextCursor, s)].join('\n')}\n`)
  }
  return 0
}

async function intents(journal: HookJournal, o: JournalOptions, io: Io, s: Style): Promise<number> {
  if (o.dispatchId !== undefined) {
    // A prefix or an id the journal does not hold is an argument error, never an empty list.
    o = { ...o, dispatchId: await resolveId(journal, 'dispatch', '--dispatch-id', o.dispatchId, true) }
  }
  const page = await take(allIntents(journal, o), o.limit ?? 50)
  if (o.json) {
    io.stdout.write(`${JSON.stringify(page)}\n`)
  } else {
    const lines = page.items.length === 0 ? ['no intents'] : intentTable(page.items, s)
    io.stdout.write(`${[...lines, ...more(page.nextCursor, s)].join('\n')}\n`)
  }
  return 0
}

/**
 * The identities `HookRuntime.recover()` would re-dispatch (checkpointed or
 * failed, no final receipt): owed. A journal holds no providers, so the CLI
 * only lists them; recovery runs in the process that installs the providers.
 */
async function owed(journal: HookJournal, o: JournalOptions, io: Io, s: Style): Promise<number> {
  const hook = o.hook !== undefined ? { hookId: o.hook } : {}
  const rows: DispatchRow[] = []
  for (const state of ['checkpointed', 'failed'] as const) {
    for await (const row of allDispatches(journal, { state, ...hook })) rows.push(row)
  }
  rows.sort((a, b) => a.seq - b.seq)
  if (o.json) {
    const out: OwedJson = { owed: [] }
    for (const row of rows) out.owed.push({ ...row, failures: await journal.listFailures(row.dispatchId) })
    io.stdout.write(`${JSON.stringify(out)}\n`)
    return 0
  }
  const lines: string[] = []
  if (rows.length === 0) {
    lines.push('nothing owed: every dispatch identity in the journal is final')
  } else {
    lines.push(`${plural(rows.length, 'dispatch identity', 'dispatch identities')} owed (checkpointed or failed):`)
    lines.push(...(await dispatchTable(journal, rows, s)))
    lines.push('')
    lines.push(
      s.dim(
        'A journal holds no providers: recovery runs in the process that installs them, with HookRuntime.recover().',
      ),
    )
  }
  io.stdout.write(`${lines.join('\n')}\n`)
  return 0
}

const COMMANDS: Record<JournalCommand, (journal: HookJournal, o: JournalOptions, io: Io, s: Style) => Promise<number>> =
  {
    show,
    dispatches,
    intents,
    owed,
    decide: (journal, o, io) => decide(journal, o, io),
    done: (journal, o, io) => done(journal, o, io),
    import: importSidecars,
    prune: (journal, o, io, s) => pruneCommand(journal, o, io, s, false),
    export: (journal, o, io, s) => pruneCommand(journal, o, io, s, true),
  }

export async function journalCommand(command: JournalCommand, options: JournalOptions, io: Io): Promise<number> {
  const journal = await openJournal(options, WRITING_COMMANDS.includes(command))
  try {
    return await COMMANDS[command](journal, options, io, style(colourWanted(io), io.stdout.isTTY === true))
  } finally {
    await journal.close()
  }
}
