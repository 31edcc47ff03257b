// The parent's side of soak/worker.mjs: one child process, its stdout parsed
// into lines, commands written to its stdin; and a pool that keeps processes
// spawned ahead of need.
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { dirname, join } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'

import type { DispatchReceipt, RecoverReport } from '../lib/index.js'

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'worker.mjs')

export type Line =
  | { t: 'warm' }
  | { t: 'ready' }
  | { t: 'started'; r: string }
  | { t: 'invoked'; r: string }
  | {
      t: 'resolved'
      r: string
      admitted: boolean
      hooks: number
      d: string
      o: string
      receipt: DispatchReceipt | null
    }
  | { t: 'recovered'; report: RecoverReport; integrity: boolean; messages: string[] }
  | { t: 'error'; r?: string; code: string | null; message: string }

/** How long any one step of a process may take before the soak calls it hung. */
const STEP_MS = 60_000

export class Proc {
  readonly lines: Line[] = []
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  stderr = ''
  readonly #child: ChildProcessByStdio<Writable, Readable, Readable>
  #waiters: { t: Line['t'] | 'error'; from: number; resolve: (l: Line) => void; reject: (e: Error) => void }[] = []
  #dead: Error | null = null

  constructor() {
    this.#child = spawn(process.execPath, [WORKER], { stdio: ['pipe', 'pipe', 'pipe'] })
    // A write to a killed process's stdin is not an error of the soak.
    this.#child.stdin.on('error', () => {})
    this.#child.on('error', (e) => {
      this.#dead = e
      this.#wake()
    })
    let pending = ''
    this.#child.stdout.setEncoding('utf8')
    this.#child.stdout.on('data', (chunk: string) => {
      pending += chunk
      let nl: number
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = JSON.parse(pending.slice(0, nl)) as Line
        pending = pending.slice(nl + 1)
        this.lines.push(line)
        this.#wake()
      }
      // A partial last line is one the kill cut short: never a resolved one,
      // since each line is written with one synchronous write of a few hundred bytes.
    })
    this.#child.stderr.setEncoding('utf8')
    this.#child.stderr.on('data', (chunk: string) => (this.stderr += chunk))
    this.exited = new Promise((resolve) => {
      this.#child.on('close', (code, signal) => {
        this.#dead = new Error(`soak process ended (${signal ?? code}) before answering; stderr: ${this.stderr}`)
        this.#wake()
        resolve({ code, signal })
      })
    })
  }

  get pid(): number {
    return this.#child.pid!
  }

  send(cmd: object): void {
    this.#child.stdin.write(JSON.stringify(cmd) + '\n')
  }

  /** Sends `cmd` and resolves with its answer, the next line of type `t`. */
  ask(cmd: object, t: Line['t']): Promise<Line> {
    const from = this.lines.length
    this.send(cmd)
    return this.next(t, from)
  }

  /** The first line of type `t` at or after index `from` (an `error` line rejects). */
  next(t: Line['t'], from = 0): Promise<Line> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`soak process gave no '${t}' line in ${STEP_MS} ms`)), STEP_MS)
      this.#waiters.push({
        t,
        from,
        resolve: (l) => (clearTimeout(timer), resolve(l)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      })
      this.#wake()
    })
  }

  #wake(): void {
    this.#waiters = this.#waiters.filter((w) => {
      const found = this.lines.slice(w.from).find((l) => l.t === w.t || l.t === 'error')
      if (found?.t === 'error') w.reject(new Error(`soak process failed: ${found.code ?? ''} ${found.message}`))
      else if (found) w.resolve(found)
      else if (this.#dead) w.reject(this.#dead)
      else return true
      return false
    })
  }

  kill(): void {
    this.#child.kill('SIGKILL')
  }

  /** Ends an idle process (its stdin closes; it exits 0). */
  async end(): Promise<void> {
    this.#child.stdin.end()
    await this.exited
  }
}

/** Processes spawned ahead of need; `take` waits until they have loaded the package. */
export class Pool {
  #spare: Proc[] = []
  readonly #alive = new Set<Proc>()

  #spawn(): Proc {
    const p = new Proc()
    this.#alive.add(p)
    void p.exited.then(() => this.#alive.delete(p))
    return p
  }

  fill(n: number): void {
    while (this.#spare.length < n) this.#spare.push(this.#spawn())
  }

  /** A warm process, or one spawned now when none is left. */
  async take(): Promise<Proc> {
    const p = this.#spare.shift() ?? this.#spawn()
    await p.next('warm')
    return p
  }

  /** Gives back an idle process for later use. */
  give(p: Proc): void {
    this.#spare.push(p)
  }

  /** Ends the idle processes, and kills any a failed round left running. */
  async end(): Promise<void> {
    const idle = new Set(this.#spare.splice(0))
    await Promise.all([...this.#alive].map((p) => (idle.has(p) ? p.end() : (p.kill(), p.exited))))
  }
}
