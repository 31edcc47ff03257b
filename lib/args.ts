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
 * A member `value` has beyond `known` (one not undefined) is a misspelling or
 * an option this version does not have: refused, not ignored. The message
 * lists the known names and never repeats the one given (it may be anything).
 */
function onlyKnown(where: string, value: Record<string, unknown>, known: readonly string[]): void {
  for (const member of Object.keys(value)) {
    if (value[member] !== undefined && !known.includes(member))
      invalid(`${where}: unknown option (expected one of: ${known.join(', ')})`)
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

/** Where a journal is, as the native open functions take it. */
export interface NativeJournalTarget {
  path?: string
  postgres?: {
    connectionString: string
    schema?: string
    caFile?: string
    statementTimeoutMs?: number
    writeRetryMs?: number
  }
}

/** A u32 the native side takes as is (its range is the core's to check). */
const isU32 = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 0xffff_ffff

/** Whether a journal given as a string is a PostgreSQL URL (`postgres://`, `postgresql://`) rather than a path. */
export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//.test(target)
}

/**
 * A journal target: a SQLite path, a `postgres://` / `postgresql://` URL, or
 * `{ path }` / `{ postgres: { connectionString, schema? } }`. The messages
 * never hold the connection string (it may carry a password).
 */
export function journalTarget(target: unknown, where: string): NativeJournalTarget {
  if (typeof target === 'string' && target.length > 0) {
    return isPostgresUrl(target) ? { postgres: { connectionString: target } } : { path: target }
  }
  if (isPlainObject(target)) {
    const { path, postgres } = target
    onlyKnown(where, target, ['path', 'postgres'])
    if (typeof path === 'string' && path.length > 0 && postgres === undefined) return { path }
    if (path === undefined && isPlainObject(postgres)) {
      onlyKnown(`${where}.postgres`, postgres, POSTGRES_OPTIONS)
      const { connectionString, schema, caFile, statementTimeoutMs, writeRetryMs } = postgres
      if (typeof connectionString !== 'string' || connectionString.length === 0)
        invalid(`${where}: postgres.connectionString must be a non-empty string`)
      if (schema !== undefined && typeof schema !== 'string') invalid(`${where}: postgres.schema must be a string`)
      if (caFile !== undefined && typeof caFile !== 'string') invalid(`${where}: postgres.caFile must be a string`)
      if (statementTimeoutMs !== undefined && !isU32(statementTimeoutMs))
        invalid(`${where}: postgres.statementTimeoutMs must be a non-negative integer`)
      if (writeRetryMs !== undefined && !isU32(writeRetryMs))
        invalid(`${where}: postgres.writeRetryMs must be a non-negative integer`)
      return {
        postgres: {
          connectionString,
          ...(schema !== undefined ? { schema } : {}),
          ...(caFile !== undefined ? { caFile } : {}),
          ...(statementTimeoutMs !== undefined ? { statementTimeoutMs } : {}),
          ...(writeRetryMs !== undefined ? { writeRetryMs } : {}),
        },
      }
    }
  }
  invalid(`${where}: the journal must be a path, a postgres:// URL, { path } or { postgres: { connectionString } }`)
}

const POSTGRES_OPTIONS = ['connectionString', 'schema', 'caFile', 'statementTimeoutMs', 'writeRetryMs'] as const

const RUNTIME_OPTIONS = [
  'journal',
  'profile',
  'synchronous',
  'busyTimeoutMs',
  'attemptLedger',
  'inlineCommit',
  'dialect',
  'sidecarMirror',
] as const

/** `HookRuntime.open(options)`: answers where its journal is. */
export function checkRuntimeOptions(options: unknown): NativeJournalTarget {
  if (!isPlainObject(options)) invalid('HookRuntime.open: options must be an object')
  onlyKnown('HookRuntime.open: options', options, RUNTIME_OPTIONS)
  const { journal, profile, synchronous, busyTimeoutMs, attemptLedger, inlineCommit, dialect, sidecarMirror } = options
  // One option says where the journal is; a postgres:// string goes to PostgreSQL, never to a file of that name.
  const target = journalTarget(journal, 'HookRuntime.open: options.journal')
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
  if (attemptLedger !== undefined && typeof attemptLedger !== 'boolean')
    invalid('HookRuntime.open: options.attemptLedger must be a boolean')
  if (inlineCommit !== undefined && typeof inlineCommit !== 'boolean')
    invalid('HookRuntime.open: options.inlineCommit must be a boolean')
  if (dialect !== undefined) expectDialect('HookRuntime.open', dialect)
  if (sidecarMirror !== undefined && (typeof sidecarMirror !== 'string' || sidecarMirror.length === 0))
    invalid('HookRuntime.open: options.sidecarMirror must be a non-empty string')
  if (sidecarMirror !== undefined && dialect !== 'loopx-shipped-v0')
    invalid("HookRuntime.open: options.sidecarMirror needs dialect 'loopx-shipped-v0'")
  return target
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

/** `dispatch(request)` / `defineIntentKind(definition)`: a JSON object. */
export function checkJsonObject(value: unknown, what: string): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) invalid(`${what} must be an object`)
  if (!serializable(value)) invalid(`${what} is not a JSON value (a BigInt, a cycle, a throwing getter or too deep)`)
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
