import type { Violation } from '../bindings/index'

/**
 * Every stable code a `LoopxHooksError` (or a native error from the addon)
 * carries. The README's error-code table says what to do about each;
 * `__test__/error_codes.spec.ts` keeps this list, that table and the source
 * in step.
 */
export type LoopxHooksErrorCode =
  | 'ERR_LOOPX_BACKPRESSURE'
  | 'ERR_LOOPX_BUDGET_EXHAUSTED'
  | 'ERR_LOOPX_CREDENTIAL_LIKE_VALUE'
  | 'ERR_LOOPX_DUPLICATE_INTENT'
  | 'ERR_LOOPX_INBOX_BUSY'
  | 'ERR_LOOPX_INBOX_CLOSED'
  | 'ERR_LOOPX_INBOX_IO'
  | 'ERR_LOOPX_INBOX_READONLY'
  | 'ERR_LOOPX_INBOX_SQLITE'
  | 'ERR_LOOPX_INBOX_TOO_NEW'
  | 'ERR_LOOPX_INTENT_KIND_REJECTED'
  | 'ERR_LOOPX_INTERNAL'
  | 'ERR_LOOPX_INVALID_ARGUMENT'
  | 'ERR_LOOPX_INVALID_INTENT_KIND'
  | 'ERR_LOOPX_JOURNAL_BUSY'
  | 'ERR_LOOPX_JOURNAL_CLOSED'
  | 'ERR_LOOPX_JOURNAL_INTERNAL'
  | 'ERR_LOOPX_JOURNAL_IO'
  | 'ERR_LOOPX_JOURNAL_NEEDS_RECOVERY'
  | 'ERR_LOOPX_JOURNAL_READONLY'
  | 'ERR_LOOPX_JOURNAL_SQLITE'
  | 'ERR_LOOPX_JOURNAL_UNAVAILABLE'
  | 'ERR_LOOPX_JOURNAL_POSTGRES'
  | 'ERR_LOOPX_JOURNAL_TOO_NEW'
  | 'ERR_LOOPX_LEASE_EXPIRED'
  | 'ERR_LOOPX_LEASE_NOT_HELD'
  | 'ERR_LOOPX_NATIVE_BINDING_MISSING'
  | 'ERR_LOOPX_NOT_AN_INBOX'
  | 'ERR_LOOPX_NOT_A_FILE'
  | 'ERR_LOOPX_NOT_A_JOURNAL'
  | 'ERR_LOOPX_NOT_A_TRIGGER_STORE'
  | 'ERR_LOOPX_NOT_A_TURN_JOURNAL'
  | 'ERR_LOOPX_NOT_JSON_VALUE'
  | 'ERR_LOOPX_PEER_MISSING'
  | 'ERR_LOOPX_REENTRANT_DISPATCH'
  | 'ERR_LOOPX_REGISTRATION_REJECTED'
  | 'ERR_LOOPX_SCOPE_NOT_GRANTED'
  | 'ERR_LOOPX_SERVE_BAD_REQUEST'
  | 'ERR_LOOPX_SERVE_IN_FLIGHT'
  | 'ERR_LOOPX_SESSION_CLOSED'
  | 'ERR_LOOPX_SIMULATED_CRASH'
  | 'ERR_LOOPX_TRIGGER_STORE_CLOSED'
  | 'ERR_LOOPX_TURN_JOURNAL_CLOSED'
  | 'ERR_LOOPX_UNKNOWN_DIALECT'
  | 'ERR_LOOPX_UNKNOWN_DISPATCH'
  | 'ERR_LOOPX_UNKNOWN_RECEIPT'
  | 'ERR_LOOPX_UNSUPPORTED_PLATFORM'

/**
 * Misuse of the API (a closed runtime, a rejected registration, a file that
 * is not a journal) throws this, with a stable `code`. Expected outcomes,
 * such as a provider failing, are values in the dispatch outcome instead.
 */
export class LoopxHooksError extends Error {
  /** The stable `ERR_LOOPX_*` code: branch on this, never on the message. */
  readonly code: LoopxHooksErrorCode
  /** A rejected document's violations (path and rule), for the codes that carry them. */
  readonly violations: readonly Violation[] | undefined

  constructor(code: LoopxHooksErrorCode, message: string, violations?: readonly Violation[]) {
    super(message)
    this.name = 'LoopxHooksError'
    this.code = code
    this.violations = violations
  }
}

/**
 * What a native error becomes at the addon's boundary (`addon.ts`): a
 * `LoopxHooksError` with the stable code the addon gave it. Synchronous
 * calls throw an Error with `code` (and `violations` where the code carries
 * them); async ones can reject only with N-API's status codes, so they put
 * the code at the head of the message (`CODE|message`). Anything else (a
 * provider's own error passed through, an error already coded) is returned
 * as it is.
 */
export function codedError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof LoopxHooksError) return error
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && code.startsWith('ERR_LOOPX_')) {
    // The addon only emits codes of the union (checked by error_codes.spec.ts).
    const violations = (error as { violations?: readonly Violation[] }).violations
    return new LoopxHooksError(code as LoopxHooksErrorCode, error.message, violations)
  }
  const bar = error.message.indexOf('|')
  if (bar > 0 && error.message.startsWith('ERR_LOOPX_')) {
    const coded = error.message.slice(0, bar) as LoopxHooksErrorCode
    const message = error.message.slice(bar + 1)
    return new LoopxHooksError(coded, message, violationsOf(coded, message))
  }
  return error
}

/**
 * A refused credential-like token carries its violation like a refused
 * document does; the message names the field (`... at /reasonCode`), never the value.
 */
function violationsOf(code: LoopxHooksErrorCode, message: string): readonly Violation[] | undefined {
  if (code !== 'ERR_LOOPX_CREDENTIAL_LIKE_VALUE') return undefined
  const at = /at (\/[A-Za-z_]+)$/.exec(message)
  return at ? [{ path: at[1]!, rule: 'credential_like_value' }] : undefined
}
