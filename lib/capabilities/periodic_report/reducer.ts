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

export interface TriggerPolicy {
  policyVersion: typeof POLICY_VERSION
  /** Distinct segment completions that promote a window; an integer in 1..=1000. */
  completionThreshold: number
}

export const DEFAULT_COMPLETION_THRESHOLD = 3

/** One trigger evaluation: an admitted intent and the transition that produced it. */
export interface TriggerEvent {
  intentId: string
  transition: 'segment_completed' | 'replan_recorded'
  segmentRef: string
  window: string
}

/** The reducer's state for one window. */
export interface WindowState {
  window: string
  /** Segments whose completion was counted, in order. */
  completedSegments: string[]
  promoted: boolean
  /** The intent whose evaluation promoted the window. */
  promotedBy: string | null
}

export type TriggerReason =
  | 'completion_threshold_reached'
  | 'replan_recorded'
  | 'below_threshold'
  | 'segment_already_counted'
  | 'already_promoted_in_window'

export interface TriggerDecision {
  intentId: string
  window: string
  transition: TriggerEvent['transition']
  segmentRef: string
  decision: 'promote' | 'hold'
  reason: TriggerReason
  /** Distinct completions counted in the window after this event. */
  completions: number
}

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

export function emptyWindow(window: string): WindowState {
  expectArgs('emptyWindow', { window: [window, 'string'] })
  return { window, completedSegments: [], promoted: false, promotedBy: null }
}

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
