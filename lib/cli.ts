/**
 * `loopx-hooks`, the command line of the package: the very acceptance policy
 * of the library (`validate`) and a reader of journal files (`journal`), for
 * callers in any language. Exit status: 0 success (valid), 1 the command ran
 * and failed (invalid, an integrity check failed, a refused decision, or an
 * operational failure such as a missing or locked journal), 2 a usage error
 * (`cli/errors.ts`). Errors are one line on stderr, `loopx-hooks: <message>`;
 * never a stack. docs/cli.md documents every command.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { DispatchState } from '../bindings/index'
import { UsageError, describeError, exitStatusOf } from './cli/errors.js'
import { type Io } from './cli/io.js'
import { JOURNAL_COMMANDS, STATES, journalCommand, type JournalCommand, type JournalOptions } from './cli/journal.js'
import { serveCommand } from './cli/serve.js'
import { CONTRACT_NAMES, validateCommand } from './cli/validate.js'

export type { Io }

const USAGE = `Usage:
  loopx-hooks validate <contract> FILE|- [--json] [context flags]
  loopx-hooks journal show|dispatches|intents|owed --db PATH|URL [--json] [filters]
  loopx-hooks journal decide|done --db PATH|URL --intent ID --executor ID [...]
  loopx-hooks journal import --from-sidecars ROOT --db PATH|URL [--json]
  loopx-hooks journal prune|export --db PATH|URL --older-than DURATION [...]
  loopx-hooks serve --stdio
  loopx-hooks --help | --version

Run 'loopx-hooks validate --help', 'loopx-hooks journal --help' or
'loopx-hooks serve --help' for details.

Exit status: 0 success (document valid); 1 the command ran and failed: a
document invalid, a journal failing its integrity check, a decision refused,
or an operational failure (a journal missing, locked or unreachable, a file
that cannot be read); 2 a usage error (an unknown command or flag, a flag
that does not apply, a missing or bad value). Errors are one line on stderr.
`

const VALIDATE_USAGE = `Usage: loopx-hooks validate <contract> FILE|- [--json] [context flags]

Judges one JSON document (FILE, or standard input for -) with the library's
own validator: the same verdict, violation for violation, as in-process calls.

Contracts and the context each one needs:
  registration       --kinds FILE
  hook-input         --registration FILE
  hook-result        --registration FILE --dispatch-id ID --kinds FILE
  intent-kind
  dispatch-receipt
  failure-receipt
  turn-start-registration
  turn-start-receipt

With --dialect loopx-shipped-v0 (the contract LoopX shipped):
  registration
  source
  hook-input         --registration FILE
  hook-result        --registration FILE --event-id ID
  sidecar-receipt
  dispatch-result

Options:
  --dialect NAME        contract-v0 (the default) or loopx-shipped-v0
  --kinds FILE          intent kind definitions: a JSON array of them, or one
  --registration FILE   the hook's registration (JSON)
  --dispatch-id ID      the dispatch the result answers (pwh_...)
  --event-id ID         the receipt.event_id of the input the result answers (pwr_...)
  --json                print {"ok":true} or {"ok":false,"violations":[{"path","rule"}]}

Without --json: 'valid', or one line per violation: its JSON Pointer
('(root)' for the whole document) and its rule.
Exit status: 0 valid; 1 invalid, or a FILE (document or context) that cannot
be read; 2 usage error (unknown contract, a flag that does not apply, missing
or bad context: a --kinds or --registration file that is not JSON or not a
definition or registration).
`

const JOURNAL_USAGE = `Usage: loopx-hooks journal <command> --db PATH|URL [--schema NAME] [--json] [filters]

--db is a journal file, or a postgres:// (postgresql://) connection string
for a journal on PostgreSQL in schema --schema (default loopx_hooks); the
connection string is never printed.

show, dispatches, intents and owed read a journal: opened read-only
(SQLITE_OPEN_READONLY; on PostgreSQL, read-only transactions), it is never
created, migrated or changed, and a read-only file works. decide and done are
the only commands that open the journal for writing (as an executor does),
and import, which writes the sidecar receipts it reads; no command creates a
journal.

Commands:
  show          stats, integrity check and the latest dispatches (--limit, default 10);
                exit 1 when the integrity check fails
  dispatches    dispatch identities, oldest first
                [--state STATE] [--hook ID] [--limit N (default 50)] [--after SEQ]
  intents       recorded intents, oldest first
                [--pending] [--hook ID] [--capability ID] [--kind KIND]
                [--dispatch-id ID] [--limit N (default 50)] [--after SEQ]
  owed          the identities HookRuntime.recover() would re-dispatch (checkpointed
                or failed) [--hook ID]; it dispatches nothing: recovery runs in the
                process that installs the providers, with HookRuntime.recover()
  decide        WRITES: records an executor's admission or rejection of an intent, once
                --intent ID --executor ID --decision admit|reject --reason CODE;
                exit 1 on a conflict (another decision stands) or an unknown intent;
                a leased intent needs its lease holder (ERR_LOOPX_LEASE_NOT_HELD)
  done          WRITES: marks an admitted intent done --intent ID --executor ID;
                exit 1 when it is not admitted (by this executor or lease) or unknown
  import        WRITES: reads LoopX's sidecar receipts --from-sidecars ROOT
                (ROOT/goals/*/post_writeback_hooks/pwh_*.json) into the journal with
                their ids, statuses and attempt counts; idempotent; exit 1 when an
                entry was not imported (each listed with its reason code)
  prune         WRITES: prunes final dispatches last written more than --older-than
                DURATION ago (30d, 12h, 15m, 45s, 250ms) to their tombstone, in short
                batches [--batch-size N (default 100)] [--archive: keep the pruned
                intents in the journal's intents_archive table]; a replay of a pruned
                identity is still a replay (docs/durability.md)
  export        WRITES: prune, first appending each batch's rows as JSON Lines to
                --out FILE (synced before the batch is removed)

STATE is one of: ${STATES.join(', ')}.
--json prints one line of JSON, camelCase like the library's values: show
{stats, integrity: {ok, messages}, latestDispatches}; dispatches and intents
the library's Page {items, nextCursor} (pass a non-null nextCursor as --after
to continue); owed {owed: [row + failures]}; decide the library's
DecideOutcome; done the library's DoneOutcome (a JSON string, e.g. "done");
import the library's SidecarImportReport; prune and export the library's
PruneReport.

