// The documentation pages the doc specs read: the README, CONTRIBUTING.md and
// every page of docs/ (the copied specification texts under docs/spec/ are
// cited, not checked).
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const root = join(__dirname, '..', '..')

/** The pages, as paths relative to the repository root. */
export function pages(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`)
  return ['README.md', 'CONTRIBUTING.md', ...docs]
}
