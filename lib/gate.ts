/**
 * Backpressure: at most `limit` units in flight; the rest wait their turn,
 * first come first served (a large request is not overtaken by small ones).
 */
export class Gate {
  readonly limit: number
  #free: number
  #queue: Array<{ n: number; go: () => void } | undefined> = []
  #head = 0

  constructor(limit: number) {
    this.limit = Math.max(1, limit)
    this.#free = this.limit
  }

  /** Takes `n` (at most `limit`) now if nobody is waiting and there is room. */
  tryAcquire(n: number): boolean {
    if (this.#head === this.#queue.length && this.#free >= n) {
      this.#free -= n
      return true
    }
    return false
  }

  acquire(n: number): Promise<void> {
    if (this.tryAcquire(n)) return Promise.resolve()
    return new Promise((go) => this.#queue.push({ n, go }))
  }

  release(n: number): void {
    this.#free += n
    while (this.#head < this.#queue.length) {
      const next = this.#queue[this.#head]
      if (!next || next.n > this.#free) break
      this.#free -= next.n
      this.#queue[this.#head++] = undefined
      next.go()
    }
    // Drop the served prefix now and then, so a long queue costs O(1) per turn.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head)
      this.#head = 0
    }
  }
}
