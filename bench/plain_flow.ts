/**
 * The storage-independent part of the plain path (see baseline.ts): hook
 * registry, admission, hook input, provider call with its timeout, result
 * validation and digest, receipts. The SQLite journal (`baseline.ts`) and the
 * PostgreSQL journal (`plain_pg.ts`) each drive it with their own statements,
 * so both plain rows do exactly the same work outside the database.
 */
import type {
  DispatchOutcome,
  DispatchReceipt,
  DispatchRequest,
  HookOutcome,
  IntentKindDefinition,
  PostWritebackHookRegistration,
} from '../bindings/index.js'
import { jcs, sha256Hex } from './fixtures.js'
import { dispatchIdOf, PlainValidators, TRANSITION } from './plain_validators.js'

export interface Hook {
  registration: PostWritebackHookRegistration
  digest: string
  provider: (input: any) => unknown
}

/** A dispatch identity's row as the journal has it. */
export interface Standing {
  state: string
  attempts: number
  receipt: string | null
  result_digest: string | null
}

export const FINAL = new Set(['proposed', 'not_applicable', 'exhausted'])

class Timeout {}

export type Invoked = { result: any; digest: string } | { code: string; rule: string | null }

/** What a journal needs to run one hook: its identity, input, and the outcome fields every answer shares. */
export interface Prepared {
  dispatchId: string
  input: any
  base: {
    hookId: string
    dispatchId: string
    receipt: null
    failureCode: null
    failureRule: null
    failurePointer: null
    prunedAt: null
  }
}

export class PlainHooks {
  readonly validators = new PlainValidators(false)
  readonly hooks: Hook[] = []

  constructor(readonly enabled: boolean) {}

  defineIntentKind(definition: IntentKindDefinition): void {
    const v = this.validators.defineIntentKind(definition)
    if (!v.ok) throw Object.assign(new Error('intent kind definition rejected'), { violations: v.violations })
  }

  register(registration: PostWritebackHookRegistration, provider: (input: any) => unknown): void {
    const v = this.validators.validateRegistration(registration)
    if (!v.ok) throw Object.assign(new Error('registration_rejected'), { violations: v.violations })
    const copy = JSON.parse(JSON.stringify(registration))
    this.hooks.push({ registration: copy, digest: sha256Hex(jcs(copy)), provider })
    this.hooks.sort((a, b) =>
      a.registration.hook_id < b.registration.hook_id ? -1 : a.registration.hook_id > b.registration.hook_id ? 1 : 0,
    )
  }

  /** Admission, then each subscribed hook in turn through the journal's `run`. */
  async dispatch(
    request: DispatchRequest,
    run: (hook: Hook, request: DispatchRequest, deadline: number) => Promise<HookOutcome>,
  ): Promise<DispatchOutcome> {
    if (!this.validators.validateRequest(request))
      throw Object.assign(new Error('invalid request'), { code: 'ERR_LOOPX_INVALID_ARGUMENT' })
    const s = request.settlement
    const r = request.receipt
    const refusal =
      !s.goal_id || !s.agent_id || !s.todo_id || !s.turn_instance_id || !s.effect_id
        ? 'identity_incomplete'
        : r.effect_id !== s.effect_id
          ? 'effect_mismatch'
          : r.status !== 'committed'
            ? 'receipt_not_committed'
            : !r.checkpointed
              ? 'receipt_not_checkpointed'
              : !this.enabled
                ? 'phase_disabled'
                : null
    if (refusal) return { admitted: false, refusal, hooks: [] } as DispatchOutcome
    const hooks: HookOutcome[] = []
    const deadline = Date.now() + 60_000
    for (const hook of this.hooks) {
      if (!(hook.registration.event_kinds as string[]).includes(request.event.event_kind)) continue
      hooks.push(await run(hook, request, deadline))
    }
    return { admitted: true, refusal: null, hooks }
  }

