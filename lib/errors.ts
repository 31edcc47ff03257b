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
      const code = error.message.slice(0, bar)
      const message = error.message.slice(bar + 1)
      throw new LoopxHooksError(code, message, violationsOf(code, message))
    }
  }
  throw error
}

/**
 * A refused credential-like token carries its violation like a refused
 * document does; the message names the field (`... at /reason_code`), never the value.
 */
function violationsOf(code: string, message: string): readonly Violation[] | undefined {
  if (code !== 'ERR_LOOPX_CREDENTIAL_LIKE_VALUE') return undefined
  const at = /at (\/[a-z_]+)$/.exec(message)
  return at ? [{ path: at[1]!, rule: 'credential_like_value' }] : undefined
}

/** Awaits a native promise, restoring stable error codes. */
export async function native<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise
  } catch (error) {
    rethrowNative(error)
  }
}
