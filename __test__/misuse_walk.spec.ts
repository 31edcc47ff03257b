// Misuse anywhere on the public surface is a coded error. The walk takes every
// export of every entry point in package.json "exports", every class's static
// and prototype methods (on live instances) and constructor, and calls each
// with each wrong kind of value (undefined, null, a number, a string, an array,
// an object, where another kind belongs) in each argument position, and in each
// member of an object argument. A call may succeed (an optional argument), or
// return a validator's typed verdict, or throw or reject with a LoopxHooksError
// ERR_LOOPX_INVALID_ARGUMENT whose message names the argument or member; any
// other throw fails the walk. A new export, method or parameter is walked as
// soon as it exists: the walk fails until it has a valid sample (SAMPLES) for
// the arguments before a position, and it is never a list of methods to test.
// The samples and live instances are in support/walk_samples.ts.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import * as root from '../lib/index.js'
import { paramNames, publicClass, wrongKinds, kindOf, type Callable } from './support/walk.js'
import { ENTRIES, instances, repo, sampleFor, state, tmp } from './support/walk_samples.js'

/**
 * What the walk does not call, each with its reason. Constructors that are
 * private or internal are reached through their factories (`open`), which
 * are walked.
 */
const EXCLUDED: Record<string, string> = {
  'HookJournal.constructor': 'internal: wraps a native journal; HookJournal.open and openReadOnly are walked',
  'HookRuntime.constructor': 'private: HookRuntime.open is walked',
  'ShippedHookRuntime.constructor': "internal: HookRuntime.open({ dialect: 'loopx-shipped-v0' }) makes one",
  'InboxStore.constructor': 'private: InboxStore.open is walked',
  'InboxCollector.constructor': 'private: InboxStore.collector makes one',
  'TurnStartSession.constructor': 'internal: the kernel makes one per provider call',
  'TurnSettlement.constructor': 'private: TurnSettlement.open is walked',
  'PeriodicReportScheduler.constructor': 'private: PeriodicReportScheduler.open is walked',
  'TriggerStore.constructor': 'private: TriggerStore.open is walked',
  'LoopxHooksError.constructor': 'the error class itself: it makes the caller an error, it takes no input',
}

/** Classes whose methods are not walked on a live instance, each with its reason. */
const NOT_LIVE: Record<string, string> = {
  LoopxHooksError: 'an Error: no methods of its own',
}

/**
 * Parameters that are documents: the addon judges them whole against their
 * contract, so their members are not walked one by one (validators.spec.ts
 * and hostile_inputs.spec.ts walk documents), and a document of the wrong
 * kind may be answered with the contract's own verdict.
 */
const DOCUMENTS = new Set([
  'doc',
  'registration',
  'definition',
  'request',
  'requests',
  'input',
  'value',
  'parts',
  'receipt',
  'settlement',
])

/** Codes a document argument may be refused with: the contract's verdicts, with their violations. */
const VERDICTS = new Set(['ERR_LOOPX_REGISTRATION_REJECTED', 'ERR_LOOPX_INTENT_KIND_REJECTED'])

/** Each finding is one line: where, what was passed, what came back. */
const findings: string[] = []

function judge(where: string, names: string[], error: unknown): void {
  if (!(error instanceof root.LoopxHooksError)) {
    const e = error as { name?: string; code?: string; message?: string }
    findings.push(`${where}: threw ${e?.name ?? typeof error} ${e?.code ?? ''}: ${String(e?.message).slice(0, 120)}`)
    return
  }
  const document = names.some((n) => DOCUMENTS.has(n))
  if (document && VERDICTS.has(error.code) && (error.violations?.length ?? 0) > 0) return
  if (error.code !== 'ERR_LOOPX_INVALID_ARGUMENT' && !(error.code === 'ERR_LOOPX_NOT_JSON_VALUE' && document)) {
    findings.push(`${where}: ${error.code}: ${error.message.slice(0, 120)}`)
    return
  }
  if (!names.some((n) => new RegExp(`\\b${n}\\b`).test(error.message)))
    findings.push(`${where}: the message "${error.message.slice(0, 120)}" names none of ${names.join(', ')}`)
}

/** Calls `call` and judges what it threw or rejected with; a success is fine (an optional argument). */
async function attempt(where: string, names: string[], call: () => unknown): Promise<void> {
  try {
    const out = await call()
    dispose(out)
  } catch (error) {
    judge(where, names, error)
  }
}

/** Closes what a successful call opened. */
function dispose(value: unknown): void {
  if (value !== null && typeof value === 'object') {
    const v = value as { close?: () => unknown; [Symbol.dispose]?: () => void }
    if (typeof v[Symbol.dispose] === 'function') v[Symbol.dispose]!()
    else if (typeof v.close === 'function' && !(value instanceof root.HookJournal)) void v.close()
  }
}

