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

/** What `error`, thrown or rejected by the addon's `where`, becomes. */
function fromAddon(where: string, error: unknown): unknown {
  const coded = codedError(error)
  if (coded !== error || !(error instanceof Error)) return coded
  const status = (error as { code?: unknown }).code
  if (typeof status !== 'string') return error
  if (NAPI_ARGUMENT.test(status))
    return new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', `${where}: invalid argument (${status})`)
  if (NAPI_STATUS.test(status))
    return new LoopxHooksError('ERR_LOOPX_INTERNAL', `${where}: the native addon failed (${status})`)
  return error
}

function wrap(where: string, fn: Fn): Fn {
  return function (this: unknown, ...args: unknown[]): unknown {
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
}

/** Wraps the own methods and getters of `target` (a prototype or a class) in place. */
function wrapMembers(owner: string, target: object): void {
  for (const name of Object.getOwnPropertyNames(target)) {
    if (name === 'constructor' || name === 'prototype' || name === 'length' || name === 'name') continue
    const d = Object.getOwnPropertyDescriptor(target, name)!
    if (!d.configurable) continue
    if (typeof d.value === 'function') d.value = wrap(`${owner}.${name}`, d.value as Fn)
    else if (d.get) d.get = wrap(`${owner}.${name}`, d.get as Fn) as () => unknown
    else continue
    Object.defineProperty(target, name, d)
  }
}

/** A class whose `new` throws coded errors; `instanceof` and `extends` see the class itself. */
function wrapClass(name: string, cls: new (...args: unknown[]) => object): unknown {
  wrapMembers(name, cls.prototype as object)
  wrapMembers(name, cls)
  return new Proxy(cls, {
    construct(target, args, newTarget) {
      try {
        return Reflect.construct(target, args, newTarget) as object
      } catch (error) {
        throw fromAddon(name, error)
      }
    },
  })
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
