/**
 * loopx-hooks: the public entry. Everything that judges a document lives in
 * the Rust addon (`../index.js`); this layer adds TypeScript types and
 * ergonomics only.
 */
export * from '../index.js'
export type * from '../bindings/index'
export { LoopxHooksError } from './errors.js'
// The validators' fast path shadows the addon's exports of the same names.
export { compileHookContext, validateHookInput, validateHookResult, validateRegistration } from './validators.js'
export { HookRuntime, type HookRuntimeOptions } from './runtime.js'
export { HookJournal, type DispatchQuery, type IntentQuery, type Decision } from './journal.js'
export { defineHook, intent, notApplicable, proposed, type HookDefinition } from './hooks.js'
export {
  TurnStartKernel,
  type TurnStartHookDefinition,
  type TurnStartKernelOptions,
  type TurnStartProviderFn,
} from './turn_start.js'
export { InboxStore, type InboxOptions } from './inbox.js'
export {
  defineIntentKind,
  type PayloadOf,
  type PayloadSchemaNode,
  type TypedIntentKind,
  type IntentOf,
  type HookResultOf,
  type ProviderOf,
  type IntentSpecOf,
} from './payload.js'
