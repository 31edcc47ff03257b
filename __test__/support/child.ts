// Runs one of __test__/children/*.mjs to its end and collects the JSON lines
// it printed (each written with one synchronous write, see children/fixture.mjs
// `emit`), its exit code or signal, and its stderr. A child still running
// after `timeoutMs` is SIGKILLed, so a hang fails the test instead of hanging it.
import { spawn } from 'node:child_process'
import { join } from 'node:path'

export interface ChildResult<L> {
  lines: L[]
  code: number | null
  signal: NodeJS.Signals | null
  stderr: string
}

export function runChildScript<L = { t: string; [k: string]: unknown }>(
  script: string,
  args: string[],
  timeoutMs = 60_000,
): Promise<ChildResult<L>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(__dirname, '..', 'children', script), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let stderr = ''
    const guard = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c))
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(guard)
      const lines = out
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as L)
      resolve({ lines, code, signal, stderr })
    })
  })
}
