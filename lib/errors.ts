import type { LoopxHooksErrorCode, NativeErrorData, Violation } from '../bindings/index'

/**
 * Every stable code a `LoopxHooksError` carries, generated from the Rust
 * enum `ErrorCode` (src/error_code.rs). docs/errors.md's table says what to
 * do about each; `__test__/error_codes.spec.ts` keeps the enum, that table
 * and the codes the source raises in step.
 */
export type { LoopxHooksErrorCode }

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

/** What starts a native error's message that holds its data (src/binding/error.rs `MARK`). */
const MARK = 'loopx-hooks-error:'

/**
 * What a native error becomes at the addon's boundary (`addon.ts`): the
 * addon puts its `{ code, message, violations? }` in the message, as JSON
 * after `MARK`, for sync and async calls alike (napi's async functions can
 * reject only with its own statuses). Anything else (a provider's own error
 * passed through, an error already coded) is returned as it is.
 */
export function codedError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof LoopxHooksError || !error.message.startsWith(MARK)) return error
  let data: NativeErrorData
  try {
    data = JSON.parse(error.message.slice(MARK.length)) as NativeErrorData
  } catch {
    return new LoopxHooksError('ERR_LOOPX_INTERNAL', 'the native addon sent an unreadable error')
  }
  return new LoopxHooksError(data.code, data.message, data.violations)
}
