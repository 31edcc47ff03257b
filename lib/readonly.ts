/**
 * `T` as the package takes it: every array readonly, at every depth, so that
 * a document declared on its own `as const` is accepted as well as a mutable
 * one (the generated contract types say `Array<...>`, which a readonly array
 * is not assignable to). The package never writes to a document it is
 * given; what it returns stays `T`. (A JSON payload is recursive: past eight
 * levels `T` is taken as it is, so that the type stays finite.)
 */
export type DeepReadonly<T, Depth extends readonly unknown[] = []> = Depth['length'] extends 8
  ? T
  : T extends (...args: never[]) => unknown
    ? T
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K], [...Depth, unknown]> }
      : T

/** Freezes `value` and every object and array in it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const member of Object.values(value)) deepFreeze(member)
    Object.freeze(value)
  }
  return value
}
