/**
 * `loopx-hooks serve --stdio`: the library's validators and identity helpers
 * over newline-delimited JSON, for callers in other languages (the Python
 * adapter, RFC section 4) that must not keep a second acceptance policy.
 * One long-lived process answers request after request, so a caller pays
 * Node's start-up once instead of once per document.
 *
 * Request, one JSON object per line:
 *   {"id": ID, "op": "validate", "contract": NAME, "document": TEXT,
 *    "kinds"?: [TEXT...], "registration"?: TEXT, "dispatch_id"?: STRING,
 *    "event_id"?: STRING, "dialect"?: "contract-v0" | "loopx-shipped-v0"}
 *   {"id": ID, "op": "registration_digest", "registration": TEXT}
 *   {"id": ID, "op": "dispatch_id", "parts": {receipt_id, effect_id, hook_id,
 *    capability_id, registration_digest, registration_schema_version, event_kind}}
 *   {"id": ID, "op": "intent_id", "dispatch_id", "intent_kind", "policy_version", "payload": TEXT}
 *   {"id": ID, "op": "intent", "input": TEXT, "intent_kind", "operation", "policy_version",
 *    "payload": TEXT, "budget"?: TEXT, "requested_write_scope"?: TEXT} (the library's intent())
 *   {"id": ID, "op": "canonical_json", "value": TEXT}
 *   {"id": ID, "op": "hello"}
 *   {"id": ID, "op": "capability_hook.post_writeback.transaction", "request": OBJECT}
 *   and the two-phase dispatch over one open journal: "open", "prepare",
 *   "begin", "finish", "cancel", "recover_items", "close" (serve_dispatch.ts).
 * TEXT is a document as JSON text inside a JSON string, so the validator
 * judges the very text the caller wrote (duplicate members, -0 and large
 * numbers are not smoothed over by a re-parse). ID is a string, an integer
 * or null, echoed back.
 *
 * Response, one line per request, in request order (a "finish" is answered
 * once its records are durable, before the next line is read):
 *   {"id": ID, "result": ...} or {"id": ID, "error": {"code", "message", "violations"?}}
 * A line that is not a request gets an error response with `id` null (or
 * its id when one could be read); the process never exits on bad input.
 */
import type { Violation } from '../../bindings/index'
import { CONTRACT_NAMES, SHIPPED_CONTRACT_NAMES, contractsOf, type Verdict } from './validate.js'
import { addon as loadAddon, library, type Addon, type Io, type Library } from './io.js'
import { oneLine } from './errors.js'
import { DispatchSession } from './serve_dispatch.js'
import { RequestError, badRequest, optionalText, parsed, text, texts, type Request } from './serve_request.js'

/** LoopX's post-writeback transaction method, the op that carries it. */
const TRANSACTION_METHOD = 'capability_hook.post_writeback.transaction'

/** The protocol's version, answered by `hello`; bumped on an incompatible change. */
export const PROTOCOL = 1

/** A longer line is refused (and skipped) instead of being buffered without bound. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024

/** Intent kind sets are built once per distinct set; a few are kept. */
const KINDS_CACHE_SIZE = 16

type Id = string | number | null

type Kinds = InstanceType<Library['IntentKinds']>

export class Server {
  private readonly kinds = new Map<string, Kinds>()
  /** The two-phase dispatch over this process's one open journal. */
  readonly session: DispatchSession

  constructor(
    private readonly lib: Library,
    private readonly version: string,
    addon: () => Addon = loadAddon,
  ) {
    this.session = new DispatchSession(addon)
  }

  private intentKinds(request: Request): Kinds {
    const value = texts(request, 'kinds')
    const key = JSON.stringify(value)
    let kinds = this.kinds.get(key)
    if (kinds === undefined) {
      kinds = new this.lib.IntentKinds(value)
      if (this.kinds.size >= KINDS_CACHE_SIZE) this.kinds.delete(this.kinds.keys().next().value!)
      this.kinds.set(key, kinds)
    }
    return kinds
  }

