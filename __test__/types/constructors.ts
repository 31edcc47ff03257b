// The classes lib/ makes for a user (a runtime, its journal, a shipped-dialect
// runtime, a turn-start session) come from their `open` or from the kernel:
// constructing one by hand does not type-check, even with arguments of the
// right type (`as never` stands in for the addon's objects).
import { HookJournal, HookRuntime, ShippedHookRuntime, TurnStartSession } from '../../lib/index.js'

// @ts-expect-error the journal comes from HookJournal.open or runtime.journal
export const journal = () => new HookJournal(undefined as never)

// @ts-expect-error a runtime comes from HookRuntime.open
export const runtime = () => new HookRuntime(undefined as never)

// @ts-expect-error a shipped-dialect runtime comes from HookRuntime.open({ dialect: 'loopx-shipped-v0' })
export const shipped = () => new ShippedHookRuntime(undefined as never)

// @ts-expect-error a session is made by the kernel for one invocation
export const session = () => new TurnStartSession(undefined as never, '')
