/**
 * The primary `validate` step of the reference Turn settlement.
 *
 * It judges nothing itself: it asks the core for the compact public-safe
 * projection the committed receipt would have (the hook input of RFC section
 * 7, under a registration of the Turn settlement's own that is never
 * installed or invoked), judged by the hook-input validator. So a writeback
 * the seam accepts is one whose identities and facts the hook boundary would
 * accept too: non-empty opaque refs (no path, URL, mail address or space), no
 * credential-like value, a known event kind. This module only renames the
 * request's members to the dispatch request's and the violations' paths back.
 */
import { HookContext, projectHookInput } from '../addon.js'
import type { PostWritebackHookRegistration, Violation } from '../../bindings/index'

/** The event kinds a Turn settlement writes back (core-owned, closed in v0). */
export type WritebackKind = 'todo_completed' | 'replan_recorded'

/** What the orchestrator asks the seam to settle: one primary writeback of a Turn. */
export interface WritebackRequest {
  /** The event the writeback records. */
  kind: WritebackKind
  /** The Goal's id (an opaque ref). */
  goalId: string
  /** The Agent's id (an opaque ref). */
  agentId: string
  /** The Todo's id (an opaque ref). */
  todoId: string
  /** The Turn instance's id (an opaque ref). */
  turnInstanceId: string
  /** The primary effect of this Turn settlement; one receipt per effect. */
  effectId: string
  /** The state revision the writeback committed. */
  stateRevision: string
  /** Bounded, opaque fact refs of the event (0..=32). */
  factRefs?: string[]
}

/** A request that passed validation: every member an accepted opaque ref. */
export interface ValidWriteback {
  /** The event the writeback records. */
  kind: WritebackKind
  /** The Goal's id. */
  goalId: string
  /** The Agent's id. */
  agentId: string
  /** The Todo's id. */
  todoId: string
  /** The Turn instance's id. */
  turnInstanceId: string
  /** The primary effect of this Turn settlement. */
  effectId: string
  /** The state revision the writeback committed. */
  stateRevision: string
  /** The event's fact refs (empty when the request had none). */
  factRefs: string[]
}

/**
 * The registration under which the would-be projection is validated. It is
 * the Turn settlement's own, names no capability that exists, is never
 * registered with a runtime, and so never invokes anything.
 */
const PRIMARY_VALIDATION: PostWritebackHookRegistration = {
  schema_version: 'loopx_post_writeback_capability_hook_registration_v0',
  hook_id: 'loopx_turn_settlement.primary_validation',
  capability_id: 'loopx_turn_settlement',
  phase: 'post_writeback',
  event_kinds: ['todo_completed', 'replan_recorded'],
  intent_kinds: ['loopx_turn_settlement.none'],
  requested_read_scope: ['settlement_identity', 'bounded_event_projection'],
  budget: { max_invocations_per_dispatch: 1, max_intents_per_dispatch: 1, max_result_bytes: 256, timeout_ms: 1 },
  failure_policy: 'isolate',
}
const PRIMARY_VALIDATION_CONTEXT = new HookContext(PRIMARY_VALIDATION)

/** Stand-in for the receipt id, which is derived only once the request is valid. */
const PENDING_RECEIPT = 'receipt_pending'

/** Where each projection member comes from in the request. */
const FIELD_OF: Record<string, string> = {
  '/source/goal_id': '/goalId',
  '/source/agent_id': '/agentId',
  '/source/todo_id': '/todoId',
  '/source/turn_instance_id': '/turnInstanceId',
  '/source/effect_id': '/effectId',
  '/source/state_revision': '/stateRevision',
  '/source/event_kind': '/kind',
  '/projection/fact_refs': '/factRefs',
}

/** A violation's path in the request (`/factRefs/3`), from its path in the projection. */
function requestPath(path: string): string {
  for (const [from, to] of Object.entries(FIELD_OF)) {
    if (path === from || path.startsWith(`${from}/`)) return to + path.slice(from.length)
  }
  return `/receipt${path}`
}

/**
 * Validates `request` as the projection of a receipt committed at
 * `committedAt`. Violations are `{path, rule}` with paths into the request;
 * they never carry a value.
 */
export function validateWriteback(
  request: unknown,
  committedAt: string,
): { ok: true; value: ValidWriteback } | { ok: false; violations: Violation[] } {
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return { ok: false, violations: [{ path: '', rule: 'wrong_type' }] }
  }
  let built: { doc: object; extra: Violation[] }
  try {
    built = requestOf(request as Record<string, unknown>, committedAt)
  } catch {
    // a getter that throws: the request is not a JSON value
    return { ok: false, violations: [{ path: '', rule: 'not_json_value' }] }
  }
  const { doc, extra } = built
  const verdict = projectHookInput(doc, PRIMARY_VALIDATION_CONTEXT)
  const projected = verdict.ok ? [] : verdict.violations.map((v) => ({ path: requestPath(v.path), rule: v.rule }))
  const violations: Violation[] = [...extra, ...projected]
  if (violations.length > 0 || !verdict.ok) return { ok: false, violations }
  // PRIMARY_VALIDATION requests settlement_identity, so the validator proved every settlement member present.
  const source = verdict.value.source as Required<typeof verdict.value.source>
  return {
    ok: true,
    value: {
      kind: source.event_kind as WritebackKind,
      goalId: source.goal_id,
      agentId: source.agent_id,
      todoId: source.todo_id,
      turnInstanceId: source.turn_instance_id,
      effectId: source.effect_id,
      stateRevision: source.state_revision,
      factRefs: [...verdict.value.projection.fact_refs],
    },
  }
}

/** The request as a dispatch request document, and the request members that have no place in it. */
function requestOf(r: Record<string, unknown>, committedAt: string): { doc: object; extra: Violation[] } {
  const known = new Set([
    'kind',
    'goalId',
    'agentId',
    'todoId',
    'turnInstanceId',
    'effectId',
    'stateRevision',
    'factRefs',
  ])
  const extra: Violation[] = Object.keys(r)
    .filter((k) => !known.has(k))
    .map((k) => ({ path: `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, rule: 'unknown_field' }))
  // A member the request lacks is left out, so the validator calls it missing.
  const doc = {
    settlement: withoutUndefined({
      goal_id: r.goalId,
      agent_id: r.agentId,
      todo_id: r.todoId,
      turn_instance_id: r.turnInstanceId,
      effect_id: r.effectId,
    }),
    receipt: withoutUndefined({
      receipt_id: PENDING_RECEIPT,
      effect_id: r.effectId,
      step_kind: 'durable_writeback',
      state_revision: r.stateRevision,
      committed_at: committedAt,
    }),
    event: withoutUndefined({ event_kind: r.kind, fact_refs: r.factRefs }),
  }
  return { doc, extra }
}

function withoutUndefined(members: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(members).filter(([, v]) => v !== undefined))
}
