#!/usr/bin/env node
// The `loopx-hooks` command: lib/cli.js (compiled from lib/cli.ts, CommonJS).
'use strict'
require('../lib/cli.js').run()
