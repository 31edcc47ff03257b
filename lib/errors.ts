import type { Violation } from '../bindings/index'

/**
 * Misuse of the API (a closed runtime, a rejected registration, a file that
 * is not a journal) throws this, with a stable `code`. Expected outcomes,
 * such as a provider failing, are values in the dispatch outcome instead.
 */
export class LoopxHooksError extends Error {
  readonly code: string
  readonly violations: readonly Violation[] | undefined

  constructor(code: string, message: string, violations?: readonly Violation[]) {
    super(message)
    this.name = 'LoopxHooksError'
    this.code = code
    this.violations = violations
  }
}

/**
 * The addon's async functions can reject only with N-API's status codes, so
 * they put the stable code at the head of the message (`CODE|message`);
 * this restores it as `error.code`.
 */
export function rethrowNative(error: unknown): never {
  if (error instanceof Error) {
    const bar = error.message.indexOf('|')
    if (bar > 0 && error.message.startsWith('ERR_LOOPX_')) {
      throw new LoopxHooksError(error.message.slice(0, bar), error.message.slice(bar + 1))
    }
  }
  throw error
}

/** Awaits a native promise, restoring stable error codes. */
export async function native<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise
  } catch (error) {
    rethrowNative(error)
  }
}

/**
 * Runs a synchronous addon call; an Error it throws with a stable
 * `ERR_LOOPX_*` code becomes a `LoopxHooksError` with that code.
 */
export function sync<T>(call: () => T): T {
  try {
    return call()
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code
    if (error instanceof Error && !(error instanceof LoopxHooksError) && typeof code === 'string') {
      if (code.startsWith('ERR_LOOPX_')) throw new LoopxHooksError(code, error.message)
    }
    throw error
  }
}
