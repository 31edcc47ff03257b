/**
 * loopx-hooks: the public entry. Everything that judges a document lives in
 * the Rust addon (`../index.js`); this layer adds TypeScript types and
 * ergonomics only.
 */
// The addon's user-facing functions and types. Its Native* classes,
// openNative* factories and the loader's __napiBindingTarget stay internal:
// the classes below wrap them.
export {
  IntentKinds,
  buildIntent,
  canonicalJson,
  dispatchId,
  intentId,
  registrationDigest,
  validateDispatchReceipt,
  validateFailureReceipt,
  validateHookInput,
  validateHookResult,
  validateIntentKindDefinition,
  validateRegistration,
  validateTurnStartReceipt,
  validateTurnStartRegistration,
  type DispatchIdentityParts,
  type ValidationResult,
} from '../index.js'
export type * from '../bindings/index'
export { LoopxHooksError, type LoopxHooksErrorCode } from './errors.js'
export { HookRuntime, type HookRuntimeOptions } from './runtime.js'
export {
  HookJournal,
  type DispatchQuery,
  type IntentQuery,
  type Decision,
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
export {
  TurnStartKernel,
  type TurnStartHookDefinition,
  type TurnStartKernelOptions,
  type TurnStartProviderFn,
} from './turn_start.js'
export { InboxStore, type InboxOptions } from './inbox.js'
export { TurnStartSession } from './turn_start_session.js'
export {
  defineIntentKind,
  type PayloadOf,
  type PayloadSchemaNode,
  type TypedIntentKind,
  type IntentOf,
  type HookResultOf,
  type ProviderOf,
  type IntentSpecOf,
  type HookInputFor,
  type SettlementMember,
} from './payload.js'
