// A soak process: loads the package once, then takes commands on stdin, one
// JSON line each, and answers on stdout (fixture.mjs `emit`: one synchronous
// write per line, so a line is in the pipe before the next await). Spawned
// ahead of need, so a kill round does not wait for Node and the addon to load;
// a process that recovered serves again as a dispatcher, never as a second
// recoverer.
//   {"c":"open","target":...}         opens the journal, installs the hook: `ready`
//   {"c":"go","start":n,"inflight":k} dispatches r<n>, r<n+1>, ... k at a time until killed:
//                                     `started`, `invoked` (its provider called) and `resolved` lines
//   {"c":"recover","target":...}      opens, recover(), integrity(), close(): `recovered`
import { createInterface } from 'node:readline'

import { HookRuntime } from '../dist/index.js'
import { PROFILE, emit, install, receiptId, request } from '../__test__/children/fixture.mjs'
import { parseTarget } from '../__test__/children/target.mjs'

let runtime = null

async function dispatchFrom(start, inflight) {
  let next = start
  async function lane() {
    for (;;) {
      const rid = receiptId(next++)
      emit({ t: 'started', r: rid })
      try {
        const out = await runtime.dispatch(request(rid))
        const hook = out.hooks[0]
        emit({
          t: 'resolved',
          r: rid,
          admitted: out.admitted,
          hooks: out.hooks.length,
          d: hook?.dispatchId,
          o: hook?.outcome,
          receipt: hook?.receipt ?? null,
        })
      } catch (e) {
        emit({ t: 'error', r: rid, code: e?.code ?? null, message: String(e?.message ?? e) })
      }
    }
  }
  await Promise.all(Array.from({ length: inflight }, lane))
}

async function recover(target) {
  const rt = await HookRuntime.open({ ...target.runtime, profile: PROFILE })
  install(rt)
  const report = await rt.recover()
  // The journal's own check (SQLite: integrity_check and foreign_key_check; PostgreSQL: the schema's invariants).
  const verdict = await rt.journal.integrity()
  await rt.close()
  emit({ t: 'recovered', report, integrity: verdict.ok, messages: verdict.messages })
}

async function run(cmd) {
  switch (cmd.c) {
    case 'open':
      runtime = await HookRuntime.open({ ...parseTarget(cmd.target).runtime, profile: PROFILE })
      install(runtime, (rid) => emit({ t: 'invoked', r: rid }))
      emit({ t: 'ready' })
      return
    case 'go':
      return dispatchFrom(cmd.start, cmd.inflight)
    case 'recover':
      return recover(parseTarget(cmd.target))
    default:
      throw new Error(`unknown command ${JSON.stringify(cmd.c)}`)
  }
}

const input = createInterface({ input: process.stdin })
input.on('line', (line) => {
  run(JSON.parse(line)).catch((e) => {
    emit({ t: 'error', code: e?.code ?? null, message: String(e?.message ?? e) })
  })
})
input.on('close', () => process.exit(0))
emit({ t: 'warm' })
