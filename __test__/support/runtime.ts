// Shared fixtures for the runtime-level suites (matrix, isolation, secrecy):
// intent kinds, registrations, dispatch requests, counted providers, temp
// journal directories under os.tmpdir() (removed afterwards), quota-spend
// eligibility, and a byte scanner over a journal's directory.
//
// Everything here drives the built addon through the public TS layer
// ('../../lib/index.js'): no mocks of our code; providers are real JS functions.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { SQLITE, SqliteTarget, Targets, type Backend, type JournalTarget } from './backends'

import {
  HookRuntime,
  defineIntentKind,
  intent,
  notApplicable,
  proposed,
  type DispatchOutcome,
  type DispatchRequest,
  type EventKind,
  type HookDefinition,
  type HookBudget,
  type HookOutcome,
  type PostWritebackHookInput,
  type PostWritebackHookRegistration,
  type Profile,
  type SettlementIdentity,
  type WritebackReceipt,
} from '../../lib/index.js'

export { HookRuntime, intent, notApplicable, proposed }

// ---------------------------------------------------------------- intent kinds

/** A small kind owned by `capability`: `<capability>.signal`, operations evaluate/refresh. */
export function signalKind<const C extends string>(capability: C) {
  return defineIntentKind({
    intent_kind: `${capability}.signal` as `${C}.signal`,
    capability_id: capability,
    operations: ['evaluate', 'refresh'],
    payload_schema: {
      type: 'object',
      properties: {
        ref: { type: 'string', format: 'opaque_ref' },
        refs: { type: 'array', items: { type: 'string', format: 'opaque_ref' }, maxItems: 32, uniqueItems: true },
        level: { type: 'integer', minimum: 0, maximum: 1000 },
      },
      required: ['ref', 'refs', 'level'],
      additionalProperties: false,
    },
  } as const)
}

export type SignalKind = ReturnType<typeof signalKind<string>>

/** The RFC's periodic-report kind (examples/intent_kind.json). */
export const TRIGGER_EVALUATION = defineIntentKind({
  intent_kind: 'periodic_report.trigger_evaluation',
  capability_id: 'periodic_report',
  operations: ['evaluate_runtime_trigger'],
  payload_schema: {
    type: 'object',
    properties: {
      segment_ref: { type: 'string', format: 'opaque_ref' },
      source_event_refs: {
        type: 'array',
        items: { type: 'string', format: 'opaque_ref' },
        maxItems: 32,
        uniqueItems: true,
      },
    },
    required: ['segment_ref', 'source_event_refs'],
    additionalProperties: false,
  },
} as const)

// ---------------------------------------------------------------- registrations

export interface RegistrationOptions {
  capability?: string
  eventKinds?: EventKind[]
  intentKinds?: string[]
  budget?: Partial<HookBudget>
}

/** A valid registration for `hookId` (capability = the part before the first dot; kind `<capability>.signal`). */
export function registration(hookId: string, options: RegistrationOptions = {}): PostWritebackHookRegistration {
  const capability = options.capability ?? hookId.slice(0, hookId.indexOf('.'))
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: capability,
    phase: 'post_writeback',
    event_kinds: options.eventKinds ?? ['todo_completed', 'replan_recorded'],
    intent_kinds: options.intentKinds ?? [`${capability}.signal`],
    requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
    budget: {
      max_invocations_per_dispatch: 1,
      max_intents_per_dispatch: 1,
      max_result_bytes: 16384,
      timeout_ms: 1000,
      ...options.budget,
    },
    failure_policy: 'isolate',
  }
}

// ---------------------------------------------------------------- requests

/**
 * Overrides of the admissible request. `step_kind`, `status` and the event
 * kind take any text, not only their vocabulary: refusal tests send what a
 * JSON caller (Python, `serve`) can, which the TypeScript types refuse.
 */
export interface RequestOptions {
  receipt?: Partial<Omit<WritebackReceipt, 'step_kind' | 'status'>> & { step_kind?: string; status?: string }
  settlement?: Partial<SettlementIdentity>
  eventKind?: string
  factRefs?: string[]
}

/** A committed, checkpointed durable-writeback request (admissible unless overridden). */
export function request(options: RequestOptions = {}): DispatchRequest {
  const effect = options.receipt?.effect_id ?? options.settlement?.effect_id ?? 'effect_0001'
  return {
    settlement: {
      goal_id: 'goal_0001',
      agent_id: 'agent_0001',
      todo_id: 'todo_0001',
      turn_instance_id: 'turn_0001',
      effect_id: effect,
      ...options.settlement,
    },
    receipt: {
      receipt_id: 'receipt_0001',
      effect_id: effect,
      step_kind: 'durable_writeback',
      status: 'committed',
      checkpointed: true,
      state_revision: 'rev_0001',
      committed_at: '2026-08-26T00:00:00Z',
      ...options.receipt,
    },
    event: { event_kind: options.eventKind ?? 'todo_completed', fact_refs: options.factRefs ?? ['fact_0001'] },
  } as DispatchRequest
}

