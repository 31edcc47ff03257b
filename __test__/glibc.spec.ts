// The linux-x64-gnu binary loads on glibc 2.17 and newer: the highest GLIBC_
// symbol version it needs (read from its .gnu.version_r section by
// __test__/support/elf.ts) is <= 2.17. scripts/setup.sh builds it for the
// target x86_64-unknown-linux-gnu.2.17 with cargo-zigbuild and zig.
import { existsSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import { compareVersions, highestGlibc, neededVersions } from './support/elf.js'

const addon = join(__dirname, '..', 'loopx-hooks.linux-x64-gnu.node')

describe.runIf(process.platform === 'linux' && process.arch === 'x64')('glibc 2.17 baseline', () => {
  it('the .node needs no GLIBC_ symbol version above 2.17', () => {
    expect(existsSync(addon), 'build first: bash scripts/setup.sh').toBe(true)
    const versions = neededVersions(addon)
    expect([...versions.keys()]).toContain('libc.so.6')
    const highest = highestGlibc(versions)
    expect(highest, 'the addon needs glibc symbols at all').toBeDefined()
    expect(compareVersions(highest!, [2, 17]), `needs GLIBC_${highest!.join('.')}`).toBeLessThanOrEqual(0)
  })

  it('negative control: the parser sees the newer glibc that this node binary itself needs', () => {
    // Node 20's official Linux build needs glibc 2.28, so a parser that missed
    // versions (and would pass the check above vacuously) fails here.
    const highest = highestGlibc(neededVersions(process.execPath))
    expect(highest).toBeDefined()
    expect(compareVersions(highest!, [2, 17])).toBeGreaterThan(0)
  })
})
