/**
 * Final replays kept by request text: a request whose every hook was
 * answered from its final receipt (the addon says so, `NativePlan.replayed`)
 * gets the same outcome again while no hook or intent kind is added, so a
 * byte-identical request is answered here, with no crossing, validation or
 * read. Bounded by entries and by characters held; the oldest go first.
 */
const MAX_ENTRIES = 16_384
/** UTF-16 units of request and outcome text held, at most. */
const MAX_CHARS = 32 * 1024 * 1024

export class ReplayTable {
  readonly #outcomes = new Map<string, string>()
  #chars = 0

  /** The outcome text kept for `requestJson`, if any. */
  get(requestJson: string): string | undefined {
    return this.#outcomes.get(requestJson)
  }

  keep(requestJson: string, outcomeJson: string): void {
    const size = requestJson.length + outcomeJson.length
    if (size > MAX_CHARS || this.#outcomes.has(requestJson)) return
    for (const [request, outcome] of this.#outcomes) {
      if (this.#outcomes.size < MAX_ENTRIES && this.#chars + size <= MAX_CHARS) break
      this.#outcomes.delete(request)
      this.#chars -= request.length + outcome.length
    }
    this.#outcomes.set(requestJson, outcomeJson)
    this.#chars += size
  }

  /** A hook or an intent kind was added: a kept outcome may no longer be the answer. */
  clear(): void {
    this.#outcomes.clear()
    this.#chars = 0
  }

  get size(): number {
    return this.#outcomes.size
  }
}
