/**
 * The sidecar mirror of a `ShippedHookRuntime` opened with `sidecarMirror`:
 * after each dispatch settles, every receipt its hooks hold in the journal
 * (final, or `retryable_failure`) is written as LoopX's sidecar file by the
 * addon (`mirrorSidecarReceipt`: LoopX's lock, compare-and-swap and atomic
 * write, in Rust). A receipt is durable in the journal before it is
 * mirrored, so a mirror failure never fails the dispatch: it is counted and
 * published on `loopx-hooks:sidecar-mirror` with its code, never a path.
 */
import diagnostics_channel from 'node:diagnostics_channel'
import { mirrorSidecarReceipt } from '../addon.js'
import type { HookJournal } from '../journal.js'

/** The channel a mirror failure is published on. */
export const SIDECAR_MIRROR_CHANNEL = 'loopx-hooks:sidecar-mirror'

/** A `loopx-hooks:sidecar-mirror` message: one receipt not mirrored. */
export interface SidecarMirrorMessage {
  /** The `ShippedHookRuntime`. */
  runtime: object
  /** The dispatch whose receipt was not mirrored. */
  dispatchId: string
  /** `lock_acquire_timeout`, `receipt_conflict`, `invalid_receipt`, `bad_goal_id` or `journal_write_failed`. */
  code: string
}

/** What `metrics().sidecarMirror` counts since the runtime opened. */
export interface SidecarMirrorMetrics {
  /** Receipts written to their sidecar file. */
  written: number
  /** The file already held the receipt (a replayed dispatch). */
  replayed: number
  /** Receipts not mirrored, by code. */
  failed: Record<string, number>
}

const channel = diagnostics_channel.channel(SIDECAR_MIRROR_CHANNEL)

/** The mirror `HookRuntime.open` set up for an engine, keyed by the engine. */
const mirrors = new WeakMap<object, SidecarMirror>()

/** Gives `engine` a mirror into `root`, for the `ShippedHookRuntime` built on it. */
export function mirrorInto(engine: object, root: string): void {
  mirrors.set(engine, new SidecarMirror(root))
}

export function mirrorOf(engine: object): SidecarMirror | undefined {
  return mirrors.get(engine)
}

export class SidecarMirror {
  readonly #root: string
  readonly metrics: SidecarMirrorMetrics = { written: 0, replayed: 0, failed: {} }

  constructor(root: string) {
    this.#root = root
  }

  /** Mirrors the receipts of `hooks`, a settled dispatch of `source`. Never throws. */
  async after(
    runtime: object,
    journal: HookJournal,
    source: object,
    hooks: readonly { dispatchId: string }[],
  ): Promise<void> {
    const sourceJson = JSON.stringify(source)
    for (const { dispatchId } of hooks) {
      let code: string
      try {
        const receipt = (await journal.getDispatch(dispatchId))?.receipt
        // Rows without a receipt (checkpointed, exhausted) have nothing LoopX would hold.
        if (!receipt) continue
        code = await mirrorSidecarReceipt(this.#root, sourceJson, JSON.stringify(receipt))
      } catch {
        code = 'journal_read_failed'
      }
      if (code === 'written') this.metrics.written++
      else if (code === 'replayed') this.metrics.replayed++
      else {
        this.metrics.failed[code] = (this.metrics.failed[code] ?? 0) + 1
        if (channel.hasSubscribers) channel.publish({ runtime, dispatchId, code } satisfies SidecarMirrorMessage)
      }
    }
  }
}
