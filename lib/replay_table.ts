import type { DispatchOutcome } from '../bindings/index'
import { deepFreeze } from './readonly.js'

/**
 * Final replays kept by request text: a request whose every hook was
 * answered from its final receipt (the addon says so, `NativePlan.replayed`)
 * gets the same outcome again while no hook or intent kind is added, so a
 * byte-identical request is answered here, with no crossing, validation,
 * read or parse. A final receipt never changes, so the outcome is kept as
 * one frozen object that every such answer shares. Bounded by entries and
 * by characters (the request's and the outcome's text); the oldest go first.
 */
const MAX_ENTRIES = 16_384
/** UTF-16 units of request and outcome text held, at most. */
const MAX_CHARS = 32 * 1024 * 1024

interface Kept {
  outcome: DispatchOutcome
  size: number
}

export class ReplayTable {
  readonly #kept = new Map<string, Kept>()
  #chars = 0

  /** The outcome kept for `requestJson`, if any (frozen). */
  get(requestJson: string): DispatchOutcome | undefined {
    return this.#kept.get(requestJson)?.outcome
  }

  /**
   * Keeps `outcome` (freshly parsed, no one else's: it is frozen here) for
   * `requestJson`, counted as `chars` of its text; returns it as kept.
   */
  keep(requestJson: string, outcome: DispatchOutcome, chars: number): DispatchOutcome {
    const had = this.#kept.get(requestJson)
    if (had !== undefined) return had.outcome
    deepFreeze(outcome)
    const size = requestJson.length + chars
    if (size > MAX_CHARS) return outcome
    for (const [request, kept] of this.#kept) {
      if (this.#kept.size < MAX_ENTRIES && this.#chars + size <= MAX_CHARS) break
      this.#kept.delete(request)
      this.#chars -= kept.size
    }
    this.#kept.set(requestJson, { outcome, size })
    this.#chars += size
    return outcome
  }

  /** A hook or an intent kind was added: a kept outcome may no longer be the answer. */
  clear(): void {
    this.#kept.clear()
    this.#chars = 0
  }

  get size(): number {
    return this.#kept.size
  }
}
