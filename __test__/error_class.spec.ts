// Every error the package throws or rejects with is a LoopxHooksError with a
// code of LoopxHooksErrorCode. misuse_walk.spec.ts provokes the wrong-kind
// errors of every export; this spec provokes the others without a list of
// methods: every method of every public class called with valid arguments on
// an instance that is closed, and every function, class and static of the
// addon itself (`index.js`, behind lib/addon.ts) called with nothing.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { LoopxHooksError } from '../lib/index.js'
import * as addon from '../index.js'
import { paramNames, publicClass, type Callable } from './support/walk.js'
import { ENTRIES, instances, repo, sampleFor, state, tmp } from './support/walk_samples.js'

// The union generated from src/error_code.rs.
const generated = readFileSync(join(repo, 'bindings', 'LoopxHooksErrorCode.ts'), 'utf8')
const CODES = new Set([...generated.matchAll(/"(ERR_LOOPX_[A-Z0-9_]+)"/g)].map((m) => m[1]!))

/** What one call threw, as a finding (or nothing when it is a LoopxHooksError with a known code). */
function misfit(where: string, error: unknown): string | undefined {
  if (!(error instanceof LoopxHooksError)) {
    const e = error as { name?: string; code?: string; message?: string }
    return `${where}: threw ${e?.name ?? typeof error} ${e?.code ?? ''}: ${String(e?.message).slice(0, 120)}`
  }
  if (!CODES.has(error.code)) return `${where}: unknown code ${error.code}`
  if (error.name !== 'LoopxHooksError' || error.message.startsWith('ERR_LOOPX_'))
    return `${where}: ${error.name} "${error.message.slice(0, 60)}" (the code belongs in .code)`
  return undefined
}

/** Calls `call`; returns the error it threw or rejected with, or undefined. */
async function outcome(call: () => unknown): Promise<unknown> {
  try {
    const out = call()
    if (out instanceof Promise) await out
    return undefined
  } catch (error) {
    return error ?? new Error('threw a nullish value')
  }
}

/** The public classes of the entry points, by export name. */
function publicClasses(): Map<string, { prototype: object }> {
  const classes = new Map<string, { prototype: object }>()
  for (const mod of Object.values(ENTRIES))
    for (const [name, value] of Object.entries(mod))
      if (typeof value === 'function' && publicClass(value as Callable)) classes.set(name, value as never)
  return classes
}

describe('every thrown error is a LoopxHooksError with a known code', () => {
  beforeAll(async () => {
    state.live = await instances()
  })
  afterAll(() => tmp.cleanup())

  it('the code list is read (the union has codes)', () => {
    expect(CODES.size).toBeGreaterThan(40)
    expect(CODES).toContain('ERR_LOOPX_JOURNAL_CLOSED')
  })

  it('on a closed instance, every method with valid arguments succeeds or throws a coded LoopxHooksError', async () => {
    const findings: string[] = []
    const codes = new Map<string, Set<string>>()
    const classes = publicClasses()
    const closable = Object.entries(state.live).filter(([, objects]) =>
      objects.every((o) => typeof (o as { close?: unknown }).close === 'function'),
    )
    expect(closable.length).toBeGreaterThanOrEqual(7)
    // The journal the samples hand out stays open for the others; it is walked closed last.
    const order = closable.sort(([a], [b]) => Number(a === 'HookJournal') - Number(b === 'HookJournal'))
    for (const [name, objects] of order) {
      // A class no entry point exports is still public when a public member
      // hands out its instances (a scheduler's `store` is a `TriggerStore`).
      const cls = classes.get(name) ?? (Object.getPrototypeOf(objects[0]) as { constructor?: Callable }).constructor
      if (typeof cls !== 'function') {
        findings.push(`${name}: not a class`)
        continue
      }
      for (const object of objects) {
        await (object as { close: () => unknown }).close()
        for (const method of Object.getOwnPropertyNames(cls.prototype)) {
          const d = Object.getOwnPropertyDescriptor(cls.prototype, method)!
          if (method === 'constructor' || typeof d.value !== 'function') continue
          const fn = d.value as Callable
          const args: unknown[] = []
          for (const param of paramNames(fn, method, name)) {
            const sample = sampleFor(name, method, param)
            if (!sample) {
              findings.push(`${name}.${method}: no sample for ${param}`)
              break
            }
            args.push(sample())
          }
          const error = await outcome(() => fn.apply(object, args))
          if (error === undefined) continue
          const wrong = misfit(`${name}.${method} (closed)`, error)
          if (wrong) findings.push(wrong)
          else codes.set(name, (codes.get(name) ?? new Set()).add((error as LoopxHooksError).code))
        }
      }
    }
    expect(findings).toEqual([])
    // Each closable class refuses something once closed, with a code that says so.
    for (const [name] of closable)
      expect([name, [...(codes.get(name) ?? [])].some((c) => /CLOSED/.test(c))]).toEqual([name, true])
  }, 120_000)

  it("the addon's own exports, given nothing, throw or reject a coded LoopxHooksError (the boundary, not each caller)", async () => {
    const findings: string[] = []
    let provoked = 0
    for (const [name, value] of Object.entries(addon)) {
      if (typeof value !== 'function' || name.startsWith('__')) continue
      const fn = value as Callable & (new (...a: unknown[]) => unknown)
      const isClass = publicClass(fn)
      const calls: [string, () => unknown][] = isClass
        ? [
            [`new ${name}()`, () => new fn()],
            ...Object.getOwnPropertyNames(fn)
              .filter((s) => typeof (fn as never as Record<string, unknown>)[s] === 'function')
              .map(
                (s) =>
                  [`${name}.${s}()`, () => (fn as never as Record<string, Callable>)[s]!()] as [string, () => unknown],
              ),
          ]
        : [[`${name}()`, () => fn()]]
      for (const [where, call] of calls) {
        const error = await outcome(call)
        if (error === undefined) continue
        provoked++
        const wrong = misfit(where, error)
        if (wrong) findings.push(wrong)
      }
    }
    expect(findings).toEqual([])
    expect(provoked).toBeGreaterThan(30)
  })
})
