/**
 * Checks of the caller's own arguments, at the call: misuse throws a
 * `LoopxHooksError` with `ERR_LOOPX_INVALID_ARGUMENT` and a message that
 * names the argument and what it should be, never its contents (which may be
 * large, cyclic, or secret). Documents are judged by the validators instead.
 */
import { LoopxHooksError } from './errors.js'
import type { Dialect } from '../bindings/index'

const MAX_DEPTH = 127

function invalid(message: string): never {
  throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', message)
}

/**
 * A key as a message may repeat it: the caller's own, but a key can be
 * anything (a secret pasted in its place), so only a short plain identifier
 * is shown, else "an unknown member". Never a value.
 */
function unknownKey(key: string): string {
  return /^[A-Za-z_$][\w$]{0,63}$/.test(key) ? `unknown option '${key}'` : 'an unknown member'
}

/**
 * A member `value` has beyond `known` (one not undefined) is a misspelling or
 * an option this version does not have: refused, not ignored. The message
 * names it (by `unknownKey`) and lists the known names.
 */
function onlyKnown(where: string, value: Record<string, unknown>, known: readonly string[]): void {
  for (const member of Object.keys(value)) {
    if (value[member] !== undefined && !known.includes(member))
      invalid(`${where}: ${unknownKey(member)} (expected one of: ${known.join(', ')})`)
  }
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

/** Whether a journal given as a string is a PostgreSQL URL (`postgres://`, `postgresql://`), as src/options.rs `is_postgres_url` reads it: for the CLI's labels. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//.test(target)
}

/**
 * An options object (or a journal target) as the JSON text the addon reads:
 * src/options.rs checks every member and names it, refusing an unknown one.
 * Only what JSON cannot carry is refused here, before it is written: a
 * member whose value is a BigInt, a cycle, a throwing getter or nested too
 * deep. The message names the member when it is one of `names` (the
 * generated lib/generated/options.ts), never an unknown name or a value.
 */
export function optionsJson(where: string, value: unknown, names: readonly string[] = []): string {
  if (isPlainObject(value)) {
    for (const key of Object.keys(value)) {
      let fits: boolean
      try {
        fits = serializable(value[key])
      } catch {
        fits = false
      }
      if (!fits) {
        const member = names.includes(key) ? `.${key}` : ' (an unknown member)'
        invalid(`${where}${member} is not a JSON value (a BigInt, a cycle, a throwing getter or too deep)`)
      }
    }
  } else if (!serializable(value)) invalid(`${where} is not a JSON value`)
  return JSON.stringify(value) ?? 'null'
}

/** `register(hook)`: a registration (object or JSON text) and a provider function. */
export function checkHook(hook: unknown, method = 'register'): void {
  if (!isPlainObject(hook)) invalid(`${method}: hook must be an object with registration and provider`)
  const registration = hook.registration
  if (typeof registration !== 'string' && !(registration !== null && typeof registration === 'object'))
    invalid(`${method}: hook.registration must be an object or JSON text`)
  if (typeof hook.provider !== 'function') invalid(`${method}: hook.provider must be a function`)
  if (hook.kinds !== undefined && !Array.isArray(hook.kinds)) invalid(`${method}: hook.kinds must be an array`)
}

/**
 * `dispatch(request)`: a JSON object, as the JSON text the addon reads. The
 * one `JSON.stringify` is also the check: a BigInt, a cycle or a throwing
 * getter makes it throw. Text nested deeper than the addon parses is the
 * addon's to refuse, as any text that is not a request.
 */
export function jsonObjectText(value: unknown, what: string): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) invalid(`${what} must be an object`)
  try {
    return JSON.stringify(value)
  } catch {
    return invalid(`${what} is not a JSON value (a BigInt, a cycle, a throwing getter or too deep)`)
  }
}

/** The kind of value a parameter or option member takes; `?` when it may be left out (undefined). */
export type Kind =
  | 'string'
  | 'number'
  | 'boolean'
  | 'object'
  | 'array'
  | 'function'
  | 'string?'
  | 'number?'
  | 'boolean?'
  | 'object?'
  | 'array?'
  | 'function?'

function ofKind(value: unknown, kind: Kind): boolean {
  const optional = kind.endsWith('?')
  if (value === undefined) return optional
  switch (optional ? kind.slice(0, -1) : kind) {
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value)
    case 'array':
      return Array.isArray(value)
    default:
      return typeof value === (optional ? kind.slice(0, -1) : kind)
  }
}

/**
 * The caller's arguments, checked for their kind at the call, before the
 * addon converts them (napi's own conversion error would name neither the
 * method nor the argument). Only the kind: what a valid value of that kind
 * is stays the addon's rule. A mismatch throws `ERR_LOOPX_INVALID_ARGUMENT`
 * `<method>: invalid argument: <name> (<kind>)`, naming the argument as the
 * caller spells it and never repeating its value.
 */
export function expectArgs(method: string, args: Record<string, readonly [value: unknown, kind: Kind]>): void {
  for (const [name, [value, kind]] of Object.entries(args)) {
    if (!ofKind(value, kind)) invalid(`${method}: invalid argument: ${name} (${kind.replace('?', ', optional')})`)
  }
}

/**
 * An object argument (by default optional) whose members have their kinds,
 * where other members are allowed (a document the caller may carry more in).
 * Answers the object, `{}` when left out.
 */
export function expectMembers<T extends object>(
  method: string,
  name: string,
  value: T | undefined,
  members: Record<string, Kind>,
  kind: 'object' | 'object?' = 'object?',
): T {
  expectArgs(method, { [name]: [value, kind] })
  const options = (value ?? {}) as Record<string, unknown>
  expectArgs(
    method,
    Object.fromEntries(Object.entries(members).map(([member, kind]) => [member, [options[member], kind] as const])),
  )
  return options as T
}

/**
 * An options argument (by default optional): `expectMembers`, and a member
 * named neither in `members` nor in `checkedElsewhere` (those the caller
 * checks itself) is refused: a misspelt option is never ignored.
 */
export function expectOptions<T extends object>(
  method: string,
  name: string,
  value: T | undefined,
  members: Record<string, Kind>,
  kind: 'object' | 'object?' = 'object?',
  checkedElsewhere: readonly string[] = [],
): T {
  const options = expectMembers(method, name, value, members, kind)
  onlyKnown(`${method}: ${name}`, options as Record<string, unknown>, [...Object.keys(members), ...checkedElsewhere])
  return options
}

/** The contract dialects: the RFC one (`contract-v0`, the default) and LoopX's shipped one. */
export const DIALECTS: readonly Dialect[] = ['contract-v0', 'loopx-shipped-v0']

/**
 * `dialect` as a `Dialect`; anything else throws `ERR_LOOPX_UNKNOWN_DIALECT`
 * (the message lists the known names and never repeats the value given).
 */
export function expectDialect(method: string, dialect: unknown): Dialect {
  if (typeof dialect === 'string' && (DIALECTS as readonly string[]).includes(dialect)) return dialect as Dialect
  throw new LoopxHooksError(
    'ERR_LOOPX_UNKNOWN_DIALECT',
    `${method}: unknown dialect (expected one of: ${DIALECTS.join(', ')})`,
  )
}
