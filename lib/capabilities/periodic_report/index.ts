/**
 * `loopx-hooks/capabilities/periodic_report`: the periodic_report capability
 * (RFC slice 3). Install it at the composition root only; the core (the
 * dispatcher, the journal, the orchestrator seam) never imports it and never
 * branches on its id.
 *
 *   installPeriodicReport(runtime)   defines `periodic_report.trigger_evaluation`
 *                                    and registers `periodic_report.runtime_trigger`
 *   PeriodicReportScheduler          the fake governed executor: outbox -> admit
 *                                    -> dedupe -> reducer -> decision; no sink
 *
 * The scheduler's store needs the optional peer dependency better-sqlite3@12.
 */
import type { HookRuntime, PostWritebackHookRegistration } from '../../index.js'
import { expectArgs, expectOptions } from '../../args.js'
import { runtimeTriggerHook } from './hook.js'
import { CAPABILITY_ID, triggerEvaluationKind } from './kind.js'

// What an application installs, runs and reads; the hook's parts, the
// reducer's steps and the store's file are the capability's own (its tests
// import them from their modules).
export { CAPABILITY_ID, TRIGGER_EVALUATION, triggerEvaluationKind, type TriggerEvaluationKind } from './kind.js'
export {
  DEFAULT_COMPLETION_THRESHOLD,
  type TriggerDecision,
  type TriggerEvent,
  type TriggerPolicy,
  type TriggerReason,
  type WindowState,
} from './reducer.js'
export type { StoredDecision, TriggerStore } from './store.js'
export {
  PeriodicReportScheduler,
  type AdmissionReason,
  type SchedulerOptions,
  type SchedulerPass,
} from './scheduler.js'

/** How `installPeriodicReport` installs the capability. */
export interface InstallOptions {
  /** Default `periodic_report`; another id installs the same logic under that name (used by neutrality tests). */
  capabilityId?: string
  /**
   * The hook's timeout_ms.
   * @default 1000
   */
  timeoutMs?: number
}

/** What `installPeriodicReport` installed. */
export interface Installed {
  /** The capability's id. */
  capabilityId: string
  /** The hook's id. */
  hookId: string
  /** The intent kind defined. */
  intentKind: string
  /** The hook's registration, as installed. */
  registration: PostWritebackHookRegistration
}

/**
 * Installs the capability into `runtime` at the composition root: its
 * intent kind, then its hook. Throws what `defineIntentKind` and `register`
 * throw (`ERR_LOOPX_INTENT_KIND_REJECTED`, `ERR_LOOPX_REGISTRATION_REJECTED`).
 */
export function installPeriodicReport(runtime: HookRuntime, options?: InstallOptions): Installed {
  expectArgs('installPeriodicReport', { runtime: [runtime, 'object'] })
  options = expectOptions('installPeriodicReport', 'options', options, {
    capabilityId: 'string?',
    timeoutMs: 'number?',
  })
  const capabilityId = options.capabilityId ?? CAPABILITY_ID
  const kind = triggerEvaluationKind(capabilityId)
  const hook = runtimeTriggerHook(capabilityId, { timeoutMs: options.timeoutMs })
  // The hook carries its kind: register defines it.
  runtime.register(hook)
  return {
    capabilityId,
    hookId: hook.registration.hook_id,
    intentKind: kind.intent_kind,
    // runtimeTriggerHook built it (mutable arrays); a HookDefinition only types it readonly to take `as const` ones.
    registration: hook.registration as PostWritebackHookRegistration,
  }
}
