/**
 * The capability-owned trigger reducer, policy `weekly_v0`. It alone decides
 * promotion (RFC section 8): a window (the ISO week, UTC) is promoted after
 * `completionThreshold` distinct segment completions, or on a replan, and
 * never twice. It is pure: state in, state and decision out.
 */
import { expectArgs, expectMembers } from '../../args.js'
import { LoopxHooksError } from '../../errors.js'
import { TRIGGER_EVENT_MEMBERS } from './event_kinds.js'
import { POLICY_VERSION } from './kind.js'

/** The reducer's policy. */
export interface TriggerPolicy {
  /** `weekly_v0`, the only policy. */
  policyVersion: typeof POLICY_VERSION
  /** Distinct segment completions that promote a window; an integer in 1..=1000. */
  completionThreshold: number
}

/** The `completionThreshold` when none is given. */
export const DEFAULT_COMPLETION_THRESHOLD = 3

/** One trigger evaluation: an admitted intent and the transition that produced it. */
export interface TriggerEvent {
  /** The admitted intent evaluated. */
  intentId: string
  /** The transition of the committed event behind it. */
  transition: 'segment_completed' | 'replan_recorded'
  /** The intent payload's `segment_ref`. */
  segmentRef: string
  /** The window it counts in (the ISO week, e.g. `2026-W35`). */
  window: string
}

/** The reducer's state for one window. */
export interface WindowState {
  /** The window (the ISO week). */
  window: string
  /** Segments whose completion was counted, in order. */
  completedSegments: string[]
  /** Whether the window was promoted (it never is twice). */
  promoted: boolean
  /** The intent whose evaluation promoted the window. */
  promotedBy: string | null
}

/** Why the reducer promoted or held. */
export type TriggerReason =
  | 'completion_threshold_reached'
  | 'replan_recorded'
  | 'below_threshold'
  | 'segment_already_counted'
  | 'already_promoted_in_window'

/** The reducer's decision for one event. */
export interface TriggerDecision {
  /** The intent evaluated. */
  intentId: string
  /** The window it counted in. */
  window: string
  /** The event's transition. */
  transition: TriggerEvent['transition']
  /** The event's segment. */
  segmentRef: string
  /** Promote the window (a report is due) or hold. */
  decision: 'promote' | 'hold'
  /** Why. */
  reason: TriggerReason
  /** Distinct completions counted in the window after this event. */
  completions: number
}

/**
 * Checks a policy as the reducer takes it.
 *
 * @param policy - `{ policyVersion: 'weekly_v0', completionThreshold }`.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` for another policy version or a
 *   threshold that is not an integer in 1..=1000.
 */
export function checkPolicy(policy: TriggerPolicy): void {
  expectMembers('checkPolicy', 'policy', policy, { policyVersion: 'string', completionThreshold: 'number' }, 'object')
  if (policy.policyVersion !== POLICY_VERSION)
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'invalid argument: policyVersion (unsupported)')
  const n = policy.completionThreshold
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new LoopxHooksError(
      'ERR_LOOPX_INVALID_ARGUMENT',
      'invalid argument: completionThreshold (an integer in 1..=1000)',
    )
}

/**
 * A window with nothing counted yet.
 *
 * @param window - the window (the ISO week).
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` when it is not a string.
 */
export function emptyWindow(window: string): WindowState {
  expectArgs('emptyWindow', { window: [window, 'string'] })
  return { window, completedSegments: [], promoted: false, promotedBy: null }
}

/**
 * The reducer: one event in, the window's next state and the decision out.
 * Pure; a state of another window starts that event's window afresh.
 *
 * @param state - the window's state so far, or `null`.
 * @param event - the trigger evaluation.
 * @param policy - the policy (see `checkPolicy`).
 * @returns `{ state, decision }`.
 * @throws `ERR_LOOPX_INVALID_ARGUMENT` for arguments that are not what the signature says.
 */
export function reduceTrigger(
  state: WindowState | null,
  event: TriggerEvent,
  policy: TriggerPolicy,
): { state: WindowState; decision: TriggerDecision } {
  if (state !== null)
    expectMembers('reduceTrigger', 'state', state, { window: 'string', completedSegments: 'array' }, 'object')
  expectMembers('reduceTrigger', 'event', event, TRIGGER_EVENT_MEMBERS, 'object')
  checkPolicy(policy)
  const prior = state && state.window === event.window ? state : emptyWindow(event.window)
  const next: WindowState = { ...prior, completedSegments: [...prior.completedSegments] }
  let decision: TriggerDecision['decision'] = 'hold'
  let reason: TriggerReason
  if (event.transition === 'segment_completed') {
    const counted = next.completedSegments.includes(event.segmentRef)
    if (!counted) next.completedSegments.push(event.segmentRef)
    if (next.promoted) reason = 'already_promoted_in_window'
    else if (counted) reason = 'segment_already_counted'
    else if (next.completedSegments.length >= policy.completionThreshold) {
      decision = 'promote'
      reason = 'completion_threshold_reached'
    } else reason = 'below_threshold'
  } else if (next.promoted) {
    reason = 'already_promoted_in_window'
  } else {
    decision = 'promote'
    reason = 'replan_recorded'
  }
  if (decision === 'promote') {
    next.promoted = true
    next.promotedBy = event.intentId
  }
  return {
    state: next,
    decision: {
      intentId: event.intentId,
      window: event.window,
      transition: event.transition,
      segmentRef: event.segmentRef,
      decision,
      reason,
      completions: next.completedSegments.length,
    },
  }
}

/** The ISO 8601 week of `date` in UTC, e.g. `2026-W35`: the weekly_v0 window. */
export function isoWeek(date: Date): string {
  if (!(date instanceof Date) || Number.isNaN(date.getTime()))
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'isoWeek: invalid argument: date (a valid Date)')
  const d = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()))
  const day = d.getUTCDay() || 7
  d.setUTCDate(d.getUTCDate() + 4 - day) // the Thursday of this week decides its year
  const yearStart = Date.UTC(d.getUTCFullYear(), 0, 1)
  const week = Math.ceil(((d.getTime() - yearStart) / 86_400_000 + 1) / 7)
  return `${d.getUTCFullYear()}-W${String(week).padStart(2, '0')}`
}
