/**
 * The CLI's one error shape and its one-line rendering. Every failure the
 * CLI reports (a usage mistake, an unreadable file, a library error with a
 * stable code) becomes a single line `loopx-hooks: <message>` on stderr and
 * exit status 2; a stack is never printed.
 */

/** A failure the CLI reports itself: exit status 2 and `message` on one line. */
export class CliError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CliError'
  }
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
  if (error instanceof CliError) throw new CliError(`${label}: ${error.message}`)
  const code = codeOf(error)
  const message = error instanceof Error ? error.message : String(error)
  const wrapped = new Error(`${label}: ${message}`) as Error & { code?: string }
  if (code !== undefined) wrapped.code = code
  throw wrapped
}