  private validate(request: Request): Verdict {
    const contract = text(request, 'contract')
    // An unknown dialect is the library's coded error (ERR_LOOPX_UNKNOWN_DIALECT).
    const contracts = contractsOf(this.lib, optionalText(request, 'dialect'))
    const spec = contracts[contract]
    if (spec === undefined) {
      throw badRequest(`unknown contract '${contract}' (expected one of: ${Object.keys(contracts).join(', ')})`)
    }
    const given = {
      kinds: request['kinds'] !== undefined,
      registration: request['registration'] !== undefined,
      'dispatch-id': request['dispatch_id'] !== undefined,
      'event-id': request['event_id'] !== undefined,
    }
    for (const flag of Object.keys(given) as (keyof typeof given)[]) {
      const field = flag.replace('-', '_')
      if (given[flag] && !spec.needs.includes(flag)) throw badRequest(`'${field}' does not apply to '${contract}'`)
      if (!given[flag] && spec.needs.includes(flag)) throw badRequest(`'${contract}' needs '${field}'`)
    }
    const document = text(request, 'document')
    const ctx = {
      kinds: spec.needs.includes('kinds') ? this.intentKinds(request) : (undefined as unknown as Kinds),
      registration: optionalText(request, 'registration') ?? '',
      dispatchId: optionalText(request, 'dispatch_id') ?? '',
      eventId: optionalText(request, 'event_id') ?? '',
    }
    const verdict = spec.validate(this.lib, document, ctx)
    return verdict.ok ? { ok: true } : { ok: false, violations: verdict.violations }
  }

  private answer(request: Request): unknown {
    const op = request['op']
    const dispatched = this.session.answer(op, request)
    if (dispatched !== undefined) return dispatched
    switch (op) {
      case 'hello':
        return {
          protocol: PROTOCOL,
          version: this.version,
          contracts: CONTRACT_NAMES,
          dialects: { 'contract-v0': CONTRACT_NAMES, 'loopx-shipped-v0': SHIPPED_CONTRACT_NAMES },
        }
      case 'validate':
        return this.validate(request)
      case 'registration_digest':
        return this.lib.registrationDigest(text(request, 'registration'))
      case 'dispatch_id': {
        const parts = request['parts']
        if (parts === null || typeof parts !== 'object' || Array.isArray(parts)) {
          throw badRequest("'parts' must be an object")
        }
        const p = parts as Request
        return this.lib.dispatchId({
          receiptId: text(p, 'receipt_id'),
          effectId: text(p, 'effect_id'),
          hookId: text(p, 'hook_id'),
          capabilityId: text(p, 'capability_id'),
          registrationDigest: text(p, 'registration_digest'),
          registrationSchemaVersion: text(p, 'registration_schema_version'),
          eventKind: text(p, 'event_kind'),
        })
      }
      case 'intent_id':
        return this.lib.intentId({
          dispatchId: text(request, 'dispatch_id'),
          intentKind: text(request, 'intent_kind'),
          policyVersion: text(request, 'policy_version'),
          payload: parsed(request, 'payload'),
        })
      case 'intent': {
        const budget = optionalText(request, 'budget')
        const scope = optionalText(request, 'requested_write_scope')
        const spec = {
          operation: text(request, 'operation'),
          policyVersion: text(request, 'policy_version'),
          payload: parsed(request, 'payload'),
          ...(budget !== undefined ? { budget: parsed(request, 'budget') } : {}),
          ...(scope !== undefined ? { requestedWriteScope: parsed(request, 'requested_write_scope') } : {}),
        }
        // The library's own builder, so Python's intents carry the ids and defaults TypeScript's do.
        return this.lib.intent(
          parsed(request, 'input') as Parameters<Library['intent']>[0],
          { intent_kind: text(request, 'intent_kind') } as Parameters<Library['intent']>[1],
          spec as Parameters<Library['intent']>[2],
        )
      }
      case 'canonical_json':
        return this.lib.canonicalJson(parsed(request, 'value'))
      case TRANSACTION_METHOD: {
        // LoopX's own method, answered as loopx-hooks/loopx answers it (docs/loopx.md).
        const body = request['request']
        if (body === null || typeof body !== 'object' || Array.isArray(body)) {
          throw badRequest("'request' must be a transaction request object")
        }
        return loadAddon()
          .evaluatePostWritebackTransaction(JSON.stringify(body))
          .then((answer) => JSON.parse(answer) as unknown)
      }
      default:
        throw badRequest(
          typeof op === 'string' ? `unknown op '${oneLine(op).slice(0, 64)}'` : "a request needs an 'op' string",
        )
    }
  }

