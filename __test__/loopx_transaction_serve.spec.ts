// LoopX's transaction method over `loopx-hooks serve --stdio`, in a real
// child process: a preflight, then the finalize built from its plan, answered
// as loopx-hooks/loopx answers them, with the sidecar written under the root;
// a request that breaks the protocol is an error response, and the process
// keeps serving.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

import { afterEach, describe, expect, it } from 'vitest'

import { finalize, receiptFile, request, returned, type TransactionResult } from './support/loopx_transaction.js'

const METHOD = 'capability_hook.post_writeback.transaction'
const roots: string[] = []

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A serve process answering one line at a time. */
function serve() {
  const child = spawn(process.execPath, [join(__dirname, '..', 'bin', 'loopx-hooks.js'), 'serve', '--stdio'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  return {
    async ask(line: object): Promise<Record<string, unknown>> {
      child.stdin.write(`${JSON.stringify(line)}\n`)
      const next = await lines.next()
      return JSON.parse(next.value as string) as Record<string, unknown>
    },
    async end(): Promise<number | null> {
      child.stdin.end()
      return new Promise((resolve) => child.on('close', resolve))
    },
  }
}

describe('capability_hook.post_writeback.transaction over serve --stdio', () => {
  it('answers a preflight and its finalize, and writes the sidecar under the runtime root', async () => {
    const root = mkdtempSync(join(tmpdir(), 'loopx-tx-serve-'))
    roots.push(root)
    const server = serve()
    const first = await server.ask({ id: 1, op: METHOD, request: request(root) })
    expect(first['id']).toBe(1)
    const preflight = first['result'] as TransactionResult
    expect(preflight.phase).toBe('preflight')
    const plan = preflight.provider_plan[0]!
    const second = await server.ask({ id: 2, op: METHOD, request: finalize(root, preflight, [returned(plan)]) })
    const dispatch = (second['result'] as TransactionResult).dispatch!
    expect([dispatch.invoked_count, dispatch.intent_count]).toEqual([1, 1])
    const receipt = JSON.parse(readFileSync(receiptFile(root, plan), 'utf8')) as Record<string, unknown>
    expect(receipt['status']).toBe('intent_recorded')

    const refused = await server.ask({ id: 3, op: METHOD, request: { ...request(root), unexpected: true } })
    expect(refused['error']).toMatchObject({
      code: 'ERR_LOOPX_TRANSACTION_INVALID',
      message: 'post-writeback hook transaction request fields are invalid',
    })
    const malformed = await server.ask({ id: 4, op: METHOD, request: 'not an object' })
    expect(malformed['error']).toMatchObject({ code: 'ERR_LOOPX_SERVE_BAD_REQUEST' })
    expect(await server.ask({ id: 5, op: 'hello' })).toMatchObject({ id: 5, result: { protocol: 1 } })
    expect(await server.end()).toBe(0)
  })
})
