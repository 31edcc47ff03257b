/**
 * Checks of the caller's own arguments, at the call: misuse throws a
 * `LoopxHooksError` with `ERR_LOOPX_INVALID_ARGUMENT` and a message that
 * names the argument and what it should be, never its contents (which may be
 * large, cyclic, or secret). Documents are judged by the validators instead.
 */
import { LoopxHooksError } from './errors.js'

const MAX_DEPTH = 127

function invalid(message: string): never {
  throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', message)
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * True when `value` is data JSON.stringify can write without throwing: no
 * BigInt, no cycle, no getter or toJSON that throws, not nested past 127.
 * (What stringify silently drops, such as a function member, is left to the
 * contract's own checks.)
 */
function serializable(value: unknown): boolean {
  const ancestors: object[] = []
  const walk = (v: unknown): boolean => {
    if (typeof v === 'bigint') return false
    if (v === null || typeof v !== 'object') return true
    if (ancestors.includes(v) || ancestors.length >= MAX_DEPTH) return false
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return true
    ancestors.push(v)
    try {
      for (const member of Array.isArray(v) ? v : Object.values(v)) if (!walk(member)) return false
    } finally {
      ancestors.pop()
    }
    return true
  }
  try {
    return walk(value)
  } catch {
    return false
  }
}

/** `HookRuntime.open(options)`. */
export function checkRuntimeOptions(options: unknown): void {
  if (!isPlainObject(options)) invalid('HookRuntime.open: options must be an object')
  const { journalPath, profile, synchronous, busyTimeoutMs } = options
  if (typeof journalPath !== 'string' || journalPath.length === 0)
    invalid('HookRuntime.open: options.journalPath must be a non-empty string')
  if (profile !== undefined && !(isPlainObject(profile) && serializable(profile)))
    invalid('HookRuntime.open: options.profile must be a JSON object')
  if (synchronous !== undefined && synchronous !== 'full' && synchronous !== 'normal')
    invalid("HookRuntime.open: options.synchronous must be 'full' or 'normal'")
  if (
    busyTimeoutMs !== undefined &&
    !(
      typeof busyTimeoutMs === 'number' &&
      Number.isInteger(busyTimeoutMs) &&
      busyTimeoutMs >= 0 &&
      busyTimeoutMs <= 0xffffffff
    )
  )
    invalid('HookRuntime.open: options.busyTimeoutMs must be an integer from 0 to 4294967295')
}

/** `register(hook)`: a registration (object or JSON text) and a provider function. */
export function checkHook(hook: unknown, method = 'register'): void {
  if (!isPlainObject(hook)) invalid(`${method}: hook must be an object with registration and provider`)
  const registration = hook.registration
  if (typeof registration !== 'string' && !(registration !== null && typeof registration === 'object'))
    invalid(`${method}: hook.registration must be an object or JSON text`)
  if (typeof hook.provider !== 'function') invalid(`${method}: hook.provider must be a function`)
}

/** `dispatch(request)` / `defineIntentKind(definition)`: a JSON object. */
export function checkJsonObject(value: unknown, what: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) invalid(`${what} must be an object`)
  if (!serializable(value)) invalid(`${what} is not a JSON value (a BigInt, a cycle, a throwing getter or too deep)`)
}
