// The documentation holds together for a reader who installed the package:
// the README stays a front page (at most 300 lines, a quick start under 20),
// every relative link in README.md, CONTRIBUTING.md and docs/*.md names a
// file that exists (and a heading that exists, when it names one), and none
// points outside the repository, where an npm user has nothing
// (`../shared/...`). User pages do not speak the project's internal words.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

import { describe, expect, it } from 'vitest'

import { anchorOf, anchors, links, pages } from './support/doc_pages.js'

const root = join(__dirname, '..')

describe('the documentation', () => {
  it('the README is at most 300 lines, and its quick start under 20', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(300)
    const quickStart = readme.slice(readme.indexOf('## Quick start'))
    const block = /```ts\n([^]*?)\n```/.exec(quickStart)
    expect(block, 'the quick start has a ts block').not.toBeNull()
    expect(block![1]!.split('\n').length).toBeLessThan(20)
  })

  it('every relative link resolves to a file in the package, and to a heading when it names one', () => {
    const broken: string[] = []
    let checked = 0
    for (const page of pages()) {
      const text = readFileSync(join(root, page), 'utf8')
      for (const target of links(text)) {
        if (/^[a-z]+:/i.test(target)) continue // https:, mailto:
        checked++
        const [path, anchor] = target.split('#') as [string, string | undefined]
        const file = path === '' ? join(root, page) : join(dirname(join(root, page)), path)
        const where = relative(root, file)
        if (where.startsWith('..')) {
          broken.push(`${page}: ${target} points outside the package`)
          continue
        }
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} does not exist`)
          continue
        }
        if (anchor !== undefined && statSync(file).isFile() && file.endsWith('.md')) {
          if (!anchors(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${page}: ${target} has no such heading`)
        }
      }
    }
    expect(broken).toEqual([])
    expect(checked, 'the pages link to each other').toBeGreaterThan(50)
  })

  it('no page points into ../shared or speaks internal words', () => {
    const found: string[] = []
    for (const page of pages()) {
      const text = readFileSync(join(root, page), 'utf8')
      for (const [i, line] of text.split('\n').entries()) {
        if (/\.\.\/shared|\bissue \d|\bslice \d|\bthis (shared )?(\d-core )?machine\b/i.test(line))
          found.push(`${page}:${i + 1}: ${line}`)
      }
    }
    expect(found).toEqual([])
  })

  it('the checks can fail: a missing heading, a link outside, a repeated heading', () => {
    expect([...anchors('# A `b` c!\n## A b c\n```\n# not a heading\n```\n')]).toEqual(['a-b-c', 'a-b-c-1'])
    expect(links('see [x](a.md#b), `[y](no.md)` and [z](https://e.org)\n```\n[w](in-code.md)\n```\n')).toEqual([
      'a.md#b',
      'https://e.org',
    ])
    expect(anchorOf('`HookRuntime.open(options)`')).toBe('hookruntimeopenoptions')
  })
})
