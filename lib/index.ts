/**
 * loopx-hooks: the public entry. Everything that judges a document lives in
 * the Rust addon (`../index.js`); this layer adds TypeScript types and
 * ergonomics only.
 */
// The addon's Native* classes, openNative* factories and the loader's
// __napiBindingTarget stay internal: the classes below wrap them.
export type { DispatchIdentityParts, ValidationResult } from '../index.js'
// The addon's user-facing functions and classes, their arguments checked and
// their errors coded at the addon's boundary (addon_api.ts, addon.ts).
export {
  HookContext,
  IntentKinds,
  canonicalJson,
  dispatchId,
  intentId,
  registrationDigest,
  validateDispatchReceipt,
  validateFailureReceipt,
  validateIntentKindDefinition,
  validateTurnStartReceipt,
  validateTurnStartRegistration,
} from './addon_api.js'
export type * from '../bindings/index'
export { LoopxHooksError, type LoopxHooksErrorCode } from './errors.js'
// The validators' fast path (one JSON text across, context compiled once)
// stands in for the addon's exports of the same names; it is the one public
// entry per validator (the text and HookContext variants it uses stay inside).
export { validateHookInput, validateHookResult, validateRegistration } from './validators.js'
export {
  DIALECTS,
  validateShippedDispatchResult,
  validateShippedHookInput,
  validateShippedReceipt,
  validateShippedRegistration,
  validateShippedResult,
  validateShippedSource,
} from './shipped/validators.js'
export {
  HookRuntime,
  type DispatchOptions,
  type HookRuntimeOptions,
  type ShippedHookRuntimeOptions,
} from './runtime.js'
export {
  channels,
  type CommitMessage,
  type DispatchMessage,
  type HookMessage,
  type OutboxMessage,
  type ProviderReply,
  type Histogram,
  type HookRuntimeMetrics,
  type HookOutcomeCounts,
} from './diagnostics.js'
export type { TurnStartMessage, TurnStartHookMessage } from './turn_start_trace.js'
export {
  HookJournal,
  type DispatchQuery,
  type IntentQuery,
  type PruneOptions,
  type DecideRequest,
  type ClaimOptions,
  type ConsumeOptions,
} from './journal.js'
export {
  defineHook,
  intent,
  notApplicable,
  proposed,
  type HookDefinition,
  type HookRegistrationInput,
} from './hooks.js'
export type { DeepReadonly } from './readonly.js'
export {
  TurnStartKernel,
  type TurnStartHookDefinition,
  type TurnStartKernelOptions,
  type TurnStartProviderFn,
  type TurnStartContext,
} from './turn_start.js'
export {
  ShippedTurnStart,
  type ShippedTurnStartContext,
  type ShippedTurnStartHook,
  type ShippedTurnStartOptions,
  type ShippedTurnStartProviderFn,
  validateShippedTurnStartDispatch,
  validateShippedTurnStartInvocation,
  validateShippedTurnStartRegistration,
} from './shipped/turn_start.js'
export { InboxStore, InboxCollector, type InboxOptions } from './inbox.js'
export { TurnStartSession } from './turn_start_session.js'
export {
  defineIntentKind,
  type PayloadOf,
  type PayloadSchemaNode,
  type TypedIntentKind,
  type IntentOf,
  type HookResultOf,
  type ProviderOf,
  type ProviderContext,
  type IntentSpecOf,
  type HookInputFor,
  type SettlementMember,
} from './payload.js'
export { ShippedHookRuntime, type ShippedDispatchOptions, type ShippedHookDefinition } from './shipped/runtime.js'
export {
  SIDECAR_MIRROR_CHANNEL,
  type SidecarMirrorMessage,
  type SidecarMirrorMetrics,
} from './shipped/sidecar_mirror.js'