/**
 * Quota-spend eligibility (RFC 5.2, contract-v0 section 5): a pure function of
 * the primary receipt and the settlement alone. Nothing a hook does may change
 * its value, or the objects it reads.
 */
export function eligible(receipt: WritebackReceipt, settlement: SettlementIdentity): boolean {
  return (
    receipt.step_kind === 'durable_writeback' &&
    receipt.status === 'committed' &&
    receipt.checkpointed === true &&
    receipt.effect_id === settlement.effect_id
  )
}

/** What must be unchanged after a dispatch: the primary objects and eligibility. */
export interface PrimarySnapshot {
  receipt: WritebackReceipt
  settlement: SettlementIdentity
  eligible: boolean
}

export function snapshotPrimary(req: DispatchRequest): PrimarySnapshot {
  return {
    receipt: structuredClone(req.receipt),
    settlement: structuredClone(req.settlement),
    eligible: eligible(req.receipt, req.settlement),
  }
}

// ---------------------------------------------------------------- providers

/** A provider that counts its invocations and keeps the inputs it saw. */
export interface Counted<R = unknown> {
  (input: PostWritebackHookInput): R
  calls: number
  inputs: PostWritebackHookInput[]
}

/**
 * Typed as a contract provider whatever it answers: these tests hand the
 * dispatcher what a JavaScript caller could, and the dispatcher judges it.
 */
export type AnyResultProvider = HookDefinition['provider']

export function counted<R>(body: (input: PostWritebackHookInput, call: number) => R): Counted<R> & AnyResultProvider {
  const fn = ((input: PostWritebackHookInput) => {
    fn.calls += 1
    fn.inputs.push(input)
    return body(input, fn.calls)
  }) as Counted<R> & AnyResultProvider
  fn.calls = 0
  fn.inputs = []
  return fn
}

/** A well-formed `proposed` result with one `<capability>.signal` intent derived from the input. */
export function signalResult(
  input: PostWritebackHookInput,
  options: { level?: number; operation?: 'evaluate' | 'refresh'; requestedWriteScope?: string[] } = {},
) {
  const kind = signalKind(input.capability_id)
  return proposed([
    intent(input, kind, {
      operation: options.operation ?? 'evaluate',
      policyVersion: 'v0',
      payload: { ref: input.source.receipt_id, refs: [...input.projection.fact_refs], level: options.level ?? 1 },
      ...(options.requestedWriteScope ? { requestedWriteScope: options.requestedWriteScope } : {}),
    }),
  ])
}

/** A counted provider that proposes one signal intent. */
export function goodProvider(options: { level?: number } = {}) {
  return counted((input) => signalResult(input, options))
}

// ---------------------------------------------------------------- journals

/** A temporary directory under os.tmpdir(); `cleanup()` removes it. */
export class TempDir {
  readonly dir: string
  constructor(prefix = 'loopx-hooks-test-') {
    this.dir = mkdtempSync(join(tmpdir(), prefix))
  }
  path(name: string): string {
    return join(this.dir, name)
  }
  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * Tracks temp dirs, journal targets and runtimes of one suite; `cleanup()`
 * closes and removes them all. Its journals are on `backend` (SQLite unless
 * a parametrized suite says otherwise, see support/backends.ts).
 */
export class Fixtures {
  readonly #dirs: TempDir[] = []
  readonly #runtimes: HookRuntime[] = []
  readonly #targets: Targets

  constructor(readonly backend: Backend = SQLITE) {
    this.#targets = new Targets(backend)
  }

  tempDir(): TempDir {
    const d = new TempDir()
    this.#dirs.push(d)
    return d
  }

  /** A fresh journal on this suite's backend, removed by `cleanup()`. */
  target(label?: string): JournalTarget {
    return this.#targets.fresh(label)
  }

  /**
   * Opens a runtime on a journal (a fresh one unless `target` or, SQLite
   * only, `journalPath` names one), with the phase enabled unless the
   * profile says otherwise, and `kinds` defined.
   */
  async runtime(
    options: { profile?: Partial<Profile>; capabilities?: string[]; journalPath?: string; target?: JournalTarget } = {},
  ) {
    const target = options.target ?? (options.journalPath ? undefined : this.target())
    const journalPath = options.journalPath ?? (target instanceof SqliteTarget ? target.path : undefined)
    const runtime = await HookRuntime.open({
      ...(target ? target.runtimeOptions({ synchronous: 'normal' }) : { journal: journalPath!, synchronous: 'normal' }),
      profile: { enabled: true, ...options.profile },
    })
    this.#runtimes.push(runtime)
    for (const c of options.capabilities ?? []) runtime.defineIntentKind(signalKind(c))
    return {
      runtime,
      target,
      // SQLite only: the journal file and its directory (undefined on PostgreSQL).
      journalPath: journalPath as string,
      dir: journalPath?.slice(0, journalPath.lastIndexOf('/')) as string,
    }
  }