  /** The response line (without its newline) for one request line. */
  async handle(line: string): Promise<string> {
    let id: Id = null
    try {
      let request: unknown
      try {
        request = JSON.parse(line)
      } catch {
        throw badRequest('the line is not JSON')
      }
      if (request === null || typeof request !== 'object' || Array.isArray(request)) {
        throw badRequest('a request is a JSON object')
      }
      const given = (request as Request)['id']
      if (given === null || typeof given === 'string' || (typeof given === 'number' && Number.isSafeInteger(given))) {
        id = given
      } else {
        throw badRequest("a request needs an 'id': a string, a safe integer or null")
      }
      return JSON.stringify({ id, result: await this.answer(request as Request) })
    } catch (error) {
      return JSON.stringify({ id, error: errorBody(error) })
    }
  }
}

function errorBody(error: unknown): { code: string; message: string; violations?: readonly Violation[] } {
  if (error instanceof RequestError) {
    const body = { code: error.code, message: oneLine(error.message) }
    return error.violations === undefined ? body : { ...body, violations: error.violations }
  }
  const e = error as { code?: unknown; message?: unknown; violations?: unknown }
  if (typeof e?.code === 'string' && e.code.startsWith('ERR_LOOPX_') && typeof e.message === 'string') {
    // The library's misuse errors: a stable code and a message of its own making.
    const body: { code: string; message: string; violations?: readonly Violation[] } = {
      code: e.code,
      message: oneLine(e.message),
    }
    if (Array.isArray(e.violations)) body.violations = e.violations as Violation[]
    return body
  }
  // Anything else is a fault of ours; its text (a stack, a path) stays private.
  return { code: 'ERR_LOOPX_INTERNAL', message: 'internal error while answering the request' }
}

async function writeLine(stdout: Io['stdout'], line: string): Promise<void> {
  const accepted = stdout.write(`${line}\n`)
  const emitter = stdout as { once?: (event: string, listener: () => void) => unknown }
  if (accepted === false && typeof emitter.once === 'function') {
    // Backpressure: a slow reader holds us back instead of growing a buffer.
    await new Promise<void>((resolve) => emitter.once!('drain', resolve))
  }
}

/**
 * Serves requests from `io.stdin` until it ends; resolves to exit status 0.
 * Lines are split on `\n` (a trailing `\r` is dropped); blank lines are ignored.
 */
export async function serveCommand(io: Io, version: string, lib: Library = library()): Promise<number> {
  const server = new Server(lib, version)
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  let pending: Buffer[] = []
  let pendingBytes = 0
  let skipping = false

  const finish = async (bytes: Buffer) => {
    let line: string
    try {
      line = decoder.decode(bytes)
    } catch {
      await writeLine(io.stdout, JSON.stringify({ id: null, error: errorBody(badRequest('the line is not UTF-8')) }))
      return
    }
    if (line.endsWith('\r')) line = line.slice(0, -1)
    if (line.trim() === '') return
    await writeLine(io.stdout, await server.handle(line))
  }

  for await (const chunk of io.stdin) {
    let data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk
    for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10)) {
      const head = data.subarray(0, nl)
      data = data.subarray(nl + 1)
      if (skipping) {
        skipping = false
      } else {
        pending.push(head)
        const whole = Buffer.concat(pending)
        pending = []
        pendingBytes = 0
        await finish(whole)
      }
    }
    if (skipping || data.length === 0) continue
    pending.push(Buffer.from(data))
    pendingBytes += data.length
    if (pendingBytes > MAX_LINE_BYTES) {
      // Drop the rest of this line: answer once now, then skip to its end.
      pending = []
      pendingBytes = 0
      skipping = true
      const message = `a request line is longer than ${MAX_LINE_BYTES} bytes`
      await writeLine(io.stdout, JSON.stringify({ id: null, error: errorBody(badRequest(message)) }))
    }
  }
  if (!skipping && pendingBytes > 0) await finish(Buffer.concat(pending))
  // The caller is gone: what it prepared and never finished stays owed in the journal.
  await server.session.close()
  return 0
}
