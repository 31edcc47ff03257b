/**
 * Typed hook definitions: a registration, the intent kinds it names, and a
 * provider whose result may carry only intents of those kinds, each payload
 * typed from its kind's schema. A wrong payload does not compile.
 */
import { buildIntent, expectSpec } from './addon_api.js'
import { expectArgs } from './args.js'
import type {
  PostWritebackHookInput,
  PostWritebackHookRegistration,
  PostWritebackHookResult,
  ReadScope,
} from '../bindings/index'
import type {
  HookInputFor,
  HookResultOf,
  IntentOf,
  IntentSpecOf,
  ProviderContext,
  ProviderOf,
  TypedIntentKind,
} from './payload.js'
import { LoopxHooksError } from './errors.js'
import type { DeepReadonly } from './readonly.js'

/**
 * A hook as `HookRuntime.register` installs it; make one with `defineHook`.
 * `Input` is what the provider receives (by default the contract's input;
 * `defineHook` narrows it to the registration's read scopes) and `Result`
 * what it answers (`defineHook`: only intents of the hook's kinds). The
 * dispatcher validates every result whatever its type says.
 */
export interface HookDefinition<Input = PostWritebackHookInput, Result = PostWritebackHookResult> {
  /** The hook's registration, judged at `register` (readonly arrays are fine: `as const` works). */
  readonly registration: DeepReadonly<PostWritebackHookRegistration>
  /**
   * The intent kinds the hook proposes (`defineHook` keeps the ones it was
   * given): `register` defines each, so a kind is given once. A kind the
   * runtime already has with the same definition is fine; another definition
   * under its name is `ERR_LOOPX_INTENT_KIND_REJECTED`.
   */
  readonly kinds?: readonly TypedIntentKind[]
  /**
   * The function the dispatcher calls with `(input, { signal })`; it answers the hook result.
   * Method syntax on purpose: a provider typed for a narrower input (`defineHook`'s) is still a `HookDefinition`.
   */
  provider(input: Readonly<Input>, context: ProviderContext): Result | Promise<Result>
}

/**
 * The registration `defineHook` takes: a `PostWritebackHookRegistration`
 * whose `capability_id` and `intent_kinds` may be left out, because the kinds
 * the hook is given already hold them. `K` is the hook's kind names.
 */
export type HookRegistrationInput<K extends string = string> = Omit<
  DeepReadonly<PostWritebackHookRegistration>,
  'capability_id' | 'intent_kinds'
> & {
  capability_id?: string
  // `K | (string & {})` keeps a literal's own type, so `KindsNamed` can check it.
  intent_kinds?: readonly (K | (string & {}))[]
}

/**
 * A registration literal may name only the hook's kinds (a wrong name does not
 * compile); one typed as the exported `PostWritebackHookRegistration`
 * (`intent_kinds: string[]`) is checked when `defineHook` runs.
 */
type KindsNamed<R, K extends string> = R extends { intent_kinds: readonly (infer I)[] }
  ? string extends I
    ? unknown
    : [I] extends [K]
      ? unknown
      : { intent_kinds: readonly K[] }
  : unknown

/**
 * A hook: its registration, with `capability_id` and `intent_kinds` taken from
 * `kinds` when left out, and a provider typed from those kinds; when the
 * registration is a literal, the provider's input holds exactly the members
 * its requested read scopes grant (`HookInputFor`). A registration
 * that names intent kinds other than exactly `kinds` throws
 * `ERR_LOOPX_INVALID_ARGUMENT` (its provider's types would not match what the
 * dispatcher accepts); everything else is judged by `runtime.register`.
 */
export function defineHook<
  const Kinds extends readonly [TypedIntentKind, ...TypedIntentKind[]],
  R extends HookRegistrationInput<Kinds[number]['intent_kind']>,
  const Scopes extends readonly ReadScope[],
>(spec: {
  kinds: Kinds
  registration: R & KindsNamed<R, Kinds[number]['intent_kind']> & { requested_read_scope: Scopes }
  provider: ProviderOf<Kinds[number], HookInputFor<Scopes>>
}): HookDefinition<HookInputFor<Scopes>, HookResultOf<Kinds[number]>> {
  expectArgs('defineHook', { spec: [spec, 'object'] })
  expectArgs('defineHook', {
    kinds: [spec.kinds, 'array'],
    registration: [spec.registration, 'object'],
    provider: [spec.provider, 'function'],
  })
  if (!spec.kinds.every((k) => k !== null && typeof k === 'object' && typeof k.intent_kind === 'string'))
    throw new LoopxHooksError('ERR_LOOPX_INVALID_ARGUMENT', 'defineHook: invalid argument: kinds (intent kinds)')
  const names = [...new Set(spec.kinds.map((k) => k.intent_kind))]
  const given = spec.registration.intent_kinds
  if (given !== undefined && (given.length !== names.length || !given.every((k) => names.includes(k)))) {
    throw new LoopxHooksError(
      'ERR_LOOPX_INVALID_ARGUMENT',
      'defineHook: registration.intent_kinds must name exactly the kinds the hook is given',
    )
  }
  const registration: DeepReadonly<PostWritebackHookRegistration> = {
    ...spec.registration,
    capability_id: spec.registration.capability_id ?? spec.kinds[0].capability_id,
    intent_kinds: given ? [...given] : names,
  }
  return { registration, kinds: spec.kinds, provider: spec.provider }
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
  expectArgs('intent', { input: [input, 'object'], kind: [kind, 'object'] })
  expectArgs('intent', { intent_kind: [kind.intent_kind, 'string'] })
  expectSpec('intent', spec)
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
