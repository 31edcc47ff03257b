#!/usr/bin/env node
// `npm run soak`: runs soak/cli.ts under plain Node (soak/ts-loader.mjs
// transpiles the TypeScript on load). The package must be built (`npm run
// build`, or `bash scripts/setup.sh`): the soak's processes load dist/ and the addon.
import { register } from 'node:module'

register('./ts-loader.mjs', import.meta.url)
await import('./cli.ts')
