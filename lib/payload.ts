/**
 * Type-level reading of intent-kind payload schemas: a kind defined with an
 * `as const` schema gives its payload a precise TypeScript type, so a
 * provider whose payload does not match does not compile. Runtime checks stay
 * in Rust; these types only mirror what the Rust validators accept.
 */
import type {
  EventProjection,
  IntentBudget,
  PostWritebackHookInput,
  PostWritebackIntent,
  ReadScope,
  ReceiptSource,
} from '../bindings/index'

/** The closed payload-schema subset of contract-v0 section 1, as literal types. */
export type PayloadSchemaNode =
  | {
      readonly type: 'object'
      readonly properties: { readonly [name: string]: PayloadSchemaNode }
      readonly required: readonly string[]
      readonly additionalProperties: false
    }
  | {
      readonly type: 'array'
      readonly items: PayloadSchemaNode
      readonly maxItems: number
      readonly uniqueItems?: boolean
    }
  | { readonly type: 'integer'; readonly minimum: number; readonly maximum: number }
  | { readonly type: 'boolean' }
  | { readonly type: 'string'; readonly enum: readonly string[] }
  | { readonly type: 'string'; readonly format: 'opaque_ref' }

/** The payload type a schema describes. */
export type PayloadOf<S> = S extends { readonly type: 'object'; readonly properties: infer P }
  ? { -readonly [K in keyof P]: PayloadOf<P[K]> }
  : S extends { readonly type: 'array'; readonly items: infer I }
    ? PayloadOf<I>[]
    : S extends { readonly type: 'integer' }
      ? number
      : S extends { readonly type: 'boolean' }
        ? boolean
        : S extends { readonly type: 'string'; readonly enum: readonly (infer E)[] }
          ? E
          : S extends { readonly type: 'string'; readonly format: 'opaque_ref' }
            ? string
            : never

/** An intent kind definition whose literal types are kept. */
export interface TypedIntentKind<
  K extends string = string,
  C extends string = string,
  O extends string = string,
  S extends PayloadSchemaNode = PayloadSchemaNode,
> {
  /** The kind's name. */
  readonly intent_kind: K
  /** The capability whose hooks may propose it. */
  readonly capability_id: C
  /** The operations an intent of this kind may name. */
  readonly operations: readonly O[]
  /** The payload's schema (the closed subset of contract-v0 section 1). */
  readonly payload_schema: S
}

/** Keeps the literal types of a definition (identity at run time). */
export function defineIntentKind<
  const K extends string,
  const C extends string,
  const O extends string,
  const S extends PayloadSchemaNode & { readonly type: 'object' },
>(definition: TypedIntentKind<K, C, O, S>): TypedIntentKind<K, C, O, S> {
  return definition
}

/** An intent of one typed kind. */
export type IntentOf<D> =
  D extends TypedIntentKind<infer K, infer C, infer O, infer S>
    ? Omit<PostWritebackIntent, 'intent_kind' | 'capability_id' | 'operation' | 'payload'> & {
        intent_kind: K
        capability_id: C
        operation: O
        payload: PayloadOf<S>
      }
    : never

/** The result a provider may return when its registration names the kinds `D`. */
export type HookResultOf<D> =
  | { schema_version: 'loopx_post_writeback_hook_result_v0'; status: 'not_applicable'; intents: [] }
  | { schema_version: 'loopx_post_writeback_hook_result_v0'; status: 'proposed'; intents: IntentOf<D>[] }

/** The source members the `settlement_identity` read scope grants (contract-v0 section 1). */
export type SettlementMember = 'goal_id' | 'agent_id' | 'todo_id' | 'turn_instance_id' | 'state_revision'

/**
 * The hook input a registration requesting the read scopes `Scopes` (a
 * literal tuple) receives: the settlement members present exactly when
 * `settlement_identity` is requested, `fact_refs` always `[]` without
 * `bounded_event_projection`. For scopes not known at compile time (a
 * registration that is not a literal) it is the contract's input type.
 */
export type HookInputFor<Scopes extends readonly ReadScope[]> = number extends Scopes['length']
  ? PostWritebackHookInput
  : Omit<PostWritebackHookInput, 'source' | 'projection'> & {
      source: Omit<ReceiptSource, SettlementMember> &
        ('settlement_identity' extends Scopes[number]
          ? Required<Pick<ReceiptSource, SettlementMember>>
          : { [K in SettlementMember]?: never })
      projection: 'bounded_event_projection' extends Scopes[number]
        ? EventProjection
        : Omit<EventProjection, 'fact_refs'> & { fact_refs: [] }
    }

/** A provider for a registration naming the kinds `D`, receiving `Input`. */
export type ProviderOf<D, Input = PostWritebackHookInput> = (
  input: Readonly<Input>,
  context: ProviderContext,
) => HookResultOf<D> | Promise<HookResultOf<D>>

/** What a post-writeback provider receives besides its input. */
export interface ProviderContext {
  /** Aborts at the hook's timeout, at the dispatch's wall budget and at `runtime.close()`. */
  readonly signal: AbortSignal
}

/** What a provider decides for one intent; core fills in the rest. */
export interface IntentSpecOf<D> {
  /** One of the kind's operations. */
  operation: D extends TypedIntentKind<string, string, infer O> ? O : never
  /** The policy version the intent was decided under. */
  policyVersion: string
  /** The payload, typed from the kind's schema. */
  payload: D extends TypedIntentKind<string, string, string, infer S> ? PayloadOf<S> : never
  /** The intent's budget, when it has one. */
  budget?: IntentBudget
  /** The write scopes the intent requests of its executor. */
  requestedWriteScope?: string[]
}
