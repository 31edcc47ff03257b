/**
 * The addon's answers to `prepare` and `begin`, read on this side: a plan
 * crosses as JSON text with its calls' inputs and its outcome embedded, so
 * one `JSON.parse` reads it all (the addon building it as objects through
 * napi cost several times that); a call's limit crosses as one number.
 */
import type { NativePlan } from './addon.js'
import type { CallLimit } from './provider.js'

/** A plan, and the length of its text (what the replay table counts). */
export interface Plan extends NativePlan {
  chars: number
}

/** The plan `text` (`NativePlan` as JSON text) holds. */
export function planOf(text: string): Plan {
  const plan = JSON.parse(text) as Plan
  plan.chars = text.length
  return plan
}

export const plansOf = (texts: string[]): Plan[] => texts.map(planOf)

/** A limit as `begin` gives it: milliseconds, negated when the dispatch's wall budget is the bound. */
export function callLimit(ms: number): CallLimit {
  return ms < 0 ? { ms: -ms, wall: true } : { ms, wall: false }
}
