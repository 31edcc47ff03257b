/**
 * What each row of the bench table must reach, by row key: one line per
 * target. A row whose key is not here has no target and says so. The ratio a
 * target reads is the row's own ratio column (loopx-hooks / plain, same run).
 */
/** Adds one row to the table; its target and met columns come from `TARGETS` by key. */
export type Add = (
  key: string,
  metric: string,
  ours: string,
  plain: string,
  ratio: number,
  figures: Record<string, unknown>,
) => void

export interface Target {
  /** What the table shows in its target column. */
  text: string
  met: (ratio: number) => boolean
}

const atLeast = (x: number): Target => ({ text: `>= ${x}x`, met: (r) => r >= x })
const atMost = (x: number): Target => ({ text: `<= ${x}x`, met: (r) => r <= x })

export const TARGETS: Record<string, Target> = {
  durable64: atLeast(5),
  durable1: atLeast(1),
  durable1VsTwoHops: atLeast(0.8),
  durable1VsFloor: { text: '>= 0.6x floor', met: (r) => r >= 0.6 },
  busyP50: atMost(0.5),
  busyP99: atMost(0.1),
  inline1: atLeast(1),
  inline64: atLeast(5),
  inlineBusyP50: atMost(0.1),
  inlineBusyP99: atMost(0.05),
  replay_return: atLeast(5),
  replay_return_again: atLeast(5),
  replay_verify: atLeast(2),
  validate_registration: atMost(1.5),
  validate_registration_text: atMost(8),
  validate_result: atMost(1.5),
  validate_result_text: atMost(1.5),
  validate_registration_vs_crossing: atMost(2),
  validate_result_vs_crossing: atMost(2),
  journalBytes: atMost(0.7),
  lookup_p99: atMost(1),
  rssGrowth: atMost(1.2),
  pg_one: atLeast(1),
  pg_many: atLeast(3),
  pg_procs_ours: atLeast(2.5),
  pg_loop_delay_p99: atMost(1),
  pg_loop_delay_reads_p99: atMost(1),
  pg_loop_delay_far_p99: atMost(1),
}

/** The target column and the met column of a row: no target, or a ratio that could not be had, is not judged. */
export function judge(key: string, ratio: number): { target: string; met: boolean | null } {
  const t = TARGETS[key]
  if (!t) return { target: 'none', met: null }
  return { target: t.text, met: Number.isFinite(ratio) ? t.met(ratio) : null }
}
