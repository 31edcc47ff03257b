/**
 * `loopx-hooks validate <contract> FILE|-`: the library's validators over a
 * document given as JSON text. The text itself (not a JS re-parse of it)
 * goes to the Rust validator, so the verdict is the one every other caller
 * of the package gets, violation for violation.
 */
import type { Violation } from '../../bindings/index'
import { UsageError, inContext } from './errors.js'
import type { ValidateJson } from './json.js'
import { pointer, style } from './format.js'
import { expectDialect } from '../args.js'
import { colourWanted, library, readBytes, readStdin, utf8, type Io, type Library } from './io.js'

export type Verdict = { ok: true } | { ok: false; violations: Violation[]; more?: number }

type ContextFlag = 'kinds' | 'registration' | 'dispatch-id' | 'event-id'

interface Context {
  kinds?: InstanceType<Library['IntentKinds']>
  registration?: string
  dispatchId?: string
  eventId?: string
}

interface Contract {
  /** The context flags this contract's validator needs (all required). */
  needs: readonly ContextFlag[]
  validate(lib: Library, doc: string, ctx: Required<Context>): Verdict
}

export const CONTRACTS: Record<string, Contract> = {
  registration: {
    needs: ['kinds'],
    validate: (lib, doc, ctx) => lib.validateRegistration(doc, ctx.kinds),
  },
  'hook-input': {
    needs: ['registration'],
    validate: (lib, doc, ctx) => lib.validateHookInput(doc, ctx.registration),
  },
  'hook-result': {
    needs: ['registration', 'dispatch-id', 'kinds'],
    validate: (lib, doc, ctx) => lib.validateHookResult(doc, ctx.registration, ctx.dispatchId, ctx.kinds),
  },
  'intent-kind': {
    needs: [],
    validate: (lib, doc) => lib.validateIntentKindDefinition(doc),
  },
  'dispatch-receipt': {
    needs: [],
    validate: (lib, doc) => lib.validateDispatchReceipt(doc),
  },
  'failure-receipt': {
    needs: [],
    validate: (lib, doc) => lib.validateFailureReceipt(doc),
  },
  'turn-start-registration': {
    needs: [],
    validate: (lib, doc) => lib.validateTurnStartRegistration(doc),
  },
  'turn-start-receipt': {
    needs: [],
    validate: (lib, doc) => lib.validateTurnStartReceipt(doc),
  },
}

export const CONTRACT_NAMES = Object.keys(CONTRACTS)

/** The contracts of the `loopx-shipped-v0` dialect (`--dialect loopx-shipped-v0`). */
export const SHIPPED_CONTRACTS: Record<string, Contract> = {
  registration: { needs: [], validate: (lib, doc) => lib.validateShippedRegistration(doc) },
  source: { needs: [], validate: (lib, doc) => lib.validateShippedSource(doc) },
  'hook-input': {
    needs: ['registration'],
    validate: (lib, doc, ctx) => lib.validateShippedHookInput(doc, ctx.registration),
  },
  'hook-result': {
    needs: ['registration', 'event-id'],
    validate: (lib, doc, ctx) => lib.validateShippedResult(doc, ctx.registration, ctx.eventId),
  },
  'sidecar-receipt': { needs: [], validate: (lib, doc) => lib.validateShippedReceipt(doc) },
  'dispatch-result': { needs: [], validate: (lib, doc) => lib.validateShippedDispatchResult(doc) },
  'turn-start-registration': { needs: [], validate: (lib, doc) => lib.validateShippedTurnStartRegistration(doc) },
  // `{ registration, result }`: a result judged against its hook's registration.
  'turn-start-invocation': { needs: [], validate: (lib, doc) => lib.validateShippedTurnStartInvocation(doc) },
  'turn-start-dispatch': { needs: [], validate: (lib, doc) => lib.validateShippedTurnStartDispatch(doc) },
}

export const SHIPPED_CONTRACT_NAMES = Object.keys(SHIPPED_CONTRACTS)

/**
 * The contracts of `dialect` (default `contract-v0`); an unknown name throws
 * the library's `ERR_LOOPX_UNKNOWN_DIALECT`.
 */
