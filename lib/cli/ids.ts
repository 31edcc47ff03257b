/**
 * Ids given on the command line: a whole `pwh_`/`pwi_` id, or a unique
 * prefix of one as a table prints it (`pwi_045ee3a5…`), resolved against the
 * journal the way git resolves a short commit. A malformed, unknown or
 * ambiguous id is an argument error (ERR_LOOPX_INVALID_ARGUMENT, exit 2),
 * never an empty answer; a value that is not an id is never printed back.
 */
import { LoopxHooksError } from '../errors.js'
import type { HookJournal } from '../journal.js'

/** What an id names: its prefix, its flag, and how to list the journal's ids of it. */
export type IdKind = 'dispatch' | 'intent'

const PREFIX: Record<IdKind, string> = { dispatch: 'pwh_', intent: 'pwi_' }
const HEX = 64
/** The shortest prefix taken, in hex digits (as git's default). */
export const MIN_PREFIX = 4
/** The journal's largest page. */
const PAGE = 1000

function invalid(message: string): LoopxHooksError {
  return new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `invalid argument: ${message}`)
}

/**
 * `given` as a whole id or a prefix (a trailing `…` or `...` of a shortened
 * id is dropped): `{ whole }` or `{ prefix }`, or an argument error naming
 * `flag`.
 */
export function parseId(kind: IdKind, flag: string, given: string): { whole: string } | { prefix: string } {
  const text = given.replace(/(…|\.\.\.)$/u, '')
  const head = PREFIX[kind]
  const hex = text.startsWith(head) ? text.slice(head.length) : null
  if (hex === null || !/^[0-9a-f]*$/.test(hex) || hex.length < MIN_PREFIX || hex.length > HEX) {
    throw invalid(
      `${flag} must be ${kind === 'intent' ? 'an' : 'a'} ${kind} id (${head} and ${HEX} lowercase hex digits) or a prefix of one of at least ${MIN_PREFIX} hex digits`,
    )
  }
  return hex.length === HEX ? { whole: text } : { prefix: text }
}

/** Every id of `kind` in the journal, oldest first. */
async function* idsOf(journal: HookJournal, kind: IdKind): AsyncGenerator<string> {
  let after: number | undefined
  for (;;) {
    const query = { limit: PAGE, ...(after !== undefined ? { after } : {}) }
    const page =
      kind === 'dispatch'
        ? await journal
            .listDispatches(query)
            .then((p) => ({ ids: p.items.map((r) => r.dispatchId), next: p.nextCursor }))
        : await journal.listIntents(query).then((p) => ({ ids: p.items.map((r) => r.intentId), next: p.nextCursor }))
    yield* page.ids
    if (page.next === null) return
    after = page.next
  }
}

/**
 * The whole id `given` names. A whole id is returned as given when
 * `mustExist` is false (the journal's own answer says whether it knows it);
 * a prefix must match exactly one id of the journal.
 */
export async function resolveId(
  journal: HookJournal,
  kind: IdKind,
  flag: string,
  given: string,
  mustExist = false,
): Promise<string> {
  const parsed = parseId(kind, flag, given)
  if ('whole' in parsed) {
    if (mustExist && kind === 'dispatch' && (await journal.getDispatch(parsed.whole)) === null) {
      throw invalid(`${flag}: no dispatch ${parsed.whole} in the journal`)
    }
    return parsed.whole
  }
  const found: string[] = []
  for await (const id of idsOf(journal, kind)) {
    if (!id.startsWith(parsed.prefix)) continue
    found.push(id)
    if (found.length > 1) break
  }
  if (found.length === 0) throw invalid(`${flag}: no ${kind} id starts with ${parsed.prefix}`)
  if (found.length > 1)
    throw invalid(`${flag}: ${parsed.prefix} is ambiguous (more than one ${kind} id starts with it)`)
  return found[0]!
}