  /** The hook's identity and input, or the failed outcome of an input that breaks its boundary. */
  prepare(hook: Hook, request: DispatchRequest): Prepared | HookOutcome {
    const reg = hook.registration
    const r = request.receipt
    const s = request.settlement
    const ev = request.event
    const dispatchId = dispatchIdOf(r.receipt_id, r.effect_id, reg, hook.digest, ev.event_kind)
    const base = {
      hookId: reg.hook_id,
      dispatchId,
      receipt: null,
      failureCode: null,
      failureRule: null,
      failurePointer: null,
      prunedAt: null,
    }
    const input = {
      schema_version: 'loopx_post_writeback_hook_input_v0',
      dispatch_id: dispatchId,
      hook_id: reg.hook_id,
      capability_id: reg.capability_id,
      source: {
        receipt_id: r.receipt_id,
        effect_id: r.effect_id,
        step_kind: r.step_kind,
        goal_id: s.goal_id,
        agent_id: s.agent_id,
        todo_id: s.todo_id,
        turn_instance_id: s.turn_instance_id,
        event_kind: ev.event_kind,
        state_revision: r.state_revision,
        committed_at: r.committed_at,
      },
      projection: {
        schema_version: 'loopx_post_writeback_event_projection_v0',
        transition: TRANSITION[ev.event_kind] ?? '',
        fact_refs: ev.fact_refs,
      },
      boundary: {
        raw_task_text_recorded: false,
        raw_logs_recorded: false,
        raw_trajectory_recorded: false,
        raw_session_transcript_recorded: false,
        credential_values_recorded: false,
        absolute_paths_recorded: false,
      },
    }
    const checked = this.validators.validateHookInput(input, reg, hook.digest)
    if (!checked.ok) {
      return {
        ...base,
        outcome: 'failed',
        attempt: 0,
        failureCode: 'input_boundary_rejected',
        failureRule: (checked.violations[0]?.rule ?? null) as any,
      }
    }
    return { dispatchId, input, base }
  }

  async invoke(hook: Hook, input: any, dispatchId: string, deadline: number): Promise<Invoked> {
    let result: any
    try {
      result = hook.provider(input)
      if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
        const ms = Math.min(hook.registration.budget.timeout_ms, deadline - Date.now())
        let timer: NodeJS.Timeout | undefined
        const timeout = new Promise((resolve) => {
          timer = setTimeout(resolve, ms, new Timeout())
        })
        result = await Promise.race([result, timeout])
        clearTimeout(timer)
        if (result instanceof Timeout) return { code: 'producer_timed_out', rule: null }
      }
    } catch {
      return { code: 'producer_failed', rule: null }
    }
    const out: { canonical?: string } = {}
    const verdict = this.validators.validateHookResult(result, hook.registration, dispatchId, out)
    if (!verdict.ok) return { code: 'result_contract_rejected', rule: verdict.violations[0]?.rule ?? null }
    return { result, digest: sha256Hex(out.canonical!) }
  }

  /**
   * An identity already final: 'return' replays its receipt; 'verify' invokes
   * the provider again and answers a replay, a conflict, or the failed call.
   */
  async replayFinal(
    hook: Hook,
    prepared: Prepared,
    standing: Standing,
    replay: 'return' | 'verify',
    deadline: number,
  ): Promise<HookOutcome> {
    const { dispatchId, input, base } = prepared
    if (replay === 'return') return this.fromFinal(hook, dispatchId, standing.receipt!, null, null)
    const again = await this.invoke(hook, input, dispatchId, deadline)
    if ('code' in again)
      return {
        ...base,
        outcome: 'failed',
        attempt: 0,
        failureCode: again.code as any,
        failureRule: again.rule as any,
      }
    return this.fromFinal(hook, dispatchId, standing.receipt!, standing.result_digest, again.digest)
  }

  /** The answer for an identity already final: its receipt replayed, or a conflict when a fresh result differs. */
  fromFinal(
    hook: Hook,
    dispatchId: string,
    receiptJson: string,
    recorded: string | null,
    fresh: string | null,
  ): HookOutcome {
    const receipt: DispatchReceipt = JSON.parse(receiptJson)
    const conflict = fresh !== null && recorded !== fresh
    return {
      hookId: hook.registration.hook_id,
      dispatchId,
      outcome: conflict ? 'conflict' : 'replayed',
      attempt: receipt.attempt,
      receipt,
      failureCode: conflict ? 'intent_conflict' : null,
      failureRule: null,
      failurePointer: null,
      prunedAt: null,
    }
  }

  receipt(
    hook: Hook,
    request: DispatchRequest,
    dispatchId: string,
    status: string,
    attempt: number,
    intentIds: string[],
    resultDigest: string | null,
    failure: any,
  ): DispatchReceipt {
    const reg = hook.registration
    return {
      schema_version: 'loopx_post_writeback_dispatch_receipt_v0',
      dispatch_id: dispatchId,
      hook_id: reg.hook_id,
      capability_id: reg.capability_id,
      receipt_id: request.receipt.receipt_id,
      effect_id: request.receipt.effect_id,
      event_kind: request.event.event_kind,
      registration_digest: hook.digest,
      status,
      attempt,
      intent_ids: intentIds,
      result_digest: resultDigest,
      failure,
    } as DispatchReceipt
  }
}