export function contractsOf(lib: Library, dialect: string | undefined): Record<string, Contract> {
  const known = dialect === undefined ? 'contract-v0' : expectDialect('validate', dialect)
  return known === 'loopx-shipped-v0' ? SHIPPED_CONTRACTS : CONTRACTS
}

export interface ValidateOptions {
  json: boolean
  kinds?: string
  registration?: string
  dispatchId?: string
  eventId?: string
  dialect?: string
}

const FLAG_VALUE: Record<ContextFlag, (o: ValidateOptions) => string | undefined> = {
  kinds: (o) => o.kinds,
  registration: (o) => o.registration,
  'dispatch-id': (o) => o.dispatchId,
  'event-id': (o) => o.eventId,
}

function contextText(flag: string, file: string): string {
  if (file === '-') throw new UsageError(`--${flag} needs a file: standard input is for the document`)
  const text = utf8(readBytes(file, `--${flag} ${file}`))
  if (text === undefined) throw new UsageError(`--${flag} ${file}: not UTF-8 text`)
  return text
}

/** The intent kinds of a `--kinds` file: a JSON array of definitions, or one definition. */
function loadKinds(lib: Library, file: string): InstanceType<Library['IntentKinds']> {
  const text = contextText('kinds', file)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new UsageError(`--kinds ${file}: not JSON`)
  }
  try {
    return new lib.IntentKinds(Array.isArray(parsed) ? parsed : [text])
  } catch (error) {
    inContext(`--kinds ${file}`, error)
  }
}

/** Runs the validator of `contract` over the document `file` (`-`: standard input); the exit status. */
export async function validateCommand(
  contract: string,
  file: string,
  options: ValidateOptions,
  io: Io,
): Promise<number> {
  const lib = library()
  const contracts = contractsOf(lib, options.dialect)
  const spec = contracts[contract]
  if (spec === undefined)
    throw new UsageError(`unknown contract '${contract}' (expected one of: ${Object.keys(contracts).join(', ')})`)
  for (const flag of Object.keys(FLAG_VALUE) as ContextFlag[]) {
    const given = FLAG_VALUE[flag](options) !== undefined
    if (given && !spec.needs.includes(flag)) throw new UsageError(`--${flag} does not apply to contract '${contract}'`)
    if (!given && spec.needs.includes(flag)) throw new UsageError(`contract '${contract}' needs --${flag}`)
  }

  const ctx: Context = {}
  if (options.kinds !== undefined) ctx.kinds = loadKinds(lib, options.kinds)
  if (options.registration !== undefined) ctx.registration = contextText('registration', options.registration)
  if (options.dispatchId !== undefined) ctx.dispatchId = options.dispatchId
  if (options.eventId !== undefined) ctx.eventId = options.eventId

  const bytes = file === '-' ? await readStdin(io.stdin) : readBytes(file)
  const text = utf8(bytes)
  let verdict: Verdict
  if (text === undefined) {
    // JSON text is UTF-8 (RFC 8259 section 8.1): other bytes are no JSON value.
    verdict = { ok: false, violations: [{ path: '', rule: 'not_json_value' }] }
  } else {
    try {
      verdict = spec.validate(lib, text, ctx as Required<Context>)
    } catch (error) {
      // The validators never throw on the document; a throw is about the context.
      inContext(options.registration !== undefined ? `--registration ${options.registration}` : 'context', error)
    }
  }

  if (options.json) {
    const rejected: ValidateJson = verdict.ok
      ? { ok: true }
      : { ok: false, violations: verdict.violations, ...(verdict.more ? { more: verdict.more } : {}) }
    io.stdout.write(`${JSON.stringify(rejected)}\n`)
  } else {
    const s = style(colourWanted(io))
    if (verdict.ok) {
      io.stdout.write(`${s.green('valid')}\n`)
    } else {
      const paths = verdict.violations.map((v) => pointer(v.path))
      const width = Math.max(0, ...paths.map((p) => [...p].length))
      const lines = verdict.violations.map((v, i) => {
        const path = paths[i]!
        return `  ${path}${' '.repeat(width - [...path].length)}  ${s.red(v.rule)}`
      })
      // The validators list the first 100 violations and count the rest.
      if (verdict.more) lines.push(`  ... and ${verdict.more} more`)
      io.stdout.write(`${lines.join('\n')}\n`)
    }
  }
  return verdict.ok ? 0 : 1
}
