/**
 * The CLI's error shapes and their one-line rendering. Every failure the CLI
 * reports becomes a single line `loopx-hooks: <message>` on stderr; a stack
 * is never printed. The exit status says which kind it was: 2 for a usage
 * error (the command line is wrong: an unknown command or flag, a flag that
 * does not apply, a missing or bad value), 1 for an operational failure (the
 * command line is right and the work could not be done: a journal missing,
 * locked or unreachable, a file that cannot be read).
 */

/** An operational failure the CLI reports itself: exit status 1 and `message` on one line. */
export class CliError extends Error {
  /** The exit status. */
  readonly exit: 1 | 2 = 1
  constructor(message: string) {
    super(message)
    this.name = 'CliError'
  }
}

/** A usage error: exit status 2 and `message` on one line. */
export class UsageError extends CliError {
  override readonly exit = 2
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/**
 * Library codes that mean a value given on the command line is bad (a token,
 * a connection string, a context file's content): usage errors. Every other
 * code is an operational failure.
 */
const USAGE_CODES = new Set([
  'ERR_LOOPX_INVALID_ARGUMENT',
  'ERR_LOOPX_CREDENTIAL_LIKE_VALUE',
  'ERR_LOOPX_UNKNOWN_DIALECT',
  'ERR_LOOPX_INVALID_INTENT_KIND',
])

/** The exit status for `error`: 2 for a usage error, 1 for an operational failure. */
export function exitStatusOf(error: unknown): 1 | 2 {
  if (error instanceof CliError) return error.exit
  const code = codeOf(error)
  return code !== undefined && USAGE_CODES.has(code) ? 2 : 1
}

/** The first line of `text`, with control characters made visible. */
export function oneLine(text: string): string {
  const first = text.split(/\r?\n/, 1)[0] ?? ''
  return printable(first).trim()
}

/** `text` with C0/C1 control characters (escape sequences, newlines) shown as `\uXXXX`. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this escapes
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

export function codeOf(error: unknown): string | undefined {
  if (error !== null && typeof error === 'object' && 'code' in error) {
    const code = (error as { code: unknown }).code
    if (typeof code === 'string' && code.length > 0) return code
  }
  return undefined
}

/** The message of the line for `error`: a library error's stable code, then its message. */
export function describeError(error: unknown): string {
  if (error instanceof CliError) return oneLine(error.message)
  const code = codeOf(error)
  const message = error instanceof Error ? oneLine(error.message) : oneLine(String(error))
  if (code !== undefined && code.startsWith('ERR_LOOPX_')) return `${code}: ${message}`
  if (code !== undefined && !message.includes(code)) return `${message} (${code})`
  return message || 'unknown error'
}

/**
 * Rethrows `error` (thrown while using a context file such as `--kinds`)
 * with `label` in front of its message, keeping its stable code.
 */
export function inContext(label: string, error: unknown): never {
  if (error instanceof UsageError) throw new UsageError(`${label}: ${error.message}`)
  if (error instanceof CliError) throw new CliError(`${label}: ${error.message}`)
  const code = codeOf(error)
  const message = error instanceof Error ? error.message : String(error)
  const wrapped = new Error(`${label}: ${message}`) as Error & { code?: string }
  if (code !== undefined) wrapped.code = code
  throw wrapped
}