Exit status: 0 success; 1 the integrity check failed (show), a decision or
done was refused (a conflict, not admitted, an unknown intent, a lease held
by another), an entry was not imported, or the journal is missing, busy,
unreachable or not a journal; 2 a usage error.
`

const SERVE_USAGE = `Usage: loopx-hooks serve --stdio

Answers newline-delimited JSON requests on standard input, one response line
per request on standard output, until standard input ends: the validators of
'validate' and the identity helpers, for adapters in other languages (the
Python package in python/). Requests and responses:

  {"id": ID, "op": "validate", "contract": NAME, "document": TEXT,
   "kinds"?: [TEXT...], "registration"?: TEXT, "dispatch_id"?: STRING,
   "event_id"?: STRING, "dialect"?: "contract-v0" | "loopx-shipped-v0"}
      -> {"id": ID, "result": {"ok": true} | {"ok": false, "violations": [...]}}
  {"id": ID, "op": "registration_digest", "registration": TEXT}
  {"id": ID, "op": "dispatch_id", "parts": {receipt_id, effect_id, hook_id,
   capability_id, registration_digest, registration_schema_version, event_kind}}
  {"id": ID, "op": "intent_id", "dispatch_id", "intent_kind", "policy_version", "payload": TEXT}
  {"id": ID, "op": "canonical_json", "value": TEXT}
  {"id": ID, "op": "hello"}  -> {"protocol", "version", "contracts", "dialects"}
  {"id": ID, "op": "capability_hook.post_writeback.transaction", "request": {...}}
      -> LoopX's transaction result document (docs/loopx.md)

