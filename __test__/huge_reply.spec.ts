// A reply far past max_result_bytes is refused without copies of it: a child
// process dispatches to a provider answering a 100 MB string, or an object
// holding one, and its peak resident memory stays below its own baseline plus
// 1.5 times the reply (the reply itself, and no copy of it). The old wrapper
// wrote the whole reply out as JSON text first, reaching about 3 times.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

describe('a huge reply', () => {
  for (const shape of ['string', 'object']) {
    it(`(${shape}) is result_too_large within baseline + 1.5x the reply`, () => {
      const r = spawnSync(process.execPath, [join(__dirname, 'children', 'huge-reply.mjs'), shape], {
        encoding: 'utf8',
        timeout: 120_000,
      })
      expect(r.stderr).toBe('')
      expect(r.status).toBe(0)
      const out = JSON.parse(r.stdout) as {
        baselineKib: number
        peakKib: number
        replyKib: number
        code: string
        rule: string
      }
      expect([out.code, out.rule]).toEqual(['result_contract_rejected', 'result_too_large'])
      expect(out.peakKib - out.baselineKib).toBeLessThan(1.5 * out.replyKib)
    })
  }
})