/** Walks one callable: each wrong kind at each position, and in each member of an object argument. */
async function walk(owner: string, method: string, names: string[], call: Callable): Promise<void> {
  // Every other argument is a valid sample, so only the one under test is wrong.
  const others = (i: number): unknown[] | undefined => {
    const args: unknown[] = []
    for (const [j, name] of names.entries()) {
      if (j === i) continue
      const sample = sampleFor(owner, method, name)
      if (!sample && j < i) {
        findings.push(`${owner}.${method}: no sample for ${name}, so ${names[i]} cannot be walked`)
        return undefined
      }
      args[j] = sample?.()
    }
    return args
  }
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!
    const sample = sampleFor(owner, method, name)
    const expected = sample?.()
    const expectedKind = sample ? kindOf(expected) : undefined
    // A whole object argument of the wrong shape may be named by the member it lacks.
    const named = [name, ...(kindOf(expected) === 'object' ? Object.keys(expected as object) : [])]
    const with_ = (value: unknown): unknown[] | undefined => {
      const args = others(i)
      if (args) args[i] = value
      return args
    }
    if (!with_(undefined)) return
    for (const [label, wrong] of wrongKinds()) {
      if (label === expectedKind) continue
      await attempt(`${owner}.${method}(${name} = ${label})`, named, () => call(...with_(wrong)!))
    }
    const value = sample?.()
    if (DOCUMENTS.has(name) || kindOf(value) !== 'object' || (value as object).constructor !== Object) continue
    for (const member of Object.keys(value as object)) {
      const memberKind = kindOf((value as Record<string, unknown>)[member])
      for (const [label, wrong] of wrongKinds()) {
        if (label === memberKind) continue
        const arg = { ...(sample!() as object), [member]: wrong }
        await attempt(`${owner}.${method}(${name}.${member} = ${label})`, [member], () => call(...with_(arg)!))
      }
    }
  }
}

describe('every export, given the wrong kind of value anywhere, throws a coded invalid-argument error', () => {
  beforeAll(async () => {
    state.live = await instances()
  })
  afterAll(async () => {
    for (const list of Object.values(state.live)) for (const o of list) await (o as { close?: () => unknown }).close?.()
    tmp.cleanup()
  })

  it('walks the entry points package.json exports', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }
    const code = Object.keys(pkg.exports).filter((k) => !k.includes('*') && k !== './package.json')
    expect(Object.keys(ENTRIES).sort()).toEqual(code.sort())
  })

  it('finds nothing that slips past ERR_LOOPX_INVALID_ARGUMENT', async () => {
    let walked = 0
    const seen = new Set<unknown>()
    for (const [entry, mod] of Object.entries(ENTRIES)) {
      for (const [exportName, value] of Object.entries(mod)) {
        if (typeof value !== 'function' || seen.has(value)) continue
        seen.add(value)
        const fn = value as Callable & { prototype?: object }
        const cls = publicClass(fn)
        if (!cls) {
          walked++
          await walk(entry, exportName, paramNames(fn, exportName), (...a) => fn(...a))
          continue
        }
        if (!(`${exportName}.constructor` in EXCLUDED)) {
          walked++
          await walk(
            exportName,
            'constructor',
            paramNames(fn, 'constructor'),
            (...a) => new (fn as never as new (...x: unknown[]) => unknown)(...a),
          )
        }
        for (const name of Object.getOwnPropertyNames(fn)) {
          const member = (fn as never as Record<string, unknown>)[name]
          if (typeof member !== 'function' || ['length', 'name', 'prototype'].includes(name)) continue
          walked++
          await walk(exportName, name, paramNames(member as Callable, name, exportName), (...a) =>
            (member as Callable).apply(fn, a),
          )
        }
        const objects = state.live[exportName]
        if (exportName in NOT_LIVE) continue
        if (!objects) {
          findings.push(`${exportName}: no live instance to walk its methods on`)
          continue
        }
        for (const name of Object.getOwnPropertyNames(fn.prototype)) {
          if (name === 'constructor') continue
          const descriptor = Object.getOwnPropertyDescriptor(fn.prototype, name)!
          if (typeof descriptor.value !== 'function' || name === 'close') continue
          for (const object of objects) {
            walked++
            const method = descriptor.value as Callable
            await walk(exportName, name, paramNames(method, name, exportName), (...a) => method.apply(object, a))
          }
        }
      }
    }
    expect(walked).toBeGreaterThan(60)
    expect(findings).toEqual([])
  }, 120_000)
})
