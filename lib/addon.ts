/**
 * The one door to the native addon (`../index.js`). Every function it
 * exports, every method, getter and static of its classes, and every class
 * constructor throws (or its promise rejects with) a `LoopxHooksError`
 * wherever the addon throws a coded Error: lib/ imports the addon from here,
 * so no call site converts errors of its own. The addon's exports are
 * wrapped in place, once, so an instance the addon makes itself (a
 * `NativeJournal` from `openNativeJournal`) has the wrapped methods too.
 */
import { LoopxHooksError, codedError } from './errors.js'

export * from '../index.js'

type Fn = (this: unknown, ...args: unknown[]) => unknown

/**
 * napi-rs's own statuses: an argument it could not convert, or a failure of
 * the N-API environment. Their text may quote the value, so it is dropped.
 */
const NAPI_ARGUMENT = /^(InvalidArg|[A-Za-z]+Expected)$/
const NAPI_STATUS =
  /^(GenericFailure|PendingException|Cancelled|EscapeCalledTwice|HandleScopeMismatch|CallbackScopeMismatch|QueueFull|Closing|WouldDeadlock|NoExternalBuffersAllowed|Unknown)$/

/**
 * What `error`, thrown or rejected by the addon's `where`, becomes. An error
 * without a code is the engine's (a TypeError converting a missing object) or
 * a caller's own passed through (a getter of theirs that threw): the first is
 * an invalid argument, the second stays theirs. A constructor's uncoded
 * error is napi's own (`uncoded`).
 */
function fromAddon(where: string, error: unknown, uncoded?: 'ERR_LOOPX_INTERNAL'): unknown {
  const coded = codedError(error)
  if (coded !== error || !(error instanceof Error)) return coded
  const status = (error as { code?: unknown }).code
  if (typeof status !== 'string') {
    if (error instanceof TypeError)
      return new LoopxHooksError(
        'ERR_LOOPX_INVALID_ARGUMENT',
        `${where}: invalid argument (of a kind the addon cannot convert)`,
      )
    if (uncoded) return new LoopxHooksError(uncoded, `${where}: ${error.message}`)
    return error
  }
  if (NAPI_ARGUMENT.test(status))
    return new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${where}: invalid argument (${status})`)
  if (NAPI_STATUS.test(status))
    return new LoopxHooksError('ERR_LOOPX_INTERNAL', `${where}: the native addon failed (${status})`)
  return error
}

function wrap(where: string, fn: Fn): Fn {
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    let out: unknown
    try {
      out = fn.apply(this, args)
    } catch (error) {
      throw fromAddon(where, error)
    }
    if (out instanceof Promise)
      return out.then(undefined, (error: unknown) => {
        throw fromAddon(where, error)
      })
    return out
  }
  Object.defineProperty(wrapped, 'name', { value: fn.name })
  return wrapped
}

/** Wraps the own methods and getters of a class's prototype in place. */
function wrapPrototype(owner: string, proto: object): void {
  for (const name of Object.getOwnPropertyNames(proto)) {
    const d = Object.getOwnPropertyDescriptor(proto, name)!
    if (name === 'constructor' || !d.configurable) continue
    if (typeof d.value === 'function') d.value = wrap(`${owner}.${name}`, d.value as Fn)
    else if (d.get) d.get = wrap(`${owner}.${name}`, d.get as Fn) as () => unknown
    else continue
    Object.defineProperty(proto, name, d)
  }
}

type Class = new (...args: unknown[]) => object

/**
 * A class whose `new` and statics throw coded errors. It shares the native
 * class's prototype, so `instanceof` holds for an instance the addon made
 * itself, and `extends` makes a subclass of the native class. (A Proxy
 * cannot stand in: napi's statics are non-writable and non-configurable,
 * so a Proxy must return them unwrapped.)
 */
function wrapClass(name: string, cls: Class): Class {
  wrapPrototype(name, cls.prototype as object)
  const door = function (this: unknown, ...args: unknown[]): object {
    if (new.target === undefined) throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${name}: call it with new`)
    try {
      return Reflect.construct(cls, args, new.target) as object
    } catch (error) {
      throw fromAddon(name, error, 'ERR_LOOPX_INTERNAL')
    }
  } as unknown as Class
  Object.defineProperty(door, 'name', { value: name })
  door.prototype = cls.prototype as object
  for (const key of Object.getOwnPropertyNames(cls)) {
    const value = (cls as unknown as Record<string, unknown>)[key]
    if (['length', 'name', 'prototype'].includes(key) || typeof value !== 'function') continue
    Object.defineProperty(door, key, { value: wrap(`${name}.${key}`, value as Fn), enumerable: false })
  }
  return door
}

const WRAPPED = Symbol.for('loopx-hooks.addon.wrapped')

/** The addon's exports, wrapped in place once per process (the loader caches one module object). */
function wrapAddon(exports: Record<string | symbol, unknown>): void {
  if (exports[WRAPPED]) return
  for (const name of Object.keys(exports)) {
    const value = exports[name]
    if (typeof value !== 'function' || name.startsWith('__')) continue
    const proto = (value as { prototype?: object }).prototype
    const isClass = proto !== undefined && Object.getOwnPropertyNames(proto).length > 1
    exports[name] = isClass ? wrapClass(name, value as new (...args: unknown[]) => object) : wrap(name, value as Fn)
  }
  Object.defineProperty(exports, WRAPPED, { value: true })
}

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the loader's own module object, to wrap in place
wrapAddon(require('../index.js') as Record<string | symbol, unknown>)
