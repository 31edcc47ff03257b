// Shared fixtures for the loopx-hooks/loopx transaction specs
// (loopx_transaction*.spec.ts): the documents of LoopX's post-writeback hook
// transaction (registrations, sources, legacy hook inputs, provider results
// and outcomes), the sidecar folder LoopX keeps under a runtime root, and
// LoopX's lock file held by hand, as LoopX's own writer holds it.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

import {
  POST_WRITEBACK_HOOK_SOURCE_SCHEMA_VERSION,
  POST_WRITEBACK_HOOK_TRANSACTION_REQUEST_SCHEMA_VERSION,
  evaluatePostWritebackHookTransaction,
} from '../../lib/loopx.js'

/** A contract document as the transaction carries it. */
export type Doc = Record<string, unknown>

export const HOOK = 'periodic_report.stage_completion'
export const GOAL = 'goal-1'

export interface Plan {
  dispatch_id: string
  hook_id: string
  capability_id: string
  attempt_count: number
  retry: boolean
  receipt_snapshot: string
  hook_input: { receipt: { event_id: string; recorded_at: string } & Doc; identity: Doc; projection: Doc } & Doc
}

export interface Failure {
  hook_id: string
  capability_id: string
  error_code: string
  durable_receipt_ref?: string
}

export interface Dispatch {
  registered_count: number
  invoked_count: number
  replayed_hooks: string[]
  retried_hooks: string[]
  intent_count: number
  intents: Doc[]
  failures: Failure[]
}

export interface TransactionResult {
  schema_version: string
  phase: 'preflight' | 'finalize'
  transaction_id: string
  provider_plan: Plan[]
  dispatch: Dispatch | null
}

/** One transaction, its answer typed for the assertions. */
export async function evaluate(request: Doc): Promise<TransactionResult> {
  return (await evaluatePostWritebackHookTransaction(request)) as unknown as TransactionResult
}

/** A finalize's dispatch (never null there). */
export async function finalized(request: Doc): Promise<Dispatch> {
  const result = await evaluate(request)
  if (result.dispatch === null) throw new Error('a finalize answered without a dispatch')
  return result.dispatch
}

/** What the transaction rejected with; fails the test when it answered instead. */
export async function rejection(request: unknown): Promise<Error & { code?: unknown }> {
  try {
    await evaluatePostWritebackHookTransaction(request)
  } catch (error) {
    return error as Error & { code?: unknown }
  }
  throw new Error('the transaction was answered, not rejected')
}

/** [hook_id, error_code] of each failure, in the dispatch's order. */
export const failureCodes = (dispatch: Dispatch): [string, string][] =>
  dispatch.failures.map((f) => [f.hook_id, f.error_code])

export function registration(hookId = HOOK, readScope = ['stage_completion'], maxResultBytes = 16_384): Doc {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
    hook_id: hookId,
    capability_id: 'periodic-report',
    policy_version: 'v0',
    phase: 'post_writeback',
    event_kinds: ['refresh_state'],
    intent_kinds: ['periodic_report.trigger_evaluation'],
    budget: { max_invocations_per_dispatch: 1, max_input_bytes: 65_536, max_result_bytes: maxResultBytes },
    failure_policy: 'isolate',
    requested_read_scope: readScope,
    requested_write_scope: [],
  }
}

/** A committed refresh_state source without `receipt_id` (its event id hashes `committed_at`). */
export function source(): Doc & { identity: Doc } {
  return {
    schema_version: POST_WRITEBACK_HOOK_SOURCE_SCHEMA_VERSION,
    event_kind: 'refresh_state',
    status: 'committed',
    durable: true,
    identity: {
      goal_id: GOAL,
      agent_id: 'agent-1',
      todo_id: 'todo-1',
      turn_instance_id: 'turn-1',
      effect_id: 'effect-1',
    },
    state_version: 'state-v1',
    committed_at: '2026-09-02T12:00:00Z',
    projection: { stage_completion: { transition: 'goal_terminal' }, project_progress: { items: [] } },
  }
}

/** A hook input as LoopX's older hosts send it instead of a source. */
export function legacyHookInput(): Doc & { receipt: Doc } {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_input_v0',
    receipt: {
      schema_version: 'loopx_rollout_event_v0',
      event_id: 'evt-stage-1',
      event_kind: 'refresh_state',
      status: 'appended',
      recorded_at: '2026-08-30T01:00:00+08:00',
      durable: true,
    },
    identity: {
      goal_id: GOAL,
      agent_id: 'agent-1',
      todo_id: 'todo-1',
      turn_instance_id: 'turn-1',
      effect_id: 'goal-1:agent-1:todo-1:turn-1',
    },
    state_version: 'vision-revision-2',
    projection: { stage_completion: { transition: 'goal_terminal' } },
  }
}

