// An inbox owner that dies right after a purge: captures two messages (as
// realtime collection), first-reads both (through a turn-start session, the
// only place first reads exist), settles and acknowledges the first (retentionMs 0 purges
// its payload at the acknowledgement), prints `purged`, then SIGKILLs its own
// process, so nothing runs on close. The second message stays pending.
//   node inbox-purger.mjs <inbox> <purged text> <kept text>
import { InboxStore, TurnStartKernel } from '../../dist/index.js'
import { emit } from './fixture.mjs'

const [path, purged, kept] = process.argv.slice(2)
try {
  const inbox = await InboxStore.open(path, { retentionMs: 0 })
  const collector = inbox.collector()
  const capture = (providerMessageId, text) =>
    collector.capture({
      routeId: 'route',
      providerMessageId,
      source: 'collector',
      sender: { kind: 'human', verifiedIdentity: null },
      attention: 'ordinary',
      payload: { text },
    })
  await capture('m1', purged)
  await capture('m2', kept)
  await firstReads(inbox)
  const m1 = { routeId: 'route', providerMessageId: 'm1' }
  await inbox.dispose(m1, 'no_follow_up')
  const acked = await inbox.ack(m1)
  emit({ t: 'purged', acked, counts: await inbox.retentionCounts() })
  process.kill(process.pid, 'SIGKILL')
} catch (e) {
  emit({ error: e?.code ?? String(e) })
  process.exit(1)
}

/** One dispatch of a hook that records the first reads through its session. */
async function firstReads(inbox) {
  const kernel = new TurnStartKernel({ profile: { enabled: true }, inbox })
  kernel.register({
    registration: {
      schema_version: 'loopx_turn_start_capability_hook_registration_v0',
      hook_id: 'purger.turn_start_read',
      capability_id: 'purger',
      phase: 'turn_start',
      required_read: { command: 'loopx inbox read --pending' },
      write_scopes: ['owner_private_inbox'],
      budget: { timeout_ms: 5000, max_attempts_per_dispatch: 1, max_routes: 1 },
      failure_policy: 'isolate',
    },
    provider: async (input, { session }) => {
      const reads = await session.recordFirstReads(input.turn.turn_instance_id)
      return {
        schema_version: 'loopx_turn_start_hook_receipt_v0',
        hook_id: input.hook_id,
        status: reads.observationsNew > 0 ? 'ok' : 'empty',
        error_code: null,
        agent_read_required: reads.pending > 0,
        observations_new: reads.observationsNew,
        pending: reads.pending,
        direct_questions: reads.directQuestions,
        verified_replies: reads.verifiedReplies,
        routes_ok: 1,
        routes_failed: 0,
        reactions_added: 0,
        external_writes_performed: 0,
      }
    },
  })
  const outcome = await kernel.dispatchTurnStart({
    turn: { goal_id: 'goal_1', agent_id: 'agent_1', turn_instance_id: 'turn_1' },
    quota: { max_units: 1 },
  })
  if (outcome.hooks[0]?.receipt.observations_new !== 2) throw new Error('the first reads were not recorded')
}
