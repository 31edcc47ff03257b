// `loopx-hooks serve --stdio` (lib/cli/serve.ts) in process: lines split
// across chunks and CRLF endings, one response per request in order, a line
// over the bound answered once and skipped, and the verdicts those of the
// library's validators. The Python adapter's own tests (python/tests) run it
// as a child process.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import { validateRegistration, IntentKinds } from '../lib/index.js'
import { MAX_LINE_BYTES, serveCommand } from '../lib/cli/serve.js'
import type { Io } from '../lib/cli.js'

const example = (name: string) => readFileSync(join(__dirname, '..', 'examples', `${name}.json`), 'utf8')

async function serve(chunks: (string | Buffer)[]): Promise<{ status: number; answers: Record<string, unknown>[] }> {
  let out = ''
  const io: Io = {
    stdout: { write: (s: string) => ((out += s), true) },
    stderr: { write: () => true },
    stdin: (async function* () {
      for (const c of chunks) yield c
    })(),
    env: {},
  }
  const status = await serveCommand(io, '0.0.0-test')
  return {
    status,
    answers: out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

describe('serve --stdio', () => {
  it('answers each request line with its id, in order, even when lines arrive split across chunks', async () => {
    const request = (id: number, document: string) =>
      JSON.stringify({ id, op: 'validate', contract: 'registration', document, kinds: [example('intent_kind')] })
    const text = `${request(1, example('registration'))}\r\n\n${request(2, '{"hook_id": 3}')}\n{"id":"h","op":"hello"}`
    const bytes = Buffer.from(text)
    const { status, answers } = await serve([bytes.subarray(0, 7), bytes.subarray(7, 400), bytes.subarray(400)])
    expect(status).toBe(0)
    expect(answers.map((a) => a['id'])).toEqual([1, 2, 'h'])
    const kinds = new IntentKinds([example('intent_kind')])
    expect(answers[0]!['result']).toEqual({ ok: true })
    const library = validateRegistration('{"hook_id": 3}', kinds)
    expect(library.ok).toBe(false)
    expect(answers[1]!['result']).toEqual({ ok: false, violations: library.ok ? [] : library.violations })
    expect(answers[2]!['result']).toMatchObject({ protocol: 1, version: '0.0.0-test' })
  })

  it('answers a line over the bound once, skips the rest of it, and keeps serving', async () => {
    const long = Buffer.alloc(MAX_LINE_BYTES + 10, 'x')
    const { answers } = await serve([long.subarray(0, 1000), long.subarray(1000), '\n{"id":7,"op":"hello"}\n'])
    expect(answers).toHaveLength(2)
    expect(answers[0]).toMatchObject({ id: null, error: { code: 'ERR_LOOPX_SERVE_BAD_REQUEST' } })
    expect(answers[1]).toMatchObject({ id: 7, result: { protocol: 1 } })
  })

  it('keeps a library fault private: a misuse error keeps its code and the process keeps serving', async () => {
    const lines = [
      JSON.stringify({ id: 1, op: 'registration_digest', registration: 'not json' }),
      JSON.stringify({ id: 2, op: 'intent_id', dispatch_id: 'x', intent_kind: 'y', policy_version: 'z', payload: '{' }),
      JSON.stringify({ id: 3, op: 'canonical_json', value: '{"b":2,"a":1}' }),
    ]
    const { answers } = await serve([`${lines.join('\n')}\n`])
    expect(answers[0]).toMatchObject({ id: 1, error: { code: 'ERR_LOOPX_NOT_JSON_VALUE' } })
    expect(answers[1]).toMatchObject({ id: 2, error: { code: 'ERR_LOOPX_SERVE_BAD_REQUEST' } })
    expect(answers[2]).toEqual({ id: 3, result: '{"a":1,"b":2}' })
  })
})