/** A preflight over one stage_completion hook; `fields` replace any member. */
export function request(runtimeRoot: string | null, fields: Doc = {}): Doc {
  return {
    schema_version: POST_WRITEBACK_HOOK_TRANSACTION_REQUEST_SCHEMA_VERSION,
    phase: 'preflight',
    runtime_root: runtimeRoot,
    source: source(),
    hook_input: null,
    registrations: [registration()],
    transaction_id: null,
    provider_outcomes: [],
    ...fields,
  }
}

/** The finalize that follows `preflight` (same facts), with these outcomes. */
export function finalize(
  runtimeRoot: string | null,
  preflight: TransactionResult,
  outcomes: Doc[],
  fields: Doc = {},
): Doc {
  return request(runtimeRoot, {
    phase: 'finalize',
    transaction_id: preflight.transaction_id,
    provider_outcomes: outcomes,
    ...fields,
  })
}

export function intentResult(
  plan: Plan,
  idempotencyKey = 'periodic-report:stage-1',
  payload: Doc = { generation_authorized: false },
): Doc & { intent: Doc } {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_result_v0',
    hook_id: plan.hook_id,
    capability_id: plan.capability_id,
    phase: 'post_writeback',
    status: 'intent',
    intent: {
      schema_version: 'loopx_capability_intent_v0',
      intent_kind: 'periodic_report.trigger_evaluation',
      idempotency_key: idempotencyKey,
      source_receipt_id: plan.hook_input.receipt.event_id,
      payload,
      requested_write_scope: [],
    },
  }
}

export function notApplicableResult(plan: Plan): Doc {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_result_v0',
    hook_id: plan.hook_id,
    capability_id: plan.capability_id,
    phase: 'post_writeback',
    status: 'not_applicable',
    intent: null,
  }
}

/** The provider ran and returned `result` for `plan`. */
export function returned(plan: Plan, result: Doc = intentResult(plan)): Doc {
  const { dispatch_id, hook_id, capability_id, attempt_count } = plan
  return { dispatch_id, hook_id, capability_id, attempt_count, status: 'returned', result }
}

/** The provider did not return: `producer_failed`, `contract_rejected`, or a deferred lock status. */
export function notReturned(plan: Plan, status: string): Doc {
  const { dispatch_id, hook_id, capability_id, attempt_count } = plan
  return { dispatch_id, hook_id, capability_id, attempt_count, status, result: null }
}

export const receiptFolder = (root: string): string => join(root, 'goals', GOAL, 'post_writeback_hooks')
export const receiptFile = (root: string, plan: Plan): string => join(receiptFolder(root), `${plan.dispatch_id}.json`)
export const readReceipt = (
  root: string,
  plan: Plan,
): Doc & { status: string; attempt_count: number; intent: Doc | null } =>
  JSON.parse(readFileSync(receiptFile(root, plan), 'utf8'))
/** The receipt folder's entries, or null when there is no folder. */
export const folderEntries = (root: string): string[] | null =>
  existsSync(receiptFolder(root)) ? readdirSync(receiptFolder(root)).sort() : null

/** A `retryable_failure` sidecar receipt for `plan` at `attemptCount`. */
export function retryableReceipt(plan: Plan, attemptCount: number): Doc {
  return {
    schema_version: 'loopx_post_writeback_capability_hook_receipt_v0',
    dispatch_id: plan.dispatch_id,
    hook_id: plan.hook_id,
    capability_id: plan.capability_id,
    source_receipt_id: plan.hook_input.receipt.event_id,
    status: 'retryable_failure',
    intent: null,
    error_code: 'producer_failed',
    attempt_count: attemptCount,
    recorded_at: plan.hook_input.receipt.recorded_at,
  }
}

/** Puts `receipt` (a document, or raw text) where LoopX keeps `plan`'s sidecar. */
export function plantReceipt(root: string, plan: Plan, receipt: Doc | string): string {
  const file = receiptFile(root, plan)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, typeof receipt === 'string' ? receipt : `${JSON.stringify(receipt)}\n`)
  return file
}

/**
 * Holds LoopX's lock on `file` as LoopX's writer does: `<file>.ts-effect.lock`
 * created exclusively, naming a live owner (this process) and a token.
 */
export function holdLock(file: string, pid = process.pid): { path: string; token: string; release(): void } {
  const path = `${file}.ts-effect.lock`
  const token = randomUUID()
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(path, JSON.stringify({ pid, token }), { flag: 'wx' })
  return { path, token, release: () => rmSync(path, { force: true }) }
}

/** Temporary runtime roots, removed by `cleanup()`. */
export class Roots {
  private readonly made: string[] = []
  make(): string {
    const root = mkdtempSync(join(tmpdir(), 'loopx-transaction-'))
    this.made.push(root)
    return root
  }
  cleanup(): void {
    for (const root of this.made.splice(0)) rmSync(root, { recursive: true, force: true })
  }
}

/** Waits (polling) until `path` exists; false when `ms` ran out. */
export async function appears(path: string, ms = 2_500): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (existsSync(path)) return true
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  return existsSync(path)
}
