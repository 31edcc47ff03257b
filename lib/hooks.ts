/**
 * Typed hook definitions: a registration, the intent kinds it names, and a
 * provider whose result may carry only intents of those kinds, each payload
 * typed from its kind's schema. A wrong payload does not compile.
 */
import { buildIntent } from '../index.js'
import type { PostWritebackHookInput, PostWritebackHookRegistration, ReadScope } from '../bindings/index'
import type { HookInputFor, IntentOf, IntentSpecOf, ProviderOf, TypedIntentKind } from './payload.js'
import type { RawProvider } from './provider.js'

export interface HookDefinition {
  readonly registration: PostWritebackHookRegistration
  readonly provider: RawProvider
}

/**
 * A hook whose provider is typed from its registration: its result may carry
 * only the named kinds, and, when the registration is a literal, its input
 * holds exactly the members the requested read scopes grant (`HookInputFor`).
 */
export function defineHook<
  const Kinds extends readonly TypedIntentKind[],
  const Scopes extends readonly ReadScope[],
>(spec: {
  kinds: Kinds
  registration: Omit<PostWritebackHookRegistration, 'intent_kinds' | 'requested_read_scope'> & {
    intent_kinds: Array<Kinds[number]['intent_kind']>
    requested_read_scope: Scopes
  }
  provider: ProviderOf<Kinds[number], HookInputFor<Scopes>>
}): HookDefinition {
  // The scopes' tuple type is for the provider's input only; the document is the same.
  const registration = spec.registration as unknown as PostWritebackHookRegistration
  return { registration, provider: spec.provider as unknown as RawProvider }
}

/**
 * A well-formed intent of `kind` answering `input`, ids filled in by core.
 * It judges nothing: the dispatcher validates every result.
 */
export function intent<const D extends TypedIntentKind>(
  input: PostWritebackHookInput,
  kind: D,
  spec: IntentSpecOf<D>,
): IntentOf<D> {
  return buildIntent(input, { ...spec, intentKind: kind.intent_kind }) as unknown as IntentOf<D>
}

/** The `not_applicable` result. */
export function notApplicable(): {
  schema_version: 'loopx_post_writeback_hook_result_v0'
  status: 'not_applicable'
  intents: []
} {
  return { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'not_applicable', intents: [] }
}

/** A `proposed` result carrying `intents`. */
export function proposed<I>(intents: I[]): {
  schema_version: 'loopx_post_writeback_hook_result_v0'
  status: 'proposed'
  intents: I[]
} {
  return { schema_version: 'loopx_post_writeback_hook_result_v0', status: 'proposed', intents }
}
