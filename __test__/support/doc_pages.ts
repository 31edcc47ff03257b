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

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors of a markdown text's headings (outside code blocks), with GitHub's -1, -2 for repeats. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced
    const h = fenced ? null : /^#{1,6} (.+)$/.exec(line)
    if (!h) continue
    const base = anchorOf(h[1]!)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** The targets of the inline links `[text](target)` outside code blocks and code spans. */
export function links(markdown: string): string[] {
  const out: string[] = []
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced
    if (fenced) continue
    const prose = line.replace(/`[^`]*`/g, '')
    for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1]!)
  }
  return out
}
