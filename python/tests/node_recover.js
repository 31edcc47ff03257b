// Node's side of the cross-process tests: opens the journal a Python host
// wrote with HookRuntime, installs the same hook (the RFC example
// registration under the host's hook_id), runs recover() and prints the
// RecoverReport as one JSON line. Usage: node node_recover.js DB HOOK_ID TIMEOUT_MS INVOCATIONS
'use strict'
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS helper script run by plain node */
const { readFileSync } = require('node:fs')
const { join } = require('node:path')
const lib = require(join(__dirname, '..', '..', 'dist', 'index.js'))

const example = (name) => JSON.parse(readFileSync(join(__dirname, '..', '..', 'examples', `${name}.json`), 'utf8'))

async function main() {
  const [db, hookId, timeoutMs, invocations] = process.argv.slice(2)
  const runtime = await lib.HookRuntime.open({ journal: db, profile: { enabled: true } })
  try {
    runtime.defineIntentKind(example('intent_kind'))
    const registration = example('registration')
    registration.hook_id = hookId
    registration.event_kinds = ['todo_completed']
    registration.budget.timeout_ms = Number(timeoutMs)
    registration.budget.max_invocations_per_dispatch = Number(invocations)
    runtime.register({
      registration,
      provider: () => ({
        schema_version: 'loopx_post_writeback_hook_result_v0',
        status: 'not_applicable',
        intents: [],
      }),
    })
    process.stdout.write(JSON.stringify(await runtime.recover()) + '\n')
  } finally {
    await runtime.close()
  }
}

main().catch(() => {
  process.stderr.write('recover failed\n')
  process.exit(1)
})
