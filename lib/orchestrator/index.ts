/**
 * `loopx-hooks/orchestrator`: the reference orchestrator seam. A Turn
 * settlement with its ordered primary steps in its own SQLite Turn journal,
 * and the post-writeback hook dispatch at the committed-receipt boundary,
 * outside the primary step list, disabled by default.
 *
 * Needs the optional peer dependency better-sqlite3@12 (the core entry,
 * `loopx-hooks`, does not).
 */
export {
  TurnSettlement,
  type CrashPoint,
  type PrimaryResult,
  type PrimaryStep,
  type SettleResult,
  type SimulatedCrash,
  type StepStatus,
  type TurnRecoverReport,
  type TurnSettlementOptions,
  type WritebackKind,
  type WritebackRequest,
} from './settlement.js'
// The seam's steps (quota eligibility, request validation, the dispatch
// request of a record) and its file's schema stamp stay its own: the tests
// import them from their modules.
export { QUOTA_UNITS_PER_SETTLEMENT } from './quota.js'
export {
  PRIMARY_STEPS,
  type CommittedRecord,
  type DispatchMarker,
  type MarkerOutcome,
  type PrimaryStepName,
  type QuotaSpend,
  type SettlementRecord,
  type StepRow,
  type TurnJournalContents,
} from './turn_journal.js'