Two-phase dispatch over one open journal (producers called by the caller):
  {"id": ID, "op": "open", "journal": PATH | URL | {"path"} | {"postgres": {...}},
   "profile"?: {...}, "dialect"?: NAME, "kinds"?: [TEXT...], "registrations": [TEXT...]}
  {"id": ID, "op": "prepare", "request": TEXT, "only_hook_id"?: STRING}
      -> {"done": OUTCOME} | {"ticket", "calls": [{slot, hook_id, dispatch_id, attempt, input: TEXT}]}
  {"id": ID, "op": "begin", "ticket", "slot"}  -> {"limit": {"ms", "wall"} | null}
      (queues the call's checkpoint; null: the wall budget is spent, do not call)
  {"id": ID, "op": "finish", "ticket", "outcomes": [{"status": "returned", "result": TEXT}
   | {"status": "raised", "code": CODE} | {"status": "timed_out" | "not_json" | "not_started"}]}
      -> {"done": OUTCOME}, answered once its records are durable
  {"id": ID, "op": "cancel", "ticket"} | {"op": "recover_items"} | {"op": "close"}
OUTCOME is what HookRuntime.dispatch resolves to (with "shipped" in the shipped
dialect). When standard input ends, what was prepared and not finished stays
owed in the journal for recover.

TEXT is a JSON document as text inside a JSON string. A request that cannot
be answered gets {"id": ID|null, "error": {"code": "ERR_LOOPX_...", "message"}};
the process keeps serving. Exit status 0 when standard input ends.
`

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  stdio: { type: 'boolean' },
  json: { type: 'boolean' },
  kinds: { type: 'string' },
  registration: { type: 'string' },
  'dispatch-id': { type: 'string' },
  'event-id': { type: 'string' },
  dialect: { type: 'string' },
  db: { type: 'string' },
  schema: { type: 'string' },
  state: { type: 'string' },
  hook: { type: 'string' },
  pending: { type: 'boolean' },
  // Renamed: given, it is a usage error naming the new name (RENAMED).
  dispatch: { type: 'string' },
  capability: { type: 'string' },
  kind: { type: 'string' },
  limit: { type: 'string' },
  after: { type: 'string' },
  intent: { type: 'string' },
  executor: { type: 'string' },
  decision: { type: 'string' },
  reason: { type: 'string' },
  'from-sidecars': { type: 'string' },
  'older-than': { type: 'string' },
  'batch-size': { type: 'string' },
  archive: { type: 'boolean' },
  out: { type: 'string' },
} as const

type OptionName = keyof typeof OPTIONS

/** Which options each command accepts (besides --help). */
const ACCEPTS: Record<string, readonly OptionName[]> = {
  validate: ['json', 'kinds', 'registration', 'dispatch-id', 'event-id', 'dialect'],
  'journal show': ['json', 'db', 'schema', 'limit'],
  'journal dispatches': ['json', 'db', 'schema', 'state', 'hook', 'limit', 'after'],
  'journal intents': ['json', 'db', 'schema', 'hook', 'pending', 'dispatch-id', 'capability', 'kind', 'limit', 'after'],
  'journal owed': ['json', 'db', 'schema', 'hook'],
  'journal decide': ['json', 'db', 'schema', 'intent', 'executor', 'decision', 'reason'],
  'journal done': ['json', 'db', 'schema', 'intent', 'executor'],
  'journal import': ['json', 'db', 'schema', 'from-sidecars'],
  'journal prune': ['json', 'db', 'schema', 'older-than', 'batch-size', 'archive'],
  'journal export': ['json', 'db', 'schema', 'older-than', 'batch-size', 'archive', 'out'],
  serve: ['stdio'],
}

/** Flags of an earlier version, by their name now: one flag per concept. */
const RENAMED: Partial<Record<OptionName, OptionName>> = { dispatch: 'dispatch-id' }

/** Journal commands of an earlier version, by their name now. */
const RENAMED_COMMANDS: Record<string, { now: string; why: string }> = {
  recover: { now: 'owed', why: 'it lists what HookRuntime.recover() would re-dispatch; it dispatches nothing' },
}

function version(): string {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }
  return pkg.version
}

function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--')
  return (end < 0 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h')
}

function integer(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined
  const n = /^\d{1,15}$/.test(text) ? Number(text) : NaN
  if (!(n >= min)) throw new UsageError(`--${flag} needs an integer of at least ${min}, not '${text}'`)
  return n
}

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true })
  } catch (error) {
    // parseArgs explains itself in one sentence; keep the first.
    const message = error instanceof Error ? error.message : String(error)
    throw new UsageError(message.split('. ')[0]!.replace(/\.$/, ''))
  }
}

function checkAccepted(command: string, values: Record<string, unknown>): void {
  const accepted = ACCEPTS[command] ?? []
  for (const name of Object.keys(values)) {
    const renamed = RENAMED[name as OptionName]
    if (values[name] !== undefined && renamed !== undefined) throw new UsageError(`--${name} is now --${renamed}`)
    if (values[name] !== undefined && name !== 'help' && !accepted.includes(name as OptionName)) {
      throw new UsageError(`--${name} does not apply to '${command}'`)
    }
  }
}

/** Runs the CLI on `argv` (without node and the script); resolves to the exit status. */
export async function main(argv: string[], io: Io): Promise<number> {
  try {
    if (argv.length === 0) {
      io.stderr.write(USAGE)
      return 2
    }
    if (wantsHelp(argv)) {
      const first = argv.find((a) => !a.startsWith('-'))
      const usages: Record<string, string> = { validate: VALIDATE_USAGE, journal: JOURNAL_USAGE, serve: SERVE_USAGE }
      const usage = usages[first ?? '']
      io.stdout.write(usage ?? USAGE)
      return 0
    }
    const { values, positionals } = parse(argv)
    if (values.version) {
      if (positionals.length > 0 || Object.keys(values).length > 1) throw new UsageError('--version takes nothing else')
      io.stdout.write(`${version()}\n`)
      return 0
    }
    const [command, ...rest] = positionals
    if (command === 'validate') {
      checkAccepted('validate', values)
      const [contract, file, ...extra] = rest
      if (contract === undefined)
        throw new UsageError(`validate needs a contract (one of: ${CONTRACT_NAMES.join(', ')})`)
      if (file === undefined) throw new UsageError('validate needs a FILE, or - for standard input')
      if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`)
      return await validateCommand(
        contract,
        file,
        {
          json: values.json === true,
          ...(values.kinds !== undefined ? { kinds: values.kinds } : {}),
          ...(values.registration !== undefined ? { registration: values.registration } : {}),
          ...(values['dispatch-id'] !== undefined ? { dispatchId: values['dispatch-id'] } : {}),
          ...(values['event-id'] !== undefined ? { eventId: values['event-id'] } : {}),
          ...(values.dialect !== undefined ? { dialect: values.dialect } : {}),
        },
        io,
      )
    }
    if (command === 'journal') {
      const [sub, ...extra] = rest
      if (sub === undefined) throw new UsageError(`journal needs a command (one of: ${JOURNAL_COMMANDS.join(', ')})`)
      const renamed = RENAMED_COMMANDS[sub]
      if (renamed !== undefined)
        throw new UsageError(`'journal ${sub}' is now 'journal ${renamed.now}' (${renamed.why})`)
      if (!(JOURNAL_COMMANDS as readonly string[]).includes(sub)) {
        throw new UsageError(`unknown journal command '${sub}' (expected one of: ${JOURNAL_COMMANDS.join(', ')})`)
      }
      if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`)
      checkAccepted(`journal ${sub}`, values)
      if (values.db === undefined) throw new UsageError(`journal ${sub} needs --db PATH`)
      if (values.state !== undefined && !(STATES as readonly string[]).includes(values.state)) {
        throw new UsageError(`unknown --state '${values.state}' (expected one of: ${STATES.join(', ')})`)
      }
      const options: JournalOptions = {
        db: values.db,
        ...(values.schema !== undefined ? { schema: values.schema } : {}),
        json: values.json === true,
        pending: values.pending === true,
        ...(values.state !== undefined ? { state: values.state as DispatchState } : {}),
        ...(values.hook !== undefined ? { hook: values.hook } : {}),
        ...(values['dispatch-id'] !== undefined ? { dispatchId: values['dispatch-id'] } : {}),
        ...(values.capability !== undefined ? { capability: values.capability } : {}),
        ...(values.kind !== undefined ? { kind: values.kind } : {}),
        ...(values.intent !== undefined ? { intent: values.intent } : {}),
        ...(values.executor !== undefined ? { executor: values.executor } : {}),
        ...(values.decision !== undefined ? { decision: values.decision } : {}),
        ...(values.reason !== undefined ? { reason: values.reason } : {}),
        ...(values['from-sidecars'] !== undefined ? { fromSidecars: values['from-sidecars'] } : {}),
        ...(values['older-than'] !== undefined ? { olderThan: values['older-than'] } : {}),
        ...(values.archive === true ? { archive: true } : {}),
        ...(values.out !== undefined ? { out: values.out } : {}),
      }
      const batchSize = integer('batch-size', values['batch-size'], 1)
      if (batchSize !== undefined) options.batchSize = batchSize
      const limit = integer('limit', values.limit, 1)
      const after = integer('after', values.after, 0)
      if (limit !== undefined) options.limit = limit
      if (after !== undefined) options.after = after
      return await journalCommand(sub as JournalCommand, options, io)
    }
    if (command === 'serve') {
      checkAccepted('serve', values)
      if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`)
      if (values.stdio !== true) throw new UsageError('serve needs --stdio (the only transport)')
      return await serveCommand(io, version())
    }
    throw new UsageError(
      command === undefined
        ? 'missing command (validate, journal or serve)'
        : `unknown command '${command}' (expected validate, journal or serve)`,
    )
  } catch (error) {
    io.stderr.write(`loopx-hooks: ${describeError(error)}\n`)
    return exitStatusOf(error)
  }
}

/** The `bin` entry: runs on `process.argv` and sets the exit status. */
export function run(): void {
  const fail = (error: unknown) => {
    process.stderr.write(`loopx-hooks: ${describeError(error)}\n`)
    process.exit(exitStatusOf(error))
  }
  process.on('uncaughtException', fail)
  process.on('unhandledRejection', fail)
  // A reader that went away (`| head`) is not an error worth a line.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
    fail(error)
  })
  const io: Io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env }
  main(process.argv.slice(2), io).then((status) => {
    process.exitCode = status
  }, fail)
}