  async cleanup(): Promise<void> {
    for (const r of this.#runtimes.splice(0)) {
      try {
        await r.close()
      } catch {
        // already closed
      }
    }
    for (const d of this.#dirs.splice(0)) d.cleanup()
    await this.#targets.cleanup()
  }
}

/** Every journal row, for "nothing was recorded" and "nothing changed" checks. */
export async function journalContents(runtime: HookRuntime) {
  const [stats, dispatches, intents] = await Promise.all([
    runtime.journal.stats(),
    runtime.journal.listDispatches({ limit: 1000 }),
    runtime.journal.listIntents({ limit: 1000 }),
  ])
  const failures = await Promise.all(dispatches.items.map((d) => runtime.journal.listFailures(d.dispatchId)))
  return { stats, dispatches: dispatches.items, intents: intents.items, failures: failures.flat() }
}

export const EMPTY_STATS = {
  checkpointed: 0,
  failed: 0,
  proposed: 0,
  notApplicable: 0,
  exhausted: 0,
  intents: 0,
  intentsOpen: 0,
}

/** The journal's view of one dispatch identity without clock fields (row, failures, intents). */
export async function identityRecord(runtime: HookRuntime, dispatchId: string) {
  const row = await runtime.journal.getDispatch(dispatchId)
  const failures = await runtime.journal.listFailures(dispatchId)
  const intents = await runtime.journal.listIntents({ dispatchId, limit: 1000 })
  return {
    row: row && { ...row, seq: 0, createdAt: 0, updatedAt: 0 },
    failures: failures.map((f) => ({ ...f, at: 0 })),
    intents: intents.items.map((i) => ({ ...i, seq: 0, decidedAt: null, doneAt: null })),
  }
}

export function hookOutcome(outcome: DispatchOutcome, hookId: string): HookOutcome {
  const found = outcome.hooks.find((h) => h.hookId === hookId)
  if (!found) throw new Error(`no outcome for ${hookId}: ${JSON.stringify(outcome)}`)
  return found
}

// ---------------------------------------------------------------- byte scans

/** Every file directly in `dir` (the journal, -wal, -shm, anything else) with its bytes. */
export function filesIn(dir: string): { name: string; bytes: Buffer }[] {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .filter((p) => statSync(p).isFile())
    .map((p) => ({ name: p, bytes: readFileSync(p) }))
}

/**
 * The encodings a planted string is searched in: UTF-8 (required), UTF-16LE,
 * UTF-16BE, lowercase and uppercase hex of its UTF-8 bytes (a hex-encoded copy).
 */
export function encodings(needle: string): { label: string; bytes: Buffer }[] {
  const utf8 = Buffer.from(needle, 'utf8')
  const le = Buffer.from(needle, 'utf16le')
  const be = Buffer.from(le).swap16()
  const hex = utf8.toString('hex')
  return [
    { label: 'utf8', bytes: utf8 },
    { label: 'utf16le', bytes: le },
    { label: 'utf16be', bytes: be },
    { label: 'hex', bytes: Buffer.from(hex, 'utf8') },
    { label: 'HEX', bytes: Buffer.from(hex.toUpperCase(), 'utf8') },
    { label: 'base64', bytes: Buffer.from(utf8.toString('base64').replace(/=+$/, ''), 'utf8') },
  ]
}

/** Where any of `needles` (in any of `encodings`) occurs in `haystacks`; empty when nowhere. */
export function findPlanted(haystacks: { name: string; bytes: Buffer }[], needles: string[]): string[] {
  const hits: string[] = []
  for (const needle of needles) {
    for (const enc of encodings(needle)) {
      // base64 of a short needle is too short to mean anything; skip it under 12 bytes.
      if (enc.label === 'base64' && enc.bytes.length < 12) continue
      for (const h of haystacks) {
        const at = h.bytes.indexOf(enc.bytes)
        if (at >= 0) hits.push(`${JSON.stringify(needle)} (${enc.label}) in ${h.name} at ${at}`)
      }
    }
  }
  return hits
}

/** A random tag of `n` lowercase hex characters. */
export function randomTag(n = 16): string {
  let s = ''
  while (s.length < n)
    s += Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0')
  return s.slice(0, n)
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
