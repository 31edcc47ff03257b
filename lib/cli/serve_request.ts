/**
 * Reading one `serve --stdio` request: its fields, and the coded refusal of
 * a request that does not have them. Shared by the validators' ops
 * (serve.ts) and the two-phase dispatch ops (serve_dispatch.ts).
 */
import type { Violation } from '../../bindings/index'

/** A refusal of the request itself: its stable code and a one-line message. */
export class RequestError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly violations?: readonly Violation[],
  ) {
    super(message)
  }
}

export const badRequest = (message: string) => new RequestError('ERR_LOOPX_SERVE_BAD_REQUEST', message)

export type Request = Record<string, unknown>

export function text(request: Request, field: string): string {
  const value = request[field]
  if (typeof value !== 'string') throw badRequest(`'${field}' must be a string (JSON text for documents)`)
  return value
}

export function optionalText(request: Request, field: string): string | undefined {
  return request[field] === undefined ? undefined : text(request, field)
}

export function texts(request: Request, field: string): string[] {
  const value = request[field]
  if (!Array.isArray(value) || !value.every((k): k is string => typeof k === 'string')) {
    throw badRequest(`'${field}' must be an array of JSON texts`)
  }
  return value
}

export function parsed(request: Request, field: string): unknown {
  const source = text(request, field)
  try {
    return JSON.parse(source) as unknown
  } catch {
    throw badRequest(`'${field}' is not JSON text`)
  }
}

/** A non-negative safe integer field (a ticket, a slot). */
export function count(request: Request, field: string): number {
  const value = request[field]
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw badRequest(`'${field}' must be a non-negative integer`)
  }
  return value
}

export function isObject(value: unknown): value is Request {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
